//! The fault suite: the host against a real API server that restarts, is
//! cut off, is slow, or has other writers, and against a host killed in
//! the middle of a pass. Each test asserts what a user relies on: every
//! spec change reconciled (no lost update), no field of another writer
//! reverted, and the Events a user would see.
//!
//! The API server restarts behind a stable address: a loopback proxy
//! (`reconciler_host_harness::proxy`) the host connects through, which
//! also cuts connections and adds latency. Nothing asserts timing: the
//! recovery time after a restart is printed (`make test` shows it with
//! `--nocapture`; docs/design.md records it).
//!
//! The agents' children are the host's (the guest renders them), their
//! ReplicaSets and Pods the controllers' the API servers run, the Pods'
//! status kwok's (the test cluster's simulated Nodes): running, or
//! crash-looping where a test says so through [`PodStates`].

use std::time::{Duration, Instant};

use kube::api::{DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use reconciler_host::pass::Done;
use reconciler_host_harness::http_proxy::HttpFaultProxy;
use reconciler_host_harness::objects::{
    self, CLUSTER, PodState, agent, agents, backup_setup, crash_loop, create, create_all, merge,
    merge_status,
};
use reconciler_host_harness::operator::{
    Host, TIMEOUT, condition, events_about, eventually, fixture, free_addr, get, http_get,
    install_crds, published, settle, wait_healthy,
};
use reconciler_host_harness::paths;
use reconciler_host_harness::pod_states::PodStates;
use reconciler_host_harness::proxy::{FaultProxy, RestartableServer};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// How many parents the restart and outage tests keep.
const PARENTS: usize = 10;

fn names() -> Vec<String> {
    (0..PARENTS).map(|i| format!("agent-{i:02}")).collect()
}

/// Creates the agents of [`names`] with what they read (kwok reports
/// their Pods running).
async fn healthy_agents(client: &Client, ns: &str) {
    create_all(client, ns, backup_setup()).await;
    for name in names() {
        create(client, ns, agent(&name, CLUSTER)).await;
    }
}

/// Points every agent at a Cluster that does not exist: a spec change
/// (a new generation) whose reconciliation a user sees as Ready False,
/// ClusterNotFound.
async fn retarget_all(api: &Api<DynamicObject>) {
    for name in names() {
        merge(api, &name, json!({"spec": {"cluster": {"name": "gone"}}})).await;
    }
}

/// Every agent reconciled at its current generation with Ready False
/// (ClusterNotFound); else the ones that are not.
async fn all_retargeted(api: &Api<DynamicObject>) -> Result<(), Vec<String>> {
    let mut behind = Vec::new();
    for name in names() {
        let Ok(o) = api.get(&name).await else {
            behind.push(format!("{name}: unreadable"));
            continue;
        };
        let o = serde_json::to_value(o).unwrap_or_default();
        let generation = o["metadata"]["generation"].as_i64();
        let observed = o["status"]["observedGeneration"].as_i64();
        let ready = condition(&o, "Ready");
        let ok = generation == observed
            && ready
                .as_ref()
                .is_some_and(|c| c.status == "False" && c.reason == "ClusterNotFound");
        if !ok {
            behind.push(format!(
                "{name}: generation {generation:?}, observed {observed:?}, Ready {ready:?}"
            ));
        }
    }
    if behind.is_empty() {
        Ok(())
    } else {
        Err(behind)
    }
}

/// An API server of the test's own, the CRDs installed, a namespace with
/// the agents, and a proxy in front of it.
struct Restartable {
    server: RestartableServer,
    proxy: FaultProxy,
    dir: std::path::PathBuf,
    namespace: String,
}

impl Restartable {
    async fn start(name: &str) -> Restartable {
        Restartable::start_with(name, "").await
    }

    /// The same, the API server started with extra flags.
    async fn start_with(name: &str, args: &str) -> Restartable {
        let dir = paths::target_tmpdir().join(format!("faults-{name}-{}", std::process::id()));
        let server = tokio::task::block_in_place(|| RestartableServer::start_with(&dir, args))
            .expect("a restartable API server");
        let proxy = FaultProxy::start(server.addr().expect("its address"))
            .await
            .expect("the proxy");
        let admin = server.client().await.expect("an admin client");
        for crd in fixture().crds.clone() {
            reconciler_testsupport::install_crd(&admin, crd)
                .await
                .expect("installing a CRD");
        }
        let namespace = format!("faults-{name}");
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
        namespaces
            .create(
                &Default::default(),
                &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
            )
            .await
            .expect("the namespace");
        healthy_agents(&admin, &namespace).await;
        Restartable {
            server,
            proxy,
            dir,
            namespace,
        }
    }

    /// The host, connecting through the proxy.
    async fn host(&self, log: &str) -> Host {
        let kubeconfig = self
            .server
            .kubeconfig_via(self.proxy.addr(), &self.dir.join("via-proxy.kubeconfig"))
            .expect("the proxy's kubeconfig");
        Host::start_with(&kubeconfig, &["--namespaces", &self.namespace], log).await
    }

    async fn agents(&self) -> Api<DynamicObject> {
        agents(
            &self.server.client().await.expect("an admin client"),
            &self.namespace,
        )
    }
}

/// The API server stopped and started again (its data kept, on another
/// port behind the same address): the spec changes made as soon as it is
/// back are all reconciled, within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_restart_loses_no_spec_change() {
    let env = Restartable::start("restart").await;
    let mut host = env.host("faults-restart").await;
    let api = env.agents().await;
    for name in names() {
        wait_healthy(&api, &name).await;
    }

    // Connections cut first, as a server going away would: its graceful
    // shutdown does not wait for the host's watches.
    env.proxy.down();
    tokio::task::block_in_place(|| env.server.down()).expect("stopping the API server");
    tokio::time::sleep(Duration::from_secs(2)).await;
    tokio::task::block_in_place(|| env.server.up()).expect("starting it again");
    env.proxy
        .set_backend(env.server.addr().expect("its new address"));
    env.proxy.up();
    let back = Instant::now();
    let api = env.agents().await;
    retarget_all(&api).await;
    eventually(
        "every spec change reconciled after the restart",
        async || all_retargeted(&api).await,
    )
    .await;
    println!(
        "faults: {PARENTS} parents reconciled their spec change {:?} after the API server was back",
        back.elapsed()
    );
    assert!(host.is_alive(), "the host survived the restart");
    host.stop();
}

