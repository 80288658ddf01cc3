//! Namespaces the host may not watch, against the real local API server:
//! the host runs as a least-privilege user (the admin kubeconfig with
//! impersonation, `as:` under its user), allowed everything it needs in one
//! namespace and only its own kind (and Events) in another. The agents'
//! children are the host's, their Pods the controllers' the test API
//! server runs, reported running by kwok's simulated Nodes; the operator's
//! CA is a Secret of the namespace it may write in
//! (`--certificate-authority`), as the host's own namespace in a cluster.

use reconciler_host_harness::identity::{self, role_binding};
use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::Client;
use reconciler_testsupport::{Access, TestNamespace, await_access};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use harness::{
    Host, condition, events_about, fixture, get, host_command, install_crds, published,
    resource_version, settle, summary, wait_for, wait_healthy,
};
use objects::{CLUSTER, agent, agents, backup_setup, create, create_all, deployment_name, merge};

/// What the limited user lacks in the namespace that grants only its kind:
/// every kind the EvidenceAgent guest needs to list (not ObjectStores,
/// which it reads as optional).
const MISSING: &str =
    "clusters.postgresql.cnpg.io, configmaps, deployments.apps, pods, secrets, services";

async fn namespace(prefix: &str) -> TestNamespace {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

/// Grants `user` everything the host needs in `full` (the ClusterRole
/// `reconciler-host rbac` renders, bound by a RoleBinding there), and in
/// `partial` only its own kind (list, watch, status writes) and Events.
async fn grant(client: &Client, user: &str, full: &str, partial: Option<&str>) {
    let f = fixture();
    let role = format!("{user}-host");
    identity::apply_rbac(
        client,
        reconciler_host::rbac::cluster_role(&role, &[&f.spec], &reconciler_host::rbac::offline),
    )
    .await;
    identity::apply_rbac(
        client,
        role_binding(full, "host", "ClusterRole", &role, user),
    )
    .await;
    if let Some(partial) = partial {
        identity::apply_rbac(
            client,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "host-own-kind-only", "namespace": partial},
                "rules": [
                    {"apiGroups": [objects::GROUP], "resources": [f.spec.plural], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [objects::GROUP], "resources": [format!("{}/status", f.spec.plural)], "verbs": ["get", "patch", "update"]},
                    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
                ],
            }),
        )
        .await;
        identity::apply_rbac(
            client,
            role_binding(partial, "host", "Role", "host-own-kind-only", user),
        )
        .await;
    }
    // RBAC authorizes from caches: wait until both grants are in effect, so
    // the host's permission probe sees them.
    let list_kind = |namespace| Access {
        verb: "list",
        group: objects::GROUP,
        resource: &f.spec.plural,
        namespace: Some(namespace),
    };
    let mut wanted = vec![list_kind(full)];
    wanted.extend(partial.map(list_kind));
    await_access(client, user, &[], &wanted)
        .await
        .expect("the grants take effect");
}

/// The admin kubeconfig acting as `user`, written next to the host logs.
fn kubeconfig_as(user: &str) -> PathBuf {
    identity::kubeconfig_as(user, &fixture().logs_dir)
}

/// A free loopback port for `--metrics-addr`.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a port")
        .local_addr()
        .expect("its address")
        .port()
}

async fn scrape(port: u16) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("the metrics endpoint");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("a request");
    let mut text = String::new();
    stream.read_to_string(&mut text).await.expect("a response");
    text
}

/// A namespace of `--namespaces` where the host may not list what it needs
/// is left out of the watch: its agent gets Ready Unknown
/// (NamespaceNotWatched) naming the namespace and the missing permissions,
/// with one Warning, once; the other namespace is served as usual.
#[tokio::test]
async fn a_namespace_the_host_may_not_list_in_is_left_out_and_its_objects_told() {
    let a = namespace("nsw-a").await;
    let b = namespace("nsw-b").await;
    let client = a.client();
    let user = format!("host-{}", a.name());
    grant(&client, &user, a.name(), Some(b.name())).await;
    for ns in [a.name(), b.name()] {
        create_all(&client, ns, backup_setup()).await;
        create(&client, ns, agent("orders", CLUSTER)).await;
    }

    let port = free_port();
    let kubeconfig = kubeconfig_as(&user);
    let namespaces = format!("{},{}", a.name(), b.name());
    let metrics_addr = format!("127.0.0.1:{port}");
    let authority = format!("{}/{}", a.name(), reconciler_host::rbac::CA_SECRET);
    let mut host = Host::start_with(
        &kubeconfig,
        &[
            "--namespaces",
            &namespaces,
            "--metrics-addr",
            &metrics_addr,
            "--certificate-authority",
            &authority,
        ],
        b.name(),
    )
    .await;

    // A: reconciled as usual.
    wait_healthy(&agents(&client, a.name()), "orders").await;

    // B: Ready Unknown, NamespaceNotWatched, naming B and what is missing.
    let b_agents = agents(&client, b.name());
    let (marked, message) = marked_not_watched(&b_agents, b.name()).await;

    // One Warning, nothing else about it; the log says so once, naming
    // the namespace and the permissions.
    told_once(&host, &client, b.name(), &message).await;

    let metrics = scrape(port).await;
    assert!(
        metrics.contains("reconciler_unwatched_namespaces 1"),
        "{metrics}"
    );

    // Nothing else is written to it: no child is made for it, its Cluster
    // changes (it would stall on BarmanPluginNotConfigured), and the host
    // does not notice.
    let version = nothing_else_written(&host, &client, b.name(), &marked).await;
    assert!(host.is_alive());
    drop(host);

    // Started again with the same permissions missing: nothing to write,
    // nothing to report again.
    let host = Host::start_with(
        &kubeconfig,
        &[
            "--namespaces",
            &namespaces,
            "--certificate-authority",
            &authority,
        ],
        &format!("{}-again", b.name()),
    )
    .await;
    wait_healthy(&agents(&client, a.name()), "orders").await;
    settle().await;
    assert_eq!(host.status_writes(b.name(), "orders"), 0);
    assert_eq!(
        resource_version(&get(&b_agents, "orders").await),
        version,
        "no write on a second start"
    );
    assert_eq!(
        published(
            &events_about(&client, b.name(), "orders").await,
            "Warning",
            "NamespaceNotWatched"
        ),
        1
    );
}

