//! Every contract version the host serves loads and runs: components built
//! against the released 0.1.0, 0.2.0, 0.3.0, 0.4.0 and 0.5.0 (the legacy
//! test guests) next to the current 0.6.0 (the EvidenceAgent, the
//! PgAccessRequest), and another version is refused by name.

use reconciler_host_harness::guests as support;

use std::path::Path;
use std::sync::Arc;

use reconciler_conventions::kind::ParentGates;
use reconciler_conventions::verdict::ConditionStatus;
use reconciler_host::facts::MemorySource;
use reconciler_host::fixture::{Fixture, run_fixture};
use reconciler_host::runtime::{
    ContractVersion, EvaluateRequest, LoadError, Module, Runtime, RuntimeConfig,
};
use serde_json::{Value, json};

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        cache: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime")
}

fn legacy(rt: &Runtime) -> Module {
    rt.load_file(&support::guest_wasm("legacy-v0_1-guest"))
        .expect("the 0.1 guest loads")
}

fn widget() -> Value {
    json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyWidget",
        "metadata": {"name": "w", "namespace": "ns", "generation": 1},
        "spec": {"workload": "web"}})
}

fn deployment(ready: u32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 1},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {}},
        "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                   "readyReplicas": ready, "availableReplicas": ready}})
}

fn pod(waiting: Option<&str>) -> Value {
    let (ready, state) = match waiting {
        Some(reason) => (
            false,
            json!({"waiting": {"reason": reason, "message": "pull access denied"}}),
        ),
        None => (true, json!({"running": {}})),
    };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "ns", "labels": {"app": "web"}},
        "status": {"phase": if ready { "Running" } else { "Pending" },
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": ready,
                                   "restartCount": 0, "state": state}]}})
}

/// The WorkloadReady aspect of one pass over `objects`, and what it read.
fn workload_ready(module: &Module, objects: &[Value]) -> ((ConditionStatus, String), Vec<String>) {
    let mut source = MemorySource::new();
    for o in objects {
        source.insert(o.clone());
    }
    let evaluated = module.evaluate(EvaluateRequest {
        parent: &widget(),
        paused: false,
        settings: &[],
        source: Arc::new(source),
        now: "2026-11-29T12:00:00Z".parse().unwrap(),
    });
    let verdict = evaluated.outcome.expect("a verdict");
    let aspect = &verdict.aspects[0];
    assert_eq!(aspect.type_, "WorkloadReady");
    assert_eq!(verdict.status_fields["workload"], "web");
    (
        (aspect.status, aspect.reason.clone()),
        evaluated.reads.iter().map(ToString::to_string).collect(),
    )
}

#[test]
fn a_0_1_component_loads_describes_and_evaluates_with_facts() {
    let rt = runtime();
    let module = legacy(&rt);
    assert_eq!(module.contract(), ContractVersion::V0_1);
    assert_eq!(module.contract_version(), "0.1.0");
    let spec = module.spec();
    assert_eq!(spec.kind, "LegacyWidget");
    assert_eq!(spec.aspects, ["WorkloadReady"]);
    assert_eq!(spec.reads.len(), 3);
    assert!(spec.is_registered("ImagePullFailed") && spec.is_registered("WorkloadMissing"));

    let (ready, reads) = workload_ready(&module, &[deployment(1), pod(None)]);
    assert_eq!(ready, (ConditionStatus::True, "AsExpected".to_owned()));
    assert_eq!(
        reads,
        ["Deployment ns/web", "Pod in \"ns\" matching {app=web}"],
        "the 0.1 guest's reads are recorded like any other"
    );
    let (pulling, _) = workload_ready(&module, &[deployment(0), pod(Some("ImagePullBackOff"))]);
    assert_eq!(
        pulling,
        (ConditionStatus::False, "ImagePullFailed".to_owned())
    );
    let (missing, _) = workload_ready(&module, &[]);
    assert_eq!(
        missing,
        (ConditionStatus::False, "WorkloadMissing".to_owned())
    );
}

