//! Test support: a real kube-apiserver (with embedded etcd) for integration
//! tests, started once per test binary from `tests/apiserver/up`.
//!
//! ```no_run
//! # async fn t() -> anyhow::Result<()> {
//! let ns = reconciler_testsupport::TestNamespace::new("smoke").await?;
//! let client = ns.client(); // admin (system:masters)
//! // ... create objects in ns.name() ...
//! ns.cleanup().await?; // or just drop it
//! # Ok(()) }
//! ```
//!
//! Server selection:
//! - `RECONCILER_TEST_KUBECONFIG=/path/kubeconfig` reuses a running server
//!   (e.g. one started by hand with `tests/apiserver/up`); nothing is started
//!   or stopped. `KUBECONFIG` is deliberately ignored: a developer's
//!   KUBECONFIG may point at a real cluster.
//! - Otherwise the first use in a test binary runs `tests/apiserver/up` with
//!   a data dir unique to this process, `APISERVER_WATCH_PID` = this process
//!   and `APISERVER_REMOVE_DATA_DIR=1`. The server polls that pid and shuts
//!   down cleanly (and removes its data dir) within about a second of the
//!   test binary exiting, however it exits: normally, by panic, or by SIGKILL.
//!
//! The server runs kube-apiserver and, beside it, kube-controller-manager
//! with the garbage collector and the namespace controller: ownerReferences
//! cascade and namespace deletion completes. No scheduler or kubelet:
//! Deployments and ReplicaSets are not reconciled and Pods never run, so
//! tests write the status a scenario needs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client, Config};

/// Env var naming the kubeconfig of an already running server to reuse.
pub const REUSE_ENV: &str = "RECONCILER_TEST_KUBECONFIG";

/// Field manager used for server-side apply by this crate.
pub const FIELD_MANAGER: &str = "reconciler-testsupport";

static KUBECONFIG: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Path of the admin kubeconfig of this test binary's server, starting the
/// server on first use (blocking; takes a few seconds, or minutes if the Go
/// program has to be built first).
pub fn kubeconfig_path() -> Result<PathBuf> {
    KUBECONFIG
        .get_or_init(|| start_or_reuse().map_err(|e| format!("{e:#}")))
        .clone()
        .map_err(|e| anyhow!("test apiserver unavailable: {e}"))
}

fn start_or_reuse() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(REUSE_ENV).filter(|p| !p.is_empty()) {
        tracing::info!(?path, "reusing apiserver from {REUSE_ENV}");
        return Ok(PathBuf::from(path));
    }
    let up = Path::new(env!("CARGO_MANIFEST_DIR")).join("../apiserver/up");
    let tmp = std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let dir = tmp.join(format!("reconciler-apiserver-{}", std::process::id()));
    let out = Command::new("bash")
        .arg(&up)
        .env("APISERVER_DIR", &dir)
        .env("APISERVER_WATCH_PID", std::process::id().to_string())
        .env("APISERVER_REMOVE_DATA_DIR", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit()) // progress and errors show in test output
        .output()
        .with_context(|| format!("running {}", up.display()))?;
    if !out.status.success() {
        bail!("{} failed ({})", up.display(), out.status);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .last()
        .context("up printed no kubeconfig path")?;
    Ok(PathBuf::from(last.trim()))
}

