//! Who is in the ring: each member holds a Lease of its own,
//! `<ring>-member-<identity>`, renewed like a leader's; a member is live
//! while its Lease names it as holder and has not lapsed. A member that
//! leaves releases its Lease; one that dies lets it lapse.

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;

/// The Lease of member `identity` of the ring `ring`.
pub fn lease_name(ring: &str, identity: &str) -> String {
    format!("{ring}-member-{identity}")
}

/// The annotation a member puts on its Lease when it leaves (SIGTERM):
/// still live, it is assigned nothing more and hands its parents over.
pub const LEAVING: &str = "ring.reconciler.dev/leaving";

/// The members among `live` whose Lease in `leases` says they are leaving.
pub fn leaving(ring: &str, leases: &[Lease], live: &[String]) -> Vec<String> {
    live.iter()
        .filter(|m| {
            leases.iter().any(|l| {
                l.metadata.name.as_deref() == Some(lease_name(ring, m).as_str())
                    && l.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.get(LEAVING).is_some_and(|v| v == "true"))
            })
        })
        .cloned()
        .collect()
}

/// The live members among `leases` (any Leases of the namespace; those of
/// other rings or none are ignored) at `now`, sorted by identity.
pub fn live(ring: &str, leases: &[Lease], now: Timestamp) -> Vec<String> {
    let prefix = format!("{ring}-member-");
    let mut members: Vec<String> = leases
        .iter()
        .filter_map(|lease| {
            let identity = lease.metadata.name.as_deref()?.strip_prefix(&prefix)?;
            let spec = lease.spec.as_ref()?;
            (spec.holder_identity.as_deref() == Some(identity)).then_some(())?;
            let renewed = spec.renew_time.as_ref()?.0;
            let seconds = i64::from(spec.lease_duration_seconds?);
            let until = renewed
                .checked_add(jiff::SignedDuration::from_secs(seconds))
                .ok()?;
            (until > now).then(|| identity.to_owned())
        })
        .collect();
    members.sort();
    members.dedup();
    members
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

    fn lease(name: &str, holder: Option<&str>, renewed: &str, seconds: i32) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(renewed.parse().unwrap())),
                lease_duration_seconds: Some(seconds),
                ..LeaseSpec::default()
            }),
        }
    }

    #[test]
    fn a_member_is_live_while_its_own_lease_holds() {
        let now: Timestamp = "2026-12-04T12:00:10Z".parse().unwrap();
        let leases = [
            lease("r-member-b", Some("b"), "2026-12-04T12:00:00Z", 15),
            lease("r-member-a", Some("a"), "2026-12-04T12:00:05Z", 15),
            // Lapsed: renewed 15 s before now, for 10 s.
            lease("r-member-c", Some("c"), "2026-12-04T11:59:55Z", 10),
            // Released: no holder.
            lease("r-member-d", None, "2026-12-04T12:00:09Z", 15),
            // Held by someone else than the member it is named for.
            lease("r-member-e", Some("x"), "2026-12-04T12:00:09Z", 15),
            // Another ring's, and the leader election's.
            lease("s-member-f", Some("f"), "2026-12-04T12:00:09Z", 15),
            lease("r", Some("a"), "2026-12-04T12:00:09Z", 15),
        ];
        assert_eq!(live("r", &leases, now), vec!["a", "b"]);
        let mut going = leases.clone();
        going[0].metadata.annotations = Some([(LEAVING.to_owned(), "true".to_owned())].into());
        let members = live("r", &going, now);
        assert_eq!(leaving("r", &going, &members), vec!["b"]);
        assert!(leaving("r", &leases, &members).is_empty());
        assert_eq!(lease_name("r", "a"), "r-member-a");
    }
}