/// The host cut off from a running API server (every connection dropped,
/// new ones refused) while every spec changes: once it can connect again,
/// every change is reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_while_specs_change_loses_no_update() {
    let env = Restartable::start("outage").await;
    let mut host = env.host("faults-outage").await;
    let api = env.agents().await;
    for name in names() {
        wait_healthy(&api, &name).await;
    }
    env.proxy.down();
    retarget_all(&api).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    env.proxy.up();
    let back = Instant::now();
    eventually(
        "every spec change reconciled after the outage",
        async || all_retargeted(&api).await,
    )
    .await;
    println!(
        "faults: {PARENTS} parents reconciled after a 3 s outage, {:?} after the host could connect again",
        back.elapsed()
    );
    assert!(host.is_alive());
    host.stop();
}

/// The API server keeps no watch cache and compacts etcd every second, and
/// the host is cut off while every spec changes, so that its watches
/// resume from versions that may be compacted away (answered 410, then
/// listed again): every change is reconciled. (Whether a 410 is answered
/// depends on the API server's compaction timing; the suite does not
/// count on one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumed_watches_over_a_compacted_store_lose_no_update() {
    let env =
        Restartable::start_with("gone", "--watch-cache=false --etcd-compaction-interval=1s").await;
    let mut host = env.host("faults-gone").await;
    let api = env.agents().await;
    for name in names() {
        wait_healthy(&api, &name).await;
    }
    env.proxy.down();
    retarget_all(&api).await;
    // Past a compaction of what the host last saw.
    tokio::time::sleep(Duration::from_secs(4)).await;
    env.proxy.up();
    eventually(
        "every spec change reconciled over a compacted store",
        async || all_retargeted(&api).await,
    )
    .await;
    host.stop();
}

/// A slow API server (every chunk either way delayed) while specs change:
/// every change is reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_api_server_loses_no_update() {
    let env = Restartable::start("slow").await;
    let mut host = env.host("faults-slow").await;
    let api = env.agents().await;
    for name in names() {
        wait_healthy(&api, &name).await;
    }
    env.proxy.set_latency(Duration::from_millis(150));
    retarget_all(&api).await;
    eventually(
        "every spec change reconciled through a slow server",
        async || all_retargeted(&api).await,
    )
    .await;
    env.proxy.set_latency(Duration::ZERO);
    assert!(host.is_alive());
    host.stop();
}

