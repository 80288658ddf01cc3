//! Job facts: a batch/v1 Job, its conditions, and why its latest failed Pod failed (derived like the workload fact, table-tested).

use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use reconciler_conventions::kind::KindRef;
use serde_json::Value;

use super::meta::{object_meta, timestamp};
use super::{Cached, FactServer, Selector};
use crate::contract::facts::{JobCondition, JobFact, JobPodFailure, JobState, ReadError};
use crate::contract::types::ConditionStatus;
use crate::facts::diagnose::typed;
use crate::facts::known_kinds::{core_kind, pod_kind};

/// The label the Job controller puts on every Pod of a Job: the Pods of a
/// Job without a selector (only a fixture has one) are those.
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

pub fn job_kind() -> KindRef {
    core_kind("batch", "Job")
}

/// What a Job alone contributes to its fact, derived before its Pods are
/// read: the fact without a failed Pod, and the selector of its Pods.
#[derive(Debug)]
pub(crate) struct JobPart {
    fact: JobFact,
    selector: Selector,
}

impl JobPart {
    /// The selector that picks the Job's Pods.
    pub(crate) fn selector(&self) -> &Selector {
        &self.selector
    }

    /// The fact, with the failure of the latest failed Pod among `failures`.
    pub(crate) fn with_failures<'a>(
        self,
        failures: impl IntoIterator<Item = &'a PodFailure>,
    ) -> JobFact {
        let mut fact = self.fact;
        fact.failed_pod = failures
            .into_iter()
            .max_by(|a, b| (a.created, &a.failure.pod).cmp(&(b.created, &b.failure.pod)))
            .map(|f| f.failure.clone());
        fact
    }
}

/// A Job's part of its fact. Never panics: a negative count reads as 0.
pub(crate) fn job_part(json: &Value, job: &Job) -> JobPart {
    let meta = object_meta(json);
    let status = job.status.clone().unwrap_or_default();
    let count = |n: Option<i32>| n.unwrap_or(0).max(0).unsigned_abs();
    let time = |field: &str| timestamp(&json["status"][field]);
    let conditions: Vec<JobCondition> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| JobCondition {
            type_: c.type_.clone(),
            status: match c.status.as_str() {
                "True" => ConditionStatus::True,
                "False" => ConditionStatus::False,
                _ => ConditionStatus::Unknown,
            },
            reason: c.reason.clone().unwrap_or_default(),
            message: c.message.clone().unwrap_or_default(),
        })
        .collect();
    let state = classify(&conditions);
    let written = Selector::from_json(&json["spec"]["selector"]);
    let selector = if written == Selector::default() {
        Selector::from_pairs([(JOB_NAME_LABEL, meta.name.as_str())])
    } else {
        written
    };
    JobPart {
        fact: JobFact {
            meta,
            active: count(status.active),
            succeeded: count(status.succeeded),
            failed: count(status.failed),
            start: time("startTime"),
            completion: time("completionTime"),
            conditions,
            failed_pod: None,
            state,
        },
        selector,
    }
}

/// Failed before succeeded before suspended: a Job the controller marked
/// failed is failed even while a stale Complete lingers.
fn classify(conditions: &[JobCondition]) -> JobState {
    let holds = |type_: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == ConditionStatus::True)
    };
    if let Some(c) = holds("Failed").or_else(|| holds("FailureTarget")) {
        let text = match (c.reason.as_str(), c.message.as_str()) {
            ("", "") => c.type_.clone(),
            (reason, "") => reason.to_owned(),
            ("", message) => message.to_owned(),
            (reason, message) => format!("{reason}: {message}"),
        };
        return JobState::Failed(text);
    }
    if holds("Complete")
        .or_else(|| holds("SuccessCriteriaMet"))
        .is_some()
    {
        return JobState::Succeeded;
    }
    if holds("Suspended").is_some() {
        return JobState::Suspended;
    }
    JobState::Running
}

/// A failed Pod's failure and when the Pod was made (to find the latest).
#[derive(Clone, Debug)]
pub(crate) struct PodFailure {
    created: Option<jiff::Timestamp>,
    failure: JobPodFailure,
}

