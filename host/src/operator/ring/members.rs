//! Who is in the ring: each member holds a Lease of its own,
//! `<ring>-member-<identity>`, renewed like a leader's, that the member made
//! labelled with its ring; a member is live while its Lease names it as
//! holder and has not lapsed, and only if the ring wrote that Lease (its
//! label set by the ring's field manager, which only a writer with the
//! verb `join` on Leases may set: deploy/ring-admission.yaml). A member
//! that leaves releases its Lease; one that dies lets it lapse.

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::FIELD_MANAGER;
use crate::operator::cluster::decode::{self, Decoded};

/// The label of every member Lease: the ring it is a member of. Set when
/// the member makes its Lease, by the ring's field manager.
pub const RING_LABEL: &str = "ring.reconciler.dev/ring";

/// Whether `lease` is a member Lease the ring `ring` wrote: labelled with
/// the ring, the label set by the ring's field manager alone (by its
/// `managedFields`). Any other Lease named like a member is no member.
pub fn accepted(ring: &str, lease: &Lease) -> bool {
    let md = &lease.metadata;
    let labelled = md
        .labels
        .as_ref()
        .and_then(|l| l.get(RING_LABEL))
        .is_some_and(|r| r == ring);
    let setters: Vec<&str> = md
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            e.fields_v1.as_ref().is_some_and(|f| {
                f.0["f:metadata"]["f:labels"]
                    .get(format!("f:{RING_LABEL}"))
                    .is_some()
            })
        })
        .map(|e| e.manager.as_deref().unwrap_or_default())
        .collect();
    labelled && !setters.is_empty() && setters.iter().all(|m| *m == FIELD_MANAGER)
}

/// The identities named by Leases of `ring`'s members that the ring did
/// not write ([`accepted`]): no member, said and counted.
pub fn refused(ring: &str, leases: &[Lease]) -> Vec<String> {
    let prefix = format!("{ring}-member-");
    let mut refused: Vec<String> = leases
        .iter()
        .filter(|l| !accepted(ring, l))
        .filter_map(|l| l.metadata.name.as_deref()?.strip_prefix(&prefix))
        .map(str::to_owned)
        .collect();
    refused.sort();
    refused
}

/// Makes member `identity`'s Lease of the ring `ring` in `namespace`,
/// labelled with its ring, before it is held (the Lease's holder and times
/// are the lease manager's); labels it where it exists already.
pub async fn make_lease(
    client: &Client,
    namespace: &str,
    ring: &str,
    identity: &str,
) -> Result<(), kube::Error> {
    let leases = decode::leases(client, namespace);
    let name = lease_name(ring, identity);
    let labels = json!({ RING_LABEL: ring });
    let lease: Lease = serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "labels": labels},
    }))
    .map_err(kube::Error::SerdeError)?;
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    match leases.create(&params, &Decoded::new(lease)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let patch: Value = json!({"metadata": {"labels": labels}});
            leases
                .patch(
                    &name,
                    &PatchParams::apply(FIELD_MANAGER),
                    &Patch::Merge(&patch),
                )
                .await
                .map(drop)
        }
        Err(e) => Err(e),
    }
}

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
/// other rings or none, and those the ring did not write, are ignored) at
/// `now`, sorted by identity.
pub fn live(ring: &str, leases: &[Lease], now: Timestamp) -> Vec<String> {
    let prefix = format!("{ring}-member-");
    let mut members: Vec<String> = leases
        .iter()
        .filter(|lease| accepted(ring, lease))
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
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        FieldsV1, ManagedFieldsEntry, MicroTime, ObjectMeta,
    };

    /// The managedFields entry of `manager` setting the ring's label.
    fn labelled_by(manager: &str) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            operation: Some("Update".to_owned()),
            fields_v1: Some(FieldsV1(
                json!({"f:metadata": {"f:labels": {format!("f:{RING_LABEL}"): {}}}}),
            )),
            ..ManagedFieldsEntry::default()
        }
    }

    #[test]
    fn a_lease_the_ring_did_not_write_is_no_member() {
        let now: Timestamp = "2026-12-04T12:00:10Z".parse().unwrap();
        let real = lease("r-member-a", Some("a"), "2026-12-04T12:00:05Z", 15);
        // Made by a user who may write Leases: no label.
        let mut bare = lease("r-member-f", Some("f"), "2026-12-04T12:00:05Z", 3600);
        bare.metadata.labels = None;
        bare.metadata.managed_fields = Some(vec![labelled_by("kubectl-create")]);
        // Labelled, by another field manager.
        let mut other = lease("r-member-g", Some("g"), "2026-12-04T12:00:05Z", 3600);
        other.metadata.managed_fields = Some(vec![labelled_by("kubectl-client-side-apply")]);
        // Labelled by the ring and by another manager too.
        let mut shared = lease("r-member-h", Some("h"), "2026-12-04T12:00:05Z", 3600);
        shared.metadata.managed_fields =
            Some(vec![labelled_by(FIELD_MANAGER), labelled_by("kubectl")]);
        // Labelled for another ring.
        let mut elsewhere = lease("r-member-i", Some("i"), "2026-12-04T12:00:05Z", 3600);
        elsewhere.metadata.labels = Some([(RING_LABEL.to_owned(), "s".to_owned())].into());
        let leases = [real, bare, other, shared, elsewhere];
        assert_eq!(live("r", &leases, now), vec!["a"]);
        assert_eq!(refused("r", &leases), vec!["f", "g", "h", "i"]);
    }

    /// A Lease as the ring writes one.
    fn lease(name: &str, holder: Option<&str>, renewed: &str, seconds: i32) -> Lease {
        let ring = name.split("-member-").next().unwrap_or_default();
        Lease {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some([(RING_LABEL.to_owned(), ring.to_owned())].into()),
                managed_fields: Some(vec![labelled_by(FIELD_MANAGER)]),
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