#[test]
fn a_0_2_component_loads_describes_and_evaluates() {
    let rt = runtime();
    let gadget = rt
        .load_file(&support::guest_wasm("legacy-v0_2-guest"))
        .expect("the 0.2 guest loads");
    assert_eq!(gadget.contract(), ContractVersion::V0_2);
    assert_eq!(gadget.contract_version(), "0.2.0");
    assert_eq!(gadget.spec().kind, "LegacyGadget");
    assert!(gadget.spec().writes.is_empty(), "0.2 writes nothing");
    let parent = json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyGadget",
        "metadata": {"name": "g", "namespace": "ns", "generation": 1},
        "spec": {"message": "hello"}});
    let evaluated = gadget.evaluate(EvaluateRequest {
        parent: &parent,
        paused: false,
        settings: &[],
        source: Arc::new(MemorySource::new()),
        now: jiff::Timestamp::UNIX_EPOCH,
    });
    let verdict = evaluated.outcome.expect("a verdict");
    assert_eq!(verdict.aspects[0].message, "hello");
    assert_eq!(verdict.status_fields["nodes"], "0 known");
    assert!(evaluated.changes.is_empty());
}

#[test]
fn a_0_3_component_loads_describes_and_reconciles_with_changes() {
    let rt = runtime();
    let device = rt
        .load_file(&support::guest_wasm("legacy-v0_3-guest"))
        .expect("the 0.3 guest loads");
    assert_eq!(device.contract(), ContractVersion::V0_3);
    assert_eq!(device.contract_version(), "0.3.0");
    assert_eq!(device.spec().kind, "LegacyDevice");
    assert_eq!(device.spec().writes.len(), 1, "0.3 declares what it writes");
    let parent = json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyDevice",
        "metadata": {"name": "d", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {"message": "hello"}});
    let mut source = MemorySource::new();
    source.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "d-legacy", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyDevice",
                                 "name": "d", "uid": "u1", "controller": true}]}}));
    let evaluated = device.evaluate(EvaluateRequest {
        parent: &parent,
        paused: false,
        settings: &[],
        source: Arc::new(source),
        now: jiff::Timestamp::UNIX_EPOCH,
    });
    let verdict = evaluated.outcome.expect("a verdict");
    assert_eq!(
        verdict.aspects[0].message, "1 ConfigMaps controlled",
        "facts.children (0.3) answers through the current facts"
    );
    assert_eq!(evaluated.changes.len(), 1, "its change crosses to the host");
}

#[test]
fn a_0_4_component_deletes_as_an_ordinary_change_and_its_parents_set_both_gates() {
    let rt = runtime();
    let widget = rt
        .load_file(&support::guest_wasm("legacy-v0_4-guest"))
        .expect("the 0.4 guest loads");
    assert_eq!(widget.contract(), ContractVersion::V0_4);
    assert_eq!(widget.spec().kind, "LegacyWidget");
    assert_eq!(
        widget.spec().parent_gates,
        ParentGates::ALL,
        "a guest before 0.5 cannot say: its parents keep both gates"
    );
    let owner = json!([{"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyWidget",
                        "name": "w", "uid": "u1", "controller": true}]);
    let parent = json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyWidget",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "generation": 1},
        "spec": {"message": "hello"}});
    let mut source = MemorySource::new();
    source.insert(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "w-legacy", "namespace": "ns", "uid": "rb1", "ownerReferences": owner}}));
    let evaluated = widget.evaluate(EvaluateRequest {
        parent: &parent,
        paused: false,
        settings: &[],
        source: Arc::new(source),
        now: jiff::Timestamp::UNIX_EPOCH,
    });
    evaluated.outcome.expect("a verdict");
    assert_eq!(evaluated.changes.len(), 2, "an apply and a deletion");
    assert!(
        evaluated.withdrawals.is_empty(),
        "a deletion of a RoleBinding by a 0.4 guest stays an ordinary change"
    );
}

