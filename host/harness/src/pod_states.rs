//! The crash-loop chooser: which Pods of a namespace kwok reports crash-looping, by annotating them.
//!
//! The test cluster's Pods are scheduled onto kwok's simulated Nodes, and
//! kwok reports them as a kubelet would, through the Stages of
//! `tests/apiserver/kwok-stages.yaml`: running and ready, or, for a Pod
//! annotated [`RESTARTS`] and [`BACK_OFF`], waiting in CrashLoopBackOff
//! with that restart count and back-off. [`PodStates`] writes (or takes
//! off) those annotations on each Pod of its namespace for the
//! [`PodState`] a test asks for (per `app.kubernetes.io/instance`, or a
//! default), as long as it runs. It writes no status: kwok does.

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
/// The restart count kwok's crash-loop Stage reports for the annotated Pod.
pub const RESTARTS: &str = "reconciler.test/restarts";
/// The back-off kwok's crash-loop Stage reports for the annotated Pod.
pub const BACK_OFF: &str = "reconciler.test/back-off";

type States = Arc<Mutex<(PodState, BTreeMap<String, PodState>)>>;

/// Annotates the Pods of one namespace with their chosen state until dropped.
pub struct PodStates {
    states: States,
    changed: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl PodStates {
    /// Every Pod of `namespace` in `state`, unless [`set`](Self::set) says
    /// otherwise for its instance.
    pub fn start(client: &Client, namespace: &str, state: PodState) -> Self {
        let states: States = Arc::new(Mutex::new((state, BTreeMap::new())));
        let changed = Arc::new(Notify::new());
        let api = pods(client, namespace);
        let task = tokio::spawn(run(api, states.clone(), changed.clone()));
        PodStates {
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

impl Drop for PodStates {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches the namespace's Pods and annotates each for its state: when it
/// appears or changes, and every Pod again when a state is set.
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
                // The watcher retries by itself (an API server restarting
                // under a fault test).
                Some(Err(_)) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                None => return,
            },
            () = changed.notified() => known.values().cloned().collect(),
        };
        for pod in touched {
            annotate(&api, &states, &pod).await;
        }
    }
}

/// Writes `pod` the annotations of its state, unless it already has them.
async fn annotate(api: &Api<DynamicObject>, states: &States, pod: &Value) {
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
    let wanted = annotations_of(&state);
    let annotations = &pod["metadata"]["annotations"];
    if [RESTARTS, BACK_OFF]
        .iter()
        .all(|key| annotations[key] == wanted[key])
    {
        return;
    }
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let patch = Patch::Merge(json!({"metadata": {"annotations": wanted}}));
    // Retried a few times (an API server restarting under a fault test);
    // a Pod gone meanwhile is done.
    for _ in 0..25 {
        match api.patch(name, &PatchParams::default(), &patch).await {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 404 => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The annotations kwok's Stages read for `state` (null: taken off).
fn annotations_of(state: &PodState) -> Value {
    match state {
        PodState::Running => json!({RESTARTS: null, BACK_OFF: null}),
        PodState::CrashLoop { restarts, back_off } => {
            json!({RESTARTS: restarts.to_string(), BACK_OFF: back_off})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_loop_is_two_annotations_and_running_takes_them_off() {
        let crashing = annotations_of(&PodState::CrashLoop {
            restarts: 3,
            back_off: "40s",
        });
        assert_eq!(crashing, json!({RESTARTS: "3", BACK_OFF: "40s"}));
        assert_eq!(
            annotations_of(&PodState::Running),
            json!({RESTARTS: null, BACK_OFF: null})
        );
    }
}
