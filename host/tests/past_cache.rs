//! A Route published before its kind was refused, read past the cache,
//! against the real local API server (its own, in this binary: it serves
//! OpenShift's Route kind, which the other test servers do not).
//!
//! Seed 000 (RouteAPIUnavailable): "A Route or HTTPRoute the object
//! published before its kind was refused in its namespace is no longer in
//! the cache: the operator reads it past the cache once per loop, deletes
//! it when it is owned and no longer wanted (the same UID), and otherwise
//! (the requested kind, its deletion refused, or the read itself refused
//! while one may have been published ...) appends a fixed sentence to
//! ExposureReady's message, whatever the reason".
//!
//! A first host, with every permission, publishes the console through a
//! Route. The console then asks for an Ingress, and the host is started
//! again as a user that may not list Routes in the namespace (so its watch
//! of them is off there) but may GET them: first without the right to
//! delete them (the Route stays, one refused deletion, the sentence), then
//! with it (the Route is deleted by its UID, the sentence goes, and the
//! status no longer records a Route).
//!
//! Nothing here asserts timing: every expectation is polled with a timeout.

use reconciler_host_harness::console_objects;
use reconciler_host_harness::identity::{self, cluster_role_binding, role_binding};
use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use reconciler_testsupport::{Access, TestNamespace, await_access};
use serde_json::{Value, json};

use console_objects::{CONSOLE_ROLE, console, consoles, ensure_cluster_role, workload_name};
use harness::{Guests, Host, eventually, fixture, fixture_of, get, install_crds, settle, summary};
use objects::{api, create, merge};

/// The console guest, whose second host is refused Routes in the test's
/// namespace (what the test does on purpose).
const GUESTS: Guests = Guests {
    dir: "past-cache-tests",
    crates: &["pgtoolboxconsole-guest"],
    settings: &[
        "PgToolBoxConsole.defaultConsoleImage=ghcr.io/fyannk/pgtoolbox-console:1.0",
        "PgToolBoxConsole.allowedImageRepositories=ghcr.io/fyannk/",
        "PgToolBoxConsole.allowedHostSuffixes=.apps.example.com",
    ],
    expected_warnings: &[
        "optional API not served: the feature is off until the next start kind=gateway.networking.k8s.io/v1/HTTPRoute",
        "optional API refused (403): off in these namespaces kind=route.openshift.io/v1/Route",
        // The refused deletion fails its pass once (ReconcileError).
        "children not made",
    ],
};

const NAME: &str = "orders";
const HOSTNAME: &str = "orders.apps.example.com";

/// OpenShift's Route kind, as far as the console writes and reads it.
fn route_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.route.openshift.io"},
        "spec": {
            "group": "route.openshift.io",
            "scope": "Namespaced",
            "names": {"plural": "routes", "singular": "route", "kind": "Route", "listKind": "RouteList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    }))
    .expect("a CRD")
}

/// The host's permissions as `reconciler-host rbac` renders them for the
/// console, but Routes, bound cluster-wide to `user`; in `namespace`,
/// Routes with only `route_verbs`.
async fn grant_without_route_lists(
    client: &Client,
    user: &str,
    namespace: &str,
    route_verbs: &[&str],
) {
    let role = format!("{user}-host");
    let mut rendered = reconciler_host::rbac::cluster_role(
        &role,
        &[&fixture().spec],
        &reconciler_host::rbac::offline,
    );
    for rule in rendered["rules"].as_array_mut().expect("rules") {
        if let Some(resources) = rule["resources"].as_array_mut() {
            resources.retain(|r| r != "routes");
        }
    }
    rendered["rules"]
        .as_array_mut()
        .expect("rules")
        .retain(|r| r["resources"].as_array().is_some_and(|a| !a.is_empty()));
    identity::apply_rbac(client, rendered).await;
    identity::apply_rbac(client, cluster_role_binding(&role, user)).await;
    identity::apply_rbac(
        client,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "routes-one-by-one", "namespace": namespace},
            "rules": [{"apiGroups": ["route.openshift.io"], "resources": ["routes"], "verbs": route_verbs}],
        }),
    )
    .await;
    identity::apply_rbac(
        client,
        role_binding(
            namespace,
            "routes-one-by-one",
            "Role",
            "routes-one-by-one",
            user,
        ),
    )
    .await;
    let may = |verb| Access {
        verb,
        group: "route.openshift.io",
        resource: "routes",
        namespace: Some(namespace),
    };
    let wanted: Vec<Access> = route_verbs.iter().map(|v| may(v)).collect();
    await_access(client, user, &[], &wanted)
        .await
        .expect("the grants take effect");
}

fn exposure_ready(console: &Value) -> (String, String, String) {
    let c = harness::condition(console, "ExposureReady").expect("ExposureReady");
    (c.status, c.reason, c.message)
}

fn sentence(ns: &str) -> String {
    format!(
        "the operator may not read Routes in {ns}: a Route {} published before may remain; delete it by hand",
        workload_name(NAME)
    )
}

