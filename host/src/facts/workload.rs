//! Workload facts: a Deployment and its Pods, classified the way generic
//! Kubernetes knowledge reads them (pure functions, table-tested).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::Selector;
use super::meta::object_meta;
use crate::contract::facts::{ContainerWaiting, PodFact, WorkloadFact, WorkloadState};

/// Kubelet waiting reasons that mean an image cannot be pulled.
const IMAGE_PULL_REASONS: &[&str] = &[
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
    "SignatureValidationFailed",
];

/// Derives the Pod fact from a Pod. Never panics: a negative restart count
/// reads as 0, and the sum of all containers' counts stops at `u32::MAX`
/// (three containers at `i32::MAX` restarts would overflow it).
pub(crate) fn pod_fact(json: &serde_json::Value, pod: &Pod) -> PodFact {
    let status = pod.status.clone().unwrap_or_default();
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
            .cloned()
    };
    let statuses: Vec<&ContainerStatus> = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .collect();
    let waiting = statuses.iter().find_map(|cs| {
        let w = cs.state.as_ref()?.waiting.as_ref()?;
        Some(ContainerWaiting {
            container: cs.name.clone(),
            reason: w.reason.clone().unwrap_or_default(),
            message: w.message.clone().unwrap_or_default(),
        })
    });
    PodFact {
        meta: object_meta(json),
        phase: status.phase.clone().unwrap_or_else(|| "Unknown".to_owned()),
        ready: condition("Ready").is_some_and(|c| c.status == "True"),
        waiting,
        unschedulable: condition("PodScheduled")
            .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
            .map(|c| c.message.unwrap_or_default()),
        restart_count: statuses
            .iter()
            .map(|cs| cs.restart_count.max(0).unsigned_abs())
            .fold(0, u32::saturating_add),
        pod_ip: status.pod_ip.clone(),
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
    }
}

/// Derives the workload fact from a Deployment and the Pods its selector
/// matches.
#[cfg(test)]
pub(crate) fn workload_fact(
    json: &serde_json::Value,
    deployment: &Deployment,
    pods: Vec<PodFact>,
) -> WorkloadFact {
    deployment_part(json, deployment).with_pods(pods)
}

/// What a Deployment alone contributes to its workload fact, derived before
/// its Pods are read: the fact without Pods, the replicas its status
/// counts, and the selector that picks its Pods.
#[derive(Debug)]
pub(crate) struct DeploymentPart {
    fact: WorkloadFact,
    total_replicas: u32,
    selector: Selector,
}

impl DeploymentPart {
    /// The Deployment's Pod selector.
    pub(crate) fn selector(&self) -> &Selector {
        &self.selector
    }

    /// The workload fact with these Pods, classified.
    pub(crate) fn with_pods(self, pods: Vec<PodFact>) -> WorkloadFact {
        let mut fact = self.fact;
        fact.pods = pods;
        fact.state = classify(&fact, self.total_replicas);
        fact
    }
}