/// Another controller's kind of answer: every third request through the
/// proxy answered 503 for ten seconds, while every spec changes. Every
/// change is reconciled once the API server answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_5xx_lose_no_update() {
    let ns = namespace("faults-5xx").await;
    let client = ns.client();
    let names = names();
    healthy_agents(&client, ns.name()).await;
    let proxy = HttpFaultProxy::start(reconciler_testsupport::client().await.expect("a client"))
        .await
        .expect("the HTTP proxy");
    let dir = paths::target_tmpdir().join(format!("faults-5xx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = proxy
        .kubeconfig(&dir.join("kubeconfig"))
        .expect("its kubeconfig");
    let mut host = Host::start_with(&kubeconfig, &["--namespaces", ns.name()], "faults-5xx").await;
    let api = agents(&client, ns.name());
    for name in &names {
        wait_healthy(&api, name).await;
    }
    proxy.fail_every(3);
    retarget_all(&api).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    proxy.fail_every(0);
    assert!(proxy.injected() > 0, "the proxy answered 503 at least once");
    eventually("every spec change reconciled after the 503s", async || {
        all_retargeted(&api).await
    })
    .await;
    println!(
        "faults: {} requests answered 503, no update lost",
        proxy.injected()
    );
    assert!(host.is_alive());
    host.stop();
}

/// The sum of a metric's samples whose line starts with `prefix`.
fn metric(addr: std::net::SocketAddr, prefix: &str) -> f64 {
    http_get(addr, "/metrics")
        .1
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `/readyz` fails while a required watch has been down for longer than
/// `--watch-down-bound`, naming it, and passes again once it is back; the
/// watch's restarts are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_watches() {
    let env = Restartable::start("ready").await;
    let metrics = free_addr();
    let kubeconfig = env
        .server
        .kubeconfig_via(env.proxy.addr(), &env.dir.join("via-proxy.kubeconfig"))
        .expect("the proxy's kubeconfig");
    let metrics_arg = metrics.to_string();
    let mut host = Host::start_with(
        &kubeconfig,
        &[
            "--namespaces",
            &env.namespace,
            "--metrics-addr",
            &metrics_arg,
            "--watch-down-bound",
            "2s",
        ],
        "faults-ready",
    )
    .await;
    eventually("ready", async || match http_get(metrics, "/readyz") {
        (s, _) if s.contains(" 200 ") => Ok(()),
        other => Err(other),
    })
    .await;
    env.proxy.down();
    // Each watch is named once it has been down for the bound: they fail
    // one by one (each on its own request), so the first 503 may name
    // only some; the parent's watch is named within the wait.
    let parent_down = "the watch of pgtoolbox.fyannk.dev/v1alpha1/EvidenceAgent in faults-ready has been down for";
    eventually(
        "not ready while the watches are down, the parent's named",
        async || match http_get(metrics, "/readyz") {
            (s, b) if s.contains(" 503 ") && b.contains(parent_down) => Ok(()),
            other => Err(other),
        },
    )
    .await;
    env.proxy.up();
    eventually("ready again", async || match http_get(metrics, "/readyz") {
        (s, _) if s.contains(" 200 ") => Ok(()),
        other => Err(other),
    })
    .await;
    assert!(metric(metrics, "reconciler_watch_restarts_total") > 0.0);
    assert!(host.is_alive());
    host.stop();
}

/// With `--resync`, every parent is passed again though nothing changed,
/// and nothing is written: no status, no child.
#[tokio::test]
async fn a_resync_passes_every_parent_and_writes_nothing() {
    let ns = namespace("faults-resync").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    for name in ["r1", "r2"] {
        create(&client, ns.name(), agent(name, CLUSTER)).await;
    }
    let metrics = free_addr();
    let metrics_arg = metrics.to_string();
    let host = Host::start_in(
        ns.name(),
        &["--resync", "1s", "--metrics-addr", &metrics_arg],
    )
    .await;
    let api = agents(&client, ns.name());
    for name in ["r1", "r2"] {
        wait_healthy(&api, name).await;
    }
    settle().await;
    // Neither the status nor a child: the Deployment, the Service and the
    // serving certificate (still good) the passes ask for are as they are.
    let written = || {
        [
            "reconciler_status_writes_total",
            "reconciler_child_applies_total",
            "reconciler_child_deletes_total",
        ]
        .map(|m| metric(metrics, m))
    };
    let (passes, writes) = (metric(metrics, "reconciler_passes_total"), written());
    assert!(writes[1] >= 6.0, "each agent's three children applied");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        metric(metrics, "reconciler_passes_total") >= passes + 4.0,
        "two parents passed at least twice each in 3 s"
    );
    assert_eq!(written(), writes, "nothing written");
    host.finish();
}

