//! The changes a pass asks for: the children's bodies in canonical form, under their generated names, per issuer; nothing on a stall or a refusal; the other mode's leftovers deleted.

use evidenceagent_guest::registry::*;
use reconciler_guest_sdk::testing::assert_stall;
use reconciler_guest_sdk::{Change, ConditionStatus, KindRef};
use serde_json::{Value, json};

use crate::common::*;

/// A change as one line: what it does, to which kind and name.
fn summary(change: &Change) -> String {
    match change {
        Change::Apply(a) => format!("apply {} {}", a.kind.kind, a.name),
        Change::Delete(d) => format!("delete {} {} {}", d.kind.kind, d.name, d.uid),
        Change::Certificate(c) => format!("certificate {} {}", c.name, c.dns_names.join(",")),
        Change::Generate(g) => format!("generate {}", g.name),
        Change::Bundle(b) => format!("bundle {}", b.name),
        Change::Withdraw(w) => format!(
            "withdraw {} {} {}",
            w.object.kind.kind, w.object.name, w.object.uid
        ),
    }
}

fn summaries(changes: &[Change]) -> Vec<String> {
    changes.iter().map(summary).collect()
}

/// The body of the apply of `kind` in `changes`, checked against what the
/// host requires of it.
fn body(changes: &[Change], kind: &str) -> Value {
    let apply = changes
        .iter()
        .find_map(|c| match c {
            Change::Apply(a) if a.kind.kind == kind => Some(a),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no apply of {kind}"));
    let body: Value = serde_json::from_str(&apply.body).expect("JSON body");
    let api_version = if apply.kind.group.is_empty() {
        apply.kind.version.clone()
    } else {
        format!("{}/{}", apply.kind.group, apply.kind.version)
    };
    assert_eq!(body["apiVersion"], api_version.as_str());
    assert_eq!(body["kind"], kind);
    assert_eq!(body["metadata"]["name"], apply.name.as_str());
    assert!(
        body["metadata"].get("namespace").is_none(),
        "the host sets it"
    );
    assert!(
        body["metadata"].get("ownerReferences").is_none(),
        "the host sets it"
    );
    assert_canonical(&body, kind);
    body
}

/// What a GET returns after defaulting never has nulls, empty lists or
/// maps, or fractional numbers: a body with one would never be found
/// already applied.
fn assert_canonical(value: &Value, at: &str) {
    match value {
        Value::Null => panic!("{at} is null"),
        Value::Array(items) => {
            assert!(!items.is_empty(), "{at} is an empty list");
            for (i, item) in items.iter().enumerate() {
                assert_canonical(item, &format!("{at}[{i}]"));
            }
        }
        Value::Object(fields) => {
            assert!(!fields.is_empty(), "{at} is an empty map");
            for (k, v) in fields {
                assert_canonical(v, &format!("{at}.{k}"));
            }
        }
        Value::Number(n) => assert!(n.is_i64(), "{at} is not an integer"),
        Value::String(_) | Value::Bool(_) => {}
    }
}

fn labels() -> Value {
    json!({"app.kubernetes.io/name": "evidence-agent", "app.kubernetes.io/instance": "a"})
}

#[test]
fn under_the_operator_the_certificate_is_asked_for_then_the_service_and_deployment() {
    let r = reconcile(parent(), OPERATOR, &World::operator());
    assert_eq!(
        summaries(&r.changes),
        [
            "certificate a-serving-cert a-evidence-agent,a-evidence-agent.team-a,a-evidence-agent.team-a.svc,a-evidence-agent.team-a.svc.cluster.local",
            "apply Service a-evidence-agent",
            "apply Deployment a-evidence-agent",
        ]
    );
}

#[test]
fn under_the_service_ca_the_ca_bundle_configmap_is_applied_with_no_data() {
    let r = reconcile(parent(), SETTINGS, &World::healthy());
    assert_eq!(
        summaries(&r.changes),
        [
            "apply ConfigMap a-service-ca",
            "apply Service a-evidence-agent",
            "apply Deployment a-evidence-agent",
        ]
    );
    let config_map = body(&r.changes, "ConfigMap");
    assert_eq!(
        config_map,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a-service-ca",
                "labels": labels(),
                "annotations": {"service.beta.openshift.io/inject-cabundle": "true"},
            },
        })
    );
}

