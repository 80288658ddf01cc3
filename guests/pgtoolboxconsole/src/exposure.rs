//! ExposureReady of a console: the SDK's exposure (`reconciler_guest_sdk::exposure`, shared with the PgAdmin) in the console's words, for the Route, Ingress or HTTPRoute `<name>-console`; and what only the console says of it: what is published, for ExposureConfined, and what a HostnameNotAllowed withdrawal leaves.

use reconciler_guest_sdk::ownership::Parent;

use reconciler_guest_sdk::exposure::kind_name;
pub use reconciler_guest_sdk::exposure::{
    Entry, Exposure, Observation, PUBLISHED_KINDS_FIELD, Read, URL_FIELD, Url, observe,
    with_sentences,
};

use crate::confinement::Published;

/// ExposureReady of a console whose configuration is valid and whose
/// hostname is allowed.
pub fn decide(observation: &Observation, hostname: Option<&str>) -> Exposure {
    reconciler_guest_sdk::exposure::decide(observation, hostname, "the console")
}

/// What is published, for ExposureConfined: an object found (the
/// requested kind first), else one that may remain unread, else nothing.
pub fn published(observation: &Observation) -> Published {
    let found = |e: &&Entry| matches!(e.read, Read::Found(_));
    let requested_first = observation
        .requested
        .and_then(|k| observation.entry(k))
        .filter(found)
        .or_else(|| observation.entries.iter().find(found));
    if let Some(e) = requested_first {
        return Published::Found(e.kind);
    }
    match observation.entries.iter().find(|e| e.may_remain()) {
        Some(e) => Published::Unreadable(e.kind),
        None => Published::Nothing,
    }
}

