//! One test at least per reason the kind sets, each with a realistic trigger.

use evidenceagent_guest::registry::*;
use reconciler_guest_sdk::mock::workload_in;
use reconciler_guest_sdk::testing::{aspect, assert_as_expected, assert_condition, assert_stall};
use reconciler_guest_sdk::{Availability, ConditionStatus, EventType, Verdict, WorkloadState};
use serde_json::json;

use crate::common::*;

/// `type_` is False with `reason`, and its message mentions `needle`.
fn assert_false(verdict: &Verdict, type_: &str, reason: &str, needle: &str) {
    assert_condition(
        aspect(verdict, type_),
        ConditionStatus::False,
        reason,
        needle,
    );
}

#[test]
fn a_healthy_agent_is_true_everywhere() {
    let v = pass(&World::healthy());
    assert_as_expected(&v);
    assert!(
        aspect(&v, CONFIGURATION_VALID)
            .message
            .contains("s3://evidence-backups/pg")
    );
    assert!(aspect(&v, WORKLOAD_READY).message.contains("1/1"));
}

#[test]
fn configuration_invalid_for_a_spec_without_a_cluster() {
    let v = run(
        parent_with(json!({"image": "ghcr.io/fyannk/evidence-agent:1.1"})),
        SETTINGS,
        &World::healthy(),
    );
    assert_stall(&v, CONFIGURATION_INVALID, "spec.cluster is required");
}

#[test]
fn configuration_invalid_for_a_malformed_secret_selector_of_the_object_store() {
    let mut world = World::healthy();
    world.object_store = Some(object_store_with(json!({
        "destinationPath": "gs://evidence-backups",
        "googleCredentials": {"applicationCredentials": {"name": "gcs-creds"}},
    })));
    assert_stall(
        &pass(&world),
        CONFIGURATION_INVALID,
        "applicationCredentials must name a Secret and a key",
    );
}

#[test]
fn image_required_without_spec_image_or_default() {
    let v = run(
        parent(),
        &[("allowedImageRepositories", "ghcr.io/fyannk/")],
        &World::healthy(),
    );
    assert_stall(&v, IMAGE_REQUIRED, "defaultImage");
}

#[test]
fn image_not_allowed_outside_the_allowed_repositories() {
    let spec =
        json!({"cluster": {"name": "pg"}, "image": "docker.io/someone/evidence-agent:latest"});
    let v = run(parent_with(spec), SETTINGS, &World::healthy());
    assert_stall(&v, IMAGE_NOT_ALLOWED, "docker.io/someone/evidence-agent");
}

#[test]
fn image_allowed_by_a_prefix_and_any_image_without_an_allow_list() {
    let spec = json!({"cluster": {"name": "pg"}, "image": "ghcr.io/fyannk/evidence-agent@sha256:0123456789abcdef0123456789abcdef"});
    let v = run(parent_with(spec.clone()), SETTINGS, &World::healthy());
    assert_eq!(
        aspect(&v, CONFIGURATION_VALID).status,
        ConditionStatus::True
    );
    let spec =
        json!({"cluster": {"name": "pg"}, "image": "docker.io/someone/evidence-agent:latest"});
    let v = run(parent_with(spec), &[], &World::operator());
    assert_eq!(
        aspect(&v, CONFIGURATION_VALID).status,
        ConditionStatus::True
    );
}

#[test]
fn cluster_not_found() {
    let mut world = World::healthy();
    world.cluster = None;
    assert_stall(
        &pass(&world),
        CLUSTER_NOT_FOUND,
        "Cluster pg does not exist in team-a",
    );
}

#[test]
fn barman_plugin_not_configured_without_a_plugin_entry() {
    let mut world = World::healthy();
    let mut c = cluster_with_plugins(json!([]));
    c["spec"]["backup"] = json!({"barmanObjectStore": {"destinationPath": "s3://old"}});
    world.cluster = Some(c);
    assert_stall(
        &pass(&world),
        BARMAN_PLUGIN_NOT_CONFIGURED,
        "in-tree spec.backup.barmanObjectStore",
    );
}