#[test]
fn the_service_fronts_the_pods_and_names_its_issuer() {
    let service =
        |settings, world: &World| body(&reconcile(parent(), settings, world).changes, "Service");
    let expected = |annotations: Value| {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "a-evidence-agent", "labels": labels(), "annotations": annotations},
            "spec": {
                "type": "ClusterIP",
                "selector": labels(),
                "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}],
            },
        })
    };
    assert_eq!(
        service(SETTINGS, &World::healthy()),
        expected(json!({
            "pgtoolbox.fyannk.dev/serving-certificate": "service-ca",
            "service.beta.openshift.io/serving-cert-secret-name": "a-serving-cert",
        }))
    );
    assert_eq!(
        service(OPERATOR, &World::operator()),
        expected(json!({"pgtoolbox.fyannk.dev/serving-certificate": "operator"}))
    );
}

#[test]
fn the_deployment_runs_one_agent_with_its_object_store_and_certificate() {
    let deployment = body(
        &reconcile(parent(), OPERATOR, &World::operator()).changes,
        "Deployment",
    );
    let secret = |env: &str, key: &str| json!({"name": env, "valueFrom": {"secretKeyRef": {"name": "aws-creds", "key": key}}});
    assert_eq!(
        deployment,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "a-evidence-agent", "labels": labels()},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels()},
                "template": {
                    "metadata": {"labels": labels()},
                    "spec": {
                        "automountServiceAccountToken": false,
                        "containers": [{
                            "name": "evidence-agent",
                            "image": "ghcr.io/fyannk/evidence-agent:1.0",
                            "env": [
                                {"name": "EVIDENCE_AGENT_CLUSTER", "value": "pg"},
                                {"name": "EVIDENCE_AGENT_OBJECT_STORE", "value": "backups"},
                                {"name": "EVIDENCE_AGENT_DESTINATION_PATH", "value": "s3://evidence-backups/pg"},
                                secret("AWS_ACCESS_KEY_ID", "ACCESS_KEY_ID"),
                                secret("AWS_SECRET_ACCESS_KEY", "ACCESS_SECRET_KEY"),
                                secret("AWS_REGION", "REGION"),
                            ],
                            "ports": [{"name": "https", "containerPort": 8443, "protocol": "TCP"}],
                            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "https", "scheme": "HTTPS"}},
                            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                            "securityContext": {
                                "allowPrivilegeEscalation": false,
                                "capabilities": {"drop": ["ALL"]},
                                "runAsNonRoot": true,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "volumeMounts": [{"name": "tls", "mountPath": "/var/run/secrets/tls", "readOnly": true}],
                        }],
                        "volumes": [{"name": "tls", "secret": {"secretName": "a-serving-cert"}}],
                    },
                },
            },
        })
    );
}

#[test]
fn the_deployment_is_the_same_under_either_issuer() {
    let deployment =
        |settings, world: &World| body(&reconcile(parent(), settings, world).changes, "Deployment");
    assert_eq!(
        deployment(SETTINGS, &World::healthy()),
        deployment(OPERATOR, &World::operator())
    );
}

