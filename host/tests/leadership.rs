//! Leadership and shards against the real API server (issue 17): two
//! replicas of the host with `--leader-elect`, the writer test guest. One
//! leads and writes; the standby keeps its caches warm, is ready, and
//! writes nothing until the leader is killed and the Lease lapses; then it
//! takes over, and a change made meanwhile is not lost. With two shards,
//! every parent is written by exactly one replica, the one its hash names.

use std::time::Duration;

use reconciler_host::operator::replica::leadership::Shard;
use reconciler_host_harness::bench::free_port;
use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, condition, eventually, fixture_of, get, install_crds,
};
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const WRITER: Guests = Guests {
    dir: "leadership-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&WRITER);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

/// A replica: the host with leader election in `ns`, logging to `<log>.log`,
/// returned once its caches are synced (leading or standing by).
async fn replica(ns: &TestNamespace, log: &str, extra: &[&str]) -> Host {
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let mut args = vec![
        "--namespaces",
        ns.name(),
        "--leader-elect",
        "--lease-namespace",
        ns.name(),
        "--lease-duration",
        "4s",
    ];
    args.extend_from_slice(extra);
    let host = Host::start_spawned(&kubeconfig, &args, log);
    eventually(&format!("{log}: caches synced"), async || {
        if host.log_text().contains("caches synced") {
            Ok(())
        } else {
            Err(host.log_text())
        }
    })
    .await;
    host
}

/// The ConfigMap's data once it holds `want`.
async fn config_map_holds(ns: &TestNamespace, name: &str, want: Value) {
    let api = objects::api(&ns.client(), ns.name(), "v1", "ConfigMap");
    eventually(&format!("{name} holds {want}"), async || {
        match api.get_opt(name).await {
            Ok(Some(o)) if o.data["data"] == want => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

/// The line number in `log` of the first line containing `needle`.
fn line_of(log: &str, needle: &str) -> Option<usize> {
    log.lines().position(|l| l.contains(needle))
}

/// Writes (PATCH, POST, PUT, DELETE) the host sent, but to its Lease.
fn writes(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.trim_end().ends_with("requesting"))
        .filter(|l| {
            ["PATCH", "POST", "PUT", "DELETE"]
                .iter()
                .any(|m| l.contains(&format!("http.method={m}")))
        })
        .filter(|l| !l.contains("/leases") && !l.contains("selfsubjectreviews"))
        .map(str::to_owned)
        .collect()
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

/// The leader writes; the standby is ready, alive and writes nothing; the
/// leader killed, the standby leads once the Lease lapses and makes the
/// change written while no one led.
#[tokio::test]
async fn a_standby_takes_over_when_the_leader_dies_and_loses_no_update() {
    let ns = namespace("leader-failover").await;
    let mut a = replica(&ns, "leader-a", &[]).await;
    eventually("a leads", async || {
        line_of(&a.log_text(), "leading: the Lease is held").ok_or(())
    })
    .await;
    let metrics = free_port().expect("a port");
    let metrics_arg = metrics.to_string();
    let b = replica(&ns, "leader-b", &["--metrics-addr", &metrics_arg]).await;
    create(
        &ns.client(),
        ns.name(),
        widget("w", json!({"data": {"a": "1"}})),
    )
    .await;
    config_map_holds(&ns, "w-config", json!({"a": "1"})).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let standby = b.log_text();
    assert!(
        line_of(&standby, "leading").is_none(),
        "b stands by:\n{standby}"
    );
    assert_eq!(
        writes(&standby),
        Vec::<String>::new(),
        "a standby writes nothing"
    );
    let ready = http_get(metrics, "/readyz").await;
    assert!(
        ready.starts_with("HTTP/1.1 200"),
        "a standby with synced caches is ready: {ready}"
    );
    let healthy = http_get(metrics, "/healthz").await;
    assert!(healthy.starts_with("HTTP/1.1 200"), "{healthy}");

    a.kill();
    let killed = std::time::Instant::now();
    merge(&widgets(&ns), "w", json!({"spec": {"data": {"a": "2"}}})).await;
    config_map_holds(&ns, "w-config", json!({"a": "2"})).await;
    let took = killed.elapsed();
    let log = b.log_text();
    let led = line_of(&log, "leading: the Lease is held").expect("b leads");
    let first_write = log
        .lines()
        .position(|l| writes(l).len() == 1)
        .expect("b wrote");
    assert!(led < first_write, "b wrote only once leading:\n{log}");
    let w = get(&widgets(&ns), "w").await;
    assert_eq!(
        condition(&w, "ChildReady").map(|c| c.status),
        Some("True".to_owned())
    );
    eprintln!("failover: the change applied {took:?} after the leader was killed (Lease 4s)");
    b.finish();
}

/// The leader frozen (SIGSTOP) past its Lease while the standby takes over
/// and reconciles spec changes, then resumed (SIGCONT): before it notices
/// that it lost the Lease and exits, its passes run on what it had cached
/// and the changes its watches deliver late. It sends no write: its
/// client's fence is shut (its last renewal is older than the Lease), and
/// a status write that got through would fail its precondition. No
/// observedGeneration goes back, no ConfigMap gets old data (issue 31).
#[tokio::test]
async fn a_resumed_deposed_leader_writes_nothing() {
    let ns = namespace("leader-frozen").await;
    let mut a = replica(&ns, "frozen-a", &[]).await;
    eventually("a leads", async || {
        line_of(&a.log_text(), "leading: the Lease is held").ok_or(())
    })
    .await;
    let b = replica(&ns, "frozen-b", &[]).await;
    let names: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
    for name in &names {
        create(
            &ns.client(),
            ns.name(),
            widget(name, json!({"data": {"v": "1"}})),
        )
        .await;
    }
    let api = widgets(&ns);
    let reconciled = async |want: &str| {
        for name in &names {
            config_map_holds(&ns, &format!("{name}-config"), json!({"v": want})).await;
            eventually(
                &format!("{name} reconciled at its generation"),
                async || {
                    let w = get(&api, name).await;
                    let ready = condition(&w, "ChildReady").filter(|c| c.status == "True");
                    match (ready, w["metadata"]["generation"].as_i64()) {
                        (Some(c), Some(g)) if c.observed_generation == g => Ok(()),
                        _ => Err(w["status"].clone()),
                    }
                },
            )
            .await;
        }
    };
    reconciled("1").await;

    a.signal("STOP");
    let sent_before = writes(&a.log_text()).len();
    eventually("b leads", async || {
        line_of(&b.log_text(), "leading: the Lease is held").ok_or(())
    })
    .await;
    for name in &names {
        merge(&api, name, json!({"spec": {"data": {"v": "2"}}})).await;
    }
    reconciled("2").await;
    let statuses: Vec<Value> = {
        let mut all = Vec::new();
        for name in &names {
            all.push(get(&api, name).await["status"].clone());
        }
        all
    };

    a.signal("CONT");
    eventually("a exits, its Lease lost", async || {
        if a.is_alive() { Err(()) } else { Ok(()) }
    })
    .await;
    let resumed = a.log_text();
    assert_eq!(
        writes(&resumed)[sent_before..].to_vec(),
        Vec::<String>::new(),
        "the resumed leader sent no write"
    );
    reconciled("2").await;
    for (name, before) in names.iter().zip(&statuses) {
        assert_eq!(
            &get(&api, name).await["status"],
            before,
            "{name}: untouched"
        );
    }
    b.finish();
}

/// A leader frozen past its Lease and resumed while it has passes to run
/// (every parent changed meanwhile) exits as a deposed leader should:
/// exit code 2, the reason said once, and no panic. It returns at once,
/// its passes in flight, and the runtime refuses their evaluations as it
/// shuts down: a pass that met that refusal panicked (issue 49).
#[tokio::test]
async fn a_resumed_deposed_leader_exits_saying_why_without_a_panic() {
    let ns = namespace("leader-exit").await;
    let mut a = replica(&ns, "exit-a", &[]).await;
    eventually("a leads", async || {
        line_of(&a.log_text(), "leading: the Lease is held").ok_or(())
    })
    .await;
    let b = replica(&ns, "exit-b", &[]).await;
    // Enough parents that passes are still running when a learns it lost
    // its Lease.
    let names: Vec<String> = (0..PARENTS_AT_EXIT).map(|i| format!("w{i}")).collect();
    for name in &names {
        create(
            &ns.client(),
            ns.name(),
            widget(name, json!({"data": {"v": "1"}})),
        )
        .await;
    }
    for name in &names {
        config_map_holds(&ns, &format!("{name}-config"), json!({"v": "1"})).await;
    }

    a.signal("STOP");
    eventually("b leads", async || {
        line_of(&b.log_text(), "leading: the Lease is held").ok_or(())
    })
    .await;
    let api = widgets(&ns);
    for name in &names {
        merge(&api, name, json!({"spec": {"data": {"v": "2"}}})).await;
    }
    for name in &names {
        config_map_holds(&ns, &format!("{name}-config"), json!({"v": "2"})).await;
    }

    a.signal("CONT");
    eventually("a exits, its Lease lost", async || {
        if a.is_alive() { Err(()) } else { Ok(()) }
    })
    .await;
    let status = a.stop();
    let log = a.log_text();
    assert_eq!(status.code(), Some(2), "an orderly exit: {status}\n{log}");
    assert!(!log.contains("panicked"), "no panic on the way out:\n{log}");
    assert_eq!(
        log.matches("is no longer held by").count(),
        1,
        "the reason said once:\n{log}"
    );
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: the Lease ") && last.contains("is no longer held by"),
        "the last line says why:\n{log}"
    );
    b.finish();
}

/// How many parents the resumed leader has to pass when it exits.
const PARENTS_AT_EXIT: usize = 150;

/// Two shards, one replica each: every Widget's ConfigMap is made, and
/// each Widget's status is written by the one replica of its shard.
#[tokio::test]
async fn two_shards_write_every_parent_exactly_once() {
    let ns = namespace("leader-shards").await;
    let zero = replica(&ns, "shard-0", &["--shards", "2", "--shard-index", "0"]).await;
    let one = replica(&ns, "shard-1", &["--shards", "2", "--shard-index", "1"]).await;
    let names: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
    for name in &names {
        create(
            &ns.client(),
            ns.name(),
            widget(name, json!({"data": {"n": name}})),
        )
        .await;
    }
    for name in &names {
        config_map_holds(&ns, &format!("{name}-config"), json!({"n": name})).await;
    }
    let api = widgets(&ns);
    for name in &names {
        eventually(&format!("{name} ChildReady"), async || {
            let w = get(&api, name).await;
            condition(&w, "ChildReady")
                .filter(|c| c.status == "True")
                .ok_or(w)
        })
        .await;
    }
    let mut served = [0; 2];
    for name in &names {
        let path = format!("/namespaces/{}/widgets/{name}/status", ns.name());
        let by = [zero.requests("PATCH", &path), one.requests("PATCH", &path)];
        let shard = Shard::of(2, ns.name(), name) as usize;
        assert!(by[shard] >= 1, "{name}: its shard {shard} wrote it: {by:?}");
        assert_eq!(
            by[1 - shard],
            0,
            "{name}: the other shard never wrote it: {by:?}"
        );
        served[shard] += 1;
    }
    assert_eq!(served[0] + served[1], names.len());
    zero.finish();
    one.finish();
}