/// A `--metrics-addr` already in use fails the start, naming it.
#[tokio::test]
async fn a_metrics_address_in_use_fails_the_start() {
    let ns = namespace("faults-port").await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().unwrap().to_string();
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let out =
        reconciler_host_harness::operator::host_command(&kubeconfig, std::process::Stdio::piped())
            .args(["--namespaces", ns.name(), "--metrics-addr", &addr])
            .output()
            .expect("the host runs");
    assert!(!out.status.success(), "the host started on a taken port");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot serve metrics on --metrics-addr {addr}")),
        "{stderr}"
    );
}

/// A namespace with the CRDs installed, on the binary's shared server.
async fn namespace(prefix: &str) -> TestNamespace {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

/// A namespace with one healthy agent, `orders`, and a host serving it.
struct Orders {
    ns: TestNamespace,
    host: Host,
    /// The agents' API.
    api: Api<DynamicObject>,
    /// The agent as it settled, healthy.
    healthy: Value,
    /// Chooses its Pods' state (running until told otherwise).
    pod_states: PodStates,
}

async fn healthy_orders(prefix: &str) -> Orders {
    let ns = namespace(prefix).await;
    let client = ns.client();
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    create_all(&client, ns.name(), backup_setup()).await;
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let host = Host::start(ns.name()).await;
    let api = agents(&client, ns.name());
    let healthy = wait_healthy(&api, "orders").await;
    Orders {
        ns,
        host,
        api,
        healthy,
        pod_states,
    }
}

/// Another controller owns `.status.lastBackupVerified` and a condition of
/// its own on the same objects, and applies them 40 times while the host
/// reconciles spec changes: none of its values is reverted, it never gets
/// a conflict, and the host writes nothing once converged.
#[tokio::test]
async fn another_writers_status_fields_are_left_alone() {
    // The chooser bound, not `..`: a field left out would be dropped here.
    let Orders {
        ns,
        host,
        api,
        pod_states: _pod_states,
        ..
    } = healthy_orders("faults-writer").await;

    let backup = PatchParams::apply("backup-controller");
    let status_of = |i: usize| {
        json!({
            "apiVersion": format!("{}/{}", objects::GROUP, objects::VERSION),
            "kind": objects::KIND,
            "metadata": {"name": "orders"},
            "status": {
                "lastBackupVerified": format!("v{i}"),
                "conditions": [{
                    "type": "BackupVerified", "status": "True", "reason": "Verified",
                    "message": format!("backup v{i} restored and checked"),
                    "lastTransitionTime": "2026-12-01T00:00:00Z",
                }],
            },
        })
    };
    for i in 0..40 {
        api.patch_status("orders", &backup, &Patch::Apply(status_of(i)))
            .await
            .unwrap_or_else(|e| panic!("the other writer's apply {i} was refused: {e}"));
        if i % 10 == 5 {
            // A spec change the host reconciles meanwhile.
            let image = format!("ghcr.io/fyannk/evidence-agent:1.{i}");
            merge(&api, "orders", json!({"spec": {"image": image}})).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Each image is a rollout (a new ReplicaSet, its Pod reported running):
    // converged once the last one is done and the agent Ready again at
    // its last generation.
    let converged = eventually("the host caught up with the spec", async || {
        let o = get(&api, "orders").await;
        let ready = condition(&o, "Ready");
        if o["metadata"]["generation"] == o["status"]["observedGeneration"]
            && ready.as_ref().is_some_and(|c| {
                c.status == "True"
                    && Some(c.observed_generation) == o["metadata"]["generation"].as_i64()
            })
        {
            Ok(o)
        } else {
            Err(o["status"].clone())
        }
    })
    .await;
    settle().await;
    let o = get(&api, "orders").await;
    assert_eq!(o["status"]["lastBackupVerified"], "v39", "{}", o["status"]);
    let backup = condition(&o, "BackupVerified").expect("the other writer's condition");
    assert_eq!(backup.message, "backup v39 restored and checked");
    assert_eq!(
        o["metadata"]["resourceVersion"], converged["metadata"]["resourceVersion"],
        "nothing written once converged"
    );
    let writes = host.status_writes(ns.name(), "orders");
    settle().await;
    assert_eq!(
        host.status_writes(ns.name(), "orders"),
        writes,
        "a condition of another writer makes the host write nothing"
    );
    host.finish();
}

/// Someone rewrites a condition the host owns: the host puts it back, with
/// one write.
#[tokio::test]
async fn status_drift_is_put_back() {
    let Orders {
        ns,
        host,
        api,
        healthy,
        pod_states: _pod_states,
    } = healthy_orders("faults-drift").await;
    let writes = host.status_writes(ns.name(), "orders");

    let mut tampered = healthy["status"].clone();
    for c in tampered["conditions"].as_array_mut().unwrap() {
        if c["type"] == "Ready" {
            c["status"] = json!("False");
            c["reason"] = json!("Tampered");
        }
    }
    merge_status(&api, "orders", tampered).await;
    eventually("Ready put back", async || {
        let o = get(&api, "orders").await;
        match condition(&o, "Ready") {
            Some(c) if c.status == "True" && c.reason == "AsExpected" => Ok(()),
            other => Err(other),
        }
    })
    .await;
    settle().await;
    assert_eq!(
        host.status_writes(ns.name(), "orders"),
        writes + 1,
        "one write puts the status back"
    );
    host.finish();
}

/// The same reason twice with different notes (a crash loop, recovery, a
/// crash loop with another message) is two Events, each with its own
/// note: a user reads what the status said at the time.
#[tokio::test]
async fn a_repeated_reason_keeps_each_note() {
    let Orders {
        ns,
        host,
        api,
        pod_states,
        ..
    } = healthy_orders("faults-notes").await;
    let client = ns.client();

    let crash = |back_off: &'static str| PodState::CrashLoop {
        restarts: 3,
        back_off,
    };
    for (state, reason) in [
        (crash("5m0s"), "CrashLoopBackOff"),
        (PodState::Running, "AsExpected"),
        (crash("10s"), "CrashLoopBackOff"),
    ] {
        pod_states.set("orders", state);
        eventually("the status to follow the Pod", async || {
            let o = get(&api, "orders").await;
            match condition(&o, "WorkloadReady") {
                Some(c) if c.reason == reason => Ok(()),
                other => Err(other),
            }
        })
        .await;
    }
    let warnings = eventually("two Warnings, one per crash loop", async || {
        let events = events_about(&client, ns.name(), "orders").await;
        let crashes: Vec<_> = events
            .into_iter()
            .filter(|e| e.type_ == "Warning" && e.reason == "CrashLoopBackOff")
            .collect();
        if crashes.len() == 2 {
            Ok(crashes)
        } else {
            Err(crashes)
        }
    })
    .await;
    assert!(
        warnings.iter().any(|e| e.note.contains("back-off 5m0s")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|e| e.note.contains("back-off 10s")),
        "{warnings:?}"
    );
    // What kwok said of the Pod the controllers made, no other.
    let pods = objects::agent_pods(&client, ns.name(), "orders").await;
    let [pod] = pods.as_slice() else {
        panic!("one Pod of orders: {pods:#?}")
    };
    let pod = format!(
        "pod={}_{}",
        pod["metadata"]["name"].as_str().unwrap(),
        ns.name()
    );
    assert!(
        warnings.iter().all(|e| e.note.contains(&pod)),
        "{pod}: {warnings:?}"
    );
    host.finish();
}

/// A parent whose name is as long as Kubernetes allows still gets its
/// Events (an Event's name is the parent's, cut, and a suffix). Such an
/// agent cannot name its Service (a DNS-1035 label of 63 characters at
/// most): the guest says so (ConfigurationInvalid) before it looks for
/// its Cluster.
#[tokio::test]
async fn a_parent_with_the_longest_name_gets_its_events() {
    let ns = namespace("faults-longname").await;
    let client = ns.client();
    let name = format!("a{}", "b".repeat(252));
    create(&client, ns.name(), agent(&name, "missing")).await;
    let host = Host::start(ns.name()).await;
    let events = eventually("its Warning", async || {
        let events = events_about(&client, ns.name(), &name).await;
        if published(&events, "Warning", "ConfigurationInvalid") == 1 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    host.finish();
}

/// The host killed (SIGKILL) right after a status write, before or while
/// it publishes the Event: a new host keeps the status and publishes no
/// second Event for it (an Event may be lost in that window: the status
/// is the record; docs/design.md).
#[tokio::test]
async fn a_host_killed_after_a_write_duplicates_no_event() {
    let Orders {
        ns,
        mut host,
        api,
        pod_states,
        ..
    } = healthy_orders("faults-kill").await;
    let client = ns.client();

    pod_states.set("orders", crash_loop());
    // Killed as soon as the status says so, polled as fast as the API
    // server answers.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let o = get(&api, "orders").await;
        if condition(&o, "WorkloadReady").is_some_and(|c| c.reason == "CrashLoopBackOff") {
            host.kill();
            break;
        }
        assert!(Instant::now() < deadline, "the crash loop never showed");
    }
    let before = published(
        &events_about(&client, ns.name(), "orders").await,
        "Warning",
        "CrashLoopBackOff",
    );
    let host = Host::start(ns.name()).await;
    settle().await;
    let o = get(&api, "orders").await;
    assert_eq!(
        condition(&o, "WorkloadReady").map(|c| c.reason),
        Some("CrashLoopBackOff".to_owned())
    );
    let after = published(
        &events_about(&client, ns.name(), "orders").await,
        "Warning",
        "CrashLoopBackOff",
    );
    assert!(before <= 1, "{before} Warnings before the kill");
    assert_eq!(after, before, "the new host published no second Warning");
    host.finish();
}

/// The host's pass machinery in-process, without watches, for the Hostile
/// test guest and its variant module: the races are the test's to set up.
struct InProcess {
    registry: reconciler_host::operator::kinds::Registry,
    cache: std::sync::Arc<reconciler_host::operator::cluster::cache::ObjectCache>,
    key: reconciler_host::operator::schedule::ParentKey,
    hostiles: Api<DynamicObject>,
    variant: reconciler_host::runtime::Module,
}

impl InProcess {
    /// `h` created with `spec.message` "first" in a namespace of its own,
    /// in the cache as created (no status yet).
    async fn new(prefix: &str) -> (TestNamespace, InProcess) {
        use std::sync::Arc;

        use reconciler_host::operator::cluster::cache::ClusterSource;
        use reconciler_host::operator::kinds::Registry;
        use reconciler_host::operator::replica::metrics::Metrics;
        use reconciler_host::operator::schedule::ParentKey;
        use reconciler_host::operator::write::authority::{Authority, AuthorityConfig};
        use reconciler_host::operator::write::plans::{PlanConfig, Planner};
        use reconciler_host::runtime::{Runtime, RuntimeConfig};
        use reconciler_host_harness::guests::guest_wasm_with;

        let ns = TestNamespace::new(prefix).await.expect("a namespace");
        let client = ns.client();
        let runtime = Runtime::new(RuntimeConfig::default()).expect("a runtime");
        let load = |feature| {
            let bytes = std::fs::read(guest_wasm_with("hostile-guest", feature)).unwrap();
            runtime
                .load("hostile_guest", &bytes)
                .expect("the hostile guest")
        };
        let variant = load(Some("variant-message"));
        let base = load(None);
        let spec = base.spec().clone();
        reconciler_testsupport::install_crd(
            &client,
            serde_json::from_value(reconciler_host::crd::render(&spec)).unwrap(),
        )
        .await
        .expect("the Hostile CRD");
        let api_version = format!("{}/{}", spec.group, spec.version);
        let resource = objects::resource_of(&api_version, &spec.kind);
        let hostiles: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), ns.name(), &resource);
        create(
            &client,
            ns.name(),
            json!({"apiVersion": api_version, "kind": spec.kind, "metadata": {"name": "h"},
                   "spec": {"message": "first"}}),
        )
        .await;
        let authority = Authority::new(
            client.clone(),
            AuthorityConfig {
                namespace: ns.name().to_owned(),
                name: "ca".to_owned(),
                validity: Duration::from_secs(3600),
            },
        );
        let registry = Registry::new(
            Arc::new(ClusterSource::default()),
            Arc::new(Metrics::new()),
            Arc::new(authority),
            Arc::new(Planner::new(client.clone(), PlanConfig::default())),
        );
        let cache = registry.source().add_kind(spec.kind_ref());
        let id = registry.add(&client, base, resource, cache.clone(), Vec::new());
        let key = ParentKey {
            kind: id,
            namespace: ns.name().to_owned(),
            name: "h".to_owned(),
        };
        let process = InProcess {
            registry,
            cache,
            key,
            hostiles,
            variant,
        };
        process.refresh().await;
        (ns, process)
    }

    /// The cache takes the object as the API server has it now.
    async fn refresh(&self) {
        let o = serde_json::to_value(self.hostiles.get("h").await.unwrap()).unwrap();
        self.cache.apply(o);
    }

    /// One pass; how it ended.
    async fn pass(&self) -> reconciler_host::pass::Done {
        reconciler_host::operator::reconcile::run(&self.registry, &self.key)
            .await
            .done
    }

    fn pending(&self) -> usize {
        self.registry.scheduler().queue(self.key.kind).pending()
    }
}

/// A pass that evaluated an older version of its parent than the server
/// holds (the spec changed between its read and its write; or, alike, this
/// replica was frozen while another led) writes nothing: its status apply
/// is preconditioned on the resourceVersion it read. The conflict asks for
/// another pass, which evaluates the version the watch brings.
#[tokio::test]
async fn a_pass_on_a_stale_version_writes_nothing_and_passes_again() {
    let (_ns, p) = InProcess::new("faults-lost").await;
    p.pass().await;
    let first = get(&p.hostiles, "h").await;
    assert_eq!(condition(&first, "Behaving").unwrap().message, "first");
    assert_eq!(p.pending(), 0, "converged");

    // The spec changes on the server; the cache (no watch runs) still
    // holds what the first pass wrote. A new module evaluates the parent
    // again: its write is refused, nothing of it is stored.
    merge(&p.hostiles, "h", json!({"spec": {"message": "second"}})).await;
    let changed = get(&p.hostiles, "h").await;
    p.registry.kind(p.key.kind).served.write().unwrap().module = p.variant.clone();
    let done = p.pass().await;
    let stored = get(&p.hostiles, "h").await;
    assert_eq!(
        stored["metadata"]["resourceVersion"], changed["metadata"]["resourceVersion"],
        "nothing written from the stale version"
    );
    assert_eq!(condition(&stored, "Behaving").unwrap().message, "first");
    assert_eq!(done, Done::Retry, "the conflict asks for another pass");
    // The watch event of the change.
    p.refresh().await;
    p.pass().await;
    let last: Value = get(&p.hostiles, "h").await;
    assert_eq!(condition(&last, "Behaving").unwrap().message, "v2: second");
    assert_eq!(
        last["status"]["observedGeneration"],
        last["metadata"]["generation"]
    );
}

/// A parent's first pass on a version older than the server's writes
/// nothing (no first-touch write either), and the pass on the newer
/// version is one status write, stamped with the generation it evaluated.
#[tokio::test]
async fn a_first_pass_stamps_the_generation_it_evaluated() {
    let (_ns, p) = InProcess::new("faults-first").await;
    // The cache holds generation 1, no status; the server is at 2.
    merge(&p.hostiles, "h", json!({"spec": {"message": "second"}})).await;
    let done = p.pass().await;
    let o = get(&p.hostiles, "h").await;
    assert_eq!(o["status"], Value::Null, "nothing written: {}", o["status"]);
    assert_eq!(done, Done::Retry, "the conflict asks for another pass");
    p.refresh().await;
    p.pass().await;
    let o = get(&p.hostiles, "h").await;
    let behaving = condition(&o, "Behaving").unwrap();
    assert_eq!(behaving.message, "second", "the newer spec was evaluated");
    assert_eq!(
        behaving.observed_generation,
        o["metadata"]["generation"].as_i64().unwrap(),
        "stamped with the generation it evaluated"
    );
}