#[tokio::test]
async fn a_route_published_before_its_kind_was_refused_is_read_past_the_cache_and_deleted_when_allowed()
 {
    fixture_of(&GUESTS);
    let ns = TestNamespace::new("past-cache")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    reconciler_testsupport::install_crd(&client, route_crd())
        .await
        .expect("installing the Route CRD");
    ensure_cluster_role(&client, CONSOLE_ROLE).await;
    let consoles = consoles(&client, ns.name());
    let routes = api(&client, ns.name(), "route.openshift.io/v1", "Route");
    let route_name = workload_name(NAME);

    // Published through a Route by a host with every permission.
    let uid = publish_through_a_route(&client, ns.name()).await;

    // Now an Ingress, served by a host that may GET Routes there, not list
    // or delete them.
    merge(
        &consoles,
        NAME,
        json!({"spec": {"exposure": {"type": "ingress", "hostname": HOSTNAME}}}),
    )
    .await;
    let user = format!("host-{}", ns.name());
    grant_without_route_lists(&client, &user, ns.name(), &["get"]).await;
    let kubeconfig = identity::kubeconfig_as(&user, &fixture().logs_dir);
    let refused = Host::start_with(
        &kubeconfig,
        &["--namespaces", ns.name()],
        &format!("{}-get-only", ns.name()),
    )
    .await;
    // The Ingress is recorded once a pass has made it: the first pass of
    // this host fails on the refused deletion (ReconcileError) before its
    // status can say so, and the next one does.
    eventually(
        "the sentence on ExposureReady, the Ingress recorded",
        async || {
            let o = get(&consoles, NAME).await;
            if exposure_ready(&o).2.ends_with(&sentence(ns.name()))
                && o["status"]["publishedExposureKinds"] == json!(["Route", "Ingress"])
            {
                Ok(o)
            } else {
                Err(summary(&o))
            }
        },
    )
    .await;
    settle().await;
    let delete_path = format!("/namespaces/{}/routes/{route_name}", ns.name());
    assert_eq!(
        refused.requests("DELETE", &delete_path),
        1,
        "one refused deletion, not asked again"
    );
    assert!(
        refused.requests("GET", &delete_path) >= 1,
        "read past the cache"
    );
    let still = routes
        .get_opt(&route_name)
        .await
        .expect("get")
        .expect("the Route stays");
    assert_eq!(still.metadata.uid.as_deref(), Some(uid.as_str()));
    assert!(refused.problems().is_empty(), "{:#?}", refused.problems());
    refused.finish();

    // Allowed to delete them: the next host deletes the Route by its UID.
    grant_without_route_lists(&client, &user, ns.name(), &["get", "delete"]).await;
    let allowed = Host::start_with(
        &kubeconfig,
        &["--namespaces", ns.name()],
        &format!("{}-get-delete", ns.name()),
    )
    .await;
    eventually("the Route deleted", async || {
        match routes.get_opt(&route_name).await.expect("get") {
            None => Ok(()),
            Some(r) => Err(r.metadata.uid),
        }
    })
    .await;
    let o = eventually("the Route no longer recorded, no sentence", async || {
        let o = get(&consoles, NAME).await;
        let (_, _, message) = exposure_ready(&o);
        if o["status"]["publishedExposureKinds"] == json!(["Ingress"])
            && !message.contains("may remain")
        {
            Ok(o)
        } else {
            Err(summary(&o))
        }
    })
    .await;
    settle().await;
    assert_eq!(
        allowed.requests("DELETE", &delete_path),
        1,
        "{:#?}",
        summary(&o)
    );
    assert!(allowed.problems().is_empty(), "{:#?}", allowed.problems());
    allowed.finish();
    ns.cleanup().await.unwrap();
}

/// The console published through a Route by a host with every permission,
/// recorded in status.publishedExposureKinds; the host stopped. The
/// Route's UID.
async fn publish_through_a_route(client: &kube::Client, ns: &str) -> String {
    let consoles = consoles(client, ns);
    let routes = api(client, ns, "route.openshift.io/v1", "Route");
    let route_name = workload_name(NAME);
    create(
        client,
        ns,
        console(
            NAME,
            json!({"exposure": {"type": "route", "hostname": HOSTNAME}, "podLogs": false}),
        ),
    )
    .await;
    let host = Host::start(ns).await;
    let route = eventually("the Route published", async || {
        routes.get_opt(&route_name).await.expect("get").ok_or(())
    })
    .await;
    let uid = route.metadata.uid.clone().expect("a uid");
    eventually(
        "status.publishedExposureKinds records the Route",
        async || {
            let o = get(&consoles, NAME).await;
            if o["status"]["publishedExposureKinds"] == json!(["Route"]) {
                Ok(())
            } else {
                Err(summary(&o))
            }
        },
    )
    .await;
    host.finish();
    uid
}
