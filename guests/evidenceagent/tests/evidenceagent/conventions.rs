//! The kind's spec and the rules across aspects: order, stalls, pause, failed reads, determinism.

use evidenceagent_guest::EvidenceAgent;
use evidenceagent_guest::registry::*;
use reconciler_guest_sdk::testing::{
    assert_deterministic, assert_kind, assert_pause, assert_reads, assert_registry, assert_retried,
    owner,
};
use reconciler_guest_sdk::{ConditionStatus, ConventionProfile, Guest, Reconciliation};
use serde_json::json;

use crate::common::*;

#[test]
fn describe_declares_the_kind() {
    let spec = EvidenceAgent::describe();
    assert_kind(
        &spec,
        [
            "pgtoolbox.fyannk.dev",
            "v1alpha1",
            "EvidenceAgent",
            "evidenceagents",
        ],
    );
    assert!(spec.namespaced);
    assert_eq!(spec.profile, ConventionProfile::Progressing);
    assert_eq!(
        spec.aspects,
        [
            "ConfigurationValid",
            "ServingCertificateReady",
            "WorkloadReady"
        ]
    );
    assert!(spec.advisory.is_empty());
    assert_eq!(spec.quiet_reasons, ["ServiceCAPending"]);
    assert_pause(&spec, "pgtoolbox.fyannk.dev/reconcile", "skip");
}

#[test]
fn every_configuration_reason_is_registered_and_a_stall_without_recheck() {
    let spec = EvidenceAgent::describe();
    for reason in CONFIGURATION_REASONS {
        assert!(
            spec.reasons.iter().any(|r| r.name == *reason),
            "{reason} registered"
        );
        let rule = spec
            .stalls
            .iter()
            .find(|s| s.reason == *reason)
            .expect("a stall");
        assert_eq!(rule.recheck_seconds, None);
    }
    assert_eq!(spec.stalls.len(), CONFIGURATION_REASONS.len());
}

#[test]
fn the_registry_has_unique_reasons_with_owners_and_no_host_reason() {
    let spec = EvidenceAgent::describe();
    assert_registry(&spec, &["evidenceagent"]);
    for owned in [
        "BarmanPluginNotConfigured",
        "ObjectStoreNotFound",
        "ObjectStoreAPIUnavailable",
        "UnsupportedObjectStore",
        "DestinationInvalid",
        "RegionRequired",
        "ImageRequired",
        "ServiceCAPending",
        "CertificateIssued",
    ] {
        assert_eq!(owner(&spec, owned), "evidenceagent", "{owned}");
    }
}

/// Seed 000, common reasons ("shared by every kind"): ScaledToZero
/// "Registered; no current reconciler sets it."
#[test]
fn scaled_to_zero_is_registered_with_the_seeds_meaning() {
    let spec = EvidenceAgent::describe();
    let r = spec.reasons.iter().find(|r| r.name == SCALED_TO_ZERO);
    let r = r.expect("ScaledToZero registered");
    assert_eq!(
        (r.owner.as_str(), r.meaning.as_str()),
        ("common", "Registered; no current reconciler sets it.")
    );
}

#[test]
fn reads_declare_every_kind_the_guest_reads() {
    assert_reads(
        &EvidenceAgent::describe(),
        &[
            ("postgresql.cnpg.io/v1/Cluster", false),
            ("barmancloud.cnpg.io/v1/ObjectStore", true),
            ("apps/v1/Deployment", false),
            ("/v1/Pod", false),
            ("/v1/Secret", false),
            ("/v1/ConfigMap", false),
            ("/v1/Service", false),
        ],
    );
}

#[test]
fn writes_declare_every_kind_the_guest_applies_or_deletes() {
    let writes: Vec<String> = EvidenceAgent::writes()
        .iter()
        .map(|k| format!("{}/{}/{}", k.group, k.version, k.kind))
        .collect();
    assert_eq!(
        writes,
        [
            "apps/v1/Deployment",
            "/v1/Service",
            "/v1/ConfigMap",
            "/v1/Secret"
        ]
    );
}

#[test]
fn the_spec_schema_is_a_json_object_requiring_the_cluster() {
    let schema: serde_json::Value =
        serde_json::from_str(&EvidenceAgent::describe().spec_schema.expect("schema"))
            .expect("JSON");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["cluster"]));
    assert_eq!(schema["properties"]["cluster"]["required"], json!(["name"]));
    assert_eq!(schema["properties"]["image"]["type"], "string");
}

