//! ConfigurationValid and WorkloadReady: one test at least per reason, each with a realistic trigger.

use pgtoolboxconsole_guest::registry::*;
use reconciler_guest_sdk::mock::workload_in;
use reconciler_guest_sdk::testing::{assert_as_expected, assert_stall};
use reconciler_guest_sdk::{ConditionStatus, WorkloadState};
use serde_json::json;

use crate::common::*;

pub use reconciler_guest_sdk::testing::{aspect, assert_condition};

#[test]
fn a_healthy_route_console_is_true_everywhere_with_its_url() {
    let v = pass(&World::healthy());
    assert_as_expected(&v);
    let config = &aspect(&v, CONFIGURATION_VALID).message;
    assert!(
        config.contains("ghcr.io/fyannk/pgtoolbox-console:1.0"),
        "{config}"
    );
    assert!(
        config.contains("pgtoolbox-console, pgtoolbox-console-pod-logs"),
        "{config}"
    );
    assert_eq!(v.fields()["url"], json!("https://orders.apps.example.com"));
    assert_eq!(v.fields()["publishedExposureKinds"], json!(["Route"]));
    assert_eq!(v.requeue_after_seconds, None);
}

#[test]
fn a_cluster_ip_console_is_not_requested_and_needs_no_host_suffix() {
    let mut world = World::healthy();
    world.exposures.clear();
    let settings = &SETTINGS[..2];
    let v = run(parent_with(json!({})), settings, &world);
    assert_condition(
        aspect(&v, EXPOSURE_READY),
        ConditionStatus::True,
        NOT_REQUESTED,
        "clusterIP",
    );
    assert_eq!(v.fields()["url"], serde_json::Value::Null);
    assert_eq!(
        v.fields()["publishedExposureKinds"],
        serde_json::Value::Null
    );
    assert!(v.stall.is_none());
}

#[test]
fn console_image_required_without_spec_image_or_default() {
    let v = run(parent(), &SETTINGS[1..], &World::healthy());
    assert_stall(&v, CONSOLE_IMAGE_REQUIRED, "no default console image");
}

#[test]
fn image_not_allowed_for_the_console_and_for_the_oauth_proxy() {
    let mut spec = route_spec();
    spec["image"] = json!("docker.io/someone/console:latest");
    assert_stall(
        &run(parent_with(spec), SETTINGS, &World::healthy()),
        IMAGE_NOT_ALLOWED,
        "docker.io/someone/console",
    );
    let mut spec = route_spec();
    spec["oauthProxy"] =
        json!({"image": "docker.io/someone/proxy:1", "clientSecretRef": {"name": "oidc"}});
    let world = World::healthy().with_secret("oidc", &["client-id", "client-secret"]);
    assert_stall(
        &run(parent_with(spec), SETTINGS, &world),
        IMAGE_NOT_ALLOWED,
        "spec.oauthProxy.image",
    );
}

#[test]
fn configuration_invalid_for_what_the_schema_should_have_refused() {
    let v = run(
        parent_with(json!({"exposure": {"type": "ingress"}})),
        SETTINGS,
        &World::healthy(),
    );
    assert_stall(
        &v,
        CONFIGURATION_INVALID,
        "spec.exposure.hostname is required",
    );
    let mut spec = route_spec();
    spec["image"] = json!("ghcr.io/fyannk/a b");
    assert_stall(
        &run(parent_with(spec), SETTINGS, &World::healthy()),
        CONFIGURATION_INVALID,
        "not an image reference",
    );
}

#[test]
fn console_role_missing_names_each_missing_role() {
    let world = World::healthy()
        .without_role("pgtoolbox-console-pod-logs")
        .without_role("pgtoolbox-console-restore-drills");
    let mut spec = route_spec();
    spec["restoreDrills"] = json!({"enabled": true});
    let v = run(parent_with(spec), SETTINGS, &world);
    assert_stall(
        &v,
        CONSOLE_ROLE_MISSING,
        "ClusterRoles pgtoolbox-console-pod-logs, pgtoolbox-console-restore-drills do not exist",
    );
    // Without pod logs and restore drills, only the console's own role is needed.
    let mut spec = route_spec();
    spec["podLogs"] = json!(false);
    assert!(run(parent_with(spec), SETTINGS, &world).stall.is_none());
}

