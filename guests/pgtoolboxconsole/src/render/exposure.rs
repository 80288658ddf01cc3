//! The exposure object `<name>-console` (a Route, an Ingress or an HTTPRoute, per `spec.exposure.type`), and the withdrawal of the console's own ones no longer wanted.

use reconciler_guest_sdk::{Availability, Change, ExposureKind, Facts, KindRef, change, read};
use serde_json::{Value, json};

use super::{head, object};
use crate::children::{CONSOLE_PORT, CONSOLE_PORT_NAME};
use crate::exposure::{Entry, Observation};
use crate::registry::exposure_kind;

/// Every exposure kind, in the order they are looked at.
pub const KINDS: [ExposureKind; 3] = [
    ExposureKind::Route,
    ExposureKind::Ingress,
    ExposureKind::HttpRoute,
];

/// What the exposure publishes.
#[derive(Clone, Copy, Debug)]
pub struct Published<'a> {
    /// `<name>-console`: the exposure object and the Service it sends to.
    pub object: &'a str,
    pub hostname: &'a str,
    /// `spec.exposure.tls.secretName` (Ingress).
    pub tls_secret: Option<&'a str>,
    /// `spec.exposure.gateway.parentRef` (HTTPRoute): name, and namespace
    /// when given.
    pub gateway: Option<(&'a str, Option<&'a str>)>,
}

/// The exposure object of `kind` for `published`.
pub fn body(console: &str, kind: ExposureKind, published: &Published) -> Value {
    let Published {
        object: name,
        hostname,
        ..
    } = *published;
    match kind {
        // Edge TLS with the router's certificate; plain HTTP redirected.
        ExposureKind::Route => object(
            head("route.openshift.io/v1", "Route", name, console),
            json!({"spec": {
                "host": hostname,
                "to": {"kind": "Service", "name": name},
                "port": {"targetPort": CONSOLE_PORT_NAME},
                "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"},
            }}),
        ),
        ExposureKind::Ingress => {
            let mut spec = json!({"rules": [{"host": hostname, "http": {"paths": [{
                "path": "/",
                "pathType": "Prefix",
                "backend": {"service": {"name": name, "port": {"name": CONSOLE_PORT_NAME}}},
            }]}}]});
            if let Some(secret) = published.tls_secret {
                spec["tls"] = json!([{"hosts": [hostname], "secretName": secret}]);
            }
            object(
                head("networking.k8s.io/v1", "Ingress", name, console),
                json!({ "spec": spec }),
            )
        }
        ExposureKind::HttpRoute => {
            let parent = match published.gateway {
                Some((gateway, Some(namespace))) => {
                    json!({"name": gateway, "namespace": namespace})
                }
                Some((gateway, None)) => json!({"name": gateway}),
                None => json!({}),
            };
            object(
                head("gateway.networking.k8s.io/v1", "HTTPRoute", name, console),
                json!({"spec": {
                    "parentRefs": [parent],
                    "hostnames": [hostname],
                    "rules": [{"backendRefs": [{"name": name, "port": CONSOLE_PORT}]}],
                }}),
            )
        }
    }
}

/// The console's own exposure objects named `object` of every kind but
/// `keep`, to be deleted.
#[derive(Debug, Default)]
pub struct Withdrawal {
    /// Their deletions, each by the UID seen.
    pub deletes: Vec<Change>,
    /// What the host deleted, e.g. `Route orders-console`.
    pub withdrawn: Vec<String>,
    /// What is asked to be deleted and is still there, and why
    /// (`facts.change-state`).
    pub still_there: Vec<String>,
    /// The reads of the console's children that failed (their deletion
    /// waits for a pass that reads them).
    pub unread: Vec<String>,
}

