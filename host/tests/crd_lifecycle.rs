//! A CustomResourceDefinition a guest reads deleted, then installed again,
//! while the host runs, against the real local API server: here the Barman
//! Cloud ObjectStore the EvidenceAgent reads (optional). CRDs are
//! cluster-wide, so this runs in its own test binary (its own API server):
//! the operator tests sharing one keep their ObjectStore CRD.
//!
//! Deleting a CRD, the API server first deletes its objects (watch Delete
//! events), then the kind's watches are answered 404. The agent re-queued
//! by the Delete may run in between, finding the kind served and its
//! ObjectStore missing; the 404 must re-queue it again, or it stays on
//! ObjectStoreNotFound. Installed again, the kind's first listing must
//! re-queue the agent told the API is not served, though it read no object
//! of the kind then.
//!
//! The agent's children are the host's, its Pod the controllers' the test
//! API server runs, reported running by a [`KubeletStandIn`]. A stall
//! asks for nothing, so they stay as they are while the API is gone.
//!
//! Nothing here asserts timing: every expectation is polled with a timeout.

use reconciler_host_harness::kubelet::KubeletStandIn;
use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::DeleteParams;
use reconciler_testsupport::TestNamespace;

use harness::{Guests, Host, eventually, fixture_of, install_crds, wait_for, wait_healthy};
use objects::{
    CLUSTER, CREDENTIALS, OBJECT_STORE, PodState, agent, agents, backup_setup, create, create_all,
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

/// What the agent reports while the ObjectStore API is not served.
const NOT_SERVED: &[(&str, &str, &str)] = &[
    ("Ready", "False", "ObjectStoreAPIUnavailable"),
    ("Stalled", "True", "ObjectStoreAPIUnavailable"),
    ("ConfigurationValid", "False", "ObjectStoreAPIUnavailable"),
];

#[tokio::test]
async fn a_deleted_crd_ends_its_readers_on_not_served_and_its_return_restores_them() {
    let f = fixture_of(&GUESTS);
    let ns = TestNamespace::new("crd-gone")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    let _kubelet = KubeletStandIn::start(&client, ns.name(), PodState::Running);
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
    wait_for(&agents, "orders", NOT_SERVED).await;

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
    // The stall deleted nothing: the same Deployment serves on.
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
