//! The kind's spec and the rules across aspects: order, stalls and their rechecks, reads, pause, failed reads, determinism.

use pgtoolboxconsole_guest::PgToolBoxConsole;
use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::testing::{
    assert_deterministic, assert_kind, assert_pause, assert_reads, assert_registry, assert_retried,
    owner,
};
use reconciler_guest_sdk::{ConditionStatus, ConventionProfile, Guest};
use serde_json::json;

use crate::common::*;

#[test]
fn describe_declares_the_kind() {
    let spec = PgToolBoxConsole::describe();
    assert_kind(
        &spec,
        [
            "pgtoolbox.fyannk.dev",
            "v1alpha1",
            "PgToolBoxConsole",
            "pgtoolboxconsoles",
        ],
    );
    assert!(spec.namespaced);
    assert_eq!(spec.profile, ConventionProfile::Progressing);
    assert_eq!(
        spec.aspects,
        ["ConfigurationValid", "WorkloadReady", "ExposureReady"]
    );
    assert_eq!(
        spec.advisory,
        ["InstanceCABundleComplete", "ExposureConfined"]
    );
    assert_eq!(spec.quiet_reasons, ["RolloutInProgress", "PodNotReady"]);
    assert!(spec.negative_polarity.is_empty());
    assert_pause(&spec, "pgtoolbox.fyannk.dev/reconcile", "skip");
}

#[test]
fn every_configuration_reason_stalls_with_the_seed_rechecks() {
    let spec = PgToolBoxConsole::describe();
    let rules: Vec<(&str, Option<u32>)> = spec
        .stalls
        .iter()
        .map(|s| (s.reason.as_str(), s.recheck_seconds))
        .collect();
    for expected in [
        ("ConsoleImageRequired", None),
        ("ImageNotAllowed", None),
        ("HostnameNotAllowed", None),
        ("ConsoleRoleMissing", Some(120)),
        ("SecretNotFound", None),
        ("ConfigMapNotFound", Some(120)),
        ("ExposurePolicyInvalid", Some(300)),
        ("ResourceNotOwned", None),
        ("ConfigurationInvalid", None),
    ] {
        assert!(rules.contains(&expected), "{expected:?} in {rules:?}");
    }
    assert_eq!(rules.len(), 9);
}

#[test]
fn the_registry_has_every_seed_reason_with_its_owner() {
    let spec = PgToolBoxConsole::describe();
    assert_registry(&spec, &["console"]);
    let owner = |name: &str| owner(&spec, name);
    for console in [
        "ConsoleImageRequired",
        "ConsoleRoleMissing",
        "InstanceCAMissing",
        "InstanceCAInvalid",
        "InstanceCABundleFull",
        "ExposureOpen",
        "ExposurePeersBroad",
        "ExposurePolicyInvalid",
        "ExposurePolicyBypassed",
        "ExposureTrustUnverified",
        "ExposurePolicyKept",
    ] {
        assert_eq!(owner(console), "console", "{console}");
    }
    for common in [
        "ImageNotAllowed",
        "HostnameNotAllowed",
        "SecretNotFound",
        "SecretKeyMissing",
        "ConfigMapNotFound",
        "ResourceNotOwned",
        "RolloutInProgress",
        "RolloutStuck",
        "ReplicaFailure",
        "PodUnschedulable",
        "ImagePullFailed",
        "CrashLoopBackOff",
        "PodNotReady",
        "NotRequested",
        "NotAdmitted",
        "NotAccepted",
        "RouteAPIUnavailable",
        "GatewayAPIUnavailable",
        "ConfigurationInvalid",
    ] {
        assert_eq!(owner(common), "common", "{common}");
    }
}

/// Seed 000, common reasons: ScaledToZero "Registered; no current
/// reconciler sets it."; GatewayNotFound, HostnameConflict "The Gateway
/// named by parentRef is absent; another route claims the hostname.
/// Registered; the current reconcilers do not set them."
#[test]
fn the_reasons_no_reconciler_sets_are_registered_with_the_seeds_meaning() {
    let spec = PgToolBoxConsole::describe();
    let meaning = |name: &str| {
        let r = spec.reasons.iter().find(|r| r.name == name);
        let r = r.unwrap_or_else(|| panic!("{name} registered"));
        assert_eq!(r.owner, "common", "{name}");
        r.meaning.clone()
    };
    assert_eq!(
        meaning(SCALED_TO_ZERO),
        "Registered; no current reconciler sets it."
    );
    assert!(meaning(GATEWAY_NOT_FOUND).starts_with("The Gateway named by parentRef is absent."));
    assert!(meaning(HOSTNAME_CONFLICT).starts_with("Another route claims the hostname."));
    for name in [GATEWAY_NOT_FOUND, HOSTNAME_CONFLICT] {
        assert!(
            meaning(name).ends_with("Registered; the current reconcilers do not set it."),
            "{name}"
        );
    }
}

