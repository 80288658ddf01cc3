//! The children a console asks for: each exposure type rendered in full, the withdrawal of a refused hostname's exposure (paused too), a switch of exposure type, nothing while stalled, paused or unread, ResourceNotOwned before any change, the ExposurePolicyInvalid hold-back, the RoleBindings and the instance CA bundle.

use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::{Availability, Change, ConditionStatus, ExposureKind};
use serde_json::{Value, json};

use crate::common::*;
use crate::reasons::aspect;
use reconciler_guest_sdk::testing::assert_stall;

/// Each change in a line: `apply Kind name`, `delete Kind name uid`,
/// `withdraw Kind name uid`,
/// `bundle name secret/key,...`.
fn summary(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| match c {
            Change::Apply(a) => format!("apply {} {}", a.kind.kind, a.name),
            Change::Delete(d) => format!("delete {} {} {}", d.kind.kind, d.name, d.uid),
            Change::Withdraw(w) => format!(
                "withdraw {} {} {}",
                w.object.kind.kind, w.object.name, w.object.uid
            ),
            Change::Bundle(b) => format!(
                "bundle {} {}",
                b.name,
                b.sources
                    .iter()
                    .map(|(s, k)| format!("{s}/{k}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            other => format!("{other:?}"),
        })
        .collect()
}

/// The body of the apply of `kind` `name`.
fn body(changes: &[Change], kind: &str, name: &str) -> Value {
    changes
        .iter()
        .find_map(|c| match c {
            Change::Apply(a) if a.kind.kind == kind && a.name == name => {
                Some(serde_json::from_str(&a.body).expect("JSON body"))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no apply of {kind} {name} in {:?}", summary(changes)))
}

const WORKLOAD: [&str; 6] = [
    "apply ServiceAccount orders-console",
    "apply RoleBinding orders-console",
    "apply RoleBinding orders-console-pod-logs",
    "bundle orders-instance-ca ",
    "apply Deployment orders-console",
    "apply Service orders-console",
];

fn with_workload(first: &[&str], last: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(&WORKLOAD)
        .chain(last)
        .map(|s| (*s).to_owned())
        .collect()
}

#[test]
fn a_route_console_renders_every_child() {
    let r = reconcile(parent(), SETTINGS, &World::healthy());
    assert_eq!(
        summary(&r.changes),
        with_workload(
            &["apply NetworkPolicy orders-ingress"],
            &["apply Route orders-console"]
        )
    );
    let policy = body(&r.changes, "NetworkPolicy", "orders-ingress");
    assert_eq!(
        policy["spec"]["ingress"],
        json!([{"from": [{"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}}],
                "ports": [{"protocol": "TCP", "port": 8080}]}])
    );
    let route = body(&r.changes, "Route", "orders-console");
    assert_eq!(route["spec"]["host"], HOST);
    assert!(route["metadata"].get("namespace").is_none());
    assert!(route["metadata"].get("ownerReferences").is_none());
    // No policy in force yet: the Pods carry no grant.
    let deployment = body(&r.changes, "Deployment", "orders-console");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["pgtoolbox.fyannk.dev/xff-trust"],
        "none"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "orders-instance-ca"
    );
}

#[test]
fn an_ingress_console_renders_its_ingress_and_policy() {
    let nginx = json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}});
    let spec = json!({"exposure": {"type": "ingress", "hostname": HOST, "tls": {"secretName": "orders-tls"},
                                   "networkPolicy": {"from": [nginx]}}});
    let world = World::healthy().without_children();
    let r = reconcile(parent_with(spec), SETTINGS, &world);
    assert_eq!(
        summary(&r.changes),
        with_workload(
            &["apply NetworkPolicy orders-ingress"],
            &["apply Ingress orders-console"]
        )
    );
    let ingress = body(&r.changes, "Ingress", "orders-console");
    assert_eq!(ingress["spec"]["tls"][0]["secretName"], "orders-tls");
    assert_eq!(
        body(&r.changes, "NetworkPolicy", "orders-ingress")["spec"]["ingress"][0]["from"],
        json!([nginx])
    );
}

#[test]
fn a_gateway_console_without_from_renders_its_http_route_and_no_policy() {
    let spec = json!({"exposure": {"type": "gateway", "hostname": HOST,
                                   "gateway": {"parentRef": {"name": "public", "namespace": "gateways"}}}});
    let world = World::healthy().without_children();
    let r = reconcile(parent_with(spec), SETTINGS, &world);
    assert_eq!(
        summary(&r.changes),
        with_workload(&[], &["apply HTTPRoute orders-console"])
    );
    let route = body(&r.changes, "HTTPRoute", "orders-console");
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"name": "public", "namespace": "gateways"}])
    );
    assert_eq!(route["spec"]["hostnames"], json!([HOST]));
}