/// What the HostnameNotAllowed message says of what was published:
/// `withdrawn` (the console's own objects the host deleted), `still_there`
/// (those whose deletion is asked and not made, and why), the objects
/// found that are being deleted already or are not the console's to
/// delete (left as they are), the reads of its own objects that failed
/// (`unread`: withdrawn once they succeed). A kind the operator may not
/// read has its may-remain sentence instead.
pub fn withdrawn(
    observation: &Observation,
    console: &Parent,
    withdrawn: &[String],
    still_there: &[String],
    unread: &[String],
) -> String {
    let mut left = Vec::new();
    for e in observation.entries.iter().filter(|e| !e.refused) {
        let Read::Found(fact) = &e.read else {
            continue;
        };
        let what = format!("{} {}", kind_name(e.kind), observation.object);
        if withdrawn.contains(&what)
            || still_there
                .iter()
                .any(|s| s.starts_with(&format!("{what} ")))
        {
            continue;
        }
        let controller = fact.meta.controller.as_ref();
        if fact.meta.deletion.is_some() {
            left.push(format!("{what} is being deleted"));
        } else if let Some(refusal) =
            console.foreign(kind_name(e.kind), &observation.object, &fact.meta)
        {
            left.push(format!("{refusal}: it is left as it is"));
        } else if controller.is_none() {
            left.push(format!("{what} has no controller and is left as it is"));
        }
        // The console's own, not withdrawn: its kind's read failed,
        // which `unread` says.
    }
    left.extend(still_there.iter().cloned());
    left.extend(
        unread
            .iter()
            .map(|u| format!("{u}: what it holds is withdrawn once it can be read")),
    );
    let verb = if withdrawn.len() == 1 { "is" } else { "are" };
    if left.is_empty() {
        return if withdrawn.is_empty() {
            "nothing is published under it and status.url is cleared".to_owned()
        } else {
            format!(
                "{} {verb} withdrawn and status.url cleared",
                withdrawn.join(", ")
            )
        };
    }
    let mut parts = Vec::new();
    if !withdrawn.is_empty() {
        parts.push(format!("{} {verb} withdrawn", withdrawn.join(", ")));
    }
    parts.extend(left);
    format!("{}; status.url is cleared", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::mock::{MockFacts, exposure_kind_ref, meta};
    use reconciler_guest_sdk::{Admission, Availability, ExposureFact, ExposureKind};
    use serde_json::{Value, json};

    fn route(admission: Admission) -> ExposureFact {
        ExposureFact {
            meta: meta("team-b", "orders-console"),
            kind: ExposureKind::Route,
            hostnames: vec!["orders.apps.example.com".into()],
            admission,
        }
    }

    fn observe_with(
        facts: &MockFacts,
        requested: Option<ExposureKind>,
        status: Value,
    ) -> Observation {
        let meta = meta("team-b", "orders");
        observe(
            facts,
            &Parent::of("PgToolBoxConsole", &meta),
            "orders-console",
            requested,
            &status,
        )
    }

    fn refused(kind: ExposureKind) -> MockFacts {
        MockFacts::at(0).with_availability(
            &exposure_kind_ref(kind),
            "team-b",
            Availability::Forbidden,
        )
    }

    #[test]
    fn what_is_published_prefers_what_is_found_then_what_may_remain() {
        let facts = MockFacts::at(0).with_exposure(route(Admission::Admitted));
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        assert_eq!(
            decide(&o, Some("orders.apps.example.com"))
                .condition
                .message,
            "Route orders-console is admitted: the console is at https://orders.apps.example.com"
        );
        assert_eq!(published(&o), Published::Found(ExposureKind::Route));
        let o = observe_with(
            &refused(ExposureKind::Route),
            Some(ExposureKind::Route),
            json!({}),
        );
        assert_eq!(published(&o), Published::Unreadable(ExposureKind::Route));
        let o = observe_with(
            &refused(ExposureKind::Route),
            Some(ExposureKind::Ingress),
            json!({"publishedExposureKinds": ["Route"]}),
        );
        assert_eq!(published(&o), Published::Unreadable(ExposureKind::Route));
        let o = observe_with(&MockFacts::at(0), Some(ExposureKind::Route), json!({}));
        assert_eq!(published(&o), Published::Nothing);
    }

    #[test]
    fn the_withdrawal_names_what_is_deleted_and_what_is_left() {
        let parent_meta = meta("team-b", "orders");
        let console = Parent::of("PgToolBoxConsole", &parent_meta);
        let mut foreign = route(Admission::Admitted);
        foreign.meta.controller = Some(reconciler_guest_sdk::ControllerRef {
            api_version: "v1".into(),
            kind: "Service".into(),
            name: "legacy".into(),
            uid: "uid-legacy".into(),
        });
        let facts = MockFacts::at(0).with_exposure(foreign);
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        assert_eq!(
            withdrawn(&o, &console, &[], &[], &[]),
            "Route orders-console exists and is controlled by Service legacy, not by PgToolBoxConsole orders: it is left as it is; status.url is cleared"
        );
        let o = observe_with(&MockFacts::at(0), Some(ExposureKind::Route), json!({}));
        assert_eq!(
            withdrawn(&o, &console, &["Ingress orders-console".into()], &[], &[]),
            "Ingress orders-console is withdrawn and status.url cleared"
        );
        assert_eq!(
            withdrawn(
                &o,
                &console,
                &[],
                &[],
                &["could not read the console's Routes: x".into()]
            ),
            "could not read the console's Routes: x: what it holds is withdrawn once it can be read; status.url is cleared"
        );
        let facts = MockFacts::at(0).with_exposure(route(Admission::Admitted));
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        assert_eq!(
            withdrawn(&o, &console, &[], &[], &[]),
            "Route orders-console has no controller and is left as it is; status.url is cleared"
        );
        // A withdrawal the host has not made is not said to be made.
        let still = "Route orders-console is still there: the API server refused its deletion (403 Forbidden: no)";
        assert_eq!(
            withdrawn(&o, &console, &[], &[still.into()], &[]),
            format!("{still}; status.url is cleared")
        );
    }
}
