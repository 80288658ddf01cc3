//! The kstatus profile (seed 004) end to end, as a kstatus-consuming
//! client reads it: the kstatus test guest (`guests/testing/kstatus`)
//! serves Beacons through the host against the real API server, and
//! sigs.k8s.io/cli-utils' kstatus (`status.Compute`, run by `tests/kstatus`)
//! computes each object's status as the API server returns it: InProgress
//! while Reconciling is True, Current once converged (Degraded or not),
//! Failed once Stalled, and InProgress for a paused object whose new
//! generation is not observed.

use reconciler_host_harness::kstatus::{Computed, compute};
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, condition, events_about, fixture_of, install_crds, published, wait_for,
};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use kube::Api;
use kube::api::DynamicObject;

/// The kstatus guest, alone.
const KSTATUS: Guests = Guests {
    dir: "kstatus-tests",
    crates: &["kstatus-guest"],
    settings: &[],
    expected_warnings: &[],
};

const API_VERSION: &str = "testing.reconciler.dev/v1";
const PAUSE: &str = "testing.reconciler.dev/reconcile";

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&KSTATUS);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

fn beacon(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "Beacon", "metadata": {"name": name}, "spec": spec})
}

fn beacons(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), API_VERSION, "Beacon")
}

/// kstatus's verdict on `object`, which must be `status`.
fn kstatus_says(object: &Value, status: &str) -> Computed {
    let computed = compute(object);
    assert_eq!(
        computed.status, status,
        "kstatus on {}: {computed:?}",
        object["status"]
    );
    computed
}

/// Seed 004: "Reconciling is True while the controller is still working
/// toward the observed generation. It differs from Ready=False, which means
/// settled and broken." "Degraded has negative polarity. True means the
/// resource is serving, but not as specified." "Stalled has negative
/// polarity. True means progress has stopped and a requeue will not help;
/// only a spec change will." "Event type follows polarity."
#[tokio::test]
async fn kstatus_reads_work_in_progress_converged_degraded_settled_and_stalled() {
    let ns = namespace("kstatus-states").await;
    let client = ns.client();
    let api = beacons(&ns);
    let host = Host::start(ns.name()).await;

    // Work in progress: Reconciling True, kstatus InProgress with its message.
    create(
        &client,
        ns.name(),
        beacon("b", json!({"state": "starting"})),
    )
    .await;
    let o = wait_for(
        &api,
        "b",
        &[
            ("Reconciling", "True", "Reconciling"),
            ("Ready", "False", "Starting"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    let computed = kstatus_says(&o, "InProgress");
    assert!(
        computed.message.contains("Serving is False (Starting)"),
        "{computed:?}"
    );

    // Converged: Current.
    merge(&api, "b", json!({"spec": {"state": "serving"}})).await;
    let o = wait_for(
        &api,
        "b",
        &[
            ("Ready", "True", "AsExpected"),
            ("Reconciling", "False", "AsExpected"),
            ("Degraded", "False", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(
        o["status"]["observedGeneration"],
        o["metadata"]["generation"]
    );
    kstatus_says(&o, "Current");

    // Degraded: still Ready, still Current (Ready and Degraded answer
    // different questions), and Degraded says it.
    merge(&api, "b", json!({"spec": {"degraded": true}})).await;
    let o = wait_for(
        &api,
        "b",
        &[
            ("Ready", "True", "AsExpected"),
            ("Degraded", "True", "PartlyServing"),
        ],
    )
    .await;
    kstatus_says(&o, "Current");

    // A settled failure: Ready False, Reconciling False. kstatus cannot tell
    // it from progress ("There is no way to determine if a resource with the
    // Ready condition set to False is making progress or is doomed",
    // cli-utils' checkReadyCondition): InProgress with Ready's reason; the
    // status still says the controller is not working on it.
    merge(
        &api,
        "b",
        json!({"spec": {"state": "broken", "degraded": false}}),
    )
    .await;
    let o = wait_for(
        &api,
        "b",
        &[
            ("Ready", "False", "Broken"),
            ("Reconciling", "False", "Broken"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert!(condition(&o, "Degraded").is_none(), "{o}");
    kstatus_says(&o, "InProgress");

    // A stall, settled for good: Failed, with the stall's message.
    merge(&api, "b", json!({"spec": {"state": "refused"}})).await;
    let o = wait_for(
        &api,
        "b",
        &[
            ("Stalled", "True", "SpecRefused"),
            ("Reconciling", "False", "SpecRefused"),
            ("Ready", "False", "SpecRefused"),
        ],
    )
    .await;
    let computed = kstatus_says(&o, "Failed");
    assert!(computed.message.contains("change the spec"), "{computed:?}");

    // One Event per transition worth it, by polarity: nothing for Starting
    // (quiet) nor for Reconciling, one Warning each for Degraded turning
    // True, the settled failure and the stall.
    let events = events_about(&client, ns.name(), "b").await;
    for (type_, reason, count) in [
        ("Normal", "AsExpected", 1),
        ("Warning", "PartlyServing", 1),
        ("Warning", "Broken", 1),
        ("Warning", "SpecRefused", 1),
        ("Warning", "Starting", 0),
        ("Normal", "Reconciling", 0),
        ("Warning", "Reconciling", 0),
    ] {
        assert_eq!(
            published(&events, type_, reason),
            count,
            "{type_} {reason}: {events:#?}"
        );
    }
    host.finish();
}

/// Seed 004: observedGeneration is "the metadata.generation it was computed
/// against". A paused kstatus object does not advance
/// `status.observedGeneration`: a spec changed while paused reads
/// InProgress (generation not observed) until the pause is lifted.
#[tokio::test]
async fn a_paused_beacon_reads_in_progress_until_its_new_generation_is_observed() {
    let ns = namespace("kstatus-paused").await;
    let client = ns.client();
    let api = beacons(&ns);
    let host = Host::start(ns.name()).await;
    create(&client, ns.name(), beacon("p", json!({"state": "serving"}))).await;
    let o = wait_for(&api, "p", &[("Ready", "True", "AsExpected")]).await;
    kstatus_says(&o, "Current");
    let converged = o["metadata"]["generation"].as_i64().expect("a generation");

    merge(
        &api,
        "p",
        json!({"metadata": {"annotations": {PAUSE: "skip"}}, "spec": {"degraded": true}}),
    )
    .await;
    let o = wait_for(
        &api,
        "p",
        &[
            ("Ready", "Unknown", "ReconciliationPaused"),
            ("Reconciling", "False", "ReconciliationPaused"),
            ("Degraded", "False", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(o["metadata"]["generation"], converged + 1);
    assert_eq!(o["status"]["observedGeneration"], converged, "{o}");
    let computed = kstatus_says(&o, "InProgress");
    assert!(
        computed.message.contains(&format!(
            "generation is {}, but latest observed generation is {converged}",
            converged + 1
        )),
        "{computed:?}"
    );

    merge(
        &api,
        "p",
        json!({"metadata": {"annotations": {PAUSE: null}}}),
    )
    .await;
    let o = wait_for(
        &api,
        "p",
        &[
            ("Ready", "True", "AsExpected"),
            ("Degraded", "True", "PartlyServing"),
        ],
    )
    .await;
    assert_eq!(o["status"]["observedGeneration"], converged + 1);
    kstatus_says(&o, "Current");
    host.finish();
}