/// B's agent Ready Unknown, NamespaceNotWatched, naming B and what is
/// missing, its other conditions Initializing; the agent, and the message.
async fn marked_not_watched(
    b_agents: &kube::Api<kube::api::DynamicObject>,
    b: &str,
) -> (serde_json::Value, String) {
    let marked = wait_for(
        b_agents,
        "orders",
        &[("Ready", "Unknown", "NamespaceNotWatched")],
    )
    .await;
    let ready = condition(&marked, "Ready").expect("Ready");
    let message = format!(
        "the operator left namespace {b} out of its watch: it may not list {MISSING} there; this status is no longer updated"
    );
    assert_eq!(ready.message, message, "{:#?}", summary(&marked));
    assert_eq!(ready.observed_generation, 1);
    assert_eq!(marked["status"]["observedGeneration"], 1);
    // Never evaluated: the other conditions it always carries are
    // Initializing, as on first touch.
    for t in [
        "Progressing",
        "Stalled",
        "ConfigurationValid",
        "WorkloadReady",
    ] {
        let c = condition(&marked, t).unwrap_or_else(|| panic!("{t} missing"));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("Unknown", "Initializing"),
            "{t}"
        );
    }
    (marked, message)
}

/// One NamespaceNotWatched Warning about B's agent, saying `message`, and
/// one line in the host's log naming B and the permissions missing.
async fn told_once(host: &Host, client: &Client, b: &str, message: &str) {
    let events = harness::eventually("the NamespaceNotWatched Warning", async || {
        let events = events_about(client, b, "orders").await;
        if published(&events, "Warning", "NamespaceNotWatched") == 1 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].note, message);

    // The log says so once, naming the namespace and the permissions.
    let line = format!("namespace {b} left out of the watch: missing list on {MISSING}");
    let warned: Vec<String> = host
        .problems()
        .into_iter()
        .filter(|l| l.contains(&line))
        .collect();
    assert_eq!(warned.len(), 1, "{:#?}", host.problems());
}

/// Nothing written to B's agent after it was marked: one status write, no
/// write when its Cluster changes, no child made, still one Warning. The
/// agent's resourceVersion.
async fn nothing_else_written(
    host: &Host,
    client: &Client,
    b: &str,
    marked: &serde_json::Value,
) -> String {
    let b_agents = agents(client, b);
    assert_eq!(host.status_writes(b, "orders"), 1);
    let version = resource_version(marked);
    merge(
        &objects::api(client, b, "postgresql.cnpg.io/v1", "Cluster"),
        CLUSTER,
        json!({"spec": {"plugins": null}}),
    )
    .await;
    settle().await;
    let after = get(&b_agents, "orders").await;
    assert_eq!(resource_version(&after), version, "{:#?}", summary(&after));
    assert_eq!(host.status_writes(b, "orders"), 1);
    for (api_version, kind, name) in [
        ("apps/v1", "Deployment", deployment_name("orders")),
        ("v1", "Service", deployment_name("orders")),
        ("v1", "Secret", objects::serving_cert_name("orders")),
    ] {
        let child = objects::api(client, b, api_version, kind)
            .get_opt(&name)
            .await
            .expect("a lookup");
        assert!(child.is_none(), "{kind} {name} made in {b}");
    }
    assert_eq!(
        published(
            &events_about(client, b, "orders").await,
            "Warning",
            "NamespaceNotWatched"
        ),
        1
    );
    version
}

/// Watching every namespace, a kind the host may not list cluster-wide
/// fails the start, naming the kind and the missing permission.
#[tokio::test]
async fn watching_every_namespace_without_a_cluster_wide_list_fails_the_start() {
    let a = namespace("nsw-all").await;
    let client = a.client();
    let user = format!("host-{}", a.name());
    grant(&client, &user, a.name(), None).await;
    let kubeconfig = kubeconfig_as(&user);

    let log = fixture().logs_dir.join(format!("{}.log", a.name()));
    let stderr = std::fs::File::create(&log).expect("the host's log");
    let mut child = host_command(&kubeconfig, stderr.into())
        .spawn()
        .expect("the host starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the host did not fail its start within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let stderr = std::fs::read_to_string(&log).expect("the host's log");
    assert!(!status.success(), "{stderr}");
    // Kinds are checked in order (group, version, kind): ConfigMaps first.
    assert!(
        stderr.contains(
            "error: the host may not list configmaps (v1/ConfigMap) in every namespace (403): grant list and watch on configmaps cluster-wide, or name the namespaces to watch with --namespaces"
        ),
        "{stderr}"
    );
}