#[test]
fn barman_plugin_not_configured_when_disabled_or_without_an_object_store() {
    let mut world = World::healthy();
    world.cluster = Some(cluster_with_plugins(json!([{
        "name": "barman-cloud.cloudnative-pg.io", "enabled": false, "parameters": {"barmanObjectName": "backups"},
    }])));
    assert_stall(
        &pass(&world),
        BARMAN_PLUGIN_NOT_CONFIGURED,
        "enabled: false",
    );
    world.cluster = Some(cluster_with_plugins(
        json!([{"name": "barman-cloud.cloudnative-pg.io"}]),
    ));
    assert_stall(
        &pass(&world),
        BARMAN_PLUGIN_NOT_CONFIGURED,
        "parameters.barmanObjectName",
    );
}

#[test]
fn object_store_api_unavailable_when_not_served_or_forbidden() {
    let mut world = World::healthy();
    world.object_store_availability = Availability::NotServed;
    assert_stall(&pass(&world), OBJECT_STORE_API_UNAVAILABLE, "not served");
    world.object_store_availability = Availability::Forbidden;
    assert_stall(
        &pass(&world),
        OBJECT_STORE_API_UNAVAILABLE,
        "may not read ObjectStores",
    );
}

#[test]
fn object_store_not_found() {
    let mut world = World::healthy();
    world.object_store = None;
    assert_stall(&pass(&world), OBJECT_STORE_NOT_FOUND, "ObjectStore backups");
}

#[test]
fn unsupported_object_store_with_an_iam_role() {
    let mut world = World::healthy();
    world.object_store = Some(object_store_with(json!({
        "destinationPath": "s3://evidence-backups/pg",
        "s3Credentials": {"inheritFromIAMRole": true},
    })));
    assert_stall(
        &pass(&world),
        UNSUPPORTED_OBJECT_STORE,
        "inheritFromIAMRole",
    );
}

#[test]
fn destination_invalid_for_a_bad_bucket_name() {
    let mut world = World::healthy();
    let mut configuration = s3_configuration();
    configuration["destinationPath"] = json!("s3://Evidence_Backups/pg");
    world.object_store = Some(object_store_with(configuration));
    assert_stall(&pass(&world), DESTINATION_INVALID, "names no valid bucket");
}

#[test]
fn region_required_for_aws_s3_without_a_region() {
    let mut world = World::healthy();
    let mut configuration = s3_configuration();
    configuration["s3Credentials"]
        .as_object_mut()
        .expect("s3Credentials")
        .remove("region");
    world.object_store = Some(object_store_with(configuration));
    assert_stall(&pass(&world), REGION_REQUIRED, "s3Credentials.region");
}

#[test]
fn resource_not_owned_for_each_generated_name() {
    for name in ["a-evidence-agent", "a-service-ca"] {
        let world = World::healthy().controlled_by_another(name);
        assert_stall(
            &pass(&world),
            RESOURCE_NOT_OWNED,
            "controlled by Deployment legacy-agent",
        );
    }
    let mut world = World::healthy();
    world.workload = None;
    let world = world.controlled_by_another("a-evidence-agent");
    assert_stall(
        &pass(&world),
        RESOURCE_NOT_OWNED,
        "Service a-evidence-agent",
    );
}

#[test]
fn children_controlled_by_this_agent_are_ours_and_nobodys_only_with_consent() {
    // Issue 30, "no adoption without a right": a Service nothing controls
    // (made by hand) is not taken over; the stall names the annotation by
    // which whoever may change it consents.
    let mut world = World::healthy();
    world.controllers.remove("a-evidence-agent");
    let v = pass(&world);
    assert_eq!(
        v.stall.as_ref().map(|s| s.reason.as_str()),
        Some("ResourceNotOwned")
    );
    assert_false(
        &v,
        CONFIGURATION_VALID,
        "ResourceNotOwned",
        "Deployment a-evidence-agent exists and nothing controls it: the operator takes over \
         an object only when whoever may change it consents, with the annotation \
         reconciler.dev/adopt: EvidenceAgent/a",
    );
    let world = World::healthy();
    assert!(pass(&world).stall.is_none());
}

