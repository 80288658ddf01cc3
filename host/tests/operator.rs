//! The operator end to end: `reconciler-host run` as a child process, with
//! the EvidenceAgent guest, against the real local kube-apiserver
//! (`tests/apiserver`, one per test binary). Each test has its own
//! namespace and its own host watching only that namespace. The host makes
//! each agent's children (Deployment, Service, serving certificate), the
//! test API server's controller-manager their ReplicaSets and Pods, kwok's
//! simulated Nodes run the Pods, and the test chooses which crash-loop
//! ([`PodStates`]).
//!
//! Nothing here asserts timing: every expectation is polled with a timeout
//! (`harness::TIMEOUT`), and what must not happen is watched for a settle
//! interval (`harness::SETTLE`).

use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::runtime::watcher::{self, Event as WatchEvent};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use harness::{
    Host, condition, events_about, eventually, fixture, garbage_collector_follows, get, has,
    install_crds, published, resource_version, settle, summary, wait_for, wait_healthy,
};
use objects::{
    CLUSTER, CREDENTIALS, OBJECT_STORE, PAUSE_KEY, PodState, agent, agents, backup_setup, cluster,
    crash_loop, create, create_all, credentials, merge, object_store, pods,
};
use reconciler_host_harness::pod_states::PodStates;

/// A namespace with the CRDs installed.
async fn namespace(prefix: &str) -> TestNamespace {
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

/// The names of the Pods of `agent` (the ReplicaSet controller names them).
async fn pod_names(ns: &TestNamespace, agent: &str) -> Vec<String> {
    objects::agent_pods(&ns.client(), ns.name(), agent)
        .await
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// Waits for the agent `orders`'s AdmissionDenied Warning, lets the pass
/// be retried with backoff (1 s, 2 s, 4 s, ...), each retry refused again,
/// and asserts the class was reported once (seed 000: "once per class,
/// not per retry"). The Events about the agent.
async fn admission_denied_reported_once(
    client: &kube::Client,
    namespace: &str,
) -> Vec<harness::Published> {
    eventually("the AdmissionDenied Warning", async || {
        let events = events_about(client, namespace, "orders").await;
        if published(&events, "Warning", "AdmissionDenied") > 0 {
            Ok(())
        } else {
            Err(events)
        }
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(8)).await;
    let events = events_about(client, namespace, "orders").await;
    assert_eq!(
        published(&events, "Warning", "AdmissionDenied"),
        1,
        "reported once until a pass succeeds: {events:#?}"
    );
    events
}

/// A metadata-only change of an object: a watch event for the host, and
/// nothing any guest decides on.
async fn touch(api: &kube::Api<kube::api::DynamicObject>, name: &str, value: &str) {
    merge(
        api,
        name,
        json!({"metadata": {"annotations": {"test.reconciler.dev/touched": value}}}),
    )
    .await;
}

/// 1. A new EvidenceAgent's first pass writes once, what it evaluated
/// (seed 000: "Every controller ends each pass with one status write"):
/// no separate write of every condition Unknown (Initializing) first.
#[tokio::test]
async fn first_pass_writes_once_what_it_evaluated() {
    let ns = namespace("op-first").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());

    // Every version of the object, watched from before it exists.
    let (versions, watch) = watch_versions(&agents).await;

    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let evaluated = wait_healthy(&agents, "orders").await;

    // The watch has seen the evaluated version too.
    let statuses = written_versions(&versions, &evaluated).await;
    watch.abort();

    first_status_evaluates_every_aspect(&statuses[0]);
    // Then the agent converges as its children do (the certificate issued,
    // the rollout on its way, the Pod ready): each version says so, none
    // says Ready but the last, and the host wrote each version once.
    let last = statuses.last().unwrap();
    assert!(has(last, "Ready", "True", "AsExpected"));
    for v in &statuses[..statuses.len() - 1] {
        assert!(
            has(v, "Progressing", "True", "Reconciling") && !has(v, "Ready", "True", "AsExpected"),
            "converging: {:?}",
            summary(v)
        );
    }
    assert!(
        (1..=4).contains(&statuses.len()),
        "at most three steps of convergence, then Ready: {:#?}",
        statuses.iter().map(summary).collect::<Vec<_>>()
    );
    assert_eq!(
        host.status_writes(ns.name(), "orders"),
        statuses.len(),
        "one write per version"
    );

    // The children the host made: each controlled by the agent, labelled.
    children_controlled_and_labelled(&client, ns.name(), &evaluated).await;

    // Ready turning True and the certificate are reported once each;
    // nothing is a Warning (a rollout on its way is quiet).
    reported_once_each(&client, ns.name()).await;

    host.finish();
    ns.cleanup().await.unwrap();
}

/// Every version of the agent `orders`, watched from before it exists (the
/// watch listed when this returns); the watch's task.
async fn watch_versions(
    agents: &kube::Api<kube::api::DynamicObject>,
) -> (Arc<Mutex<Vec<Value>>>, tokio::task::JoinHandle<()>) {
    let versions: Arc<Mutex<Vec<Value>>> = Arc::default();
    let (listed, watching) = oneshot::channel();
    let watch = tokio::spawn({
        let versions = versions.clone();
        let mut stream = watcher::watcher(
            agents.clone(),
            watcher::Config::default().fields("metadata.name=orders"),
        )
        .boxed();
        async move {
            let mut listed = Some(listed);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(WatchEvent::InitDone) => {
                        if let Some(l) = listed.take() {
                            let _ = l.send(());
                        }
                    }
                    Ok(WatchEvent::Apply(o) | WatchEvent::InitApply(o)) => versions
                        .lock()
                        .unwrap()
                        .push(serde_json::to_value(o).unwrap()),
                    _ => {}
                }
            }
        }
    });
    watching.await.expect("the watch lists");
    (versions, watch)
}

