//! One parent nested too deep never stops the ring (issue 49): whoever may
//! patch Widgets and their status in a namespace nests one Widget's status
//! 200 levels deep by merge patch (so its managedFields are as deep) and
//! another's schemaless spec, before the members start. Before, each
//! member's start probed the kind through a typed metadata list and
//! exited; where it did not, the coordinator's typed metadata list failed
//! whole (no Widget assigned) and logged the list's body every 1.5 s. Now,
//! with three members, by labels (the shared test server) and where the
//! API server selects (a server of its own with KEP-5866's gate on): every
//! other Widget is reconciled (and, by labels, assigned), each deep one
//! says ObjectUndecodable by one Warning, and the members' logs stay small.

use std::path::Path;

use kube::Client;
use reconciler_host::operator::ring::{MEMBER, assignment};
use reconciler_host_harness::objects::{self, create_all};
use reconciler_host_harness::operator::{
    Guests, Host, condition, events_about, eventually, fixture_of, install_crds, published, settle,
};
use reconciler_host_harness::ring::{self, gated_server, live_now};
use reconciler_host_harness::widgets::{API_VERSION, widget};
use reconciler_testsupport::{Access, TestNamespace, await_access};
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "ring-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

/// Who attacks: a user who may patch Widgets and their status in the
/// namespace, nothing more.
const PATCHER: &str = "widget-patcher";

/// The Widgets nested too deep: named to come first in a listing (a start
/// probe reads one object).
const DEEP_STATUS: &str = "a-deep-status";
const DEEP_SPEC: &str = "a-deep-spec";

/// The healthy Widgets.
const HEALTHY: usize = 9;

/// The longest log line a member may write: an excerpt, never an object.
const LONGEST_LINE: usize = 4096;

/// A client of the server of `kubeconfig` acting as `user`.
async fn client_as(kubeconfig: &Path, user: &str) -> Client {
    let text = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(text, &Default::default())
        .await
        .expect("a client config");
    config.auth_info.impersonate = Some(user.to_owned());
    Client::try_from(config).expect("an impersonating client")
}

/// The healthy Widgets and the two deep ones, the attacker's grant, and
/// the attacker's two merge patches.
async fn attacked(ns: &TestNamespace, kubeconfig: &Path) -> Vec<String> {
    let client = ns.client();
    let names: Vec<String> = (0..HEALTHY).map(|i| format!("w{i}")).collect();
    let mut objects: Vec<Value> = names
        .iter()
        .chain([DEEP_STATUS.to_owned(), DEEP_SPEC.to_owned()].iter())
        .map(|n| widget(n, json!({"data": {"n": n}})))
        .collect();
    objects.push(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": PATCHER},
        "rules": [{"apiGroups": ["testing.reconciler.dev"],
            "resources": ["widgets", "widgets/status"], "verbs": ["get", "patch"]}]}),
    );
    objects.push(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": PATCHER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": PATCHER},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": PATCHER}]}),
    );
    create_all(&client, ns.name(), objects).await;
    let wanted = ["widgets", "widgets/status"].map(|resource| Access {
        verb: "patch",
        group: "testing.reconciler.dev",
        resource,
        namespace: Some(ns.name()),
    });
    await_access(&client, PATCHER, &[], &wanted)
        .await
        .expect("the attacker's grant");
    let attacker = client_as(kubeconfig, PATCHER).await;
    let base = format!("/apis/{API_VERSION}/namespaces/{}/widgets", ns.name());
    merge_patch(
        &attacker,
        &format!("{base}/{DEEP_STATUS}/status"),
        json!({"status": {"deep": objects::nested(200)}}),
    )
    .await;
    merge_patch(
        &attacker,
        &format!("{base}/{DEEP_SPEC}"),
        json!({"spec": {"deep": objects::nested(200)}}),
    )
    .await;
    names
}

/// A merge patch the API server must take (its answer, too deep for
/// kube's client, is read as text).
async fn merge_patch(client: &Client, path: &str, patch: Value) {
    let request = http::Request::patch(path)
        .header("Content-Type", "application/merge-patch+json")
        .body(serde_json::to_vec(&patch).expect("json"))
        .expect("a request");
    client
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("the patch of {path} was refused: {e}"));
}