#[test]
fn secret_not_found_names_the_secret_and_its_field() {
    let mut spec = route_spec();
    spec["oauthProxy"] = json!({"image": "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", "clientSecretRef": {"name": "oidc"}});
    let v = run(parent_with(spec), SETTINGS, &World::healthy());
    assert_stall(
        &v,
        SECRET_NOT_FOUND,
        "Secret oidc (spec.oauthProxy.clientSecretRef) does not exist in team-b",
    );
}

#[test]
fn config_map_not_found_for_the_instance_ca_bundle_ref() {
    let mut spec = route_spec();
    spec["instanceCABundleRef"] = json!({"name": "instance-cas"});
    let v = run(parent_with(spec.clone()), SETTINGS, &World::healthy());
    assert_stall(
        &v,
        CONFIG_MAP_NOT_FOUND,
        "ConfigMap instance-cas (spec.instanceCABundleRef)",
    );
    let v = run(
        parent_with(spec),
        SETTINGS,
        &World::healthy().with_config_map("instance-cas"),
    );
    assert!(v.stall.is_none());
}

#[test]
fn exposure_policy_invalid_carries_the_servers_answer() {
    let message = "NetworkPolicy.networking.k8s.io \"orders-ingress\" is invalid: spec.ingress[0].from[0].podSelector.matchLabels: Invalid value";
    let refused = World::healthy().refused_policy(422, "Invalid", message);
    let v = run(evaluated(parent()), SETTINGS, &refused);
    assert_stall(&v, EXPOSURE_POLICY_INVALID, message);
    assert!(
        aspect(&v, CONFIGURATION_VALID)
            .message
            .contains("422 Invalid")
    );
    let v = run(
        evaluated(parent()),
        SETTINGS,
        &World::healthy().refused_policy(
            403,
            "Forbidden",
            "admission webhook \"policy.example.com\" denied the request",
        ),
    );
    assert_stall(&v, EXPOSURE_POLICY_INVALID, "denied the request");
}

#[test]
fn other_refusals_or_a_policy_not_rendered_are_not_exposure_policy_invalid() {
    let v = run(
        evaluated(parent()),
        SETTINGS,
        &World::healthy().refused_policy(409, "Conflict", "the object has been modified"),
    );
    assert!(v.stall.is_none());
    let world = World::healthy().refused_policy(422, "Invalid", "x");
    let v = run(
        evaluated(parent_with(
            json!({"exposure": {"type": "route", "hostname": HOST, "networkPolicy": {"enabled": false}}}),
        )),
        SETTINGS,
        &world,
    );
    assert!(
        v.stall.is_none(),
        "no policy rendered: its old refusal says nothing"
    );
    let mut world = world;
    world.exposures.clear();
    assert!(
        run(parent_with(json!({})), SETTINGS, &world)
            .stall
            .is_none()
    );
}

#[test]
fn resource_not_owned_for_a_deployment_of_someone_else() {
    let mut world = World::healthy();
    world.workload.as_mut().unwrap().meta.controller = Some(someone_else());
    assert_stall(
        &pass(&world),
        RESOURCE_NOT_OWNED,
        "Deployment orders-console exists and is controlled by Deployment legacy-console",
    );
}