#[test]
fn a_paused_pass_is_empty_and_reads_nothing() {
    let mut evaluation = input(parent(), SETTINGS);
    evaluation.paused = true;
    let facts = World::healthy().without_secret("aws-creds").facts();
    let Reconciliation {
        verdict: v,
        changes,
    } = EvidenceAgent::reconcile(&evaluation, &facts);
    assert!(changes.is_empty(), "a paused agent asks for nothing");
    assert!(v.aspects.is_empty() && v.advisory.is_empty() && v.events.is_empty());
    assert!(v.stall.is_none());
    assert_eq!(v.fields(), json!({}));
    assert!(facts.reads().is_empty());
}

#[test]
fn the_first_failing_check_decides_in_documented_order() {
    let mut world = World::healthy();
    world.cluster = None;
    let v = run(
        parent_with(json!({"cluster": {"name": "pg"}, "image": "docker.io/x/y:1"})),
        SETTINGS,
        &world,
    );
    assert_eq!(
        v.stall.expect("stall").reason,
        IMAGE_NOT_ALLOWED,
        "the image is checked before the Cluster"
    );
    let world = World::healthy().controlled_by_another("a-evidence-agent");
    let mut broken = world;
    broken.object_store = None;
    assert_eq!(
        pass(&broken).stall.expect("stall").reason,
        OBJECT_STORE_NOT_FOUND,
        "references before ownership"
    );
}

#[test]
fn a_stall_leaves_the_children_unread() {
    let mut world = World::healthy();
    world.cluster = None;
    let facts = world.facts();
    let v = EvidenceAgent::evaluate(&input(parent(), SETTINGS), &facts);
    assert_eq!(v.stall.expect("stall").reason, CLUSTER_NOT_FOUND);
    assert_eq!(facts.reads(), ["get Cluster team-a/pg"]);
}

#[test]
fn a_healthy_pass_depends_on_everything_it_checked() {
    let facts = World::healthy().facts();
    EvidenceAgent::evaluate(&input(parent(), SETTINGS), &facts);
    assert_eq!(
        facts.reads(),
        [
            "configmap team-a/a-service-ca",
            "get Cluster team-a/pg",
            "get ObjectStore team-a/backups",
            "get Service team-a/a-evidence-agent",
            "secret team-a/a-serving-cert",
            "secret team-a/aws-creds",
            "workload team-a/a-evidence-agent",
        ]
    );
    let facts = World::operator().facts();
    EvidenceAgent::evaluate(&input(parent(), OPERATOR), &facts);
    assert_eq!(
        facts.reads(),
        [
            "children ConfigMap",
            "get Cluster team-a/pg",
            "get ObjectStore team-a/backups",
            "get Service team-a/a-evidence-agent",
            "secret team-a/a-serving-cert",
            "secret team-a/aws-creds",
            "workload team-a/a-evidence-agent",
        ]
    );
}

#[test]
fn a_failed_read_is_unknown_and_retried_never_a_stall() {
    let mut world = World::healthy();
    world.failing.push(("Cluster".into(), "pg".into()));
    let v = pass(&world);
    let c = v.aspect(CONFIGURATION_VALID).expect("ConfigurationValid");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::Unknown, "Reconciling")
    );
    assert!(c.message.contains("could not read Cluster pg"));
    assert!(v.stall.is_none());
    assert_eq!(v.requeue_after_seconds, Some(30));

    for (what, name, aspect) in [
        ("secret", "a-serving-cert", SERVING_CERTIFICATE_READY),
        ("configmap", "a-service-ca", CONFIGURATION_VALID),
        ("secret", "aws-creds", WORKLOAD_READY),
        ("workload", "a-evidence-agent", CONFIGURATION_VALID),
    ] {
        let mut world = World::healthy();
        world.failing.push((what.into(), name.into()));
        assert_retried(&pass(&world), aspect, &format!("{what} {name}"));
    }
}

#[test]
fn the_pass_is_deterministic() {
    let worlds = [
        World::healthy(),
        World::healthy().without_secret("aws-creds"),
        World::healthy().controlled_by_another("a-service-ca"),
    ];
    for world in &worlds {
        assert_deterministic(|| pass(world));
        let changes = || format!("{:?}", reconcile(parent(), SETTINGS, world).changes);
        assert_eq!(changes(), changes());
    }
}