/// The Widgets of `ns` as the API server stores them, parsed without a
/// depth limit.
async fn listed(ns: &TestNamespace) -> Vec<Value> {
    let path = format!("/apis/{API_VERSION}/namespaces/{}/widgets", ns.name());
    let text = ns
        .client()
        .request_text(
            http::Request::get(path)
                .body(Vec::new())
                .expect("a request"),
        )
        .await
        .expect("the Widgets");
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    let list: Value = serde::Deserialize::deserialize(&mut de).expect("the list's JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// Waits until each healthy Widget's ConfigMap holds its data and each
/// deep one says ObjectUndecodable at its generation.
async fn served(ns: &TestNamespace, names: &[String]) {
    let config_maps = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    for n in names {
        eventually(&format!("{n}-config made"), async || {
            match config_maps.get_opt(&format!("{n}-config")).await {
                Ok(Some(o)) if o.data["data"] == json!({"n": n}) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    eventually("each deep Widget says ObjectUndecodable", async || {
        let wrong: Vec<String> = listed(ns)
            .await
            .iter()
            .filter(|o| [DEEP_STATUS, DEEP_SPEC].contains(&name(o)))
            .filter(|o| {
                !matches!(condition(o, "Ready"), Some(c)
                    if c.status == "False"
                        && c.message.starts_with("ObjectUndecodable: ")
                        && Some(c.observed_generation) == o["metadata"]["generation"].as_i64())
            })
            .map(|o| format!("{}: {:?}", name(o), condition(o, "Ready")))
            .collect();
        if wrong.is_empty() { Ok(()) } else { Err(wrong) }
    })
    .await;
}

/// Each deep Widget said so by one Warning, once settled.
async fn said_once(ns: &TestNamespace) {
    settle().await;
    for deep in [DEEP_STATUS, DEEP_SPEC] {
        let events = events_about(&ns.client(), ns.name(), deep).await;
        assert_eq!(
            published(&events, "Warning", "ObjectUndecodable"),
            1,
            "{deep}: {events:?}"
        );
    }
}

/// The members' logs: no line longer than an excerpt, no Widget's body,
/// and together they grow by less than 25 kB over 15 s once settled (the
/// coordinator's failed list logged 1.65 MB every 1.5 s).
async fn logs_small(members: &[&Host]) {
    let size = || -> usize { members.iter().map(|m| m.log_text().len()).sum() };
    let before = size();
    tokio::time::sleep(std::time::Duration::from_secs(15)).await;
    let grown = size() - before;
    assert!(
        grown < 25_000,
        "the members' logs grew by {grown} bytes in 15 s"
    );
    for member in members {
        let log = member.log_text();
        // A request's line names its URL, long where the server selects
        // (the shard selector): no body, whatever its length.
        let longest = log
            .lines()
            .filter(|l| !l.contains("http.url="))
            .max_by_key(|l| l.len())
            .unwrap_or_default();
        assert!(
            longest.len() <= LONGEST_LINE,
            "a line of {} bytes: {:.300}",
            longest.len(),
            longest
        );
        assert!(!log.contains("\"leaf\""), "a Widget's body in the log");
    }
}

/// Three members by labels: every healthy Widget assigned to its owner
/// and reconciled; the deep ones assigned too, and said once each.
#[tokio::test]
async fn a_parent_nested_too_deep_never_stops_the_ring_by_labels() {
    fixture_of(&WRITER);
    let ns = TestNamespace::new("ring-deep")
        .await
        .expect("a test namespace");
    install_crds(&ns.client()).await;
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let names = attacked(&ns, &kubeconfig).await;
    let (a, _) = ring::member(&ns, &kubeconfig, "deep-a", "6s").await;
    let (b, _) = ring::member(&ns, &kubeconfig, "deep-b", "6s").await;
    let (c, _) = ring::member(&ns, &kubeconfig, "deep-c", "6s").await;
    let members = live_now(&ns, 3).await;
    eventually("every Widget assigned to its owner", async || {
        let wrong: Vec<String> = listed(&ns)
            .await
            .iter()
            .filter(|o| {
                let owner = assignment::owner(&members, ns.name(), name(o));
                o["metadata"]["labels"][MEMBER].as_str() != owner
            })
            .map(|o| name(o).to_owned())
            .collect();
        if wrong.is_empty() { Ok(()) } else { Err(wrong) }
    })
    .await;
    served(&ns, &names).await;
    said_once(&ns).await;
    logs_small(&[&a, &b, &c]).await;
}

/// Three members where the API server selects, on a server of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_nested_too_deep_never_stops_the_ring_where_the_server_selects() {
    fixture_of(&WRITER);
    let (server, kubeconfig) = tokio::task::block_in_place(|| gated_server("deep"));
    let ns = TestNamespace::on(ring::admin(&server).await, "ring-deep-server")
        .await
        .expect("a test namespace");
    let names = attacked(&ns, &kubeconfig).await;
    let (a, _) = ring::member(&ns, &kubeconfig, "deep-server-a", "6s").await;
    let (b, _) = ring::member(&ns, &kubeconfig, "deep-server-b", "6s").await;
    let (c, _) = ring::member(&ns, &kubeconfig, "deep-server-c", "6s").await;
    live_now(&ns, 3).await;
    served(&ns, &names).await;
    said_once(&ns).await;
    logs_small(&[&a, &b, &c]).await;
    drop(server);
}