/// Why a Pod failed, if its phase is Failed: its own reason, else the
/// first container (init containers first) that ended with a non-zero
/// exit code.
pub(crate) fn pod_failure(json: &Value, pod: &Pod) -> Option<PodFailure> {
    let status = pod.status.clone().unwrap_or_default();
    if status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let name = json["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let created = json["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse().ok());
    let terminated = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .find_map(|cs: &ContainerStatus| {
            let t = cs.state.as_ref()?.terminated.as_ref()?;
            (t.exit_code != 0).then(|| (cs.name.clone(), t.clone()))
        });
    let failure = match (status.reason.filter(|r| !r.is_empty()), terminated) {
        (Some(reason), _) => JobPodFailure {
            pod: name,
            reason,
            container: None,
            exit_code: None,
            message: status.message.unwrap_or_default(),
        },
        (None, Some((container, t))) => JobPodFailure {
            pod: name,
            reason: t.reason.unwrap_or_else(|| "Failed".to_owned()),
            container: Some(container),
            exit_code: Some(t.exit_code),
            message: t.message.unwrap_or_default(),
        },
        (None, None) => JobPodFailure {
            pod: name,
            reason: "Failed".to_owned(),
            container: None,
            exit_code: None,
            message: status.message.unwrap_or_default(),
        },
    };
    Some(PodFailure { created, failure })
}

impl FactServer {
    /// The Job `name` with the failure of its latest failed Pod, read as
    /// the Job and a list of its Pods (both recorded).
    pub(crate) fn read_job(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<JobFact>, ReadError> {
        let (jobs, pods) = (job_kind(), pod_kind());
        self.allow(&jobs, "facts.job")?;
        self.allow(&pods, "facts.job")?;
        let Some(cached) = self.read_object(&jobs, &namespace, &name)? else {
            return Ok(None);
        };
        let job = cached.value();
        let part = typed::<Job>("Job", &job)
            .map(|j| job_part(&job, &j))
            .map_err(ReadError::Failed)?;
        let failures = self
            .read_list(&pods, &namespace, part.selector().clone())?
            .iter()
            .map(failure_of)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(part.with_failures(failures.iter().flatten())))
    }
}

