//! The Helm chart (`deploy/chart`, issue 17) with the real Helm
//! (helm.sh/helm/v4, built from the Go module proxy by `tests/helm/helm`):
//! it lints, and what it renders (CRDs included) is accepted by the real API
//! server; its Deployment is in step with `deploy/operator.yaml`; shards
//! render one Deployment each with its own shard index.

use std::process::Command;

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use reconciler_host_harness::makefile::workspace;
use reconciler_host_harness::plans::documents;
use serde::Deserialize;
use serde_json::Value;

/// `helm <args>` from the workspace: its stdout, or a panic with stderr.
fn helm(args: &[&str]) -> String {
    let out = Command::new(workspace().join("tests/helm/helm"))
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("tests/helm/helm runs");
    assert!(
        out.status.success(),
        "helm {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// What `helm template` says when it refuses `extra`.
fn helm_fails(extra: &[&str]) -> String {
    let mut args = vec!["template", "reconciler-host", "deploy/chart"];
    args.extend_from_slice(extra);
    let out = Command::new(workspace().join("tests/helm/helm"))
        .args(&args)
        .current_dir(workspace())
        .output()
        .expect("tests/helm/helm runs");
    assert!(!out.status.success(), "helm {args:?} rendered");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The documents of a YAML stream.
fn parse(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn render(extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "template",
        "reconciler-host",
        "deploy/chart",
        "--namespace",
        "reconciler-system",
        "--include-crds",
    ];
    args.extend_from_slice(extra);
    parse(&helm(&args))
}

fn deployments(documents: &[Value]) -> Vec<&Value> {
    documents
        .iter()
        .filter(|d| d["kind"] == "Deployment")
        .collect()
}

/// With `monitoring.*.enabled`, the chart ships deploy/monitoring/ as it
/// is: the alerts (promtool-tested, host/tests/monitoring.rs) as a
/// PrometheusRule's spec, the dashboard in a ConfigMap Grafana's sidecar
/// picks up; neither by default.
#[test]
fn the_chart_ships_the_dashboard_and_the_alerts_when_asked() {
    let read = |file: &str| std::fs::read_to_string(workspace().join(file)).expect(file);
    let off = render(&[]);
    assert!(
        !off.iter().any(|d| d["kind"] == "PrometheusRule"
            || d["metadata"]["name"] == "reconciler-host-dashboard")
    );
    let on = render(&[
        "--set",
        "monitoring.dashboard.enabled=true,monitoring.prometheusRule.enabled=true",
        "--set",
        "monitoring.prometheusRule.labels.release=prometheus",
    ]);
    let rule = on
        .iter()
        .find(|d| d["kind"] == "PrometheusRule")
        .expect("a PrometheusRule");
    let alerts: Value = serde_yaml::from_str(&read("deploy/monitoring/alerts.yaml")).unwrap();
    assert_eq!(rule["spec"], alerts, "the PrometheusRule holds alerts.yaml");
    assert_eq!(rule["metadata"]["labels"]["release"], "prometheus");
    let dashboard = on
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "reconciler-host-dashboard")
        .expect("the dashboard's ConfigMap");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let shipped: Value = serde_json::from_str(
        dashboard["data"]["reconciler-host.json"]
            .as_str()
            .expect("the dashboard's JSON"),
    )
    .expect("JSON");
    let file: Value = serde_json::from_str(&read("deploy/monitoring/dashboard.json")).unwrap();
    assert_eq!(shipped, file);
}

/// `image.digest` pins the image by digest (issue 36); without it the tag,
/// by default the chart's appVersion.
#[test]
fn the_image_is_pinned_by_digest_when_one_is_given() {
    let image = |extra: &[&str]| -> String {
        deployments(&render(extra))[0]["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .expect("an image")
            .to_owned()
    };
    assert_eq!(image(&[]), "ghcr.io/fyannk/reconciler-host:0.1.0");
    let digest = "sha256:0f3c5a1f2e6d4b7a8c9e0d1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d";
    assert_eq!(
        image(&["--set", &format!("image.digest={digest},image.tag=ignored")]),
        format!("ghcr.io/fyannk/reconciler-host@{digest}")
    );
}

/// The caches' volume is limited to what the host keeps in it (each
/// cache's bound, and a margin for the one stored last), so the kubelet
/// never evicts the host for its caches.
#[test]
fn the_cache_volume_is_limited_to_the_caches_bounds() {
    let cache = |extra: &[&str]| -> (String, Vec<String>) {
        let rendered = render(extra);
        let spec = &deployments(&rendered)[0]["spec"]["template"]["spec"];
        let volume = spec["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["name"] == "cache")
            .expect("the cache volume");
        let limit = volume["emptyDir"]["sizeLimit"]
            .as_str()
            .expect("a sizeLimit");
        let args = spec["containers"][0]["args"].as_array().expect("args");
        let bounds = args
            .iter()
            .filter_map(Value::as_str)
            .filter(|a| a.contains("-max-mib="))
            .map(str::to_owned)
            .collect();
        (limit.to_owned(), bounds)
    };
    assert_eq!(
        cache(&[]),
        ("1536Mi".to_owned(), vec!["--cache-max-mib=1024".to_owned()])
    );
    assert_eq!(
        cache(&[
            "--set",
            "runtime.cacheMaxMib=256,guestModules.enabled=true,guestModules.pulledMaxMib=2048",
        ]),
        (
            "2816Mi".to_owned(),
            vec![
                "--cache-max-mib=256".to_owned(),
                "--pulled-max-mib=2048".to_owned()
            ]
        )
    );
}

#[test]
fn the_chart_lints_with_its_defaults_and_every_option_on() {
    helm(&["lint", "deploy/chart", "--strict"]);
    helm(&[
        "lint",
        "deploy/chart",
        "--strict",
        "--set",
        "serviceMonitor.enabled=true,shards=3,otlpEndpoint=http://collector:4318",
        "--set",
        "monitoring.dashboard.enabled=true,monitoring.prometheusRule.enabled=true",
        "--set",
        "plans.approvals.PgAdmin=manual,plans.modes.EvidenceAgent=observe",
        "--set",
        "guestModules.enabled=true,guestModules.registrySecret=registry",
        "--set",
        "guestModules.promotionFloors.EvidenceAgent=manual",
    ]);
}

/// The chart's Deployment runs the host as deploy/operator.yaml does:
/// every argument, environment variable, probe, volume and security
/// setting of the plain manifest is the chart's default too.
#[test]
fn the_chart_and_the_plain_manifests_are_in_step() {
    let rendered = render(&[]);
    let chart = deployments(&rendered);
    assert_eq!(chart.len(), 1, "one shard: one Deployment");
    let plain = documents("operator.yaml");
    let plain = plain
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("operator.yaml's Deployment");
    let (c, p) = (&chart[0]["spec"], &plain["spec"]);
    assert_eq!(c["replicas"], p["replicas"]);
    let (cs, ps) = (&c["template"]["spec"], &p["template"]["spec"]);
    assert_eq!(cs["securityContext"], ps["securityContext"]);
    assert_eq!(cs["volumes"], ps["volumes"]);
    assert_eq!(cs["serviceAccountName"], ps["serviceAccountName"]);
    let (cc, pc) = (&cs["containers"][0], &ps["containers"][0]);
    for field in [
        "readinessProbe",
        "livenessProbe",
        "securityContext",
        "resources",
        "volumeMounts",
        "ports",
    ] {
        assert_eq!(cc[field], pc[field], "{field}");
    }
    let chart_args: Vec<&Value> = cc["args"].as_array().expect("args").iter().collect();
    for arg in pc["args"].as_array().expect("args") {
        assert!(
            chart_args.contains(&arg),
            "operator.yaml runs {arg}; the chart does not: {chart_args:?}"
        );
    }
    let names = |c: &Value| -> Vec<String> {
        c["env"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    };
    let chart_env = names(cc);
    for name in names(pc) {
        assert!(chart_env.contains(&name), "env {name}: {chart_env:?}");
    }
}

/// Three shards: three Deployments, each its own shard index and pods.
#[test]
fn each_shard_is_a_deployment_of_its_own() {
    let rendered = render(&["--set", "shards=3"]);
    let shards = deployments(&rendered);
    assert_eq!(shards.len(), 3);
    for (i, d) in shards.iter().enumerate() {
        let args: Vec<&str> = d["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        assert!(args.contains(&"--shards=3"), "{args:?}");
        assert!(
            args.contains(&format!("--shard-index={i}").as_str()),
            "{args:?}"
        );
        assert_eq!(
            d["spec"]["selector"]["matchLabels"]["reconciler.dev/shard"],
            i.to_string()
        );
    }
}

/// The ring: one Deployment whose replicas join the ring (no leader
/// election, no shards), the Leases Role able to delete a lapsed member's,
/// the ClusterRole patching parents' labels bound to the host, and the
/// admission policy keeping those labels the host's.
#[test]
fn the_ring_is_one_deployment_scaled_like_any_other() {
    let rendered = render(&["--set", "ring.enabled=true,replicaCount=3"]);
    let ring = deployments(&rendered);
    assert_eq!(ring.len(), 1);
    assert_eq!(ring[0]["spec"]["replicas"], 3);
    let args: Vec<&str> = ring[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(args.contains(&"--ring"), "{args:?}");
    assert!(args.contains(&"--lease-duration=15s"), "{args:?}");
    assert!(args.contains(&"--ring-selection=auto"), "{args:?}");
    assert!(
        !rendered
            .iter()
            .any(|d| d["kind"] == "HorizontalPodAutoscaler")
    );
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--leader-elect") || a.starts_with("--shard")),
        "{args:?}"
    );
    let named = |kind: &str, name: &str| {
        rendered
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{kind} {name}"))
    };
    assert!(
        named("Role", "reconciler-host-leases")["rules"][0]["verbs"]
            .as_array()
            .unwrap()
            .contains(&Value::from("delete"))
    );
    assert_eq!(
        named("ClusterRole", "reconciler-host-ring")["rules"][0]["verbs"],
        serde_json::json!(["assign", "patch"])
    );
    // Only a holder of `assign` changes the ring's labels.
    assert_eq!(
        named(
            "ValidatingAdmissionPolicyBinding",
            "ring-assignments.reconciler.dev"
        )["spec"]["validationActions"],
        serde_json::json!(["Deny"])
    );
    assert_eq!(
        named("ClusterRoleBinding", "reconciler-host-ring")["roleRef"]["name"],
        "reconciler-host-ring"
    );
    // Without the ring, neither.
    let plain = render(&[]);
    assert!(
        !plain
            .iter()
            .any(|d| d["metadata"]["name"] == "reconciler-host-ring")
    );
    // Scaled by an HPA: the Deployment leaves its replicas to it.
    let scaled = render(&[
        "--set",
        "ring.enabled=true,ring.autoscaling.enabled=true,ring.selection=server",
    ]);
    let hpa = scaled
        .iter()
        .find(|d| d["kind"] == "HorizontalPodAutoscaler")
        .expect("an HPA");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "reconciler-host");
    assert_eq!(
        (&hpa["spec"]["minReplicas"], &hpa["spec"]["maxReplicas"]),
        (&Value::from(2), &Value::from(6))
    );
    let scaled_ring = deployments(&scaled);
    assert!(scaled_ring[0]["spec"].get("replicas").is_none());
    assert!(
        scaled_ring[0]["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .contains(&Value::from("--ring-selection=server"))
    );
    let both = helm_fails(&["--set", "ring.enabled=true,shards=2"]);
    assert!(both.contains("exclude each other"), "{both}");
    let modules = helm_fails(&["--set", "ring.enabled=true,guestModules.enabled=true"]);
    assert!(modules.contains("exclude each other"), "{modules}");
}

/// The floors of review, one value: the host's `--promotion-floor` per
/// kind and the ConfigMap the admission policy's binding reads, in the
/// release's namespace; an empty one without floors (the policy refuses
/// every GuestModule write without it); a floor that is no promotion
/// refused at render.
#[test]
fn the_floors_of_review_reach_the_host_and_the_admission_policy_alike() {
    let floors = |rendered: &[Value]| {
        let args: Vec<String> = deployments(rendered)[0]["spec"]["template"]["spec"]["containers"]
            [0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .filter(|a| a.starts_with("--promotion-floor"))
            .map(str::to_owned)
            .collect();
        let config_map = rendered
            .iter()
            .find(|d| {
                d["kind"] == "ConfigMap" && d["metadata"]["name"] == "reconciler-promotion-floors"
            })
            .expect("the floors' ConfigMap");
        let binding = rendered
            .iter()
            .find(|d| {
                d["metadata"]["name"] == "guestmodule-promotion-floors.reconciler.dev"
                    && d["kind"] == "ValidatingAdmissionPolicyBinding"
            })
            .expect("the floors' binding");
        assert_eq!(
            binding["spec"]["paramRef"],
            serde_json::json!({"name": "reconciler-promotion-floors", "namespace": "team-ops",
                "parameterNotFoundAction": "Deny"})
        );
        assert_eq!(config_map["metadata"]["namespace"], "team-ops");
        (args, config_map["data"].clone())
    };
    let with = |set: &str| {
        parse(&helm(&[
            "template",
            "reconciler-host",
            "deploy/chart",
            "--namespace",
            "team-ops",
            "--set",
            set,
        ]))
    };
    assert_eq!(
        floors(&with("guestModules.enabled=true")),
        (Vec::<String>::new(), Value::Null)
    );
    assert_eq!(
        floors(&with(
            "guestModules.enabled=true,guestModules.promotionFloors.EvidenceAgent=manual,guestModules.promotionFloors.PgAdmin=auto"
        )),
        (
            vec![
                "--promotion-floor=EvidenceAgent=manual".to_owned(),
                "--promotion-floor=PgAdmin=auto".to_owned()
            ],
            serde_json::json!({"EvidenceAgent": "manual", "PgAdmin": "auto"})
        )
    );
    let wrong = helm_fails(&[
        "--set",
        "guestModules.enabled=true,guestModules.promotionFloors.PgAdmin=none",
    ]);
    assert!(
        wrong.contains("guestModules.promotionFloors.PgAdmin: none is no promotion"),
        "{wrong}"
    );
}

/// Everything the chart renders, its CRDs first, is accepted by the real
/// API server (server-side apply, as `helm install` would create it).
#[tokio::test]
async fn the_real_api_server_accepts_what_the_chart_renders() {
    let client = reconciler_testsupport::client()
        .await
        .expect("the test apiserver");
    let rendered = render(&[
        "--set",
        "plans.approvals.PgAdmin=manual,guestModules.enabled=true,guestModules.registrySecret=registry,guestModules.promotionFloors.PgAdmin=manual",
    ]);
    let (crds, rest): (Vec<Value>, Vec<Value>) = rendered
        .into_iter()
        .partition(|d| d["kind"] == "CustomResourceDefinition");
    assert_eq!(
        crds.len(),
        7,
        "four kinds, PgAdminAccess, ReconcilePlan and GuestModule"
    );
    for crd in crds {
        reconciler_testsupport::install_crd(&client, serde_json::from_value(crd).expect("a CRD"))
            .await
            .expect("installing a CRD");
    }
    let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "reconciler-system"}});
    let mut all = vec![namespace];
    all.extend(rest);
    for manifest in all {
        let (group, version) = match manifest["apiVersion"].as_str().expect("apiVersion") {
            v if v.contains('/') => v.split_once('/').expect("group/version"),
            v => ("", v),
        };
        let gvk = GroupVersionKind::gvk(group, version, manifest["kind"].as_str().expect("kind"));
        let name = manifest["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_owned();
        let (resource, caps) = pinned_kind(&client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("{gvk:?} is served: {e}"));
        let api: kube::Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => kube::Api::namespaced_with(
                client.clone(),
                manifest["metadata"]["namespace"]
                    .as_str()
                    .expect("the chart names every namespace"),
                &resource,
            ),
            Scope::Cluster => kube::Api::all_with(client.clone(), &resource),
        };
        api.patch(
            &name,
            &PatchParams::apply("chart-test").force(),
            &Patch::Apply(&manifest),
        )
        .await
        .unwrap_or_else(|e| panic!("the API server refuses {} {name}: {e}", gvk.kind));
    }
}