/// A 0.5 guest's reads cannot name their fields: it is served whole
/// objects, where a 0.6 guest naming its fields is served those only.
#[test]
fn a_0_5_component_is_served_whole_objects_beside_a_0_6_one_served_its_fields() {
    let rt = runtime();
    let gauge = rt
        .load_file(&support::guest_wasm("legacy-v0_5-guest"))
        .expect("the 0.5 guest loads");
    assert_eq!(gauge.contract(), ContractVersion::V0_5);
    assert_eq!(
        gauge.spec().reads[0].fields,
        None,
        "a 0.5 read names no field"
    );
    let escape = rt
        .load_file(&support::guest_wasm("escape-guest"))
        .expect("the escape guest loads");
    assert_eq!(escape.contract(), ContractVersion::V0_6);
    let mut source = MemorySource::new();
    source.insert(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "db", "namespace": "ns"},
        "spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 5432}]}}));
    let source = Arc::new(source);
    let message = |module: &Module, kind: &str| {
        let parent = json!({"apiVersion": "testing.reconciler.dev/v1", "kind": kind,
            "metadata": {"name": "g", "namespace": "ns", "uid": "u1", "generation": 1},
            "spec": {"attempt": "undeclared-field"}});
        let evaluated = module.evaluate(EvaluateRequest {
            parent: &parent,
            paused: false,
            settings: &[],
            source: source.clone(),
            now: jiff::Timestamp::UNIX_EPOCH,
        });
        evaluated.outcome.expect("a verdict").aspects[0]
            .message
            .clone()
    };
    assert_eq!(message(&gauge, "LegacyGauge"), "clusterIP 10.96.0.10");
    assert_eq!(
        message(&escape, "Escape"),
        "clusterIP absent",
        "the 0.6 guest declared spec.ports only"
    );
}

#[tokio::test]
async fn a_0_6_component_runs_beside_them_and_withdraws() {
    let rt = runtime();
    let _legacy = legacy(&rt);
    let agent = rt
        .load_file(&support::guest_wasm("evidenceagent-guest"))
        .expect("the EvidenceAgent loads");
    assert_eq!(agent.contract(), ContractVersion::V0_6);
    assert_eq!(agent.contract_version(), "0.6.0");
    assert_eq!(agent.spec().parent_gates, ParentGates::ALL);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml");
    let report = run_fixture(&agent, &Fixture::load(&fixture).expect("the fixture loads")).await;
    assert!(report.passed(), "{:?}", report.steps);
    let request = rt
        .load_file(&support::guest_wasm("pgaccessrequest-guest"))
        .expect("the PgAccessRequest loads");
    assert_eq!(
        request.spec().parent_gates,
        ParentGates::NONE,
        "a requester gates nothing"
    );
}

/// A component exporting `reconciler:guest/reconciler@<version>` with one
/// function (enough to be told from its exports).
fn exporting(version: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(component
            (core module $m (func (export "describe")))
            (core instance $i (instantiate $m))
            (func $describe (canon lift (core func $i "describe")))
            (instance $reconciler (export "describe" (func $describe)))
            (export "reconciler:guest/reconciler@{version}" (instance $reconciler)))"#
    ))
    .expect("valid component text")
}

#[test]
fn another_contract_version_is_refused_naming_what_it_exports_and_what_is_served() {
    let rt = runtime();
    let e = rt
        .load("future", &exporting("0.7.0"))
        .err()
        .expect("refused");
    assert!(
        matches!(e, LoadError::WorldMismatch { ref guest, .. } if guest == "future"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "guest future: does not implement the reconciler:guest world: it exports reconciler:guest/reconciler@0.7.0; this host serves reconciler:guest/reconciler@0.1.0 and reconciler:guest/reconciler@0.2.0 and reconciler:guest/reconciler@0.3.0 and reconciler:guest/reconciler@0.4.0 and reconciler:guest/reconciler@0.5.0 and reconciler:guest/reconciler@0.6.0"
    );
    // Importing another version's facts is the same mismatch, named so.
    let importing =
        wat::parse_str(r#"(component (import "reconciler:guest/facts@0.7.0" (instance)))"#)
            .unwrap();
    let e = rt.load("future", &importing).err().expect("refused");
    assert!(matches!(e, LoadError::WorldMismatch { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("it imports reconciler:guest/facts@0.7.0; this host serves reconciler:guest/reconciler@0.1.0 and reconciler:guest/reconciler@0.2.0 and reconciler:guest/reconciler@0.3.0 and reconciler:guest/reconciler@0.4.0 and reconciler:guest/reconciler@0.5.0 and reconciler:guest/reconciler@0.6.0"),
        "{e}"
    );
    // A served version with the wrong shape is told apart: it gets past the
    // version and fails on the world's functions.
    let e = rt
        .load("hollow", &exporting("0.2.0"))
        .err()
        .expect("refused");
    assert!(matches!(e, LoadError::WorldMismatch { .. }), "{e}");
    assert!(!e.to_string().contains("this host serves"), "{e}");
}
