//! Ring members as processes for the ring's tests (`tests/ring.rs`,
//! `tests/ring_server.rs`): started with `--ring` in a test namespace, and
//! what a test reads of them (their caches, the live members).

use std::net::SocketAddr;
use std::path::Path;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use reconciler_host::operator::ring::members;
use reconciler_host::operator::ring::view::View;
use reconciler_testsupport::TestNamespace;

use crate::operator::{Host, eventually, fixture, free_addr, http_get};
use crate::paths;
use crate::proxy::RestartableServer;

/// The ring's name in the tests (`--lease-name`).
pub const RING: &str = "ring";

/// A member of the ring in `ns` on the server of `kubeconfig`, its Lease
/// lasting `lease`, logging to `<log>.log` (its identity `log` and a
/// random suffix), returned once it reconciles, with its metrics' address.
pub async fn member(
    ns: &TestNamespace,
    kubeconfig: &Path,
    log: &str,
    lease: &str,
) -> (Host, SocketAddr) {
    let metrics = free_addr();
    let metrics_arg = format!("--metrics-addr={metrics}");
    let args = [
        &metrics_arg,
        "--namespaces",
        ns.name(),
        "--ring",
        "--lease-name",
        RING,
        "--lease-namespace",
        ns.name(),
        "--lease-duration",
        lease,
        "--identity",
        log,
    ];
    let host = Host::start_spawned(kubeconfig, &args, log);
    eventually(&format!("{log}: reconciles"), async || {
        if host.log_text().contains("caches synced; reconciling") {
            Ok(())
        } else {
            Err(host.log_text())
        }
    })
    .await;
    (host, metrics)
}

/// An API server of the test `name`'s own, with KEP-5866's alpha gate
/// (`ShardedListAndWatch`) on, and its kubeconfig.
pub fn gated_server(name: &str) -> (RestartableServer, std::path::PathBuf) {
    let dir = paths::target_tmpdir().join(format!("ring-server-{name}-{}", std::process::id()));
    let server = RestartableServer::start_with(&dir, "--feature-gates=ShardedListAndWatch=true")
        .expect("an API server with ShardedListAndWatch on");
    let kubeconfig = server.kubeconfig();
    (server, kubeconfig)
}

/// An admin client of `server`, the binary's CRDs installed.
pub async fn admin(server: &RestartableServer) -> kube::Client {
    let client = server.client().await.expect("an admin client");
    for crd in fixture().crds.clone() {
        reconciler_testsupport::install_crd(&client, crd)
            .await
            .expect("installing a CRD");
    }
    client
}

/// The objects of `kind` a member caches, by its metrics.
pub fn cached(metrics: SocketAddr, kind: &str) -> usize {
    let (_, body) = http_get(metrics, "/metrics");
    let line = format!("reconciler_cached_objects{{kind=\"{kind}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line} in {body}"))
}

/// The live members of the ring, by the Leases in `ns`.
pub async fn live(ns: &TestNamespace) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(ns.client(), ns.name());
    let all = leases.list(&Default::default()).await.expect("Leases");
    members::live(RING, &all.items, jiff::Timestamp::now())
}

/// The live members, once they are `count`.
pub async fn live_now(ns: &TestNamespace, count: usize) -> Vec<String> {
    let mut found = Vec::new();
    eventually(&format!("{count} live members"), async || {
        found = live(ns).await;
        if found.len() == count {
            Ok(())
        } else {
            Err(found.clone())
        }
    })
    .await;
    found
}

/// The members the coordinator gives parents (its published view), once
/// they are `count`: a member is given parents only once it acknowledged a
/// view, a moment after its Lease is live.
pub async fn serving_now(ns: &TestNamespace, count: usize) -> Vec<String> {
    let leases: Api<Lease> = Api::namespaced(ns.client(), ns.name());
    let mut found = Vec::new();
    eventually(&format!("{count} members serving"), async || {
        let coordinator = leases.get_opt(&format!("{RING}-coordinator")).await;
        found = coordinator
            .ok()
            .flatten()
            .map(|l| View::read(&l).members)
            .unwrap_or_default();
        if found.len() == count {
            Ok(())
        } else {
            Err(found.clone())
        }
    })
    .await;
    found
}

/// The member whose identity starts with `log` (`--identity` and a
/// random suffix).
pub fn named<'m>(members: &'m [String], log: &str) -> &'m str {
    members
        .iter()
        .find(|m| m.starts_with(&format!("{log}-")))
        .unwrap_or_else(|| panic!("{log} among {members:?}"))
}