/// Client config for the admin identity (O=system:masters).
pub async fn admin_config() -> Result<Config> {
    let path = kubeconfig_path()?;
    let kubeconfig =
        Kubeconfig::read_from(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A new admin client. Create one per test (per tokio runtime): a client's
/// connections belong to the runtime it was created on.
pub async fn client() -> Result<Client> {
    Ok(Client::try_from(admin_config().await?)?)
}

/// A client acting as `user` in `groups`, by impersonation from the admin
/// identity: every request is authorized by RBAC as that user, so tests can
/// check least-privilege roles. `system:authenticated` is added by the server.
/// For a service account use `system:serviceaccount:<ns>:<name>` with groups
/// `["system:serviceaccounts", "system:serviceaccounts:<ns>"]`.
pub async fn client_as(user: &str, groups: &[&str]) -> Result<Client> {
    let mut config = admin_config().await?;
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    Ok(Client::try_from(config)?)
}

/// What a request asks the authorizer: `verb` on `resource` (plural, with a
/// `/subresource` suffix where there is one) of API `group` (`""` for core),
/// in `namespace` (`None` for cluster scope).
#[derive(Clone, Copy, Debug)]
pub struct Access<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
}

/// Waits (up to 30 s) until the server's authorizer allows `user` in
/// `groups` every access in `wanted`, asked by SubjectAccessReview as
/// admin. RBAC authorizes from informer caches, so a Role or binding just
/// written takes effect a moment later; a test that grants and then acts
/// calls this in between.
pub async fn await_access(
    client: &Client,
    user: &str,
    groups: &[&str],
    wanted: &[Access<'_>],
) -> Result<()> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    for access in wanted {
        let (resource, subresource) = match access.resource.split_once('/') {
            Some((r, s)) => (r, Some(s.to_string())),
            None => (access.resource, None),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.to_string()),
                groups: Some(groups.iter().map(|g| g.to_string()).collect()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(access.verb.to_string()),
                    group: Some(access.group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource,
                    namespace: access.namespace.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let answer = reviews
                .create(&PostParams::default(), &review)
                .await
                .with_context(|| format!("asking whether {user} may {access:?}"))?;
            if answer.status.is_some_and(|s| s.allowed) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                bail!("{user} still may not {access:?} after 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// Server-side applies `crd` and waits (up to 30 s) until it is Established.
pub async fn install_crd(client: &Client, crd: CustomResourceDefinition) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd
        .metadata
        .name
        .clone()
        .context("CRD has no metadata.name")?;
    let mut crd = crd;
    crd.metadata.managed_fields = None;
    crd.metadata.resource_version = None;
    let body = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": crd.metadata,
        "spec": crd.spec,
    });
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .with_context(|| format!("applying CRD {name}"))?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api, &name, conditions::is_crd_established()),
    )
    .await
    .with_context(|| format!("CRD {name} not Established after 30s"))??;
    Ok(())
}

/// A fresh namespace with a random suffix, deleted on [`cleanup`](Self::cleanup)
/// or drop.
pub struct TestNamespace {
    name: String,
    client: Client,
    deleted: bool,
}

impl TestNamespace {
    /// Creates `test-<prefix>-<random>` on this binary's server.
    pub async fn new(prefix: &str) -> Result<Self> {
        Self::on(client().await?, prefix).await
    }

    /// Creates `test-<prefix>-<random>` on the server `client` (an admin's)
    /// talks to: one a test started with flags of its own.
    pub async fn on(client: Client, prefix: &str) -> Result<Self> {
        let name = format!("test-{prefix}-{}", random_suffix());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok(Self {
            name,
            client,
            deleted: false,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The admin client this namespace was created with.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// `Api<K>` for this namespace with the admin client.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Deletes the namespace now (preferred over drop in async tests).
    pub async fn cleanup(mut self) -> Result<()> {
        self.deleted = true;
        delete_namespace(&self.client, &self.name).await
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if self.deleted {
            return;
        }
        // Drop can't await, and may run inside or outside a runtime: delete
        // on a helper thread with its own runtime and client.
        let name = std::mem::take(&mut self.name);
        let res = std::thread::spawn(move || -> Result<()> {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async {
                    let client = client().await?;
                    delete_namespace(&client, &name).await
                })
        })
        .join();
        if let Ok(Err(e)) = res {
            tracing::warn!("deleting test namespace: {e:#}");
        }
    }
}

async fn delete_namespace(client: &Client, name: &str) -> Result<()> {
    match Api::<Namespace>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("deleting namespace {name}")),
    }
}

/// 8 hex digits, distinct per call and per process.
fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{:08x}", h.finish() as u32)
}