#[test]
fn an_s3_compatible_endpoint_and_its_ca_reach_the_agent() {
    let mut world = World::operator().with_secret("minio", &["id", "key", "ca.crt"]);
    world.object_store = Some(object_store_with(json!({
        "destinationPath": "s3://evidence/pg",
        "endpointURL": "https://minio.minio:9000",
        "endpointCA": selector("minio", "ca.crt"),
        "s3Credentials": {
            "accessKeyId": selector("minio", "id"),
            "secretAccessKey": selector("minio", "key"),
        },
    })));
    let deployment = body(&reconcile(parent(), OPERATOR, &world).changes, "Deployment");
    let env: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        env,
        [
            "EVIDENCE_AGENT_CLUSTER",
            "EVIDENCE_AGENT_OBJECT_STORE",
            "EVIDENCE_AGENT_DESTINATION_PATH",
            "EVIDENCE_AGENT_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "EVIDENCE_AGENT_ENDPOINT_CA",
        ]
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["env"][3]["value"],
        "https://minio.minio:9000"
    );
}

#[test]
fn a_name_controlled_by_another_object_stalls_and_asks_for_nothing() {
    for (settings, world, name, kind) in [
        (
            OPERATOR,
            World::operator(),
            "a-evidence-agent",
            "Deployment",
        ),
        (OPERATOR, World::operator(), "a-serving-cert", "Secret"),
        (SETTINGS, World::healthy(), "a-service-ca", "ConfigMap"),
    ] {
        let r = reconcile(parent(), settings, &world.controlled_by_another(name));
        assert_stall(
            &r.verdict,
            RESOURCE_NOT_OWNED,
            &format!("{kind} {name} exists and is controlled by Deployment legacy-agent"),
        );
        assert!(r.changes.is_empty(), "{name}: {:?}", summaries(&r.changes));
    }
    let mut world = World::operator();
    world.workload = None;
    let r = reconcile(
        parent(),
        OPERATOR,
        &world.controlled_by_another("a-evidence-agent"),
    );
    assert_stall(&r.verdict, RESOURCE_NOT_OWNED, "Service a-evidence-agent");
    assert!(r.changes.is_empty());
}

#[test]
fn a_serving_secret_nobody_controls_is_not_the_operators_to_replace() {
    let mut world = World::healthy();
    world.config_maps.clear();
    let r = reconcile(parent(), OPERATOR, &world);
    assert_stall(
        &r.verdict,
        RESOURCE_NOT_OWNED,
        "Secret a-serving-cert exists and EvidenceAgent a does not control it: the operator issues the serving certificate only into a Secret of its own; delete it",
    );
    assert!(
        r.changes.is_empty(),
        "the host would refuse the certificate"
    );
}

#[test]
fn only_the_names_the_issuer_writes_are_checked() {
    let mut world = World::operator();
    world.config_maps = vec![("a-service-ca".into(), vec![])];
    let r = reconcile(
        parent(),
        OPERATOR,
        &world.controlled_by_another("a-service-ca"),
    );
    assert!(
        r.verdict.stall.is_none(),
        "the operator writes no ConfigMap"
    );
    assert!(
        !summaries(&r.changes)
            .iter()
            .any(|c| c.contains("a-service-ca"))
    );
    let r = reconcile(
        parent(),
        SETTINGS,
        &World::healthy().controlled_by_another("a-serving-cert"),
    );
    assert!(
        r.verdict.stall.is_none(),
        "the service CA's Secret is not the agent's"
    );
}

#[test]
fn the_other_modes_child_is_deleted_by_the_uid_seen() {
    let world = World::operator().with_child(config_map_kind(), "a-service-ca", "uid-bundle");
    let r = reconcile(parent(), OPERATOR, &world);
    assert_eq!(
        summaries(&r.changes)[0],
        "delete ConfigMap a-service-ca uid-bundle"
    );
    assert_eq!(r.changes.len(), 4);

    let mut world = World::healthy().controlled_by_this_agent("a-serving-cert");
    world
        .secret_uids
        .insert("a-serving-cert".into(), "uid-operator-cert".into());
    let r = reconcile(parent(), SETTINGS, &world);
    assert_eq!(
        summaries(&r.changes)[0],
        "delete Secret a-serving-cert uid-operator-cert"
    );
    assert_eq!(r.changes.len(), 4);
}

