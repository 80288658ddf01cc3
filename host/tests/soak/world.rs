//! The soak's world: an API server of its own behind a TCP fault proxy
//! (restarts keep one address, latency) and an HTTP proxy (injected 503s),
//! two host replicas electing a leader through them, the namespace with its
//! agents, access requests and plans' manifests, and the clients of the
//! people who act in it.

use std::path::PathBuf;
use std::time::Duration;

use kube::api::DynamicObject;
use kube::{Api, Client};
use reconciler_host::operator::cluster::decode::{self, Decoded};
use reconciler_host_harness::access_requests::furnish;
use reconciler_host_harness::http_proxy::HttpFaultProxy;
use reconciler_host_harness::objects::{self, CLUSTER, agent, backup_setup, create};
use reconciler_host_harness::operator::{Guests, Host, fixture_of};
use reconciler_host_harness::paths;
use reconciler_host_harness::proxy::{FaultProxy, RestartableServer};
use serde_json::{Value, json};

/// The kinds the soak serves: agents (children, Events, plans), access
/// requests (expiry), and the mirror test guest's one parent whose child
/// never settles.
pub(crate) const SOAK: Guests = Guests {
    dir: "soak",
    crates: &[
        "evidenceagent-guest",
        "pgaccessrequest-guest",
        "mirror-guest",
    ],
    settings: &[
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
        "PgAccessRequest.orphanGraceSeconds=120",
    ],
    expected_warnings: &[],
};

pub(crate) const NAMESPACE: &str = "soak";
/// Agents whose spec churns and which the host changes at once.
pub(crate) const FREE_AGENTS: usize = 8;
/// Agents under `reconciler.dev/approval: manual`: a reviewer decides.
pub(crate) const GATED_AGENTS: usize = 2;
/// The ClusterRole access requests ask for, the requester, the approver.
pub(crate) const READER: &str = "soak-cluster-reader";
pub(crate) const REQUESTER: &str = "dave@example.com";
pub(crate) const APPROVER: &str = "carol@example.com";
/// A plan reviewer without `manage`: who tampers with a plan's phase.
pub(crate) const REVIEWER: &str = "rita@example.com";

pub(crate) fn free_agent(i: usize) -> String {
    format!("free-{i}")
}

pub(crate) fn gated_agent(i: usize) -> String {
    format!("gated-{i}")
}

/// The agent whose status is nested 200 deep before the replicas start
/// (issue 49): first in a listing, so every start's probe reads it, and
/// a bad object the whole soak long. It says ObjectUndecodable; nothing
/// else of the soak drives it.
pub(crate) const DEEP_AGENT: &str = "a-deep";

pub(crate) struct World {
    pub server: RestartableServer,
    pub tcp: FaultProxy,
    pub http: HttpFaultProxy,
    /// The replicas' kubeconfig: through both proxies.
    hosts_kubeconfig: PathBuf,
    /// The soak's own kubeconfig: through the TCP proxy only.
    soak_kubeconfig: PathBuf,
    /// Replica `a` is killed and frozen; `b`, from the second half on,
    /// is left alone (its RSS is measured).
    pub a: Replica,
    pub b: Replica,
}

/// One replica of the host, how many times it was started, and when its
/// process last was.
pub(crate) struct Replica {
    pub name: &'static str,
    pub host: Host,
    pub starts: usize,
    pub started: std::time::Instant,
}

