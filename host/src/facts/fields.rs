//! The fields of each kind the host's fact derivations read: one declaration per fact, what a cache of the kind keeps for them.

use reconciler_conventions::kind::KindRef;
use reconciler_conventions::projection::Projection;

use crate::facts::certificates::SUMMARY_FIELD;

/// What one fact's derivation reads of one kind.
struct Reads {
    /// The fact, as the contract's `facts` import names it (or the host's
    /// own use of the kind): for the reader, and the tests.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the tests"))]
    fact: &'static str,
    /// The kind, by group and kind: any version.
    group: &'static str,
    kind: &'static str,
    /// The paths it reads, in `FieldPath` syntax (`spec.replicas`, through
    /// every item of a list on the way).
    fields: &'static [&'static str],
}

/// Every fact the host derives, with the fields it reads: one entry per
/// fact and kind.
///
/// A kind a module reads is held as the union of what the modules' reads
/// name (contract 0.6.0's `read-decl.fields`) and [`fact_fields`]
/// (`operator/cluster/projections.rs`). An entry's paths leave out
/// `apiVersion`, `kind` and `metadata`: every projection keeps them, and
/// `meta.rs` reads nothing else. The tests derive each fact from rich
/// objects whole and as a cache keeping only the fact's fields holds them
/// (slimmed, then projected), and expect the same fact: a derivation that
/// comes to read another field adds it here, and a case that turns on it
/// to its test.
///
/// The typed reads (`diagnose::typed` into k8s-openapi's Deployment, Pod
/// and Job) need nothing more: k8s-openapi 0.29 reads a required field
/// that is absent as its default, and no condition of these kinds is the
/// `meta/v1` Condition whose `lastTransitionTime` it requires.
const FACTS: &[Reads] = &[
    // workload.rs `deployment_part`, through server.rs `derive_workload`
    // (`typed::<Deployment>`): the desired, updated, ready and available
    // replicas, the replicas the status counts (old ones remaining), the
    // generation observed, the Progressing and ReplicaFailure conditions,
    // and the selector that picks the Pods.
    Reads {
        fact: "workload",
        group: "apps",
        kind: "Deployment",
        fields: &[
            "spec.replicas",
            "spec.selector",
            "status.observedGeneration",
            "status.replicas",
            "status.updatedReplicas",
            "status.readyReplicas",
            "status.availableReplicas",
            "status.conditions.type",
            "status.conditions.status",
            "status.conditions.reason",
            "status.conditions.message",
        ],
    },
    // workload.rs `pod_fact` (`typed::<Pod>`): the phase, the Ready
    // condition and an Unschedulable PodScheduled one with its message,
    // the first container waiting (init containers first), the restarts
    // of every container, the Pod's IP and Node.
    Reads {
        fact: "workload",
        group: "",
        kind: "Pod",
        fields: &[
            "spec.nodeName",
            "status.phase",
            "status.podIP",
            "status.conditions.type",
            "status.conditions.status",
            "status.conditions.reason",
            "status.conditions.message",
            "status.initContainerStatuses.name",
            "status.initContainerStatuses.restartCount",
            "status.initContainerStatuses.state.waiting.reason",
            "status.initContainerStatuses.state.waiting.message",
            "status.containerStatuses.name",
            "status.containerStatuses.restartCount",
            "status.containerStatuses.state.waiting.reason",
            "status.containerStatuses.state.waiting.message",
        ],
    },
    // job.rs `job_part` (`typed::<Job>`): the counts, the start and
    // completion times, the conditions, and the selector of its Pods
    // (absent: the Pods labelled with the Job's name).
    Reads {
        fact: "job",
        group: "batch",
        kind: "Job",
        fields: &[
            "spec.selector",
            "status.active",
            "status.succeeded",
            "status.failed",
            "status.startTime",
            "status.completionTime",
            "status.conditions.type",
            "status.conditions.status",
            "status.conditions.reason",
            "status.conditions.message",
        ],
    },
    // job.rs `pod_failure` (`typed::<Pod>`): a failed Pod's reason and
    // message, else the first container that ended with a non-zero exit
    // code (init containers first).
    Reads {
        fact: "job",
        group: "",
        kind: "Pod",
        fields: &[
            "status.phase",
            "status.reason",
            "status.message",
            "status.initContainerStatuses.name",
            "status.initContainerStatuses.state.terminated.exitCode",
            "status.initContainerStatuses.state.terminated.reason",
            "status.initContainerStatuses.state.terminated.message",
            "status.containerStatuses.name",
            "status.containerStatuses.state.terminated.exitCode",
            "status.containerStatuses.state.terminated.reason",
            "status.containerStatuses.state.terminated.message",
        ],
    },
    // network_policy.rs `network_policy_fact`: the Pods selected, the
    // policy types, every ingress rule's ports and peers as written.
    Reads {
        fact: "network-policies",
        group: "networking.k8s.io",
        kind: "NetworkPolicy",
        fields: &[
            "spec.podSelector",
            "spec.policyTypes",
            "spec.ingress.ports",
            "spec.ingress.from",
        ],
    },
    // network_policy.rs `egress_policy_fact`: the same of the egress side
    // (egress rules present isolate egress when the types are left out).
    Reads {
        fact: "egress-policies",
        group: "networking.k8s.io",
        kind: "NetworkPolicy",
        fields: &[
            "spec.podSelector",
            "spec.policyTypes",
            "spec.egress.ports",
            "spec.egress.to",
        ],
    },
    // nodes.rs `node_cidrs`: the list, or the singular field without it.
    Reads {
        fact: "node-pod-cidrs",
        group: "",
        kind: "Node",
        fields: &["spec.podCIDRs", "spec.podCIDR"],
    },
    // exposure.rs `exposure_fact`, Route: the host, and the routers'
    // Admitted conditions.
    Reads {
        fact: "exposure",
        group: "route.openshift.io",
        kind: "Route",
        fields: &[
            "spec.host",
            "status.ingress.conditions.type",
            "status.ingress.conditions.status",
            "status.ingress.conditions.reason",
            "status.ingress.conditions.message",
        ],
    },
    // exposure.rs `exposure_fact`, Ingress: the rules' hosts, and whether
    // the load balancer has an address.
    Reads {
        fact: "exposure",
        group: "networking.k8s.io",
        kind: "Ingress",
        fields: &["spec.rules.host", "status.loadBalancer.ingress"],
    },
    // exposure.rs `exposure_fact`, HTTPRoute: the host names, and the
    // parents' Accepted conditions.
    Reads {
        fact: "exposure",
        group: "gateway.networking.k8s.io",
        kind: "HTTPRoute",
        fields: &[
            "spec.hostnames",
            "status.parents.conditions.type",
            "status.parents.conditions.status",
            "status.parents.conditions.reason",
            "status.parents.conditions.message",
        ],
    },
    // import/current.rs `secret`: the type and the key names (the cache's
    // `slim` blanks every value).
    Reads {
        fact: "secret",
        group: "",
        kind: "Secret",
        fields: &["type", "data", "stringData"],
    },
    // certificates.rs `bundle`: whether the key is there, and the summary
    // `slim` writes at the object's root before the values are blanked.
    Reads {
        fact: "secret-certificates",
        group: "",
        kind: "Secret",
        fields: &["data", "stringData", SUMMARY_FIELD],
    },
    // certificates.rs `pem_blocks`, for the CA bundle ConfigMap the host
    // writes for a guest's `bundle` change (children/bodies.rs `bundle`):
    // the certificates' PEM text, in the same summary.
    Reads {
        fact: "the host's CA bundles",
        group: "",
        kind: "Secret",
        fields: &[SUMMARY_FIELD],
    },
    // import/current.rs `config_map`: the key names. (ConfigMaps are held
    // whole all the same: the host's plans read their effects ConfigMaps
    // through the same cache; `operator/cluster/projections.rs`.)
    Reads {
        fact: "config-map",
        group: "",
        kind: "ConfigMap",
        fields: &["data", "binaryData"],
    },
    // import/current.rs `cluster_role`: its metadata only.
    Reads {
        fact: "cluster-role",
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        fields: &[],
    },
];