#[test]
fn reads_declare_every_kind_the_guest_reads() {
    let spec = PgToolBoxConsole::describe();
    assert_reads(
        &spec,
        &[
            ("apps/v1/Deployment", false),
            ("/v1/Pod", false),
            ("/v1/Secret", false),
            ("/v1/ConfigMap", false),
            ("postgresql.cnpg.io/v1/Cluster", true),
            ("networking.k8s.io/v1/NetworkPolicy", false),
            ("/v1/Node", true),
            ("route.openshift.io/v1/Route", true),
            ("networking.k8s.io/v1/Ingress", false),
            ("gateway.networking.k8s.io/v1/HTTPRoute", true),
            ("rbac.authorization.k8s.io/v1/ClusterRole", false),
        ],
    );
    assert_eq!(spec.reads.len(), 11);
}

#[test]
fn the_spec_schema_documents_every_field() {
    let schema: serde_json::Value =
        serde_json::from_str(&PgToolBoxConsole::describe().spec_schema.expect("schema"))
            .expect("JSON");
    let p = &schema["properties"];
    for field in [
        "image",
        "oauthProxy",
        "exposure",
        "clusterSelector",
        "instanceCABundleRef",
        "podLogs",
        "restoreDrills",
    ] {
        assert!(
            p[field]["description"].is_string() || p[field]["properties"].is_object(),
            "{field}"
        );
    }
    assert_eq!(
        p["exposure"]["properties"]["type"]["enum"],
        json!(["clusterIP", "route", "ingress", "gateway"])
    );
    assert_eq!(
        p["exposure"]["properties"]["networkPolicy"]["properties"]["enabled"]["default"],
        true
    );
    assert_eq!(p["podLogs"]["default"], true);
}

#[test]
fn a_healthy_pass_depends_on_everything_it_checked() {
    let mut world = World::healthy();
    world.clusters = vec![cluster("pg", "b")];
    world.certificates = vec![ca("pg-ca", "aa")];
    let facts = world.facts();
    let spec = json!({"exposure": {"type": "route", "hostname": HOST}, "clusterSelector": {"matchLabels": {"team": "b"}}});
    PgToolBoxConsole::evaluate(&input(parent_with(spec), SETTINGS), &facts);
    let reads = facts.reads();
    for expected in [
        "clusterrole pgtoolbox-console",
        "clusterrole pgtoolbox-console-pod-logs",
        "configmap team-b/orders-instance-ca",
        "exposure ExposureKind::Route team-b/orders-console",
        "last-apply NetworkPolicy team-b/orders-ingress",
        "list Cluster team-b [(\"team\", \"b\")]",
        "certificates team-b/pg-ca[ca.crt]",
        "workload team-b/orders-console",
    ] {
        assert!(
            reads.iter().any(|r| r == expected),
            "{expected} in {reads:?}"
        );
    }
}

#[test]
fn a_paused_pass_without_a_refused_hostname_gives_no_aspect() {
    let world = World::healthy().without_role("pgtoolbox-console");
    let v = run_paused(parent(), SETTINGS, &world);
    assert!(v.aspects.is_empty());
    assert!(v.stall.is_none());
    assert!(
        v.fields().get("url").is_none(),
        "url untouched while paused"
    );
}

#[test]
fn a_paused_pass_keeps_the_instance_ca_condition_as_it_was() {
    let previous = json!({"conditions": [condition("InstanceCABundleComplete", "False", "InstanceCAMissing")],
                          "instanceCABundle": {"missing": [{"cluster": "pg", "secret": "pg-ca", "reason": "SecretNotFound"}]}});
    let v = run_paused(with_status(parent(), previous), SETTINGS, &World::healthy());
    let c = v.advisory_of("InstanceCABundleComplete").expect("kept");
    assert_eq!(
        (c.status, c.reason.as_str(), c.message.as_str()),
        (ConditionStatus::False, "InstanceCAMissing", "before")
    );
    assert!(
        v.fields().get("instanceCABundle").is_none(),
        "left as it is"
    );
}

#[test]
fn a_failed_read_is_unknown_and_retried_never_a_stall() {
    for (what, name, aspect) in [
        ("clusterrole", "pgtoolbox-console", CONFIGURATION_VALID),
        ("workload", "orders-console", CONFIGURATION_VALID),
        ("exposure", "orders-console", EXPOSURE_READY),
    ] {
        let mut world = World::healthy();
        world.failing.push((what.into(), name.into()));
        assert_retried(&pass(&world), aspect, &format!("{what} {name}"));
    }
}

#[test]
fn a_failed_exposure_read_leaves_the_url_and_the_record_as_they_were() {
    let mut world = World::healthy();
    world
        .failing
        .push(("exposure".into(), "orders-console".into()));
    let previous =
        json!({"url": "https://orders.apps.example.com", "publishedExposureKinds": ["Route"]});
    let v = run(with_status(parent(), previous), SETTINGS, &world);
    assert!(v.fields().get("url").is_none());
    assert_eq!(v.fields()["publishedExposureKinds"], json!(["Route"]));
}

#[test]
fn the_pass_is_deterministic() {
    let worlds = [
        World::healthy(),
        World::healthy().without_role("pgtoolbox-console-pod-logs"),
        World::healthy().kind(
            reconciler_guest_sdk::ExposureKind::Route,
            reconciler_guest_sdk::Availability::Forbidden,
        ),
    ];
    for world in &worlds {
        assert_deterministic(|| pass(world));
    }
}