#[test]
fn service_ca_pending_until_the_secret_is_issued() {
    let v = pass(&World::healthy().without_secret("a-serving-cert"));
    assert_false(
        &v,
        SERVING_CERTIFICATE_READY,
        SERVICE_CA_PENDING,
        "has not issued Secret a-serving-cert",
    );
    assert!(v.events.is_empty());
    assert!(v.stall.is_none());
    let v = pass(&World::healthy().with_secret("a-serving-cert", &["tls.crt"]));
    assert_false(
        &v,
        SERVING_CERTIFICATE_READY,
        SERVICE_CA_PENDING,
        "lacks tls.key",
    );
}

#[test]
fn service_ca_pending_until_the_ca_bundle_is_injected() {
    let mut world = World::healthy();
    world.config_maps = vec![("a-service-ca".into(), vec![])];
    let v = pass(&world);
    assert_false(
        &v,
        SERVING_CERTIFICATE_READY,
        SERVICE_CA_PENDING,
        "CA bundle into ConfigMap a-service-ca",
    );
    world.config_maps.clear();
    assert_false(
        &pass(&world),
        SERVING_CERTIFICATE_READY,
        SERVICE_CA_PENDING,
        "service-ca.crt",
    );
}

#[test]
fn certificate_issued_once_then_recorded() {
    let mut world = World::healthy();
    world.secret_annotations.insert(
        "a-serving-cert".into(),
        vec![(
            "service.beta.openshift.io/expiry".into(),
            "2028-11-28T12:00:00Z".into(),
        )],
    );
    let first = pass(&world);
    assert_eq!(first.events.len(), 1);
    let event = &first.events[0];
    assert_eq!(
        (event.type_, event.reason.as_str()),
        (EventType::Normal, CERTIFICATE_ISSUED)
    );
    assert!(
        event
            .message
            .contains("issued the serving certificate in Secret a-serving-cert")
    );
    let recorded = first.fields()["servingCertificate"].clone();
    assert_eq!(
        recorded,
        json!({"secretName": "a-serving-cert", "uid": "uid-team-a-a-serving-cert", "expiry": "2028-11-28T12:00:00Z"})
    );

    let mut next = parent();
    next["status"] = json!({"servingCertificate": recorded});
    let second = run(next.clone(), SETTINGS, &world);
    assert!(
        second.events.is_empty(),
        "not repeated: {:?}",
        second.events
    );
    assert_eq!(second.fields()["servingCertificate"], recorded);

    world.secret_annotations.insert(
        "a-serving-cert".into(),
        vec![(
            "service.beta.openshift.io/expiry".into(),
            "2030-11-28T12:00:00Z".into(),
        )],
    );
    let renewed = run(next.clone(), SETTINGS, &world);
    assert_eq!(renewed.events.len(), 1);
    assert!(renewed.events[0].message.contains("renewed"));
    assert!(renewed.events[0].message.contains("2030-11-28T12:00:00Z"));

    world
        .secret_uids
        .insert("a-serving-cert".into(), "uid-reissued".into());
    world.secret_annotations.clear();
    let reissued = run(next, SETTINGS, &world);
    assert_eq!(
        reissued.events.len(),
        1,
        "a recreated Secret is a new certificate"
    );
}

#[test]
fn no_certificate_event_while_pending() {
    let v = pass(&World::healthy().without_secret("a-serving-cert"));
    assert!(v.events.is_empty());
    assert!(v.fields().get("servingCertificate").is_none());
}

