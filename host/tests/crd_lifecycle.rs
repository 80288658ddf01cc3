//! A CustomResourceDefinition a guest reads deleted, then installed again,
//! while the host runs, against the real local API server: here the Barman
//! Cloud ObjectStore the EvidenceAgent reads (optional). CRDs are
//! cluster-wide, so this runs in its own test binary (its own API server):
//! the operator tests sharing one keep their ObjectStore CRD.
//!
//! Seed 000 (RouteAPIUnavailable): "A kind served at start but not now
//! fails the loop, which is retried." So a kind that goes away while the
//! host runs is an error of the pass (Ready False with ReconcileError, one
//! Warning, retried with backoff), not the "not served" condition a kind
//! never served gives (ObjectStoreAPIUnavailable, a stall).
//!
//! Deleting a CRD, the API server first deletes its objects (watch Delete
//! events), then the kind's watches are answered 404. The agent re-queued
//! by the Delete may run in between, finding the kind served and its
//! ObjectStore missing; the 404 must re-queue it again, or it stays on
//! ObjectStoreNotFound. Installed again, the kind's first listing must
//! re-queue the agent whose pass failed on it, though the failed pass
//! found no object of the kind.
//!
//! The agent's children are the host's, its Pod the controllers' the test
//! API server runs, reported running by kwok's simulated Nodes. A stall
//! asks for nothing, so they stay as they are while the API is gone.
//!
//! Nothing here asserts timing: every expectation is polled with a timeout.

use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::DeleteParams;
use reconciler_testsupport::TestNamespace;

use harness::{
    Guests, Host, events_about, eventually, fixture_of, install_crds, published, wait_for,
    wait_healthy,
};
use objects::{
    CLUSTER, CREDENTIALS, OBJECT_STORE, agent, agents, backup_setup, create, create_all,
    object_store,
};

/// The EvidenceAgent, whose hosts here say when the ObjectStore API goes
/// and comes back (what the tests do on purpose), and may find the
/// resourceVersion their watch resumes from expired when it comes back.
const GUESTS: Guests = Guests {
    dir: "crd-lifecycle-tests",
    crates: &["evidenceagent-guest"],
    settings: &[
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
    ],
    expected_warnings: &[
        "the API is no longer served (404)",
        "the API is served again",
        "too old resource version",
    ],
};

const OBJECT_STORE_CRD: &str = "objectstores.barmancloud.cnpg.io";

#[tokio::test]
async fn a_crd_deleted_while_running_fails_its_readers_passes_and_its_return_restores_them() {
    let f = fixture_of(&GUESTS);
    let ns = TestNamespace::new("crd-gone")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    create_all(&client, ns.name(), backup_setup()).await;
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    wait_healthy(&agents, "orders").await;
    let deployments = objects::api(&client, ns.name(), "apps/v1", "Deployment");
    let deployment = harness::get(&deployments, &objects::deployment_name("orders")).await;

    // The Barman Cloud plugin uninstalled: its ObjectStores go first, then
    // the API.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(OBJECT_STORE_CRD, &DeleteParams::default())
        .await
        .expect("deleting the ObjectStore CRD");
    eventually("the ObjectStore CRD to be gone", async || {
        match crds.get_opt(OBJECT_STORE_CRD).await.expect("a CRD lookup") {
            None => Ok(()),
            Some(crd) => Err(crd.status),
        }
    })
    .await;
    let failed = wait_for(&agents, "orders", &[("Ready", "False", "ReconcileError")]).await;
    let ready = harness::condition(&failed, "Ready").expect("Ready");
    assert!(
        ready.message.contains("ReconciliationFailed")
            && ready.message.contains(
                "ObjectStore is no longer served: it was when the host started watching it"
            ),
        "{}",
        ready.message
    );
    assert!(
        !harness::has(&failed, "Stalled", "True", "ObjectStoreAPIUnavailable"),
        "an error, not the stall of a kind never served: {:?}",
        harness::summary(&failed)
    );
    // Retried with backoff, reported once: one Warning while it fails, and
    // a failing pass writes nothing more.
    let writes = host.status_writes(ns.name(), "orders");
    harness::settle().await;
    assert_eq!(host.status_writes(ns.name(), "orders"), writes);
    let events = events_about(&client, ns.name(), "orders").await;
    assert_eq!(
        published(&events, "Warning", "ReconciliationFailed"),
        1,
        "{events:?}"
    );
    assert_eq!(
        published(&events, "Warning", "ObjectStoreAPIUnavailable"),
        0,
        "{events:?}"
    );

    // Installed again: the API is served, with no ObjectStore yet.
    let crd = f
        .crds
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(OBJECT_STORE_CRD))
        .expect("the fixture's ObjectStore CRD")
        .clone();
    reconciler_testsupport::install_crd(&client, crd)
        .await
        .expect("installing the ObjectStore CRD again");
    wait_for(
        &agents,
        "orders",
        &[
            ("Ready", "False", "ObjectStoreNotFound"),
            ("ConfigurationValid", "False", "ObjectStoreNotFound"),
        ],
    )
    .await;

    // And the ObjectStore back: healthy again.
    create(&client, ns.name(), object_store(OBJECT_STORE, CREDENTIALS)).await;
    wait_healthy(&agents, "orders").await;
    // Still the one Warning of the failure, none for the recovery's way.
    let events = events_about(&client, ns.name(), "orders").await;
    assert_eq!(
        published(&events, "Warning", "ReconciliationFailed"),
        1,
        "{events:?}"
    );
    // The failed passes deleted nothing: the same Deployment serves on.
    let kept = harness::get(&deployments, &objects::deployment_name("orders")).await;
    assert_eq!(kept["metadata"]["uid"], deployment["metadata"]["uid"]);
    assert_eq!(
        host.requests("DELETE", &format!("/namespaces/{}/", ns.name())),
        0
    );
    let log = host.log_text();
    for line in &GUESTS.expected_warnings[..2] {
        assert!(log.contains(line), "the host logged no {line:?}");
    }
    host.finish();
}