impl World {
    pub(crate) async fn new() -> World {
        fixture_of(&SOAK);
        let dir = paths::target_tmpdir().join(format!("soak-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the soak's directory");
        let server =
            tokio::task::block_in_place(|| RestartableServer::start(&dir.join("apiserver")))
                .expect("the soak's API server");
        let tcp = FaultProxy::start(server.addr().expect("its address"))
            .await
            .expect("the TCP proxy");
        let soak_kubeconfig = server
            .kubeconfig_via(tcp.addr(), &dir.join("via-tcp.kubeconfig"))
            .expect("a kubeconfig");
        let admin = client_of(&soak_kubeconfig, None).await;
        let http = HttpFaultProxy::start(admin.clone())
            .await
            .expect("the HTTP proxy");
        let hosts_kubeconfig = http
            .kubeconfig(&dir.join("via-http.kubeconfig"))
            .expect("a kubeconfig");

        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
        namespaces
            .create(
                &Default::default(),
                &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap(),
            )
            .await
            .expect("the namespace");
        // The agents' and access requests' CRDs, roles and admission policy,
        // the Cluster `orders` the requests name; then the plans' manifests.
        furnish(&admin, NAMESPACE, READER, REQUESTER, APPROVER).await;
        reconciler_host_harness::plans::install(&admin).await;
        bind(&admin, REVIEWER, "ClusterRole", "reconciler-plan-reviewer").await;
        objects::create_all(&admin, NAMESPACE, backup_setup()).await;
        for i in 0..FREE_AGENTS {
            create(&admin, NAMESPACE, agent(&free_agent(i), CLUSTER)).await;
        }
        for i in 0..GATED_AGENTS {
            let mut gated = agent(&gated_agent(i), CLUSTER);
            gated["metadata"]["annotations"] = json!({"reconciler.dev/approval": "manual"});
            create(&admin, NAMESPACE, gated).await;
        }
        create(&admin, NAMESPACE, agent(DEEP_AGENT, CLUSTER)).await;
        let deep = json!({"status": {"deep": objects::nested(200)}});
        agents(&admin)
            .patch_status(
                DEEP_AGENT,
                &Default::default(),
                &kube::api::Patch::Merge(&deep),
            )
            .await
            .expect("a status nested 200 deep");
        let a = Replica::start("a", &hosts_kubeconfig, 0);
        let b = Replica::start("b", &hosts_kubeconfig, 0);
        World {
            server,
            tcp,
            http,
            hosts_kubeconfig,
            soak_kubeconfig,
            a,
            b,
        }
    }

    /// An admin client through the TCP proxy (it outlives restarts).
    pub(crate) async fn admin(&self) -> Client {
        client_of(&self.soak_kubeconfig, None).await
    }

    /// A client acting as `user` (impersonated), through the TCP proxy.
    pub(crate) async fn client_as(&self, user: &str) -> Client {
        client_of(&self.soak_kubeconfig, Some(user)).await
    }

    /// The API server stopped and started again on its data: connections
    /// cut first, as a server going away would.
    pub(crate) async fn restart_api_server(&self) {
        self.tcp.down();
        tokio::task::block_in_place(|| self.server.down()).expect("stopping the API server");
        tokio::time::sleep(Duration::from_secs(1)).await;
        tokio::task::block_in_place(|| self.server.up()).expect("starting it again");
        self.tcp
            .set_backend(self.server.addr().expect("its new address"));
        self.tcp.up();
    }

    /// Starts whichever replica is not running.
    pub(crate) fn revive(&mut self) {
        for replica in [&mut self.a, &mut self.b] {
            if !replica.host.is_alive() {
                *replica = Replica::start(replica.name, &self.hosts_kubeconfig, replica.starts);
            }
        }
    }
}

impl Replica {
    fn start(name: &'static str, kubeconfig: &std::path::Path, starts: usize) -> Replica {
        let host = Host::start_spawned(
            kubeconfig,
            &[
                "--namespaces",
                NAMESPACE,
                "--leader-elect",
                "--lease-namespace",
                NAMESPACE,
                "--lease-duration",
                "4s",
            ],
            &format!("soak-{name}-{starts}"),
        );
        Replica {
            name,
            host,
            starts: starts + 1,
            started: std::time::Instant::now(),
        }
    }

    /// Whether this process leads (said so, and runs).
    pub(crate) fn leads(&mut self) -> bool {
        self.host.is_alive() && self.host.log_text().contains("leading: the Lease is held")
    }
}

async fn client_of(kubeconfig: &std::path::Path, user: Option<&str>) -> Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("a kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client config");
    config.auth_info.impersonate = user.map(str::to_owned);
    Client::try_from(config).expect("a client")
}

/// Binds `user` to the role `kind`/`role` in the namespace.
async fn bind(admin: &Client, user: &str, kind: &str, role: &str) {
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": format!("{role}-{}", user.split('@').next().unwrap_or(user))},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    create(admin, NAMESPACE, binding).await;
}

/// The agents' API, each answer decoded bounded as the host decodes it
/// (one agent is nested too deep for kube's client).
pub(crate) fn agents(client: &Client) -> Api<Decoded> {
    let resource = objects::resource_of("pgtoolbox.fyannk.dev/v1alpha1", "EvidenceAgent");
    decode::api(client, &resource, NAMESPACE)
}

/// An agent as JSON.
pub(crate) fn agent_json(o: Decoded) -> Value {
    o.into_value()
}

/// The API of `kind` (`api_version`) in the namespace.
pub(crate) fn api(client: &Client, api_version: &str, kind: &str) -> Api<DynamicObject> {
    objects::api(client, NAMESPACE, api_version, kind)
}

/// `o` as JSON.
pub(crate) fn json_of(o: DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}