#[test]
fn secret_not_found_when_an_object_store_secret_is_missing() {
    let v = pass(&World::healthy().without_secret("aws-creds"));
    assert_false(
        &v,
        WORKLOAD_READY,
        SECRET_NOT_FOUND,
        "Secret aws-creds (spec.configuration.s3Credentials.accessKeyId, spec.configuration.s3Credentials.secretAccessKey",
    );
    assert!(
        v.stall.is_none(),
        "a missing Secret is watched, not a stall"
    );
}

#[test]
fn secret_key_missing_when_an_object_store_key_is_missing() {
    let v = pass(&World::healthy().with_secret("aws-creds", &["ACCESS_KEY_ID", "REGION"]));
    assert_false(
        &v,
        WORKLOAD_READY,
        SECRET_KEY_MISSING,
        "Secret aws-creds has no key ACCESS_SECRET_KEY",
    );
}

#[test]
fn reconciling_while_the_deployment_is_not_observed() {
    let mut world = World::healthy();
    world.workload = None;
    let c = pass(&world)
        .aspect(WORKLOAD_READY)
        .cloned()
        .expect("WorkloadReady");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::Unknown, "Reconciling")
    );
    assert!(c.message.contains("a-evidence-agent is not observed yet"));
}

/// One test per workload state: the host's fact, copied with the
/// Deployment's name.
macro_rules! workload_state {
    ($($test:ident: $state:ident($fact:literal) => $reason:expr;)*) => {$(
        #[test]
        fn $test() {
            let mut world = World::healthy();
            world.workload = Some(workload_in(NS, "a-evidence-agent", WorkloadState::$state($fact.into())));
            let v = pass(&world);
            assert_false(&v, WORKLOAD_READY, $reason, concat!("Deployment a-evidence-agent: ", $fact));
            assert!(v.stall.is_none());
        }
    )*};
}

workload_state! {
    workload_replica_failure: ReplicaFailure("pods \"a-evidence-agent-7d9\" is forbidden: exceeded quota: team-a") => REPLICA_FAILURE;
    workload_rollout_stuck: RolloutStuck("ReplicaSet \"a-evidence-agent-7d9\" has timed out progressing") => ROLLOUT_STUCK;
    workload_secret_not_found: SecretNotFound("secret \"aws-creds\" not found") => SECRET_NOT_FOUND;
    workload_secret_key_missing: SecretKeyMissing("couldn't find key REGION in Secret team-a/aws-creds") => SECRET_KEY_MISSING;
    workload_config_map_not_found: ConfigMapNotFound("configmap \"a-service-ca\" not found") => CONFIG_MAP_NOT_FOUND;
    workload_pod_unschedulable: PodUnschedulable("0/3 nodes are available: 3 Insufficient memory") => POD_UNSCHEDULABLE;
    workload_image_pull_failed: ImagePullFailed("Back-off pulling image \"ghcr.io/fyannk/evidence-agent:1.0\"") => IMAGE_PULL_FAILED;
    workload_crash_loop_back_off: CrashLoopBackOff("back-off 5m0s restarting failed container=agent") => CRASH_LOOP_BACK_OFF;
    workload_rollout_in_progress: RolloutInProgress("1 of 2 updated replicas are available") => ROLLOUT_IN_PROGRESS;
    workload_pod_not_ready: PodNotReady("0/1 replicas Ready") => POD_NOT_READY;
}

#[test]
fn a_fact_naming_the_deployment_is_not_prefixed_twice() {
    let mut world = World::healthy();
    let fact = "Deployment a-evidence-agent: 0 of 1 replicas ready";
    world.workload = Some(workload_in(
        NS,
        "a-evidence-agent",
        WorkloadState::PodNotReady(fact.into()),
    ));
    assert_eq!(
        pass(&world)
            .aspect(WORKLOAD_READY)
            .map(|c| c.message.as_str()),
        Some(fact)
    );
}
