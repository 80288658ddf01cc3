//! One object nested too deep is one bad object (issue 31): whoever may
//! write one parent's status (or an object a guest reads) nests a field
//! 200 levels deep, past what the host reads (100 levels) and past
//! serde_json's own limit. Before, that parent was never reconciled again
//! (a false green), every write restarted the kind's watch, and after a
//! restart no parent of the kind in the namespace was reconciled at all
//! while the whole list was logged at every retry. Now: that parent says
//! ObjectUndecodable with the field path, once by Event; every other
//! parent is reconciled, before and after a restart; no watch restarts;
//! no log line carries the object.

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use reconciler_host_harness::objects::{
    self, CLUSTER, agent, agents, api, backup_setup, create, create_all, merge,
};
use reconciler_host_harness::operator::{
    Host, condition, events_about, eventually, install_crds, published, settle, wait_healthy,
};
use reconciler_testsupport::{Access, TestNamespace, await_access, client_as};
use serde_json::{Value, json};

/// Who attacks: a user who may patch the status of EvidenceAgents and the
/// Clusters they read in the namespace, nothing more.
const STATUS_WRITER: &str = "status-writer";

/// The agent whose status the attacker nests too deep: first in a listing.
const DEEP: &str = "audit";

/// The longest log line a host may write: an excerpt, never an object.
const LONGEST_LINE: usize = 4096;

/// A namespace with the CRDs, healthy agents `orders` and `billing`, the
/// attacker's grant, and a host serving it.
struct Setup {
    ns: TestNamespace,
    host: Host,
    api: Api<DynamicObject>,
    /// The attacker's client.
    attacker: Client,
}

async fn setup(prefix: &str) -> Setup {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    create_all(&client, ns.name(), backup_setup()).await;
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    create(&client, ns.name(), agent("billing", CLUSTER)).await;
    create_all(
        &client,
        ns.name(),
        vec![
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "status-writer"},
                "rules": [{"apiGroups": ["pgtoolbox.fyannk.dev", "postgresql.cnpg.io"],
                    "resources": ["evidenceagents/status", "clusters/status"],
                    "verbs": ["get", "patch"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "status-writer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "status-writer"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                    "name": STATUS_WRITER}]}),
        ],
    )
    .await;
    let wanted = ["evidenceagents/status", "clusters/status"].map(|resource| Access {
        verb: "patch",
        group: if resource.starts_with("clusters") {
            "postgresql.cnpg.io"
        } else {
            "pgtoolbox.fyannk.dev"
        },
        resource,
        namespace: Some(ns.name()),
    });
    await_access(&client, STATUS_WRITER, &[], &wanted)
        .await
        .expect("the attacker's grant");
    let attacker = client_as(STATUS_WRITER, &[])
        .await
        .expect("an impersonating client");
    let host = Host::start(ns.name()).await;
    let api = agents(&client, ns.name());
    wait_healthy(&api, "orders").await;
    wait_healthy(&api, "billing").await;
    Setup {
        ns,
        host,
        api,
        attacker,
    }
}

/// The attacker's merge patch of `name`'s status. The API server takes it;
/// its answer nests too deep for a client that decodes it whole (kube's
/// DynamicObject), which is the point: only that error is accepted.
async fn patch_status(api: &Api<DynamicObject>, name: &str, status: Value) {
    let patch = Patch::Merge(json!({ "status": status }));
    taken(
        name,
        api.patch_status(name, &PatchParams::default(), &patch)
            .await,
    );
}

/// A merge patch of `name`'s spec, whatever its status holds.
async fn patch_spec(api: &Api<DynamicObject>, name: &str, spec: Value) {
    let patch = Patch::Merge(json!({ "spec": spec }));
    taken(name, api.patch(name, &PatchParams::default(), &patch).await);
}

/// A patch the API server took: answered, or answered with an object too
/// deep for kube's client to decode.
fn taken(name: &str, answer: Result<DynamicObject, kube::Error>) {
    match answer {
        Ok(_) | Err(kube::Error::SerdeError(_)) => {}
        Err(e) => panic!("the patch of {name} was refused: {e}"),
    }
}

/// Changes `name`'s spec (a new image) and waits until the host reconciled
/// that generation: Ready True at it.
async fn reconciled_after_a_spec_change(api: &Api<DynamicObject>, name: &str, image: &str) {
    merge(api, name, json!({"spec": {"image": image}})).await;
    eventually(&format!("{name}'s spec change reconciled"), async || {
        let o = api.get(name).await.map_err(|e| e.to_string())?;
        let o = serde_json::to_value(o).expect("json");
        let generation = o["metadata"]["generation"].as_i64();
        match condition(&o, "Ready") {
            Some(c) if c.status == "True" && Some(c.observed_generation) == generation => Ok(()),
            _ => Err(o["status"].to_string()),
        }
    })
    .await;
}

/// The host's log: no watch restarted, no line longer than an excerpt.
fn assert_log_bounded(host: &Host) {
    let log = host.log_text();
    let restarts = log.lines().filter(|l| l.contains("watch failed")).count();
    assert_eq!(restarts, 0, "no watch restarts for one bad object");
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest <= LONGEST_LINE,
        "a log line of {longest} bytes: {:.300}",
        log.lines().max_by_key(|l| l.len()).unwrap_or_default()
    );
}

/// `name` as the API server stores it, read as text and parsed without a
/// depth limit (the attacker's field is too deep for kube's own client).
async fn read(client: &Client, ns: &str, plural: &str, name: &str) -> Value {
    let group = if plural == "clusters" {
        "postgresql.cnpg.io/v1"
    } else {
        "pgtoolbox.fyannk.dev/v1alpha1"
    };
    let path = format!("/apis/{group}/namespaces/{ns}/{plural}/{name}");
    let text = client
        .request_text(
            http::Request::get(path)
                .body(Vec::new())
                .expect("a request"),
        )
        .await
        .unwrap_or_else(|e| panic!("reading {name}: {e}"));
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).expect("the object's JSON")
}

