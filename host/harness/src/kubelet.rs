//! The kubelet stand-in: the one thing tests do in a kubelet's place, writing the status of the Pods the controllers made.
//!
//! No kubelet runs beside the test API server: the ReplicaSet controller
//! makes Pods, nothing starts them. [`KubeletStandIn`] writes each Pod of
//! its namespace the status a kubelet would report for the [`PodState`] a
//! test asks for (per `app.kubernetes.io/instance`, or a default), as long
//! as it runs. Everything else (ReplicaSets, the Deployment's status,
//! owner references, garbage collection) is the real controllers' work.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::objects::{PodState, pods};

/// The label a Pod's state is chosen by.
const INSTANCE: &str = "app.kubernetes.io/instance";

type States = Arc<Mutex<(PodState, BTreeMap<String, PodState>)>>;

/// Writes Pod status in one namespace until dropped.
pub struct KubeletStandIn {
    states: States,
    changed: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl KubeletStandIn {
    /// Every Pod of `namespace` in `state`, unless [`set`](Self::set) says
    /// otherwise for its instance.
    pub fn start(client: &Client, namespace: &str, state: PodState) -> Self {
        let states: States = Arc::new(Mutex::new((state, BTreeMap::new())));
        let changed = Arc::new(Notify::new());
        let api = pods(client, namespace);
        let task = tokio::spawn(run(api, states.clone(), changed.clone()));
        KubeletStandIn {
            states,
            changed,
            task,
        }
    }

    /// The Pods of `instance` (the parent's name) in `state` from now on.
    pub fn set(&self, instance: &str, state: PodState) {
        self.states
            .lock()
            .expect("states")
            .1
            .insert(instance.to_owned(), state);
        self.changed.notify_one();
    }
}

impl Drop for KubeletStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches the namespace's Pods (as a kubelet watches its own) and
/// reports each in its state: when it appears or changes, and every Pod
/// again when a state is set.
async fn run(api: Api<DynamicObject>, states: States, changed: Arc<Notify>) {
    let mut known: BTreeMap<String, Value> = BTreeMap::new();
    let mut events = watcher::watcher(api.clone(), watcher::Config::default()).boxed();
    loop {
        let touched: Vec<Value> = tokio::select! {
            event = events.next() => match event {
                Some(Ok(Event::Apply(pod) | Event::InitApply(pod))) => {
                    let Ok(pod) = serde_json::to_value(&pod) else { continue };
                    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                    known.insert(name, pod.clone());
                    vec![pod]
                }
                Some(Ok(Event::Delete(pod))) => {
                    known.remove(pod.metadata.name.as_deref().unwrap_or_default());
                    continue;
                }
                Some(Ok(Event::Init | Event::InitDone)) => continue,
                // The watcher retries by itself; a failed round is a
                // pause, as a kubelet's lost connection would be.
                Some(Err(_)) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                None => return,
            },
            () = changed.notified() => known.values().cloned().collect(),
        };
        for pod in touched {
            report(&api, &states, &pod).await;
        }
    }
}

/// Writes `pod` the status of its state, unless it already says so.
async fn report(api: &Api<DynamicObject>, states: &States, pod: &Value) {
    if pod["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    let state = {
        let states = states.lock().expect("states");
        pod["metadata"]["labels"][INSTANCE]
            .as_str()
            .and_then(|i| states.1.get(i))
            .unwrap_or(&states.0)
            .clone()
    };
    let status = status_of(pod, &state);
    if !reports(&pod["status"], &status) {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let patch = Patch::Merge(json!({"status": status}));
        // Retried a few times, as a kubelet would (an API server
        // restarting under a fault test); a Pod gone meanwhile is done.
        for _ in 0..25 {
            match api
                .patch_status(name, &PatchParams::default(), &patch)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(e)) if e.code == 404 => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

/// Whether a Pod's status already says what `status` says (the
/// conditions and container states compared by what they report).
fn reports(actual: &Value, status: &Value) -> bool {
    let ready = |s: &Value| {
        s["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready")
            .map(|c| c["status"].clone())
    };
    let containers = |s: &Value| {
        s["containerStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].clone(),
                    c["ready"].clone(),
                    c["restartCount"].clone(),
                    c["state"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    actual["phase"] == status["phase"]
        && ready(actual) == ready(status)
        && containers(actual) == containers(status)
}

/// The status a kubelet reports for `pod` when its containers are in
/// `state`: every container of its spec, by name and image.
fn status_of(pod: &Value, state: &PodState) -> Value {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let ready = matches!(state, PodState::Running);
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (restarts, container_state) = match state {
                PodState::Running => (
                    0,
                    json!({"running": {"startedAt": "2026-11-29T11:50:00Z"}}),
                ),
                PodState::CrashLoop { restarts, back_off } => (
                    *restarts,
                    json!({"waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": format!(
                            "back-off {back_off} restarting failed container={} pod={name}_{namespace}",
                            c["name"].as_str().unwrap_or_default()
                        ),
                    }}),
                ),
            };
            json!({
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": ready,
                "restartCount": restarts,
                "state": container_state,
            })
        })
        .collect();
    let ready_text = if ready { "True" } else { "False" };
    json!({
        "phase": "Running",
        "podIP": "10.128.2.17",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": ready_text},
            {"type": "Ready", "status": ready_text},
        ],
        "containerStatuses": containers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_is_reported_in_the_state_asked_for_each_of_its_containers() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j:2"}]}});
        let running = status_of(&pod, &PodState::Running);
        assert_eq!(
            running["containerStatuses"].as_array().map(Vec::len),
            Some(2)
        );
        assert!(reports(&running, &running));
        let crashing = status_of(
            &pod,
            &PodState::CrashLoop {
                restarts: 3,
                back_off: "40s",
            },
        );
        assert!(!reports(&running, &crashing));
        assert_eq!(
            crashing["containerStatuses"][1]["state"]["waiting"]["reason"],
            "CrashLoopBackOff"
        );
        assert!(!reports(&json!({}), &running), "a Pod nothing reported on");
    }
}
