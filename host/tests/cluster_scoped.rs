//! Cluster-scoped reads under `--namespaces`, against the real local API
//! server: a kind a guest reads that lives outside namespaces (here a
//! ClusterRole, read by the 0.1 legacy guest) is watched cluster-wide, and
//! its changes re-queue the parents that read it.

use reconciler_host_harness::guests as support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use reconciler_host::runtime::{Limits, Runtime, RuntimeConfig};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The host process; killed when dropped (printing its log's tail when the
/// test fails).
struct Host {
    child: Child,
    log: PathBuf,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!(
                "--- host log {}:\n{}",
                self.log.display(),
                lines[lines.len().saturating_sub(60)..].join("\n")
            );
        }
    }
}

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

async fn status_field(api: &Api<DynamicObject>, name: &str, field: &str, want: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let object = serde_json::to_value(api.get(name).await.expect("the widget")).unwrap();
        if object["status"][field] == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "status.{field} is not {want:?} after {TIMEOUT:?}: {}",
            object["status"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_cluster_scoped_read_is_watched_cluster_wide_with_namespaces_listed() {
    // The legacy guest alone in a guests directory of this test's own.
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-scoped-tests");
    let guests = base.join("guests");
    std::fs::create_dir_all(&guests).unwrap();
    let target = guests.join("legacy_v0_1_guest.wasm");
    std::fs::copy(support::guest_wasm("legacy-v0_1-guest"), &target).unwrap();
    let runtime = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: None,
    })
    .unwrap();
    let spec = runtime
        .load_file(&target)
        .expect("the guest loads")
        .spec()
        .clone();

    let ns = TestNamespace::new("cluster-scoped")
        .await
        .expect("a namespace");
    let client = ns.client();
    reconciler_testsupport::install_crd(
        &client,
        serde_json::from_value(reconciler_host::crd::render(&spec)).unwrap(),
    )
    .await
    .expect("the CRD");

    let log = base.join(format!("{}.log", ns.name()));
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let child = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .args(["--no-cache", "run", "--guests"])
        .arg(&guests)
        .args(["--guests-poll", "0", "--namespaces", ns.name()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("the host starts");
    let mut host = Host { child, log };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&host.log)
        .unwrap_or_default()
        .contains("caches synced; reconciling")
    {
        assert!(
            host.child.try_wait().unwrap().is_none(),
            "the host exited while starting"
        );
        assert!(Instant::now() < deadline, "the host did not sync in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let role_name = format!("{}-probe", ns.name());
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns.name(),
        &resource("testing.reconciler.dev", "LegacyWidget", "legacywidgets"),
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.reconciler.dev/v1", "kind": "LegacyWidget",
        "metadata": {"name": "w", "namespace": ns.name()},
        "spec": {"clusterRole": role_name},
    }))
    .unwrap();
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    status_field(&widgets, "w", "clusterRole", "absent").await;

    // Created after the pass that read it: the cluster-wide watch sees it
    // and re-queues the widget.
    let roles: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("rbac.authorization.k8s.io", "ClusterRole", "clusterroles"),
    );
    let role: Value = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": role_name}, "rules": []});
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(role).unwrap(),
        )
        .await
        .unwrap();
    status_field(&widgets, "w", "clusterRole", "present").await;
    roles
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
    status_field(&widgets, "w", "clusterRole", "absent").await;

    assert!(host.child.try_wait().unwrap().is_none(), "the host runs on");
    drop(host);
    ns.cleanup().await.ok();
}