/// Finds the console's own exposure objects named `object` of every kind
/// but `keep` among `facts.children`, for each kind the namespace serves
/// and the operator may read there (what it may not read it may not
/// delete either: the may-remain sentence says so). Objects being deleted
/// are left to finish.
pub fn withdraw(
    facts: &dyn Facts,
    observation: &Observation,
    keep: Option<ExposureKind>,
) -> Withdrawal {
    let (namespace, object) = (observation.namespace.as_str(), observation.object.as_str());
    let mut withdrawal = Withdrawal::default();
    for kind in KINDS.into_iter().filter(|k| Some(*k) != keep) {
        let api = exposure_kind(kind);
        if facts.api_availability(&api, namespace) != Availability::Available {
            // A kind refused to a list: what the pass read past the cache.
            if let Some(uid) = observation
                .entries
                .iter()
                .find(|e| e.kind == kind)
                .and_then(Entry::withdrawable_uid)
            {
                withdrawal.deletes.push(reconciler_guest_sdk::withdraw(
                    api.clone(),
                    object.to_owned(),
                    uid.to_owned(),
                    None,
                ));
                withdrawal.said(facts, &api, namespace, object);
            }
            continue;
        }
        let children = match facts.children(&api) {
            Ok(children) => children,
            Err(e) => {
                withdrawal.unread.push(read::failure(
                    &format!("the console's {}", crate::children::kind_plural(kind)),
                    &e,
                ));
                continue;
            }
        };
        for child in children
            .iter()
            .filter(|c| c.meta.name == object && c.meta.deletion.is_none())
        {
            withdrawal.deletes.push(reconciler_guest_sdk::withdraw(
                api.clone(),
                child.meta.name.clone(),
                child.meta.uid.clone(),
                None,
            ));
            withdrawal.said(facts, &api, namespace, &child.meta.name);
        }
    }
    withdrawal
}