/// A Pod's failure.
fn failure_of(pod: &Arc<Cached>) -> Result<Option<PodFailure>, ReadError> {
    let pod = pod.value();
    typed::<Pod>("Pod", &pod)
        .map(|p| pod_failure(&pod, &p))
        .map_err(ReadError::Failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::facts::Host as _;
    use crate::facts::MemorySource;
    use serde_json::json;

    fn job(spec: Value, status: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "register", "namespace": "ns", "uid": "j1"},
            "spec": spec, "status": status})
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message})
    }

    fn selected() -> Value {
        json!({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "j1"}},
               "template": {"spec": {"containers": [{"name": "register", "image": "i"}], "restartPolicy": "Never"}}})
    }

    fn pod(name: &str, created: &str, status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created,
                         "labels": {"batch.kubernetes.io/controller-uid": "j1", "batch.kubernetes.io/job-name": "register"}},
            "spec": {"containers": [{"name": "register", "image": "i"}]},
            "status": status})
    }

    fn read(objects: Vec<Value>) -> Result<Option<JobFact>, ReadError> {
        let mut source = MemorySource::new();
        for o in objects {
            source.insert(o);
        }
        let mut facts = FactServer::new(
            Arc::new(source),
            [job_kind(), pod_kind()],
            jiff::Timestamp::UNIX_EPOCH,
        );
        facts.job("ns".into(), "register".into())
    }

    #[test]
    fn the_state_follows_the_conditions_failed_first() {
        for (conditions, want) in [
            (json!([]), "Running"),
            (
                json!([condition("Suspended", "True", "JobSuspended", "")]),
                "Suspended",
            ),
            (json!([condition("Complete", "True", "", "")]), "Succeeded"),
            (
                json!([condition("SuccessCriteriaMet", "True", "", "")]),
                "Succeeded",
            ),
            (json!([condition("Complete", "False", "", "")]), "Running"),
            (
                json!([
                    condition("Complete", "True", "", ""),
                    condition(
                        "Failed",
                        "True",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit"
                    )
                ]),
                "Failed(\"BackoffLimitExceeded: Job has reached the specified backoff limit\")",
            ),
            (
                json!([condition("FailureTarget", "True", "DeadlineExceeded", "")]),
                "Failed(\"DeadlineExceeded\")",
            ),
        ] {
            let fact = read(vec![job(selected(), json!({"conditions": conditions}))])
                .unwrap()
                .unwrap();
            assert_eq!(
                format!("{:?}", fact.state).replace("JobState::", ""),
                want,
                "{conditions}"
            );
        }
    }

    #[test]
    fn counts_times_and_conditions_are_copied() {
        let fact = read(vec![job(
            selected(),
            json!({"active": 1, "succeeded": 2, "failed": -1,
                   "startTime": "2026-12-01T10:00:00Z", "completionTime": "2026-12-01T10:01:00Z",
                   "conditions": [condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")]}),
        )])
        .unwrap()
        .unwrap();
        assert_eq!((fact.active, fact.succeeded, fact.failed), (1, 2, 0));
        assert_eq!(
            fact.start.unwrap().seconds + 60,
            fact.completion.unwrap().seconds
        );
        assert_eq!(fact.conditions[0].reason, "CompletionsReached");
        assert!(fact.failed_pod.is_none());
        assert!(read(vec![]).unwrap().is_none());
    }

    #[test]
    fn the_latest_failed_pod_says_why() {
        let exited = |code: i32, reason: &str| {
            json!({"phase": "Failed", "containerStatuses": [{"name": "register", "image": "i", "imageID": "",
                "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": code, "reason": reason, "message": "could not connect"}}}]})
        };
        let fact = read(vec![
            job(selected(), json!({"failed": 3})),
            pod("register-a", "2026-12-01T10:00:00Z", exited(1, "Error")),
            pod(
                "register-c",
                "2026-12-01T10:02:00Z",
                exited(137, "OOMKilled"),
            ),
            pod(
                "register-b",
                "2026-12-01T10:01:00Z",
                json!({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
            ),
            pod(
                "register-d",
                "2026-12-01T10:03:00Z",
                json!({"phase": "Running"}),
            ),
        ])
        .unwrap()
        .unwrap();
        let failed = fact.failed_pod.unwrap();
        assert_eq!(
            (
                failed.pod.as_str(),
                failed.reason.as_str(),
                failed.container.as_deref(),
                failed.exit_code
            ),
            ("register-c", "OOMKilled", Some("register"), Some(137))
        );
        let evicted = read(vec![
            job(selected(), json!({})),
            pod(
                "register-b",
                "2026-12-01T10:01:00Z",
                json!({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
            ),
        ])
        .unwrap()
        .unwrap()
        .failed_pod
        .unwrap();
        assert_eq!(
            (evicted.reason.as_str(), evicted.message.as_str()),
            ("Evicted", "low on memory")
        );
    }

    #[test]
    fn a_job_without_a_selector_reads_the_pods_named_for_it_only() {
        let other = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "ns", "creationTimestamp": "2026-12-01T10:00:00Z"},
            "status": {"phase": "Failed", "reason": "Evicted"}});
        let fact = read(vec![job(json!({}), json!({})), other])
            .unwrap()
            .unwrap();
        assert!(
            fact.failed_pod.is_none(),
            "a Pod of no Job is not the Job's"
        );
    }

    #[test]
    fn a_malformed_job_is_an_error_naming_the_field() {
        match read(vec![job(selected(), json!({"active": "one"}))]) {
            Err(ReadError::Failed(text)) => assert!(
                text.starts_with("Job ns/register is malformed at status.active"),
                "{text}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_undeclared_job_is_refused_and_reads_are_recorded() {
        let mut facts = FactServer::new(
            Arc::new(MemorySource::new()),
            [pod_kind()],
            jiff::Timestamp::UNIX_EPOCH,
        );
        assert!(matches!(
            facts.job("ns".into(), "j".into()),
            Err(ReadError::NotDeclared(_))
        ));
        let mut source = MemorySource::new();
        source.insert(job(selected(), json!({})));
        let mut facts = FactServer::new(
            Arc::new(source),
            [job_kind(), pod_kind()],
            jiff::Timestamp::UNIX_EPOCH,
        );
        facts.job("ns".into(), "register".into()).unwrap();
        let reads: Vec<String> = facts.into_reads().iter().map(ToString::to_string).collect();
        assert_eq!(
            reads,
            [
                "Job ns/register",
                "Pod in \"ns\" matching {batch.kubernetes.io/controller-uid=j1}"
            ]
        );
    }
}