#[test]
fn a_switch_of_exposure_type_withdraws_the_old_kind_by_its_uid() {
    let world = World::healthy()
        .with_child(network_policy_kind(), "orders-ingress")
        .with_child(role_binding_kind(), "orders-console-restore-drills");
    let r = reconcile(
        parent_with(json!({"exposure": {"type": "clusterIP"}})),
        SETTINGS,
        &world,
    );
    assert_eq!(
        summary(&r.changes),
        with_workload(
            &[],
            &[
                "withdraw Route orders-console uid-team-b-orders-console",
                "delete RoleBinding orders-console-restore-drills uid-team-b-orders-console-restore-drills",
                "delete NetworkPolicy orders-ingress uid-team-b-orders-ingress",
            ]
        )
    );
}

#[test]
fn a_refused_hostname_withdraws_the_console_s_exposure_and_nothing_else() {
    let refused = parent_with(json!({"exposure": {"type": "route", "hostname": "orders.evil.io"}}));
    let world = World::healthy().with_child(network_policy_kind(), "orders-ingress");
    let r = reconcile(refused.clone(), SETTINGS, &world);
    let withdrawn = ["withdraw Route orders-console uid-team-b-orders-console"];
    assert_eq!(summary(&r.changes), withdrawn);
    // Paused too (seed: "while the object is paused ... too").
    let r = reconcile_paused(refused.clone(), SETTINGS, &world);
    assert_eq!(summary(&r.changes), withdrawn);
    assert_eq!(
        aspect(&r.verdict, EXPOSURE_READY).message,
        "spec.exposure.hostname \"orders.evil.io\" is outside the operator's allowedHostSuffixes (.apps.example.com): Route orders-console is withdrawn and status.url cleared"
    );
    // Another's object under the name is left as it is, and said so.
    let mut world = World::healthy().without_children();
    world.exposures[0].meta.controller = Some(someone_else());
    let r = reconcile(refused, SETTINGS, &world);
    assert!(r.changes.is_empty());
    let m = &aspect(&r.verdict, EXPOSURE_READY).message;
    assert!(
        m.ends_with("Route orders-console exists and is controlled by Deployment legacy-console, not by PgToolBoxConsole orders: it is left as it is; status.url is cleared"),
        "{m}"
    );
}

#[test]
fn nothing_is_asked_for_while_paused_stalled_or_unread() {
    let r = reconcile_paused(parent(), SETTINGS, &World::healthy());
    assert!(r.changes.is_empty());
    let mut spec = route_spec();
    spec["image"] = json!("docker.io/x/y:1");
    let r = reconcile(parent_with(spec), SETTINGS, &World::healthy());
    assert_stall(&r.verdict, IMAGE_NOT_ALLOWED, "docker.io/x/y");
    assert!(r.changes.is_empty());
    let mut world = World::healthy();
    world
        .failing
        .push(("workload".into(), "orders-console".into()));
    let r = reconcile(parent(), SETTINGS, &world);
    assert!(r.changes.is_empty());
    assert_eq!(r.verdict.requeue_after_seconds, Some(30));
}

#[test]
fn a_child_of_someone_else_stalls_before_anything_is_asked_for() {
    let foreign = |kind: &str, name: &str| {
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": NS,
               "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "legacy-console",
                                    "uid": "uid-someone-else", "controller": true}]}})
    };
    for (kind, name) in [
        (service_kind(), "orders-console"),
        (service_account_kind(), "orders-console"),
        (role_binding_kind(), "orders-console-pod-logs"),
        (network_policy_kind(), "orders-ingress"),
        (route_kind(), "orders-console"),
    ] {
        let world = World::healthy()
            .without_children()
            .with_object(kind.clone(), foreign(&kind.kind, name));
        let r = reconcile(parent(), SETTINGS, &world);
        assert_stall(
            &r.verdict,
            RESOURCE_NOT_OWNED,
            &format!(
                "{} {name} exists and is controlled by Deployment legacy-console, not by PgToolBoxConsole orders",
                kind.kind
            ),
        );
        assert!(r.changes.is_empty(), "{}", kind.kind);
    }
}

