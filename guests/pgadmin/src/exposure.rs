//! ExposureReady of a PgAdmin: the SDK's exposure (`reconciler_guest_sdk::exposure`, shared with the PgToolBoxConsole) in pgAdmin's words, for the Route, Ingress or HTTPRoute `<name>-pgadmin`.

pub use reconciler_guest_sdk::exposure::{
    EXPOSURE_KINDS, Entry, Exposure, Observation, PUBLISHED_KINDS_FIELD, URL_FIELD, Url, kind_name,
    observe, with_sentences,
};

/// ExposureReady of a PgAdmin whose configuration is valid and whose
/// hostname is allowed.
pub fn decide(observation: &Observation, hostname: Option<&str>) -> Exposure {
    reconciler_guest_sdk::exposure::decide(observation, hostname, "pgAdmin")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::*;
    use reconciler_guest_sdk::mock::{MockFacts, exposure_kind_ref, meta};
    use reconciler_guest_sdk::ownership::Parent;
    use reconciler_guest_sdk::{
        Admission, Availability, ConditionStatus, ExposureFact, ExposureKind,
    };
    use serde_json::{Value, json};

    fn route(admission: Admission) -> ExposureFact {
        ExposureFact {
            meta: meta("team-b", "orders-pgadmin"),
            kind: ExposureKind::Route,
            hostnames: vec!["orders.apps.example.com".into()],
            admission,
        }
    }

    fn decided(facts: &MockFacts, status: Value) -> (Exposure, Observation) {
        let meta = meta("team-b", "orders");
        let o = observe(
            facts,
            &Parent::of("PgAdmin", &meta),
            "orders-pgadmin",
            Some(ExposureKind::Route),
            &status,
        );
        (decide(&o, Some("orders.apps.example.com")), o)
    }

    #[test]
    fn an_admitted_route_sets_the_url_and_a_refused_one_is_not_admitted() {
        let facts = MockFacts::at(0).with_exposure(route(Admission::Admitted));
        let (e, o) = decided(&facts, json!({}));
        assert_eq!(e.condition.status, ConditionStatus::True);
        assert_eq!(e.url, Url::Set("https://orders.apps.example.com".into()));
        assert_eq!(
            e.condition.message,
            "Route orders-pgadmin is admitted: pgAdmin is at https://orders.apps.example.com"
        );
        assert_eq!(o.published_kinds(), json!(["Route"]));
        let facts =
            MockFacts::at(0).with_exposure(route(Admission::Refused("HostAlreadyClaimed".into())));
        let (e, _) = decided(&facts, json!({}));
        assert_eq!(e.condition.reason, NOT_ADMITTED);
        assert!(e.condition.message.contains("HostAlreadyClaimed"));
    }

    #[test]
    fn a_route_refused_after_it_was_published_may_remain() {
        let facts = MockFacts::at(0).with_availability(
            &exposure_kind_ref(ExposureKind::Route),
            "team-b",
            Availability::Forbidden,
        );
        let (e, o) = decided(&facts, json!({"publishedExposureKinds": ["Route"]}));
        assert_eq!(e.condition.reason, ROUTE_API_UNAVAILABLE);
        let c = with_sentences(e.condition, &o.may_remain(&[]));
        assert!(c.message.ends_with("the operator may not read Routes in team-b: a Route orders-pgadmin published before may remain; delete it by hand"), "{}", c.message);
    }

    #[test]
    fn cluster_ip_is_not_requested() {
        let meta = meta("team-b", "orders");
        let o = observe(
            &MockFacts::at(0),
            &Parent::of("PgAdmin", &meta),
            "orders-pgadmin",
            None,
            &json!({}),
        );
        let e = decide(&o, None);
        assert_eq!(
            (e.condition.status, e.condition.reason.as_str()),
            (ConditionStatus::True, NOT_REQUESTED)
        );
        assert_eq!(e.url, Url::Clear);
    }
}