/// The versions the watch saw with conditions written, each once, once it
/// has seen the `evaluated` one.
async fn written_versions(versions: &Mutex<Vec<Value>>, evaluated: &Value) -> Vec<Value> {
    eventually("the watch to see the evaluated status", async || {
        let mut seen: Vec<Value> = Vec::new();
        for v in versions.lock().unwrap().iter() {
            let written = v["status"]["conditions"]
                .as_array()
                .is_some_and(|c| !c.is_empty());
            let new = seen
                .last()
                .is_none_or(|l| resource_version(l) != resource_version(v));
            if written && new {
                seen.push(v.clone());
            }
        }
        if seen
            .iter()
            .any(|v| resource_version(v) == resource_version(evaluated))
        {
            Ok(seen)
        } else {
            Err(seen.iter().map(summary).collect::<Vec<_>>())
        }
    })
    .await
}

/// The first status carries every declared condition, in order, each
/// evaluated (none Initializing) at generation 1.
fn first_status_evaluates_every_aspect(first: &Value) {
    let spec = &fixture().spec;
    let declared: Vec<&str> = spec.condition_types().collect();
    assert!(declared.contains(&"Ready") && declared.len() >= 4);
    let first_types: Vec<&str> = first["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        first_types, declared,
        "the first status carries every declared condition, in order"
    );
    for t in &declared {
        let c = condition(first, t).unwrap();
        assert_eq!(c.observed_generation, 1, "{t}: {:?}", summary(first));
        assert_ne!(
            c.reason.as_str(),
            "Initializing",
            "{t}: the first pass evaluates every aspect and writes that: {:?}",
            summary(first)
        );
    }
    assert_eq!(first["status"]["observedGeneration"], 1);
}