#[test]
fn a_refused_policy_is_held_back_for_five_minutes_then_asked_for_again() {
    let refused = World::healthy().refused_policy(422, "Invalid", "bad label");
    let r = reconcile(evaluated(parent()), SETTINGS, &refused);
    assert_stall(
        &r.verdict,
        EXPOSURE_POLICY_INVALID,
        "(422 Invalid): bad label",
    );
    assert!(
        aspect(&r.verdict, CONFIGURATION_VALID)
            .message
            .contains("asked for again at 2026-11-29T12:04:00Z")
    );
    assert!(r.changes.is_empty());
    assert_eq!(r.verdict.requeue_after_seconds, Some(240));
    // Five minutes after the refusal: asked for again.
    let mut later = refused;
    later.last_apply_at = Some(NOW - 300);
    let r = reconcile(evaluated(parent()), SETTINGS, &later);
    assert_eq!(
        aspect(&r.verdict, CONFIGURATION_VALID).status,
        ConditionStatus::True
    );
    assert_eq!(summary(&r.changes)[0], "apply NetworkPolicy orders-ingress");
    // A changed spec is asked for at once.
    let mut changed = later;
    changed.last_apply_at = Some(NOW - 60);
    let r = reconcile(
        with_status(parent(), json!({"observedGeneration": 0})),
        SETTINGS,
        &changed,
    );
    assert!(r.verdict.stall.is_none());
    assert_eq!(summary(&r.changes)[0], "apply NetworkPolicy orders-ingress");
}

#[test]
fn role_bindings_follow_pod_logs_and_restore_drills() {
    let world = World::healthy().with_child(role_binding_kind(), "orders-console-pod-logs");
    let mut spec = route_spec();
    spec["podLogs"] = json!(false);
    spec["restoreDrills"] = json!({"enabled": true});
    let r = reconcile(parent_with(spec), SETTINGS, &world);
    let s = summary(&r.changes);
    assert!(s.contains(&"apply RoleBinding orders-console-restore-drills".to_owned()));
    assert!(!s.contains(&"apply RoleBinding orders-console-pod-logs".to_owned()));
    assert_eq!(
        s.last().unwrap(),
        "delete RoleBinding orders-console-pod-logs uid-team-b-orders-console-pod-logs"
    );
    let binding = body(&r.changes, "RoleBinding", "orders-console-restore-drills");
    assert_eq!(
        binding["roleRef"]["name"],
        "pgtoolbox-console-restore-drills"
    );
    assert_eq!(binding["subjects"][0]["namespace"], NS);
}

#[test]
fn the_instance_ca_bundle_mirrors_the_selected_clusters() {
    let mut world = World::healthy();
    world.clusters = vec![
        cluster("pg-a", "b"),
        cluster("pg-b", "b"),
        cluster("pg-c", "b"),
    ];
    world.certificates = vec![ca("pg-a-ca", "aa"), ca("pg-b-ca", "bb")];
    let mut spec = route_spec();
    spec["clusterSelector"] = json!({"matchLabels": {"team": "b"}});
    let r = reconcile(parent_with(spec.clone()), SETTINGS, &world);
    assert!(
        summary(&r.changes)
            .contains(&"bundle orders-instance-ca pg-a-ca/ca.crt,pg-b-ca/ca.crt".to_owned())
    );

    // The user's own bundle: mounted, the mirror deleted.
    spec["instanceCABundleRef"] = json!({"name": "instance-cas"});
    let world = World::healthy()
        .with_config_map("instance-cas")
        .with_child(config_map_kind(), "orders-instance-ca");
    let r = reconcile(parent_with(spec), SETTINGS, &world);
    let s = summary(&r.changes);
    assert!(!s.iter().any(|c| c.starts_with("bundle")));
    assert_eq!(
        s.last().unwrap(),
        "delete ConfigMap orders-instance-ca uid-team-b-orders-instance-ca"
    );
    let pod = &body(&r.changes, "Deployment", "orders-console")["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][0]["configMap"]["name"], "instance-cas");

    // Another's ConfigMap under the mirror's name: neither written nor mounted.
    let mut world = World::healthy().with_config_map("orders-instance-ca");
    world
        .controllers
        .insert("orders-instance-ca".into(), someone_else());
    let r = reconcile(parent(), SETTINGS, &world);
    assert!(!summary(&r.changes).iter().any(|c| c.starts_with("bundle")));
    let pod = &body(&r.changes, "Deployment", "orders-console")["spec"]["template"]["spec"];
    assert!(pod.get("volumes").is_none());
    assert_eq!(pod["containers"][0]["env"][2]["value"], "none");
}

#[test]
fn a_kind_the_cluster_does_not_serve_is_not_asked_for() {
    let world = World::healthy()
        .without_children()
        .kind(ExposureKind::Route, Availability::NotServed);
    let r = reconcile(parent(), SETTINGS, &world);
    assert_eq!(
        aspect(&r.verdict, EXPOSURE_READY).reason,
        ROUTE_API_UNAVAILABLE
    );
    assert!(!summary(&r.changes).iter().any(|c| c.contains("Route")));
    assert!(summary(&r.changes).contains(&"apply Deployment orders-console".to_owned()));
}