/// The host warned of nothing but the object it could not read whole.
fn assert_only_the_bad_object_warned(host: Host) {
    let problems: Vec<String> = host
        .problems()
        .into_iter()
        .filter(|l| !l.contains("an object is not read whole"))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Ready of agent `name` once it says ObjectUndecodable at the agent's
/// generation: its message.
async fn undecodable(client: &Client, ns: &str, name: &str) -> String {
    eventually(&format!("{name} says ObjectUndecodable"), async || {
        let o = read(client, ns, "evidenceagents", name).await;
        match condition(&o, "Ready") {
            Some(c)
                if c.status == "False"
                    && c.reason == "ReconcileError"
                    && c.message.starts_with("ObjectUndecodable: ")
                    && Some(c.observed_generation) == o["metadata"]["generation"].as_i64() =>
            {
                Ok(c.message)
            }
            c => Err(format!("{c:?}")),
        }
    })
    .await
}

/// Warning Events ObjectUndecodable about `name`, once settled.
async fn undecodable_events(client: &Client, ns: &str, name: &str) -> i32 {
    settle().await;
    published(
        &events_about(client, ns, name).await,
        "Warning",
        "ObjectUndecodable",
    )
}

/// The parent's own status, nested 200 deep by the attacker: the parent
/// says so at its generation (after a spec change too: no false green),
/// by one Warning; its neighbour is reconciled, before and after a restart
/// of the host; once the field is gone the parent is healthy again. The
/// parent is `audit`, the first of its kind in a listing: the restart's
/// probe of the kind reads it (issue 49: the host exited at start).
#[tokio::test]
async fn a_parent_nested_too_deep_is_one_bad_parent() {
    let Setup {
        ns,
        mut host,
        api,
        attacker,
    } = setup("bounded-parent").await;
    let client = ns.client();
    create(&client, ns.name(), agent(DEEP, CLUSTER)).await;
    wait_healthy(&api, DEEP).await;
    let attacks = agents(&attacker, ns.name());
    patch_status(&attacks, DEEP, json!({"deep": objects::nested(200)})).await;

    let message = undecodable(&client, ns.name(), DEEP).await;
    assert!(
        message.starts_with(
            "ObjectUndecodable: the object cannot be read: status.deep.x.x…(92 levels)….x.x.x.x \
             nests deeper than 100 levels"
        ),
        "{message}"
    );
    reconciled_after_a_spec_change(&api, "billing", "ghcr.io/fyannk/evidence-agent:1.1").await;
    // A spec change of the bad parent: Ready says the error at its new
    // generation, never the green of the last pass it had.
    patch_spec(
        &api,
        DEEP,
        json!({"image": "ghcr.io/fyannk/evidence-agent:1.1"}),
    )
    .await;
    undecodable(&client, ns.name(), DEEP).await;
    assert_eq!(undecodable_events(&client, ns.name(), DEEP).await, 1);
    assert_eq!(undecodable_events(&client, ns.name(), "billing").await, 0);
    assert_log_bounded(&host);

    // A restart lists the kind in the namespace with the bad parent in it.
    host.stop();
    let host = Host::start(ns.name()).await;
    reconciled_after_a_spec_change(&api, "billing", "ghcr.io/fyannk/evidence-agent:1.2").await;
    reconciled_after_a_spec_change(&api, "orders", "ghcr.io/fyannk/evidence-agent:1.2").await;
    undecodable(&client, ns.name(), DEEP).await;
    assert_eq!(
        undecodable_events(&client, ns.name(), DEEP).await,
        1,
        "reported once: the status says it was"
    );
    assert_log_bounded(&host);

    patch_status(&attacks, DEEP, json!({"deep": null})).await;
    wait_healthy(&api, DEEP).await;
    assert_only_the_bad_object_warned(host);
}

/// The Cluster an agent reads, nested 200 deep by the attacker: the agents
/// reading it say so, naming it; an agent reading another Cluster is
/// reconciled; the Cluster's readers recover once it is readable again.
#[tokio::test]
async fn an_object_read_nested_too_deep_fails_its_readers_only() {
    let Setup {
        ns,
        host,
        api,
        attacker,
    } = setup("bounded-read").await;
    let client = ns.client();
    // `billing` reads a Cluster of its own.
    let mut other = backup_setup().remove(0);
    other["metadata"]["name"] = json!("other");
    create(&client, ns.name(), other).await;
    merge(
        &api,
        "billing",
        json!({"spec": {"cluster": {"name": "other"}}}),
    )
    .await;
    wait_healthy(&api, "billing").await;

    let clusters = api_of_clusters(&attacker, ns.name());
    patch_status(&clusters, CLUSTER, json!({"deep": objects::nested(200)})).await;
    let message = undecodable(&client, ns.name(), "orders").await;
    assert!(
        message.contains(&format!(
            "Cluster {}/{CLUSTER} cannot be read: status.deep.x",
            ns.name()
        )),
        "{message}"
    );
    reconciled_after_a_spec_change(&api, "billing", "ghcr.io/fyannk/evidence-agent:1.1").await;
    assert_eq!(undecodable_events(&client, ns.name(), "orders").await, 1);
    assert_log_bounded(&host);

    patch_status(&clusters, CLUSTER, json!({"deep": null})).await;
    wait_healthy(&api, "orders").await;
    assert_only_the_bad_object_warned(host);
}

fn api_of_clusters(client: &Client, ns: &str) -> Api<DynamicObject> {
    api(client, ns, "postgresql.cnpg.io/v1", "Cluster")
}