/// The children the host made: each controlled by the agent, labelled.
async fn children_controlled_and_labelled(client: &kube::Client, ns: &str, evaluated: &Value) {
    let uid = evaluated["metadata"]["uid"].clone();
    for (api_version, kind, name) in [
        ("apps/v1", "Deployment", "orders-evidence-agent"),
        ("v1", "Service", "orders-evidence-agent"),
        ("v1", "Secret", "orders-serving-cert"),
    ] {
        let child = get(&objects::api(client, ns, api_version, kind), name).await;
        let owner = &child["metadata"]["ownerReferences"][0];
        assert_eq!(
            (&owner["uid"], &owner["controller"]),
            (&uid, &json!(true)),
            "{kind} {name} is controlled by the agent"
        );
        assert_eq!(
            child["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "reconciler-host"
        );
    }
}

/// Ready turning True and the certificate reported once each; no Warning.
async fn reported_once_each(client: &kube::Client, ns: &str) {
    let events = eventually("the Ready Event", async || {
        let events = events_about(client, ns, "orders").await;
        if published(&events, "Normal", "AsExpected") > 0 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(published(&events, "Normal", "AsExpected"), 1, "{events:#?}");
    assert_eq!(
        published(&events, "Normal", "CertificateIssued"),
        1,
        "{events:#?}"
    );
    assert!(
        events.iter().all(|e| e.type_ == "Normal"),
        "no Warning for a healthy agent: {events:#?}"
    );
}

/// 2. A healthy agent whose Pod crashloops: WorkloadReady and Ready False
/// (CrashLoopBackOff), reported by exactly one Warning, not repeated by
/// later passes that find the same state.
#[tokio::test]
async fn crashloop_turns_workload_and_ready_false_with_one_warning() {
    let ns = namespace("op-crash").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    wait_healthy(&agents, "orders").await;

    pod_states.set("orders", crash_loop());
    let o = wait_for(
        &agents,
        "orders",
        &[
            ("WorkloadReady", "False", "CrashLoopBackOff"),
            ("Ready", "False", "CrashLoopBackOff"),
            ("Progressing", "True", "Reconciling"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    let message = condition(&o, "WorkloadReady").unwrap().message;
    assert!(
        message.contains("CrashLoopBackOff") && message.contains("restarts: 5"),
        "{message}"
    );

    let warnings = |events: &[harness::Published]| {
        events
            .iter()
            .filter(|e| e.type_ == "Warning")
            .cloned()
            .collect::<Vec<_>>()
    };
    eventually("the CrashLoopBackOff Warning", async || {
        let events = events_about(&client, ns.name(), "orders").await;
        if published(&events, "Warning", "CrashLoopBackOff") > 0 {
            Ok(())
        } else {
            Err(events)
        }
    })
    .await;
    // More passes finding the same state: a metadata-only change of the
    // Pod the agent lists, and of its Cluster.
    for pod in pod_names(&ns, "orders").await {
        touch(&pods(&client, ns.name()), &pod, "1").await;
    }
    let clusters = objects::api(&client, ns.name(), "postgresql.cnpg.io/v1", "Cluster");
    touch(&clusters, CLUSTER, "1").await;
    settle().await;

    let events = events_about(&client, ns.name(), "orders").await;
    let w = warnings(&events);
    assert_eq!(w.len(), 1, "one Warning Event: {events:#?}");
    assert_eq!(
        (w[0].reason.as_str(), w[0].count),
        ("CrashLoopBackOff", 1),
        "published once: {events:#?}"
    );
    assert_eq!(w[0].note, message, "the note is the condition's message");

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 3. In CrashLoopBackOff, a change of the container's message only (more
/// restarts): the condition's message is rewritten, its status, reason and
/// lastTransitionTime stay, and no Event is published.
#[tokio::test]
async fn message_only_change_rewrites_status_without_an_event() {
    let ns = namespace("op-message").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let pod_states = PodStates::start(&client, ns.name(), crash_loop());
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("billing", CLUSTER)).await;
    let before = wait_for(
        &agents,
        "billing",
        &[
            ("WorkloadReady", "False", "CrashLoopBackOff"),
            ("Ready", "False", "CrashLoopBackOff"),
        ],
    )
    .await;
    eventually("the CrashLoopBackOff Warning", async || {
        let events = events_about(&client, ns.name(), "billing").await;
        if published(&events, "Warning", "CrashLoopBackOff") == 1 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    // The pass that published the Warning publishes CertificateIssued
    // too, in its own request: the list may come between the two.
    settle().await;
    let events_before = events_about(&client, ns.name(), "billing").await;
    let workload_before = condition(&before, "WorkloadReady").unwrap();
    let writes_before = host.status_writes(ns.name(), "billing");

    pod_states.set(
        "billing",
        PodState::CrashLoop {
            restarts: 6,
            back_off: "5m0s",
        },
    );
    let after = eventually("the new message", async || {
        let o = get(&agents, "billing").await;
        let c = condition(&o, "WorkloadReady");
        if c.as_ref()
            .is_some_and(|c| c.message.contains("restarts: 6"))
        {
            Ok(o)
        } else {
            Err(c)
        }
    })
    .await;
    let workload_after = condition(&after, "WorkloadReady").unwrap();
    assert_eq!(
        (
            workload_after.status.as_str(),
            workload_after.reason.as_str()
        ),
        ("False", "CrashLoopBackOff")
    );
    assert_ne!(workload_after.message, workload_before.message);
    assert_eq!(
        workload_after.last_transition_time, workload_before.last_transition_time,
        "a message change is no transition"
    );
    let ready = condition(&after, "Ready").unwrap();
    assert_eq!(
        (ready.reason.as_str(), ready.message.as_str()),
        ("CrashLoopBackOff", workload_after.message.as_str()),
        "Ready copies the new message"
    );
    assert_eq!(
        host.status_writes(ns.name(), "billing"),
        writes_before + 1,
        "one write for the new message"
    );

    settle().await;
    let events_after = events_about(&client, ns.name(), "billing").await;
    assert_eq!(events_after, events_before, "no new Event");

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 4. A Cluster that does not exist is a stall (ClusterNotFound) with no
/// periodic recheck; creating it resolves the stall: only the dependency
/// on the missing Cluster can have re-queued the agent.
#[tokio::test]
async fn missing_cluster_stalls_and_creating_it_resolves_without_a_timer() {
    let spec = &fixture().spec;
    let rule = spec
        .stall_rule("ClusterNotFound")
        .expect("ClusterNotFound is a stall of the kind");
    assert_eq!(rule.recheck_seconds, None, "no periodic recheck");

    let ns = namespace("op-stall").await;
    let client = ns.client();
    create_all(
        &client,
        ns.name(),
        vec![
            object_store(OBJECT_STORE, CREDENTIALS),
            credentials(CREDENTIALS),
        ],
    )
    .await;
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;

    wait_for(
        &agents,
        "orders",
        &[
            ("Stalled", "True", "ClusterNotFound"),
            ("Progressing", "False", "ClusterNotFound"),
            ("ConfigurationValid", "False", "ClusterNotFound"),
            ("Ready", "False", "ClusterNotFound"),
        ],
    )
    .await;
    let events = eventually("the stall's Warning", async || {
        let events = events_about(&client, ns.name(), "orders").await;
        if published(&events, "Warning", "ClusterNotFound") > 0 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(
        published(&events, "Warning", "ClusterNotFound"),
        1,
        "Stalled and ConfigurationValid share one Warning: {events:#?}"
    );

    create(&client, ns.name(), cluster(CLUSTER, OBJECT_STORE)).await;
    wait_healthy(&agents, "orders").await;

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 4b. A credentials Secret that does not exist is WorkloadReady False
/// (SecretNotFound), not a stall; creating it resolves it.
#[tokio::test]
async fn missing_secret_is_not_a_stall_and_creating_it_resolves_it() {
    let ns = namespace("op-secret").await;
    let client = ns.client();
    create_all(
        &client,
        ns.name(),
        vec![
            cluster(CLUSTER, OBJECT_STORE),
            object_store(OBJECT_STORE, CREDENTIALS),
        ],
    )
    .await;
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;

    let o = wait_for(
        &agents,
        "orders",
        &[
            ("WorkloadReady", "False", "SecretNotFound"),
            ("Ready", "False", "SecretNotFound"),
            ("Stalled", "False", "AsExpected"),
            ("ConfigurationValid", "True", "AsExpected"),
        ],
    )
    .await;
    let message = condition(&o, "WorkloadReady").unwrap().message;
    assert!(message.contains(CREDENTIALS), "{message}");

    create(&client, ns.name(), credentials(CREDENTIALS)).await;
    wait_healthy(&agents, "orders").await;

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 5. The pause annotation: Ready Unknown and Progressing False
/// (ReconciliationPaused), the aspects kept as they were and nothing read
/// (a child's change is not seen); removing it evaluates again.
#[tokio::test]
async fn pause_and_unpause() {
    let ns = namespace("op-pause").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    wait_healthy(&agents, "orders").await;

    merge(
        &agents,
        "orders",
        json!({"metadata": {"annotations": {PAUSE_KEY: "skip"}}}),
    )
    .await;
    let paused = wait_for(
        &agents,
        "orders",
        &[
            ("Ready", "Unknown", "ReconciliationPaused"),
            ("Progressing", "False", "ReconciliationPaused"),
            ("Stalled", "False", "AsExpected"),
            ("WorkloadReady", "True", "AsExpected"),
        ],
    )
    .await;
    for a in &fixture().spec.aspects {
        assert!(
            has(&paused, a, "True", "AsExpected"),
            "{a} kept: {:?}",
            summary(&paused)
        );
    }

    // While paused, the Pod crashlooping changes nothing.
    pod_states.set("orders", crash_loop());
    settle().await;
    let still = get(&agents, "orders").await;
    assert_eq!(
        resource_version(&still),
        resource_version(&paused),
        "no write while paused: {:?}",
        summary(&still)
    );

    merge(
        &agents,
        "orders",
        json!({"metadata": {"annotations": {PAUSE_KEY: null}}}),
    )
    .await;
    wait_for(
        &agents,
        "orders",
        &[
            ("WorkloadReady", "False", "CrashLoopBackOff"),
            ("Ready", "False", "CrashLoopBackOff"),
            ("Progressing", "True", "Reconciling"),
        ],
    )
    .await;

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 6. Converged agents are not written: changes the host sees (objects they
/// read, metadata only) and changes it does not care about leave every
/// agent's resourceVersion and the host's status PATCH count as they were.
#[tokio::test]
async fn converged_objects_cause_no_writes() {
    let names = ["alpha", "beta", "gamma"];
    let ns = namespace("op-quiet").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    let host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    for n in names {
        create(&client, ns.name(), agent(n, CLUSTER)).await;
    }
    let mut versions = Vec::new();
    for n in names {
        wait_healthy(&agents, n).await;
    }
    for n in names {
        versions.push(resource_version(&get(&agents, n).await));
    }
    let writes: Vec<usize> = names
        .iter()
        .map(|n| host.status_writes(ns.name(), n))
        .collect();
    // Nothing the host sends once converged: no child apply either.
    let applies = host.requests("PATCH", "/apis/apps/v1/") + host.requests("PATCH", "/api/v1/");

    // Unrelated: a ConfigMap nobody reads, created and changed.
    let config_maps = objects::api(&client, ns.name(), "v1", "ConfigMap");
    create(
        &client,
        ns.name(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "unrelated"}, "data": {"a": "1"}}),
    )
    .await;
    merge(&config_maps, "unrelated", json!({"data": {"a": "2"}})).await;
    // Read by the agents, changed in nothing they decide on: passes that
    // find the same status.
    let clusters = objects::api(&client, ns.name(), "postgresql.cnpg.io/v1", "Cluster");
    touch(&clusters, CLUSTER, "1").await;
    let secrets = objects::api(&client, ns.name(), "v1", "Secret");
    touch(&secrets, CREDENTIALS, "1").await;
    for n in names {
        for pod in pod_names(&ns, n).await {
            touch(&pods(&client, ns.name()), &pod, "1").await;
        }
    }
    settle().await;

    for (n, v) in names.iter().zip(&versions) {
        let o = get(&agents, n).await;
        assert_eq!(
            &resource_version(&o),
            v,
            "{n} was written: {:?}",
            summary(&o)
        );
    }
    let after: Vec<usize> = names
        .iter()
        .map(|n| host.status_writes(ns.name(), n))
        .collect();
    assert_eq!(after, writes, "no status PATCH for converged agents");
    assert_eq!(
        host.requests("PATCH", "/apis/apps/v1/") + host.requests("PATCH", "/api/v1/"),
        applies,
        "no child applied again for converged agents"
    );

    // The host was listening all along: a real change is written, once,
    // and only for the agent it concerns.
    pod_states.set("alpha", crash_loop());
    wait_for(
        &agents,
        "alpha",
        &[("WorkloadReady", "False", "CrashLoopBackOff")],
    )
    .await;
    settle().await;
    let last: Vec<usize> = names
        .iter()
        .map(|n| host.status_writes(ns.name(), n))
        .collect();
    // The Pod's status says CrashLoopBackOff first, its Deployment's
    // status then says it unavailable: a pass may see either one alone
    // (two writes, each of a new status) or both at once (one).
    assert!(
        (writes[0] + 1..=writes[0] + 2).contains(&last[0]),
        "alpha written once or twice for its crash loop: {last:?} after {writes:?}"
    );
    assert_eq!(last[1..], writes[1..], "only alpha written");
    settle().await;
    assert_eq!(
        host.status_writes(ns.name(), "alpha"),
        last[0],
        "alpha converged again"
    );
    for (n, v) in names.iter().zip(&versions).skip(1) {
        assert_eq!(&resource_version(&get(&agents, n).await), v, "{n}");
    }

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 7. A deleted agent's children and dependencies go with it. The
/// dependencies are not observable from outside directly (the index has no
/// metric); what is: its children collected, a change of an object
/// the deleted agent read causes no error, no write and no Event, the other
/// agent is unaffected, the host keeps running, and an agent created again
/// under the same name starts afresh from the current state.
#[tokio::test]
async fn deleting_a_parent_drops_its_dependencies() {
    let ns = namespace("op-delete").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    garbage_collector_follows(&client, "evidenceagents.pgtoolbox.fyannk.dev").await;
    let mut host = Host::start(ns.name()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("gone", CLUSTER)).await;
    create(&client, ns.name(), agent("kept", CLUSTER)).await;
    wait_healthy(&agents, "gone").await;
    let kept = wait_healthy(&agents, "kept").await;

    objects::delete(&agents, "gone").await;
    eventually("gone to be deleted", async || {
        match agents.get_opt("gone").await.expect("get") {
            None => Ok(()),
            Some(o) => Err(o.metadata.resource_version),
        }
    })
    .await;
    // A pass in flight when it went may still end (its status write
    // answered 404, nothing reported); none starts after.
    settle().await;
    let writes_gone = host.status_writes(ns.name(), "gone");
    let events_gone = events_about(&client, ns.name(), "gone").await;

    // Its children go with it (the garbage collector follows the owner
    // references the host set); then what it read changes: the Cluster.
    let deployments = objects::api(&client, ns.name(), "apps/v1", "Deployment");
    let secrets = objects::api(&client, ns.name(), "v1", "Secret");
    eventually("gone's children to be collected", async || {
        let deployment = deployments
            .get_opt("gone-evidence-agent")
            .await
            .expect("get");
        let secret = secrets.get_opt("gone-serving-cert").await.expect("get");
        match (deployment, secret) {
            (None, None) => Ok(()),
            other => Err(format!("{:?}", (other.0.is_some(), other.1.is_some()))),
        }
    })
    .await;
    pod_states.set("gone", crash_loop());
    let clusters = objects::api(&client, ns.name(), "postgresql.cnpg.io/v1", "Cluster");
    touch(&clusters, CLUSTER, "1").await;
    settle().await;

    assert!(host.is_alive(), "the host is still running");
    assert_eq!(host.status_writes(ns.name(), "gone"), writes_gone);
    assert_eq!(events_about(&client, ns.name(), "gone").await, events_gone);
    let kept_now = get(&agents, "kept").await;
    assert_eq!(
        resource_version(&kept_now),
        resource_version(&kept),
        "kept unaffected: {:?}",
        summary(&kept_now)
    );
    assert!(host.problems().is_empty(), "{:#?}", host.problems());

    // Created again: a new object, evaluated from the current state.
    create(&client, ns.name(), agent("gone", CLUSTER)).await;
    wait_for(
        &agents,
        "gone",
        &[
            ("WorkloadReady", "False", "CrashLoopBackOff"),
            ("Ready", "False", "CrashLoopBackOff"),
        ],
    )
    .await;
    // And the other agent still follows its own children.
    pod_states.set("kept", crash_loop());
    wait_for(
        &agents,
        "kept",
        &[("WorkloadReady", "False", "CrashLoopBackOff")],
    )
    .await;

    host.finish();
    ns.cleanup().await.unwrap();
}

/// A ValidatingAdmissionPolicy (and its binding) that admits a status
/// write of an EvidenceAgent in `ns` only when the CEL `admitted` holds;
/// enforced when this returns. Removed by [`StatusPolicy::remove`].
struct StatusPolicy {
    policies: kube::Api<kube::api::DynamicObject>,
    bindings: kube::Api<kube::api::DynamicObject>,
    name: String,
}

impl StatusPolicy {
    async fn install(client: &kube::Client, ns: &str, admitted: &str) -> StatusPolicy {
        let policy = format!("deny-status-{}", ns);
        let policies = kube::Api::<kube::api::DynamicObject>::all_with(
            client.clone(),
            &objects::resource_of(
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicy",
            ),
        );
        let bindings = kube::Api::<kube::api::DynamicObject>::all_with(
            client.clone(),
            &objects::resource_of(
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding",
            ),
        );
        let create_cluster_scoped = async |api: &kube::Api<kube::api::DynamicObject>, o: Value| {
            api.create(
                &kube::api::PostParams::default(),
                &serde_json::from_value(o).unwrap(),
            )
            .await
            .expect("creating the policy");
        };
        create_cluster_scoped(
            &policies,
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": policy},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {"resourceRules": [{
                        "apiGroups": [objects::GROUP],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["evidenceagents/status"],
                    }]},
                    "validations": [{
                        "expression": format!("request.namespace != '{}' || ({admitted})", ns),
                        "message": "status writes are frozen in this test",
                    }],
                },
            }),
        )
        .await;
        create_cluster_scoped(
            &bindings,
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": policy},
                "spec": {"policyName": policy, "validationActions": ["Deny"]},
            }),
        )
        .await;
        // The policy is enforced once a status write of our own is refused.
        let agents = agents(client, ns);
        create(client, ns, agent("probe", "none")).await;
        eventually("the policy to be enforced", async || {
            match agents
                .patch_status(
                    "probe",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(json!({"status": {"probe": true}})),
                )
                .await
            {
                Err(kube::Error::Api(e)) if e.code == 422 || e.code == 403 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        objects::delete(&agents, "probe").await;
        StatusPolicy {
            policies,
            bindings,
            name: policy,
        }
    }

    async fn remove(self) {
        let _ = kube::Api::delete(&self.bindings, &self.name, &Default::default()).await;
        let _ = kube::Api::delete(&self.policies, &self.name, &Default::default()).await;
    }
}

/// 8. A status write the API server refuses (a ValidatingAdmissionPolicy
/// admits only statuses whose Ready is ReconcileError): Ready False
/// (ReconcileError, "AdmissionDenied: …") and one Warning AdmissionDenied,
/// not one per retry: the error class is reported once until a pass
/// succeeds.
#[tokio::test]
async fn refused_status_write_is_reported_once() {
    let ns = namespace("op-denied").await;
    let client = ns.client();
    let admitted = "has(object.status) && has(object.status.conditions) && \
        object.status.conditions.exists(c, c.type == 'Ready' && c.reason == 'ReconcileError')";
    let policy = StatusPolicy::install(&client, ns.name(), admitted).await;
    let agents = agents(&client, ns.name());

    create_all(&client, ns.name(), backup_setup()).await;
    let host = Host::start(ns.name()).await;
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let o = wait_for(&agents, "orders", &[("Ready", "False", "ReconcileError")]).await;
    let ready = condition(&o, "Ready").unwrap();
    assert!(ready.message.starts_with("AdmissionDenied: "), "{ready:?}");
    admission_denied_reported_once(&client, ns.name()).await;

    policy.remove().await;
    // The refused writes are logged as warnings: expected here.
    drop(host);
    ns.cleanup().await.unwrap();
}

/// 8b. Every status write refused, the error's own included (a webhook on
/// `/status` that admits nothing): the status cannot say the error, so the
/// class is reported by its Event all the same, once (seed 000: "once per
/// class, not per retry"), and the host wrote no status.
#[tokio::test]
async fn refused_error_status_write_is_still_reported_once() {
    let ns = namespace("op-frozen").await;
    let client = ns.client();
    let policy = StatusPolicy::install(&client, ns.name(), "false").await;
    let agents = agents(&client, ns.name());

    create_all(&client, ns.name(), backup_setup()).await;
    let host = Host::start(ns.name()).await;
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let events = admission_denied_reported_once(&client, ns.name()).await;
    assert!(
        events.iter().all(|e| e.reason == "AdmissionDenied"),
        "nothing the status does not say: {events:#?}"
    );
    assert!(host.status_writes(ns.name(), "orders") > 1, "retried");
    let o = get(&agents, "orders").await;
    assert!(
        o["status"]["conditions"].is_null(),
        "every write refused: {o:#}"
    );

    policy.remove().await;
    drop(host);
    ns.cleanup().await.unwrap();
}

/// 9. The operator-signed serving certificate (seed 000: CertificateIssued,
/// "a newly issued or renewed operator-signed serving certificate"):
/// issued once the agent is valid, renewed once two thirds of its validity
/// have passed (here 60 s: renewed after 40 s) as a new certificate for
/// the same names from the same CA, in the same Secret; one Event each.
#[tokio::test]
async fn serving_certificate_is_issued_then_renewed() {
    let ns = namespace("op-cert").await;
    let client = ns.client();
    create_all(&client, ns.name(), backup_setup()).await;
    let host = Host::start_in(ns.name(), &["--certificate-validity", "60s"]).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    wait_healthy(&agents, "orders").await;
    let secrets = objects::api(&client, ns.name(), "v1", "Secret");
    let issued = get(&secrets, "orders-serving-cert").await;
    let expiry =
        |s: &Value| s["metadata"]["annotations"]["reconciler.dev/certificate-expiry"].clone();
    let issued_events = events_about(&client, ns.name(), "orders").await;
    assert_eq!(
        published(&issued_events, "Normal", "CertificateIssued"),
        1,
        "{issued_events:#?}"
    );

    // Renewal is due 40 s after issue: wait most of it, then poll.
    tokio::time::sleep(std::time::Duration::from_secs(25)).await;
    let renewed = eventually("the certificate renewed", async || {
        let s = get(&secrets, "orders-serving-cert").await;
        if expiry(&s) != expiry(&issued) {
            Ok(s)
        } else {
            Err(expiry(&s))
        }
    })
    .await;
    assert_eq!(
        renewed["metadata"]["uid"], issued["metadata"]["uid"],
        "the same Secret"
    );
    assert_ne!(
        renewed["data"]["tls.crt"], issued["data"]["tls.crt"],
        "a new certificate"
    );
    assert_ne!(
        renewed["data"]["tls.key"], issued["data"]["tls.key"],
        "a new key"
    );
    assert_eq!(
        renewed["data"]["ca.crt"], issued["data"]["ca.crt"],
        "the same CA"
    );
    assert_eq!(
        renewed["metadata"]["annotations"]["reconciler.dev/certificate-dns-names"],
        issued["metadata"]["annotations"]["reconciler.dev/certificate-dns-names"]
    );
    let o = eventually("the status to record the renewed certificate", async || {
        let o = get(&agents, "orders").await;
        if o["status"]["servingCertificate"]["expiry"] == expiry(&renewed) {
            Ok(o)
        } else {
            Err(o["status"]["servingCertificate"].clone())
        }
    })
    .await;
    assert!(has(&o, "ServingCertificateReady", "True", "AsExpected"));
    let events = eventually("the renewal's CertificateIssued", async || {
        let events = events_about(&client, ns.name(), "orders").await;
        if published(&events, "Normal", "CertificateIssued") >= 2 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert_eq!(
        published(&events, "Normal", "CertificateIssued"),
        2,
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.reason == "CertificateIssued" && e.note.contains("renewed")),
        "{events:#?}"
    );
    host.finish();
    ns.cleanup().await.unwrap();
}