#[test]
fn the_first_failing_check_decides_in_documented_order() {
    let mut spec = route_spec();
    spec["image"] = json!("docker.io/x/y:1");
    let world = World::healthy().without_role("pgtoolbox-console");
    assert_eq!(
        run(parent_with(spec), SETTINGS, &world)
            .stall
            .unwrap()
            .reason,
        IMAGE_NOT_ALLOWED
    );
    let mut world = World::healthy().without_role("pgtoolbox-console");
    world.workload.as_mut().unwrap().meta.controller = Some(someone_else());
    assert_eq!(
        pass(&world).stall.unwrap().reason,
        CONSOLE_ROLE_MISSING,
        "references before ownership"
    );
}

#[test]
fn secret_key_missing_when_the_client_secret_lacks_a_key() {
    let mut spec = route_spec();
    spec["oauthProxy"] = json!({"image": "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", "clientSecretRef": {"name": "oidc"}});
    let v = run(
        parent_with(spec),
        SETTINGS,
        &World::healthy().with_secret("oidc", &["client-id"]),
    );
    assert_condition(
        aspect(&v, WORKLOAD_READY),
        ConditionStatus::False,
        SECRET_KEY_MISSING,
        "Secret oidc (spec.oauthProxy.clientSecretRef) has no key client-secret",
    );
    assert!(v.stall.is_none());
}

#[test]
fn reconciling_while_the_deployment_is_not_observed() {
    let mut world = World::healthy();
    world.workload = None;
    let v = pass(&world);
    assert_condition(
        aspect(&v, WORKLOAD_READY),
        ConditionStatus::Unknown,
        "Reconciling",
        "orders-console is not observed yet",
    );
}

/// One test per workload state: the host's fact, copied with the
/// Deployment's name.
macro_rules! workload_state {
    ($($test:ident: $state:ident($fact:literal) => $reason:expr;)*) => {$(
        #[test]
        fn $test() {
            let mut world = World::healthy();
            world.workload = Some(workload_in(NS, "orders-console", WorkloadState::$state($fact.into())));
            let v = pass(&world);
            assert_condition(aspect(&v, WORKLOAD_READY), ConditionStatus::False, $reason, concat!("Deployment orders-console: ", $fact));
            assert!(v.stall.is_none());
        }
    )*};
}

workload_state! {
    workload_replica_failure: ReplicaFailure("pods \"orders-console-7d9\" is forbidden: exceeded quota: team-b") => REPLICA_FAILURE;
    workload_rollout_stuck: RolloutStuck("ReplicaSet \"orders-console-7d9\" has timed out progressing") => ROLLOUT_STUCK;
    workload_secret_key_missing: SecretKeyMissing("couldn't find key client-secret in Secret team-b/oidc") => SECRET_KEY_MISSING;
    workload_pod_unschedulable: PodUnschedulable("0/3 nodes are available: 3 Insufficient memory") => POD_UNSCHEDULABLE;
    workload_image_pull_failed: ImagePullFailed("Back-off pulling image \"ghcr.io/fyannk/pgtoolbox-console:1.0\"") => IMAGE_PULL_FAILED;
    workload_crash_loop_back_off: CrashLoopBackOff("back-off 5m0s restarting failed container=console") => CRASH_LOOP_BACK_OFF;
    workload_rollout_in_progress: RolloutInProgress("1 of 2 updated replicas are available") => ROLLOUT_IN_PROGRESS;
    workload_pod_not_ready: PodNotReady("0/1 replicas Ready") => POD_NOT_READY;
    workload_secret_not_found: SecretNotFound("secret \"oidc\" not found") => SECRET_NOT_FOUND;
    workload_config_map_not_found: ConfigMapNotFound("configmap \"orders-instance-ca\" not found") => CONFIG_MAP_NOT_FOUND;
}

#[test]
fn a_deployment_controlled_by_this_console_or_by_nobody_is_ours() {
    let mut world = World::healthy();
    world.workload.as_mut().unwrap().meta.controller = Some(reconciler_guest_sdk::ControllerRef {
        api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
        kind: "PgToolBoxConsole".into(),
        name: NAME.into(),
        uid: UID.into(),
    });
    assert!(pass(&world).stall.is_none());
}