impl Withdrawal {
    /// Says the deletion of `name` (of `api`): withdrawn once the host
    /// made it, else still there and why.
    fn said(&mut self, facts: &dyn Facts, api: &KindRef, namespace: &str, name: &str) {
        let what = format!("{} {name}", api.kind);
        let state = facts.change_state(api, namespace, name);
        match change::not_withdrawn(&what, state.as_ref()) {
            None => self.withdrawn.push(what),
            Some(still) => self.still_there.push(still),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::mock::{MockFacts, meta};
    use reconciler_guest_sdk::ownership::Parent;
    use reconciler_guest_sdk::{ApplyOutcome, ExposureFact};

    const PUBLISHED: Published = Published {
        object: "orders-console",
        hostname: "orders.apps.example.com",
        tls_secret: Some("orders-tls"),
        gateway: Some(("public", Some("gateways"))),
    };

    #[test]
    fn each_kind_sends_the_host_to_the_service() {
        let route = body("orders", ExposureKind::Route, &PUBLISHED);
        assert_eq!(route["spec"]["host"], "orders.apps.example.com");
        assert_eq!(route["spec"]["to"]["name"], "orders-console");
        let ingress = body("orders", ExposureKind::Ingress, &PUBLISHED);
        assert_eq!(
            ingress["spec"]["tls"],
            json!([{"hosts": ["orders.apps.example.com"], "secretName": "orders-tls"}])
        );
        assert_eq!(
            ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"],
            json!({"service": {"name": "orders-console", "port": {"name": "http"}}})
        );
        let http_route = body("orders", ExposureKind::HttpRoute, &PUBLISHED);
        assert_eq!(
            http_route["spec"]["parentRefs"],
            json!([{"name": "public", "namespace": "gateways"}])
        );
        assert_eq!(
            http_route["spec"]["rules"],
            json!([{"backendRefs": [{"name": "orders-console", "port": 8080}]}])
        );
        let bare = Published {
            tls_secret: None,
            gateway: Some(("public", None)),
            ..PUBLISHED
        };
        assert!(
            body("orders", ExposureKind::Ingress, &bare)["spec"]
                .get("tls")
                .is_none()
        );
        assert_eq!(
            body("orders", ExposureKind::HttpRoute, &bare)["spec"]["parentRefs"],
            json!([{"name": "public"}])
        );
    }

    /// The exposure objects of the console `orders` in `team-b`, which
    /// requests none and recorded a Route as published.
    fn observed(facts: &MockFacts) -> Observation {
        let meta = meta("team-b", "orders");
        crate::exposure::observe(
            facts,
            &Parent::of("PgToolBoxConsole", &meta),
            "orders-console",
            None,
            &json!({"publishedExposureKinds": ["Route"]}),
        )
    }

    fn child(kind: &str, name: &str, uid: &str) -> Value {
        json!({"apiVersion": "v1", "kind": kind,
               "metadata": {"name": name, "namespace": "team-b", "uid": uid}})
    }

    #[test]
    fn only_the_console_s_own_objects_of_other_kinds_are_withdrawn() {
        let facts = MockFacts::at(0)
            .with_child(
                &exposure_kind(ExposureKind::Route),
                child("Route", "orders-console", "u1"),
            )
            .with_child(
                &exposure_kind(ExposureKind::Ingress),
                child("Ingress", "orders-console", "u2"),
            )
            .with_child(
                &exposure_kind(ExposureKind::Ingress),
                child("Ingress", "other", "u3"),
            );
        let w = withdraw(&facts, &observed(&facts), Some(ExposureKind::Ingress));
        assert_eq!(w.withdrawn, ["Route orders-console"]);
        assert_eq!(
            w.deletes,
            [reconciler_guest_sdk::withdraw(
                exposure_kind(ExposureKind::Route),
                "orders-console",
                "u1",
                None
            )]
        );
        let all = withdraw(&facts, &observed(&facts), None);
        assert_eq!(
            all.withdrawn,
            ["Route orders-console", "Ingress orders-console"]
        );
    }

    #[test]
    fn a_kind_not_served_or_refused_is_not_looked_at() {
        let facts = MockFacts::at(0)
            .with_child(
                &exposure_kind(ExposureKind::Route),
                child("Route", "orders-console", "u1"),
            )
            .with_availability(
                &exposure_kind(ExposureKind::Route),
                "team-b",
                Availability::Forbidden,
            )
            .failing("children", "HTTPRoute");
        let w = withdraw(&facts, &observed(&facts), None);
        assert!(w.deletes.is_empty());
        assert_eq!(w.unread.len(), 1);
        assert!(w.unread[0].contains("the console's HTTPRoutes"));
    }

    /// Seed 000 (RouteAPIUnavailable): a Route published before its kind
    /// was refused is read past the cache and "deleted when it is owned
    /// and no longer wanted (the same UID)"; its deletion refused, the
    /// sentence says it may remain instead.
    #[test]
    fn a_route_read_past_the_cache_is_withdrawn_by_its_uid_unless_refused_before() {
        let route = exposure_kind(ExposureKind::Route);
        let mut own = meta("team-b", "orders-console");
        own.uid = "u-route".into();
        own.controller = Some(reconciler_guest_sdk::ControllerRef {
            api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
            kind: "PgToolBoxConsole".into(),
            name: "orders".into(),
            uid: "uid-team-b-orders".into(),
        });
        let found = ExposureFact {
            meta: own.clone(),
            kind: ExposureKind::Route,
            hostnames: vec!["orders.apps.example.com".into()],
            admission: reconciler_guest_sdk::Admission::Admitted,
        };
        let facts = MockFacts::at(0)
            .with_availability(&route, "team-b", Availability::Forbidden)
            .with_direct_get(&route, "team-b")
            .with_exposure(found.clone());
        let o = observed(&facts);
        let w = withdraw(&facts, &o, None);
        assert_eq!(w.withdrawn, ["Route orders-console"]);
        assert_eq!(
            w.deletes,
            [reconciler_guest_sdk::withdraw(
                route.clone(),
                "orders-console",
                "u-route",
                None
            )]
        );
        assert!(o.may_remain(&w.deletes).is_empty(), "deleted, not left");

        let refused = facts.with_last_apply(
            &route,
            "team-b",
            "orders-console",
            ApplyOutcome::Refused(reconciler_guest_sdk::ApplyRefusal {
                code: 403,
                reason: "Forbidden".into(),
                message: "routes.route.openshift.io \"orders-console\" is forbidden".into(),
            }),
        );
        let o = observed(&refused);
        let w = withdraw(&refused, &o, None);
        assert!(w.deletes.is_empty());
        assert_eq!(
            o.may_remain(&w.deletes),
            [
                "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand"
            ]
        );

        let mut another = found;
        another.meta.controller = None;
        let facts = MockFacts::at(0)
            .with_availability(&route, "team-b", Availability::Forbidden)
            .with_direct_get(&route, "team-b")
            .with_exposure(another);
        let o = observed(&facts);
        assert!(
            withdraw(&facts, &o, None).deletes.is_empty(),
            "not the console's"
        );
        assert_eq!(o.may_remain(&[]).len(), 1);
    }
}