/// What a cache of `kind` keeps for the host's facts: the union of the
/// fields every fact reading the kind reads (with what every projection
/// keeps), or `None` when no fact reads it.
pub(crate) fn fact_fields(kind: &KindRef) -> Option<Projection> {
    let mut reads = FACTS
        .iter()
        .filter(|r| r.group == kind.group && r.kind == kind.kind)
        .peekable();
    reads.peek()?;
    let paths = reads.flat_map(|r| r.fields.iter().copied());
    // Every path parses (tested); one that did not would keep the kind
    // whole, never leave out what a fact reads.
    Some(Projection::of_paths(paths).unwrap_or(Projection::Whole))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;
    use std::sync::Arc;

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use reconciler_conventions::projection::FieldPath;
    use serde_json::{Value, json};

    use super::*;
    use crate::contract::facts::{ExposureKind, Host as _};
    use crate::facts::certificates::pem_blocks;
    use crate::facts::certificates::tests::TWO;
    use crate::facts::exposure::exposure_kind_ref;
    use crate::facts::job::job_kind;
    use crate::facts::known_kinds::{
        cluster_role_kind, config_map_kind, core_kind, deployment_kind, network_policy_kind,
        node_kind, pod_kind, secret_kind,
    };
    use crate::facts::source::kind_of;
    use crate::facts::{FactServer, MemorySource};
    use crate::operator::cluster::cache::slim;

    /// The fields `fact` reads of `kind`, by its own entry alone.
    fn own(fact: &str, kind: &KindRef) -> Projection {
        let entry = FACTS
            .iter()
            .find(|r| r.fact == fact && r.group == kind.group && r.kind == kind.kind)
            .unwrap_or_else(|| panic!("{fact} reads no {kind}"));
        Projection::of_paths(entry.fields.iter().copied()).expect("valid paths")
    }

    /// `object` as a cache keeping `fields` of its kind holds it: slimmed,
    /// then projected.
    fn held(fields: &Projection, object: &Value) -> Value {
        fields.apply(&slim(object.clone()))
    }

    /// What `read` answers (as text) from `objects` held by caches keeping
    /// `fields` of each kind (`None`: whole, as a fixture holds them).
    fn answer<T: Debug>(
        objects: &[Value],
        declared: &[KindRef],
        fields: impl Fn(&KindRef) -> Option<Projection>,
        read: &impl Fn(&mut FactServer) -> T,
    ) -> String {
        let mut source = MemorySource::new();
        for object in objects {
            source.insert(match fields(&kind_of(object)) {
                Some(fields) => held(&fields, object),
                None => object.clone(),
            });
        }
        let mut facts = FactServer::new(
            Arc::new(source),
            declared.to_vec(),
            jiff::Timestamp::UNIX_EPOCH,
        );
        format!("{:?}", read(&mut facts))
    }

    /// Asserts that `read` answers alike from `objects` whole and held
    /// with `fact`'s own fields alone or with their kinds' [`fact_fields`];
    /// that the answer whole holds `want` (the case is the one meant);
    /// and that the fact's own fields leave out some field of them.
    fn same<T: Debug>(
        fact: &str,
        case: &str,
        objects: &[Value],
        declared: &[KindRef],
        read: impl Fn(&mut FactServer) -> T,
        want: &str,
    ) {
        let whole = answer(objects, declared, |_| None, &read);
        assert!(whole.contains(want), "{fact}, {case}: {whole}");
        let own_fields = answer(objects, declared, |k| Some(own(fact, k)), &read);
        assert_eq!(
            own_fields, whole,
            "{fact}, {case}: held with its own fields"
        );
        let all_facts = answer(objects, declared, fact_fields, &read);
        assert_eq!(all_facts, whole, "{fact}, {case}: held with fact_fields");
        let left_out = objects
            .iter()
            .flat_map(|o| own(fact, &kind_of(o)).left_out(&slim(o.clone())))
            .count();
        assert!(left_out > 0, "{fact}, {case}: nothing left out");
    }

    #[test]
    fn every_path_parses_and_a_kind_no_fact_reads_has_none() {
        for entry in FACTS {
            for path in entry.fields {
                let parsed = FieldPath::parse(path);
                assert!(parsed.is_ok(), "{}: {path}: {parsed:?}", entry.fact);
            }
            let kind = KindRef {
                group: entry.group.to_owned(),
                version: "v1beta1".to_owned(),
                kind: entry.kind.to_owned(),
            };
            let fields = fact_fields(&kind).expect("any version");
            assert!(!fields.is_whole(), "{}", entry.fact);
        }
        assert_eq!(fact_fields(&core_kind("", "Service")), None);
        assert_eq!(
            fact_fields(&cluster_role_kind()),
            Some(Projection::of_paths([]).unwrap()),
            "a ClusterRole's metadata only"
        );
        let pods = own("workload", &pod_kind()).union(&own("job", &pod_kind()));
        assert_eq!(fact_fields(&pod_kind()), Some(pods), "the Pod facts' union");
    }

    // --- workload: a Deployment and its Pods ---

    fn deployment(status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "agent", "namespace": "ns", "generation": 2, "uid": "d1",
                         "annotations": {"deployment.kubernetes.io/revision": "3"}},
            "spec": {"replicas": 2, "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "agent"},
                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                "template": {"metadata": {"labels": {"app": "agent", "tier": "web"}},
                    "spec": {"containers": [{"name": "agent", "image": "registry/agent:2",
                        "ports": [{"containerPort": 8080}], "env": [{"name": "MODE", "value": "fast"}],
                        "resources": {"limits": {"memory": "128Mi"}}}]}}},
            "status": status})
    }

    fn deployment_condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastUpdateTime": "2026-12-01T10:00:00Z", "lastTransitionTime": "2026-12-01T09:00:00Z"})
    }

    /// A Deployment's status: the generation observed; replicas, updated,
    /// ready and available; its conditions.
    fn rollout(observed: i64, counts: [i64; 4], conditions: Vec<Value>) -> Value {
        let [replicas, updated, ready, available] = counts;
        json!({"observedGeneration": observed, "replicas": replicas, "updatedReplicas": updated,
               "readyReplicas": ready, "availableReplicas": available,
               "unavailableReplicas": replicas - available, "collisionCount": 0,
               "conditions": conditions})
    }

    fn workload_pod(name: &str, labels: Value, status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"), "labels": labels,
                         "creationTimestamp": "2026-12-01T10:00:00Z"},
            "spec": {"nodeName": "node-1", "serviceAccountName": "agent", "restartPolicy": "Always",
                "initContainers": [{"name": "migrate", "image": "registry/migrate:1"}],
                "containers": [{"name": "agent", "image": "registry/agent:2",
                                "env": [{"name": "MODE", "value": "fast"}]}]},
            "status": status})
    }

    fn pod_condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastProbeTime": null, "lastTransitionTime": "2026-12-01T10:00:00Z"})
    }

    /// A container's status: `state` (`{"waiting": ...}`, `{"running": ...}`
    /// or `{"terminated": ...}`) and its restarts.
    fn container(name: &str, restarts: i64, state: Value) -> Value {
        json!({"name": name, "image": format!("registry/{name}:2"),
               "imageID": format!("registry/{name}@sha256:ab"),
               "containerID": format!("containerd://{name}"), "ready": false, "started": false,
               "restartCount": restarts, "state": state,
               "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                   "startedAt": "2026-12-01T09:00:00Z", "finishedAt": "2026-12-01T09:01:00Z"}}})
    }

    fn waiting(reason: &str, message: &str) -> Value {
        json!({"waiting": {"reason": reason, "message": message}})
    }

    /// A Pod's status: phase, conditions, init and app container statuses.
    fn pod_status(phase: &str, conditions: &[Value], init: &[Value], app: &[Value]) -> Value {
        json!({"phase": phase, "conditions": conditions, "initContainerStatuses": init,
               "containerStatuses": app, "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
               "hostIP": "192.0.2.10", "qosClass": "Burstable", "startTime": "2026-12-01T10:00:00Z"})
    }

    /// The workload's Pods, by name: ready, an init container that cannot
    /// pull its image, crash-looping, terminating, a Secret or a key
    /// missing, unschedulable, and one of another tier.
    fn workload_pods() -> BTreeMap<&'static str, Value> {
        let labels = json!({"app": "agent", "tier": "web", "pod-template-hash": "abc"});
        let migrated = [container(
            "migrate",
            0,
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
        )];
        let ready = [
            pod_condition("Initialized", "True", "", ""),
            pod_condition("Ready", "True", "", ""),
            pod_condition("PodScheduled", "True", "", ""),
        ];
        let running = json!({"running": {"startedAt": "2026-12-01T10:00:00Z"}});
        let back_off = waiting(
            "CrashLoopBackOff",
            "back-off 5m0s restarting failed container",
        );
        let crashing = pod_status(
            "Running",
            &ready[..1],
            &migrated,
            &[container("agent", 7, back_off)],
        );
        let config = |message: &str| {
            let error = waiting("CreateContainerConfigError", message);
            pod_status("Pending", &[], &migrated, &[container("agent", 0, error)])
        };
        let pull = waiting("ImagePullBackOff", "Back-off pulling image");
        let initializing = waiting("PodInitializing", "");
        let unschedulable = pod_condition(
            "PodScheduled",
            "False",
            "Unschedulable",
            "0/3 nodes are available",
        );
        let mut terminating = workload_pod("agent-t", labels.clone(), crashing.clone());
        terminating["metadata"]["deletionTimestamp"] = json!("2026-12-01T11:00:00Z");
        let pod = |name: &str, status: Value| workload_pod(name, labels.clone(), status);
        BTreeMap::from([
            (
                "ready",
                pod(
                    "agent-r",
                    pod_status(
                        "Running",
                        &ready,
                        &migrated,
                        &[container("agent", 1, running)],
                    ),
                ),
            ),
            (
                "init pull",
                pod(
                    "agent-i",
                    pod_status(
                        "Pending",
                        &ready[..1],
                        &[container("migrate", 2, pull)],
                        &[container("agent", 0, initializing)],
                    ),
                ),
            ),
            ("crash loop", pod("agent-c", crashing.clone())),
            ("terminating", terminating),
            (
                "secret missing",
                pod("agent-s", config("secret \"creds\" not found")),
            ),
            (
                "key missing",
                pod(
                    "agent-k",
                    config("couldn't find key password in Secret ns/creds"),
                ),
            ),
            (
                "unschedulable",
                pod("agent-u", pod_status("Pending", &[unschedulable], &[], &[])),
            ),
            (
                "other tier",
                workload_pod(
                    "agent-o",
                    json!({"app": "agent", "tier": "batch"}),
                    crashing,
                ),
            ),
        ])
    }

    #[test]
    fn the_workload_fact_is_the_same_from_held_deployments_and_pods() {
        let pods = workload_pods();
        let failure = deployment_condition(
            "ReplicaFailure",
            "True",
            "FailedCreate",
            "pods \"agent-7\" is forbidden: exceeded quota: compute",
        );
        let available = deployment_condition("Available", "True", "MinimumReplicasAvailable", "");
        let progressing = deployment_condition("Progressing", "True", "ReplicaSetUpdated", "");
        let stuck = deployment_condition("Progressing", "False", "ProgressDeadlineExceeded", "");
        let healthy = rollout(
            2,
            [2, 2, 2, 2],
            vec![available.clone(), progressing.clone()],
        );
        let cases = [
            (
                "a replica failure mid-rollout",
                rollout(
                    1,
                    [3, 1, 2, 2],
                    vec![available.clone(), progressing, failure],
                ),
                vec!["ready", "init pull", "other tier"],
                "WorkloadState::ReplicaFailure(\"Deployment agent: pods",
            ),
            (
                "an init container's image",
                rollout(2, [2, 1, 1, 1], vec![stuck.clone()]),
                vec!["ready", "init pull"],
                "container migrate: ImagePullBackOff: Back-off pulling image (restarts: 2)",
            ),
            (
                "a stuck rollout",
                rollout(2, [2, 1, 1, 1], vec![available.clone(), stuck]),
                vec!["ready"],
                "WorkloadState::RolloutStuck(",
            ),
            (
                "a Secret missing",
                healthy.clone(),
                vec!["ready", "secret missing"],
                "WorkloadState::SecretNotFound(",
            ),
            (
                "a key missing",
                healthy.clone(),
                vec!["ready", "key missing"],
                "WorkloadState::SecretKeyMissing(",
            ),
            (
                "unschedulable",
                healthy.clone(),
                vec!["ready", "unschedulable"],
                "Pod agent-u: 0/3 nodes are available",
            ),
            (
                "a crash loop",
                healthy.clone(),
                vec!["terminating", "crash loop"],
                "Pod agent-c container agent: CrashLoopBackOff: back-off 5m0s restarting failed container (restarts: 7)",
            ),
            (
                "old replicas remain",
                rollout(2, [3, 2, 2, 2], vec![available.clone()]),
                vec!["ready"],
                "WorkloadState::RolloutInProgress(\"Deployment agent: 2 of 2",
            ),
            (
                "the generation not observed",
                rollout(1, [2, 2, 2, 2], vec![available.clone()]),
                vec!["ready"],
                "WorkloadState::RolloutInProgress(",
            ),
            (
                "not available",
                rollout(2, [2, 2, 2, 1], vec![available]),
                vec!["ready"],
                "WorkloadState::PodNotReady(",
            ),
            (
                "ready",
                healthy,
                vec!["ready", "terminating", "other tier"],
                "WorkloadState::Ready",
            ),
        ];
        for (case, status, names, want) in cases {
            let mut objects = vec![deployment(status)];
            objects.extend(names.iter().map(|n| pods[n].clone()));
            let declared = [deployment_kind(), pod_kind()];
            let read = |f: &mut FactServer| f.workload("ns".into(), "agent".into());
            same("workload", case, &objects, &declared, read, want);
        }
    }

    // --- job: a Job and its failed Pods ---

    fn job(selector: Option<Value>, status: Value) -> Value {
        let mut spec = json!({"backoffLimit": 3, "completions": 1, "parallelism": 1,
            "completionMode": "NonIndexed", "suspend": false,
            "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "j1"}},
                "spec": {"containers": [{"name": "register", "image": "i", "args": ["--once"]}],
                         "restartPolicy": "Never"}}});
        if let Some(selector) = selector {
            spec["selector"] = selector;
        }
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "register", "namespace": "ns", "uid": "j1"},
            "spec": spec, "status": status})
    }

    fn job_condition(type_: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": "True", "reason": reason, "message": message,
               "lastProbeTime": "2026-12-01T10:05:00Z", "lastTransitionTime": "2026-12-01T10:05:00Z"})
    }

    fn terminated(code: i64, reason: &str, message: &str) -> Value {
        json!({"terminated": {"exitCode": code, "reason": reason, "message": message, "signal": 0,
            "startedAt": "2026-12-01T10:00:00Z", "finishedAt": "2026-12-01T10:00:30Z",
            "containerID": "containerd://x"}})
    }

    /// A Pod of the Job made at `minute`, labelled by the Job controller's
    /// uid only (`named`: by the Job's name only).
    fn job_pod(name: &str, minute: u8, named: bool, status: Value) -> Value {
        let labels = if named {
            json!({"batch.kubernetes.io/job-name": "register"})
        } else {
            json!({"batch.kubernetes.io/controller-uid": "j1"})
        };
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": labels,
                         "creationTimestamp": format!("2026-12-01T10:0{minute}:00Z")},
            "spec": {"nodeName": "node-1", "containers": [{"name": "register", "image": "i"}]},
            "status": status})
    }

    /// The Job's Pods: failed by a container's exit code, evicted, failed
    /// by an init container's exit code, running; and one labelled by the
    /// Job's name only, failed.
    fn job_pods() -> [Value; 5] {
        let completed = [container("wait", 0, terminated(0, "Completed", ""))];
        let oom = [container(
            "register",
            0,
            terminated(137, "OOMKilled", "out of memory"),
        )];
        let exited = pod_status("Failed", &[], &completed, &oom);
        let mut evicted = pod_status("Failed", &[], &[], &[]);
        evicted["reason"] = json!("Evicted");
        evicted["message"] = json!("The node was low on resource: memory.");
        let init_failed = pod_status(
            "Failed",
            &[],
            &[container(
                "wait",
                0,
                terminated(2, "Error", "db not reachable"),
            )],
            &[container("register", 0, waiting("PodInitializing", ""))],
        );
        let running = [container("register", 0, json!({"running": {}}))];
        [
            job_pod("register-a", 0, false, exited.clone()),
            job_pod("register-b", 1, false, evicted),
            job_pod("register-c", 2, false, init_failed),
            job_pod(
                "register-d",
                3,
                false,
                pod_status("Running", &[], &[], &running),
            ),
            job_pod("register-e", 4, true, exited),
        ]
    }

    #[test]
    fn the_job_fact_is_the_same_from_held_jobs_and_pods() {
        let [exited, evicted, init_failed, running, named] = job_pods();
        let selector = Some(json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "j1"}}));
        let limit = "Job has reached the specified backoff limit";
        let failed = json!({"failed": 3, "ready": 0, "terminating": 0,
            "startTime": "2026-12-01T10:00:00Z", "uncountedTerminatedPods": {}, "conditions": [
                job_condition("FailureTarget", "BackoffLimitExceeded", limit),
                job_condition("Failed", "BackoffLimitExceeded", limit)]});
        let reached = "Reached expected number of succeeded pods";
        let succeeded = json!({"succeeded": 1, "startTime": "2026-12-01T10:00:00Z",
            "completionTime": "2026-12-01T10:01:00Z", "conditions": [
                job_condition("SuccessCriteriaMet", "CompletionsReached", reached),
                job_condition("Complete", "CompletionsReached", reached)]});
        let active = json!({"active": 1, "ready": 1, "startTime": "2026-12-01T10:00:00Z"});
        let suspended =
            json!({"conditions": [job_condition("Suspended", "JobSuspended", "Job suspended")]});
        let cases = [
            (
                "a container's exit code",
                selector.clone(),
                failed.clone(),
                vec![exited.clone(), running.clone()],
                "exit-code: Some(137)",
            ),
            (
                "an evicted Pod",
                selector.clone(),
                failed.clone(),
                vec![exited.clone(), evicted.clone()],
                "reason: \"Evicted\"",
            ),
            (
                "an init container's exit code",
                selector.clone(),
                failed,
                vec![exited, evicted, init_failed, running.clone()],
                "db not reachable",
            ),
            (
                "succeeded",
                selector.clone(),
                succeeded,
                vec![],
                "JobState::Succeeded",
            ),
            (
                "running",
                selector,
                active,
                vec![running],
                "JobState::Running",
            ),
            (
                "suspended, without a selector",
                None,
                suspended,
                vec![named],
                "JobState::Suspended",
            ),
        ];
        for (case, selector, status, pods, want) in cases {
            let mut objects = vec![job(selector, status)];
            objects.extend(pods);
            let read = |f: &mut FactServer| f.job("ns".into(), "register".into());
            same("job", case, &objects, &[job_kind(), pod_kind()], read, want);
        }
    }

    // --- network and egress policies ---

    fn policy(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "ns", "generation": 1}, "spec": spec,
            "status": {"conditions": [{"type": "PolicyAccepted", "status": "True",
                "reason": "Accepted", "message": "", "lastTransitionTime": "2026-12-01T10:00:00Z"}]}})
    }

    fn policies() -> Vec<Value> {
        let selector = json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["batch"]}]});
        let from = json!([{"podSelector": {}},
            {"namespaceSelector": {"matchLabels": {"team": "a"}},
             "podSelector": {"matchLabels": {"app": "x"}}},
            {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]);
        let ports = json!([{"port": 8080}, {"protocol": "UDP", "port": "dns"},
                           {"port": 3000, "endPort": 3100}, {}]);
        let egress = json!([
            {"to": [{"podSelector": {"matchLabels": {"cnpg.io/cluster": "orders"}}},
                    {"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.8/29"]}}],
             "ports": [{"port": 5432}]},
            {"ports": [{"protocol": "UDP", "port": 53, "endPort": 54}]}]);
        vec![
            policy(
                "deny-all",
                json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
            ),
            policy(
                "web",
                json!({"podSelector": selector, "policyTypes": ["Ingress"],
                       "ingress": [{}, {"ports": ports, "from": from}], "egress": egress}),
            ),
            policy(
                "egress-only",
                json!({"podSelector": {"matchLabels": {"app": "pgadmin"}},
                       "policyTypes": ["Egress"], "egress": egress, "ingress": [{"from": from}]}),
            ),
            policy(
                "implied",
                json!({"podSelector": {"matchLabels": {"app": "db"}},
                       "ingress": [{"ports": ports}], "egress": egress}),
            ),
        ]
    }

    #[test]
    fn the_policy_facts_are_the_same_from_held_network_policies() {
        let objects = policies();
        let declared = [network_policy_kind()];
        let ingress = |f: &mut FactServer| f.network_policies("ns".into());
        let egress = |f: &mut FactServer| f.egress_policies("ns".into());
        let (ingress_want, egress_want) = ("cidr: \"10.0.0.0/8\"", "cidr: \"192.0.2.0/24\"");
        same(
            "network-policies",
            "four",
            &objects,
            &declared,
            ingress,
            ingress_want,
        );
        same(
            "egress-policies",
            "four",
            &objects,
            &declared,
            egress,
            egress_want,
        );
    }

    // --- node pod CIDRs ---

    fn node(name: &str, mut spec: Value) -> Value {
        spec["providerID"] = json!(format!("aws:///eu-west-1a/{name}"));
        spec["taints"] = json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": "a"}}, "spec": spec,
            "status": {"addresses": [{"type": "InternalIP", "address": "192.0.2.10"}],
                       "capacity": {"cpu": "4", "memory": "16Gi"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    #[test]
    fn the_pod_cidrs_are_the_same_from_held_nodes() {
        let dual = node(
            "a",
            json!({"podCIDRs": ["10.0.1.0/24", "fd00:1::/64"], "podCIDR": "10.0.1.0/24"}),
        );
        let singular = node("b", json!({"podCIDR": "10.0.2.0/24"}));
        let empty = node("c", json!({"podCIDRs": [], "podCIDR": "10.0.3.0/24"}));
        for (case, nodes, want) in [
            (
                "both families, and the singular field",
                vec![dual.clone(), singular.clone()],
                "\"10.0.1.0/24\", \"fd00:1::/64\"",
            ),
            (
                "an empty list beside the singular field, and neither",
                vec![dual, singular, empty, node("d", json!({}))],
                "Incomplete([\"c\", \"d\"])",
            ),
        ] {
            let read = |f: &mut FactServer| f.node_pod_cidrs();
            same("node-pod-cidrs", case, &nodes, &[node_kind()], read, want);
        }
    }

    // --- exposure: Routes, Ingresses, HTTPRoutes ---

    fn exposed(api_version: &str, kind: &str, name: &str, spec: Value, status: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
            "spec": spec, "status": status})
    }

    fn answer_condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-12-01T10:00:00Z", "observedGeneration": 1})
    }

    fn route(name: &str, routers: Value) -> Value {
        exposed(
            "route.openshift.io/v1",
            "Route",
            name,
            json!({"host": format!("{name}.apps.example.com"), "port": {"targetPort": "http"},
                   "to": {"kind": "Service", "name": "web", "weight": 100},
                   "tls": {"termination": "edge"}, "wildcardPolicy": "None"}),
            json!({"ingress": routers}),
        )
    }

    fn router(name: &str, condition: Value) -> Value {
        json!({"routerName": name, "host": "r.apps.example.com", "wildcardPolicy": "None",
               "routerCanonicalHostname": "router.example.com", "conditions": [condition]})
    }

    fn ingress(name: &str, load_balancer: Value) -> Value {
        let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
        exposed(
            "networking.k8s.io/v1",
            "Ingress",
            name,
            json!({"ingressClassName": "nginx",
                   "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}],
                   "rules": [{"host": "a.example.com", "http": {"paths": [
                                 {"path": "/", "pathType": "Prefix", "backend": backend}]}},
                             {"http": {}}, {"host": "b.example.com"}]}),
            json!({"loadBalancer": load_balancer}),
        )
    }

    fn http_route(name: &str, conditions: Value) -> Value {
        exposed(
            "gateway.networking.k8s.io/v1",
            "HTTPRoute",
            name,
            json!({"hostnames": ["*.example.com", "c.example.com"],
                   "parentRefs": [{"name": "gateway"}],
                   "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}),
            json!({"parents": [{"parentRef": {"name": "gateway"},
                                "controllerName": "example.com/gateway", "conditions": conditions}]}),
        )
    }

    #[test]
    fn the_exposure_fact_is_the_same_from_held_routes_ingresses_and_httproutes() {
        let claimed = answer_condition("Admitted", "False", "HostAlreadyClaimed", "taken");
        let admitted = answer_condition("Admitted", "True", "", "");
        let unresolved = answer_condition("ResolvedRefs", "False", "BackendNotFound", "");
        let accepted = answer_condition("Accepted", "True", "Accepted", "");
        let refused = answer_condition("Accepted", "False", "NotAllowedByListeners", "none");
        let cases = [
            (
                ExposureKind::Route,
                route(
                    "two-routers",
                    json!([router("a", claimed.clone()), router("b", admitted)]),
                ),
                "hostnames: [\"two-routers.apps.example.com\"], admission: Admission::Admitted",
            ),
            (
                ExposureKind::Route,
                route("refused", json!([router("a", claimed)])),
                "HostAlreadyClaimed: taken",
            ),
            (
                ExposureKind::Ingress,
                ingress(
                    "addressed",
                    json!({"ingress": [{"ip": "192.0.2.1", "ports": []}]}),
                ),
                "hostnames: [\"a.example.com\", \"b.example.com\"], admission: Admission::Admitted",
            ),
            (
                ExposureKind::Ingress,
                ingress("waiting", json!({})),
                "Admission::Pending",
            ),
            (
                ExposureKind::HttpRoute,
                http_route("accepted", json!([unresolved.clone(), accepted])),
                "hostnames: [\"*.example.com\", \"c.example.com\"], admission: Admission::Admitted",
            ),
            (
                ExposureKind::HttpRoute,
                http_route("refused", json!([refused])),
                "NotAllowedByListeners: none",
            ),
            (
                ExposureKind::HttpRoute,
                http_route("resolving", json!([unresolved])),
                "Admission::Pending",
            ),
        ];
        let declared = [
            ExposureKind::Route,
            ExposureKind::Ingress,
            ExposureKind::HttpRoute,
        ]
        .map(exposure_kind_ref);
        for (kind, object, want) in cases {
            let name = object["metadata"]["name"].as_str().unwrap().to_owned();
            let read = |f: &mut FactServer| f.exposure(kind, "ns".into(), name.clone());
            same("exposure", &name, &[object], &declared, read, want);
        }
    }

    // --- Secrets, ConfigMaps, ClusterRoles ---

    fn secrets() -> [Value; 2] {
        [
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "immutable": true,
                "metadata": {"name": "tls", "namespace": "ns",
                             "annotations": {"cert-manager.io/issuer-name": "ca"}},
                "data": {"tls.crt": STANDARD.encode(TWO), "ca.crt": STANDARD.encode(TWO),
                         "tls.key": STANDARD.encode("not a certificate")}}),
            json!({"apiVersion": "v1", "kind": "Secret", "immutable": false,
                "metadata": {"name": "plain", "namespace": "ns"},
                "data": {"password": STANDARD.encode("hunter2")},
                "stringData": {"bundle.pem": TWO}}),
        ]
    }

    #[test]
    fn the_secret_facts_are_the_same_from_held_secrets() {
        let objects = secrets();
        let declared = [secret_kind()];
        for (name, want) in [
            (
                "tls",
                "type: \"kubernetes.io/tls\", keys: [\"ca.crt\", \"tls.crt\", \"tls.key\"]",
            ),
            (
                "plain",
                "type: \"Opaque\", keys: [\"bundle.pem\", \"password\"]",
            ),
        ] {
            let read = |f: &mut FactServer| f.secret("ns".into(), name.into());
            same("secret", name, &objects, &declared, read, want);
        }
        for (name, key, want) in [
            ("tls", "tls.crt", "pem-bytes: 63"),
            ("tls", "ca.crt", "pem-bytes: 60"),
            ("tls", "tls.key", "has-key: true, certificates: []"),
            ("tls", "absent", "has-key: false"),
            ("plain", "bundle.pem", "pem-bytes: 63"),
            ("plain", "password", "has-key: true, certificates: []"),
        ] {
            let read =
                |f: &mut FactServer| f.secret_certificates("ns".into(), name.into(), key.into());
            let case = format!("{name} {key}");
            same(
                "secret-certificates",
                &case,
                &objects,
                &declared,
                read,
                want,
            );
        }
    }

    /// The host's CA bundles read the certificates' PEM text of a Secret
    /// the cache holds (`pem_blocks`), not through a fact.
    #[test]
    fn a_ca_bundle_reads_the_same_of_a_held_secret() {
        let own_fields = own("the host's CA bundles", &secret_kind());
        let all = fact_fields(&secret_kind()).unwrap();
        for secret in secrets() {
            for key in ["tls.crt", "ca.crt", "tls.key", "bundle.pem", "absent"] {
                let whole = pem_blocks(&secret, key);
                for fields in [&own_fields, &all] {
                    assert_eq!(pem_blocks(&held(fields, &secret), key), whole, "{key}");
                }
            }
            assert!(!own_fields.left_out(&slim(secret)).is_empty());
        }
        assert_eq!(pem_blocks(&secrets()[0], "tls.crt").len(), 2);
        assert_eq!(pem_blocks(&secrets()[1], "bundle.pem").len(), 2);
    }

    #[test]
    fn the_config_map_and_cluster_role_facts_are_the_same_when_held() {
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "immutable": true,
            "metadata": {"name": "settings", "namespace": "ns"},
            "data": {"mode": "fast", "level": "3"},
            "binaryData": {"blob": STANDARD.encode([0u8, 1, 2])}});
        let read = |f: &mut FactServer| f.config_map("ns".into(), "settings".into());
        let keys = "keys: [\"blob\", \"level\", \"mode\"]";
        same(
            "config-map",
            "data and binaryData",
            &[config_map],
            &[config_map_kind()],
            read,
            keys,
        );
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "view",
                         "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        let read = |f: &mut FactServer| f.cluster_role("view".into());
        same(
            "cluster-role",
            "rules",
            &[role],
            &[cluster_role_kind()],
            read,
            "aggregate-to-view",
        );
    }
}
