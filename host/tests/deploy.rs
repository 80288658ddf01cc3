//! `deploy/` is what a cluster administrator applies: the generated CRDs
//! and ClusterRole are what the bundled guests describe today (`make
//! deploy` rewrites them), the Deployment mounts a ConfigMap for every
//! bundled guest, the plans' manifests (`deploy/plans-*.yaml`) have an
//! approver role for every bundled kind, and a real API server accepts
//! every manifest.

use reconciler_host_harness::guests as support;
use reconciler_host_harness::makefile;

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use reconciler_host::runtime::{Runtime, RuntimeConfig};
use serde::Deserialize;
use serde_json::Value;

use makefile::{guests, workspace};

fn read(path: &str) -> String {
    let path = workspace().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every document of a YAML file.
fn documents(path: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(&read(path))
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

#[test]
fn generated_manifests_are_what_the_guests_describe() {
    let guest_modules =
        serde_yaml::to_string(&reconciler_host::operator::guest_modules::kind::crd())
            .expect("YAML");
    assert!(
        guest_modules == read("deploy/generated/guestmodule-crd.yaml"),
        "deploy/generated/guestmodule-crd.yaml is out of date: run `make deploy`"
    );
    let runtime = Runtime::new(RuntimeConfig {
        cache: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let modules: Vec<_> = guests()
        .iter()
        .map(|g| {
            let wasm = support::guest_wasm(&format!("{g}-guest"));
            let module = runtime
                .load_file(&wasm)
                .unwrap_or_else(|e| panic!("{g} loads: {e}"));
            (g.clone(), module)
        })
        .collect();
    for (g, module) in &modules {
        let rendered =
            serde_yaml::to_string(&reconciler_host::crd::render(module.spec())).expect("YAML");
        assert!(
            rendered == read(&format!("deploy/generated/{g}-crd.yaml")),
            "deploy/generated/{g}-crd.yaml is out of date: run `make deploy`"
        );
    }
    let specs: Vec<_> = modules.iter().map(|(_, m)| &**m.spec()).collect();
    let role = reconciler_host::rbac::yaml(&reconciler_host::rbac::documents(
        "reconciler-host",
        &specs,
        &[],
        &reconciler_host::rbac::offline,
    ))
    .expect("YAML");
    assert!(
        role == read("deploy/generated/rbac.yaml"),
        "deploy/generated/rbac.yaml is out of date: run `make deploy`"
    );
    let ring = serde_yaml::to_string(&reconciler_host::rbac::ring_role(
        "reconciler-host",
        &specs,
        &reconciler_host::rbac::offline,
    ))
    .expect("YAML");
    assert!(
        ring == read("deploy/generated/rbac-ring.yaml"),
        "deploy/generated/rbac-ring.yaml is out of date: run `make deploy`"
    );
}

#[test]
fn the_deployment_mounts_a_config_map_for_every_bundled_guest() {
    let deployment = documents("deploy/operator.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("operator.yaml has the host's Deployment");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    let guests_volume = volumes
        .iter()
        .find(|v| v["name"] == "guests")
        .expect("the guests volume");
    let mounted: Vec<&str> = guests_volume["projected"]["sources"]
        .as_array()
        .expect("a projected volume")
        .iter()
        .filter_map(|s| s["configMap"]["name"].as_str())
        .collect();
    for g in guests() {
        let name = format!("reconciler-guest-{g}");
        assert!(
            mounted.contains(&name.as_str()),
            "deploy/operator.yaml does not mount ConfigMap {name}: {mounted:?}"
        );
    }
}

/// Replicas beyond one stand by: the Deployment runs the host with
/// `--leader-elect` (one writer), serves the endpoints its probes ask
/// (`/readyz`, `/healthz`) and logs JSON for a cluster's log pipeline.
#[test]
fn the_deployment_elects_a_leader_and_probes_the_host() {
    let deployment = documents("deploy/operator.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("operator.yaml has the host's Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    if deployment["spec"]["replicas"].as_u64().unwrap_or(1) > 1 {
        assert!(args.contains(&"--leader-elect"), "{args:?}");
    }
    assert!(
        args.iter().any(|a| a.starts_with("--metrics-addr=")),
        "{args:?}"
    );
    assert!(args.contains(&"--log-format=json"), "{args:?}");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    let leases = documents("deploy/operator.yaml")
        .into_iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "reconciler-host-leases")
        .expect("a Role for the Lease");
    assert_eq!(leases["rules"][0]["resources"][0], "leases");
}

/// Deciding a plan needs `approve` on its parent's kind: every bundled
/// kind has its approver role (`reconciler-host rbac` prints it beside the
/// host's), joining the aggregated one; and `manage` (the approve check's
/// exemption) is the host's role's alone.
#[test]
fn every_bundled_kind_has_a_plan_approver_role() {
    let roles: Vec<Value> = documents("deploy/plans-rbac.yaml")
        .into_iter()
        .chain(documents("deploy/generated/rbac.yaml"))
        .filter(|d| d["kind"] == "ClusterRole")
        .collect();
    for g in guests() {
        let crd = documents(&format!("deploy/generated/{g}-crd.yaml"))
            .pop()
            .expect("a CRD");
        let (group, plural) = (&crd["spec"]["group"], &crd["spec"]["names"]["plural"]);
        let name = format!(
            "reconciler-plan-approver-{}",
            plural.as_str().expect("plural")
        );
        let role = roles
            .iter()
            .find(|r| r["metadata"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("deploy/generated/rbac.yaml has no ClusterRole {name}"));
        assert_eq!(
            role["metadata"]["labels"]["reconciler.dev/aggregate-to-plan-approver"], "true",
            "{name} joins reconciler-plan-approver"
        );
        assert_eq!(
            role["rules"],
            serde_json::json!([{"apiGroups": [group], "resources": [plural], "verbs": ["approve"]}]),
            "{name}"
        );
    }
    for role in &roles {
        let grants_manage = role["rules"].as_array().into_iter().flatten().any(|r| {
            r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "manage" || v == "*"))
        });
        assert_eq!(
            grants_manage,
            role["metadata"]["name"] == "reconciler-plan-manager",
            "only reconciler-plan-manager grants manage: {}",
            role["metadata"]["name"]
        );
    }
}

#[tokio::test]
async fn a_real_api_server_accepts_every_manifest() {
    let client = reconciler_testsupport::client()
        .await
        .expect("the test apiserver");
    let mut manifests = Vec::new();
    for g in guests() {
        manifests.extend(documents(&format!("deploy/generated/{g}-crd.yaml")));
    }
    manifests.extend(documents("deploy/generated/rbac.yaml"));
    manifests.extend(documents("deploy/generated/rbac-ring.yaml"));
    manifests.extend(documents("deploy/operator.yaml"));
    manifests.extend(documents("deploy/generated/guestmodule-crd.yaml"));
    for file in [
        "plans-crd",
        "plans-rbac",
        "guestmodules-rbac",
        "guestmodules-admission",
        "plans-admission",
        "gates-admission",
        "ring-admission",
    ] {
        manifests.extend(documents(&format!("deploy/{file}.yaml")));
    }
    for manifest in manifests {
        let (group, version) = match manifest["apiVersion"].as_str().expect("apiVersion") {
            v if v.contains('/') => v.split_once('/').expect("group/version"),
            v => ("", v),
        };
        let gvk = GroupVersionKind::gvk(group, version, manifest["kind"].as_str().expect("kind"));
        let name = manifest["metadata"]["name"]
            .as_str()
            .expect("metadata.name")
            .to_owned();
        let (resource, caps) = pinned_kind(&client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("{gvk:?} is served: {e}"));
        let api: kube::Api<DynamicObject> = match caps.scope {
            Scope::Namespaced => kube::Api::namespaced_with(
                client.clone(),
                manifest["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default"),
                &resource,
            ),
            Scope::Cluster => kube::Api::all_with(client.clone(), &resource),
        };
        api.patch(
            &name,
            &PatchParams::apply("deploy-test").force(),
            &Patch::Apply(&manifest),
        )
        .await
        .unwrap_or_else(|e| panic!("the API server refuses {} {name}: {e}", gvk.kind));
    }
}
