//! The plans' manifests of `deploy/` (the ReconcilePlan CRD, its roles,
//! its admission policy), applied as they ship, and the reviewer CLI run
//! as the built binary.

use std::path::Path;

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Scope, pinned_kind};
use kube::{Api, Client};
use serde::Deserialize;
use serde_json::Value;

use crate::makefile::workspace;

/// Every document of a YAML file of `deploy/`.
pub fn documents(file: &str) -> Vec<Value> {
    let path = workspace().join("deploy").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{file}: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// Each bundled kind's plan approver role, as `reconciler-host rbac`
/// prints it into `deploy/generated/rbac.yaml`.
pub fn approver_roles() -> Vec<Value> {
    documents("generated/rbac.yaml")
        .into_iter()
        .filter(|d| d["metadata"]["labels"]["reconciler.dev/aggregate-to-plan-approver"] == "true")
        .collect()
}

/// Applies the plans' manifests of `deploy/` as they are: the CRD (waiting
/// until it is Established), the roles (the bundled kinds' approver roles
/// too), the admission policy.
pub async fn install(client: &Client) {
    for crd in documents("plans-crd.yaml") {
        reconciler_testsupport::install_crd(client, serde_json::from_value(crd).expect("a CRD"))
            .await
            .expect("installing the plans CRD");
    }
    let mut manifests = documents("plans-rbac.yaml");
    manifests.extend(approver_roles());
    manifests.extend(documents("plans-admission.yaml"));
    for manifest in manifests {
        let (group, version) = manifest["apiVersion"]
            .as_str()
            .and_then(|v| v.split_once('/'))
            .expect("group/version");
        let gvk = GroupVersionKind::gvk(group, version, manifest["kind"].as_str().expect("kind"));
        let (resource, caps) = pinned_kind(client, &gvk).await.expect("served");
        assert!(matches!(caps.scope, Scope::Cluster), "{gvk:?}");
        let name = manifest["metadata"]["name"].as_str().expect("name");
        Api::<DynamicObject>::all_with(client.clone(), &resource)
            .patch(
                name,
                &PatchParams::apply("plans-admission-test").force(),
                &Patch::Apply(&manifest),
            )
            .await
            .unwrap_or_else(|e| panic!("applying {} {name}: {e}", gvk.kind));
    }
}

/// The ReconcilePlans of the namespace `ns`, as the API server lists them.
pub async fn listed(client: &Client, ns: &str) -> Vec<Value> {
    crate::objects::api(client, ns, "reconciler.dev/v1alpha1", "ReconcilePlan")
        .list(&Default::default())
        .await
        .expect("listing plans")
        .items
        .into_iter()
        .map(|p| serde_json::to_value(p).expect("a plan as JSON"))
        .collect()
}

/// `reconciler-host plan <args>` (the binary at `host`) under
/// `kubeconfig`: whether it succeeded, its stdout and its stderr.
pub fn plan_cli(host: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(host)
        .arg("plan")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("the CLI runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("plan {args:?}: {}\n{stdout}{stderr}", out.status);
    (out.status.success(), stdout, stderr)
}