/// A Deployment's part of its workload fact.
pub(crate) fn deployment_part(json: &serde_json::Value, deployment: &Deployment) -> DeploymentPart {
    let meta = object_meta(json);
    let status = deployment.status.clone().unwrap_or_default();
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_.as_deref() == Some(type_))
            .cloned()
    };
    let count = |n: Option<i32>| n.unwrap_or(0).max(0).unsigned_abs();
    let desired = count(Some(deployment.spec.replicas.unwrap_or(1)));
    let generation_observed = status.observed_generation.unwrap_or(0) >= meta.generation;
    let progress_deadline_exceeded = condition("Progressing").is_some_and(|c| {
        c.status.as_deref() == Some("False")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    let replica_failure = condition("ReplicaFailure")
        .filter(|c| c.status.as_deref() == Some("True"))
        .map(|c| c.message.unwrap_or_default());
    DeploymentPart {
        fact: WorkloadFact {
            meta,
            generation_observed,
            desired_replicas: desired,
            updated_replicas: count(status.updated_replicas),
            ready_replicas: count(status.ready_replicas),
            available_replicas: count(status.available_replicas),
            progress_deadline_exceeded,
            replica_failure,
            pods: Vec::new(),
            state: WorkloadState::Ready,
        },
        total_replicas: count(status.replicas),
        selector: Selector::from_json(&json["spec"]["selector"]),
    }
}

/// The most specific cause first, then the symptom it produces.
fn classify(w: &WorkloadFact, total_replicas: u32) -> WorkloadState {
    let name = &w.meta.name;
    if let Some(m) = &w.replica_failure {
        return WorkloadState::ReplicaFailure(format!("Deployment {name}: {m}"));
    }
    let live: Vec<&PodFact> = w
        .pods
        .iter()
        .filter(|p| p.meta.deletion.is_none())
        .collect();
    let waiting = |pred: &dyn Fn(&ContainerWaiting) -> bool| {
        live.iter().find_map(|p| {
            p.waiting
                .as_ref()
                .filter(|cw| pred(cw))
                .map(|cw| describe_waiting(p, cw))
        })
    };
    let config_error = |cw: &ContainerWaiting, needle: &str| {
        cw.reason == "CreateContainerConfigError" && cw.message.contains(needle)
    };
    if let Some(m) = waiting(&|cw| config_error(cw, "couldn't find key")) {
        return WorkloadState::SecretKeyMissing(m);
    }
    if let Some(m) =
        waiting(&|cw| config_error(cw, "secret \"") && cw.message.contains("not found"))
    {
        return WorkloadState::SecretNotFound(m);
    }
    if let Some(m) =
        waiting(&|cw| config_error(cw, "configmap \"") && cw.message.contains("not found"))
    {
        return WorkloadState::ConfigMapNotFound(m);
    }
    if let Some(p) = live.iter().find(|p| p.unschedulable.is_some()) {
        return WorkloadState::PodUnschedulable(format!(
            "Pod {}: {}",
            p.meta.name,
            p.unschedulable.as_deref().unwrap_or_default()
        ));
    }
    if let Some(m) = waiting(&|cw| IMAGE_PULL_REASONS.contains(&cw.reason.as_str())) {
        return WorkloadState::ImagePullFailed(m);
    }
    if let Some(m) = waiting(&|cw| cw.reason == "CrashLoopBackOff") {
        return WorkloadState::CrashLoopBackOff(m);
    }
    if w.progress_deadline_exceeded {
        return WorkloadState::RolloutStuck(format!(
            "Deployment {name} exceeded its progress deadline ({} of {} replicas updated)",
            w.updated_replicas, w.desired_replicas
        ));
    }
    if !w.generation_observed
        || w.updated_replicas < w.desired_replicas
        || total_replicas > w.desired_replicas
    {
        return WorkloadState::RolloutInProgress(format!(
            "Deployment {name}: {} of {} replicas updated",
            w.updated_replicas, w.desired_replicas
        ));
    }
    if w.ready_replicas < w.desired_replicas || w.available_replicas < w.desired_replicas {
        return WorkloadState::PodNotReady(format!(
            "Deployment {name}: {} of {} replicas ready",
            w.ready_replicas, w.desired_replicas
        ));
    }
    WorkloadState::Ready
}

fn describe_waiting(pod: &PodFact, cw: &ContainerWaiting) -> String {
    let mut m = format!(
        "Pod {} container {}: {}",
        pod.meta.name, cw.container, cw.reason
    );
    if !cw.message.is_empty() {
        m.push_str(": ");
        m.push_str(&cw.message);
    }
    if pod.restart_count > 0 {
        m.push_str(&format!(" (restarts: {})", pod.restart_count));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::{Value, json};

    fn deployment(status: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "agent", "namespace": "ns", "generation": 2},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "agent"}}, "template": {}},
            "status": status
        })
    }

    fn healthy() -> Value {
        json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2})
    }

    fn pod(status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "agent-1", "namespace": "ns", "labels": {"app": "agent"}},
               "spec": {"containers": [], "nodeName": "n1"}, "status": status})
    }

    fn waiting(reason: &str, message: &str) -> Value {
        pod(json!({"phase": "Pending", "containerStatuses": [{
            "name": "agent", "image": "x", "imageID": "", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": reason, "message": message}}}]}))
    }

    fn state(dep: Value, pods: Vec<Value>) -> WorkloadState {
        let d = Deployment::deserialize(&dep).unwrap();
        let pods = pods
            .iter()
            .map(|p| pod_fact(p, &Pod::deserialize(p).unwrap()))
            .collect();
        workload_fact(&dep, &d, pods).state
    }

    #[test]
    fn classification_table() {
        type Case = (&'static str, Value, Vec<Value>, fn(&WorkloadState) -> bool);
        let cases: Vec<Case> = vec![
            ("healthy", deployment(healthy()), vec![], |s| {
                matches!(s, WorkloadState::Ready)
            }),
            (
                "generation not observed",
                deployment(
                    json!({"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}),
                ),
                vec![],
                |s| matches!(s, WorkloadState::RolloutInProgress(_)),
            ),
            (
                "old replicas remain",
                deployment(
                    json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}),
                ),
                vec![],
                |s| matches!(s, WorkloadState::RolloutInProgress(_)),
            ),
            (
                "not ready",
                deployment(
                    json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}),
                ),
                vec![],
                |s| matches!(s, WorkloadState::PodNotReady(m) if m.contains("1 of 2")),
            ),
            (
                "progress deadline",
                deployment(
                    json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "conditions": [
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
                ),
                vec![],
                |s| matches!(s, WorkloadState::RolloutStuck(_)),
            ),
            (
                "replica failure first",
                deployment(json!({"observedGeneration": 2, "conditions": [
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "exceeded quota: compute"},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]})),
                vec![waiting("CrashLoopBackOff", "")],
                |s| matches!(s, WorkloadState::ReplicaFailure(m) if m.contains("exceeded quota")),
            ),
            (
                "crash loop",
                deployment(
                    json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1}),
                ),
                vec![waiting(
                    "CrashLoopBackOff",
                    "back-off 5m0s restarting failed container",
                )],
                |s| matches!(s, WorkloadState::CrashLoopBackOff(m) if m.contains("back-off") && m.contains("restarts: 3")),
            ),
            (
                "image pull beats the stuck rollout it causes",
                deployment(json!({"observedGeneration": 2, "conditions": [
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]})),
                vec![waiting("ImagePullBackOff", "Back-off pulling image")],
                |s| matches!(s, WorkloadState::ImagePullFailed(_)),
            ),
            (
                "secret missing",
                deployment(json!({})),
                vec![waiting(
                    "CreateContainerConfigError",
                    "secret \"creds\" not found",
                )],
                |s| matches!(s, WorkloadState::SecretNotFound(m) if m.contains("creds")),
            ),
            (
                "secret key missing",
                deployment(json!({})),
                vec![waiting(
                    "CreateContainerConfigError",
                    "couldn't find key password in Secret ns/creds",
                )],
                |s| matches!(s, WorkloadState::SecretKeyMissing(_)),
            ),
            (
                "configmap missing",
                deployment(json!({})),
                vec![waiting(
                    "CreateContainerConfigError",
                    "configmap \"settings\" not found",
                )],
                |s| matches!(s, WorkloadState::ConfigMapNotFound(_)),
            ),
            (
                "unschedulable",
                deployment(json!({})),
                vec![pod(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}]}))],
                |s| matches!(s, WorkloadState::PodUnschedulable(m) if m.contains("0/3")),
            ),
        ];
        for (name, dep, pods, expect) in cases {
            let got = state(dep, pods);
            assert!(expect(&got), "{name}: got {got:?}");
        }
    }

    #[test]
    fn terminating_pods_do_not_decide() {
        let mut p = waiting("CrashLoopBackOff", "");
        p["metadata"]["deletionTimestamp"] = json!("2026-11-29T12:00:00Z");
        let got = state(deployment(healthy()), vec![p]);
        assert!(matches!(got, WorkloadState::Ready), "{got:?}");
    }

    #[test]
    fn pod_fact_reads_readiness_restarts_and_node() {
        let p = pod(json!({"phase": "Running", "podIP": "10.0.0.5",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "a", "image": "x", "imageID": "", "ready": true, "restartCount": 2},
                                  {"name": "b", "image": "x", "imageID": "", "ready": true, "restartCount": 1}]}));
        let f = pod_fact(&p, &Pod::deserialize(&p).unwrap());
        assert!(f.ready);
        assert_eq!(f.restart_count, 3);
        assert_eq!(f.pod_ip.as_deref(), Some("10.0.0.5"));
        assert_eq!(f.node_name.as_deref(), Some("n1"));
        assert_eq!(f.phase, "Running");
    }

    #[test]
    fn restart_counts_at_the_limit_saturate() {
        let status = json!({"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": i32::MAX});
        let p = pod(json!({
            "initContainerStatuses": [status.clone()],
            "containerStatuses": [status.clone(), status]}));
        let f = pod_fact(&p, &Pod::deserialize(&p).unwrap());
        assert_eq!(
            f.restart_count,
            u32::MAX,
            "three at i32::MAX overflowed u32"
        );
    }

    /// What the typed Pod leaves open reads as absent: no status is phase
    /// Unknown, not ready, nothing waiting; a waiting state without a
    /// reason waits for ""; an Unschedulable condition without a message
    /// says "".
    #[test]
    fn sparse_pods_read_as_absent() {
        for (name, status, check) in [
            (
                "no status",
                Value::Null,
                (|f: &PodFact| f.phase == "Unknown" && !f.ready && f.waiting.is_none())
                    as fn(&PodFact) -> bool,
            ),
            (
                "empty lists",
                json!({"containerStatuses": [], "conditions": []}),
                |f| f.restart_count == 0 && f.unschedulable.is_none(),
            ),
            (
                "waiting without a reason",
                json!({"containerStatuses": [{"name": "a", "state": {"waiting": {}}}]}),
                |f| {
                    f.waiting
                        .as_ref()
                        .is_some_and(|w| w.reason.is_empty() && w.container == "a")
                },
            ),
            (
                "an unschedulable condition without a message",
                json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
                |f| f.unschedulable.as_deref() == Some(""),
            ),
        ] {
            let p = pod(status);
            let f = pod_fact(&p, &Pod::deserialize(&p).unwrap());
            assert!(check(&f), "{name}: {f:?}");
        }
    }
}
