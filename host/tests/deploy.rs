//! `deploy/` is what a cluster administrator applies: the generated CRDs
//! and ClusterRole are what the bundled guests describe today (`make
//! deploy` rewrites them), the Deployment mounts a ConfigMap for every
//! bundled guest, and a real API server accepts every manifest.

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
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: None,
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
    let role = serde_yaml::to_string(&reconciler_host::rbac::cluster_role(
        "reconciler-host",
        &specs,
        &reconciler_host::rbac::offline,
    ))
    .expect("YAML");
    assert!(
        role == read("deploy/generated/rbac.yaml"),
        "deploy/generated/rbac.yaml is out of date: run `make deploy`"
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
    manifests.extend(documents("deploy/operator.yaml"));
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