#[test]
fn the_current_modes_children_and_other_names_are_kept() {
    let world = World::operator().with_child(config_map_kind(), "a-settings", "uid-other");
    let r = reconcile(parent(), OPERATOR, &world);
    assert!(
        !summaries(&r.changes)
            .iter()
            .any(|c| c.starts_with("delete")),
        "{:?}",
        summaries(&r.changes)
    );
    let world = World::healthy().with_child(config_map_kind(), "a-service-ca", "uid-bundle");
    let r = reconcile(parent(), SETTINGS, &world);
    assert!(
        !summaries(&r.changes)
            .iter()
            .any(|c| c.starts_with("delete"))
    );
}

#[test]
fn a_failed_read_of_the_children_defers_the_deletion() {
    let mut world = World::operator().with_child(config_map_kind(), "a-service-ca", "uid-bundle");
    world.failing.push(("children".into(), "ConfigMap".into()));
    let r = reconcile(parent(), OPERATOR, &world);
    assert_eq!(r.verdict.requeue_after_seconds, Some(30));
    assert!(
        !summaries(&r.changes)
            .iter()
            .any(|c| c.starts_with("delete"))
    );
    assert_eq!(r.changes.len(), 3, "the rest is asked for");
}

#[test]
fn a_stall_renders_nothing_and_deletes_nothing() {
    let mut world = World::operator().with_child(config_map_kind(), "a-service-ca", "uid-bundle");
    world.cluster = None;
    let r = reconcile(parent(), OPERATOR, &world);
    assert_stall(&r.verdict, CLUSTER_NOT_FOUND, "Cluster pg");
    assert!(r.changes.is_empty());

    let mut world = World::operator();
    world.failing.push(("Cluster".into(), "pg".into()));
    let r = reconcile(parent(), OPERATOR, &world);
    assert_eq!(
        r.verdict.aspect(CONFIGURATION_VALID).map(|c| c.status),
        Some(ConditionStatus::Unknown)
    );
    assert!(
        r.changes.is_empty(),
        "nothing is rendered before it is known"
    );
}

#[test]
fn an_unknown_issuer_setting_is_configuration_invalid() {
    let settings = [
        ("defaultImage", "ghcr.io/fyannk/evidence-agent:1.0"),
        ("servingCertificate", "cert-manager"),
    ];
    let r = reconcile(parent(), &settings, &World::operator());
    assert_stall(
        &r.verdict,
        CONFIGURATION_INVALID,
        "the operator setting servingCertificate is \"cert-manager\"",
    );
    assert!(r.changes.is_empty());
}

#[test]
fn an_agent_name_too_long_for_its_service_is_configuration_invalid() {
    let mut long = parent();
    long["metadata"]["name"] = json!("a".repeat(49));
    let r = reconcile(long, OPERATOR, &World::operator());
    assert_stall(
        &r.verdict,
        CONFIGURATION_INVALID,
        "which is not a DNS-1035 label",
    );
    assert!(r.changes.is_empty());
}

#[test]
fn every_change_is_of_a_kind_the_guest_writes() {
    use evidenceagent_guest::EvidenceAgent;
    use reconciler_guest_sdk::Guest;
    let writes = EvidenceAgent::writes();
    let world = World::operator().with_child(config_map_kind(), "a-service-ca", "uid-bundle");
    let kinds: Vec<KindRef> = reconcile(parent(), OPERATOR, &world)
        .changes
        .iter()
        .chain(&reconcile(parent(), SETTINGS, &World::healthy()).changes)
        .map(|c| match c {
            Change::Apply(a) => a.kind.clone(),
            Change::Delete(d) => d.kind.clone(),
            _ => secret_kind(),
        })
        .collect();
    assert!(kinds.iter().all(|k| writes.contains(k)), "{kinds:?}");
}
