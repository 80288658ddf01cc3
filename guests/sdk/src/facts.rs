//! The facts a guest reads, as a trait: served by the host's `facts`
//! import in wasm, and by [`crate::mock::MockFacts`] in native tests.

use crate::bindings::reconciler::guest0_6_0::facts as host;
use crate::{
    ApplyOutcome, Availability, CertificateBundleFact, ChangeOutcome, ConfigMapFact,
    EgressPolicyFact, ExposureFact, ExposureKind, JobFact, KindRef, NetworkPolicyFact,
    NodePodCidrsFact, Object, ObjectMeta, ReadError, SecretFact, Timestamp, WorkloadFact,
};

/// Read-only facts about the cluster. Every read becomes a dependency of
/// the parent: a change to what a pass read re-queues it.
///
/// Each read needs its kind declared in the kind spec's `reads`
/// ([`spec::reads`](crate::spec::reads), [`spec::reads_optional`](crate::spec::reads_optional)),
/// else it answers [`ReadError::NotDeclared`]: `workload` needs `apps/v1
/// Deployment` and `v1 Pod`; `secret` and `secret_certificates` `v1
/// Secret`; `config_map` `v1 ConfigMap`; `get` and `list` their kind;
/// `network_policies` and `egress_policies` `networking.k8s.io/v1
/// NetworkPolicy`; `node_pod_cidrs` `v1 Node` (optional); `exposure` its
/// kind ([`mock::exposure_kind_ref`](crate::mock::exposure_kind_ref));
/// `cluster_role` `rbac.authorization.k8s.io/v1 ClusterRole`; `job`
/// `batch/v1 Job` and `v1 Pod`; `children` a kind the guest writes.
/// `now`, `api_availability`, `last_apply`, `last_apply_time` and
/// `change_state` need nothing. A guest's `evaluate` takes `&dyn Facts`: the host's in wasm,
/// [`MockFacts`](crate::mock::MockFacts) in a native test.
///
/// ```
/// use reconciler_guest_sdk::mock::{MockFacts, workload_ready};
/// use reconciler_guest_sdk::{Facts, WorkloadState};
///
/// fn is_ready(facts: &dyn Facts, namespace: &str, name: &str) -> bool {
///     matches!(facts.workload(namespace, name), Ok(Some(w)) if w.state == WorkloadState::Ready)
/// }
///
/// let facts = MockFacts::at(1_796_000_000).with_workload(workload_ready("ns", "agent", 2));
/// assert!(is_ready(&facts, "ns", "agent"));
/// assert!(!is_ready(&facts, "ns", "other"));
/// assert_eq!(facts.reads(), ["workload ns/agent", "workload ns/other"]);
/// ```
pub trait Facts {
    /// The clock of this pass.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// assert_eq!(MockFacts::at(1_796_000_000).now().seconds, 1_796_000_000);
    /// ```
    fn now(&self) -> Timestamp;
    /// The Deployment `name` with its Pods, and the host's classification
    /// of it (`state`: Ready, RolloutInProgress, CrashLoopBackOff ...;
    /// [`workload::condition`](crate::workload::condition) makes it a
    /// condition).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, WorkloadState, mock::{MockFacts, workload_in}};
    /// let facts = MockFacts::at(0)
    ///     .with_workload(workload_in("ns", "agent", WorkloadState::CrashLoopBackOff("back-off".into())));
    /// let w = facts.workload("ns", "agent").unwrap().unwrap();
    /// assert!(matches!(w.state, WorkloadState::CrashLoopBackOff(_)));
    /// assert_eq!(facts.workload("ns", "none"), Ok(None));
    /// ```
    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError>;
    /// The Secret `name`: key names only.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_secret("ns", "oidc", &["client-id", "client-secret"]);
    /// let secret = facts.secret("ns", "oidc").unwrap().unwrap();
    /// assert!(secret.keys.iter().any(|k| k == "client-id"));
    /// ```
    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError>;
    /// The ConfigMap `name`: key names only.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_config_map("ns", "cas", &["ca.crt"]);
    /// assert_eq!(facts.config_map("ns", "cas").unwrap().unwrap().keys, ["ca.crt"]);
    /// ```
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError>;
    /// Any declared kind by name: its metadata and its JSON.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let cluster = kind_ref("postgresql.cnpg.io", "v1", "Cluster");
    /// let facts = MockFacts::at(0).with_object(&cluster, serde_json::json!({
    ///     "metadata": {"name": "pg", "namespace": "ns"}, "spec": {"instances": 3}}));
    /// let pg = facts.get(&cluster, "ns", "pg").unwrap().unwrap();
    /// let json: serde_json::Value = serde_json::from_str(&pg.json).unwrap();
    /// assert_eq!(json["spec"]["instances"], 3);
    /// ```
    fn get(&self, kind: &KindRef, namespace: &str, name: &str)
    -> Result<Option<Object>, ReadError>;
    /// Any declared kind by label selector (`matchLabels`), sorted by name.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let cluster = kind_ref("postgresql.cnpg.io", "v1", "Cluster");
    /// let facts = MockFacts::at(0)
    ///     .with_object(&cluster, serde_json::json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"team": "a"}}}))
    ///     .with_object(&cluster, serde_json::json!({"metadata": {"name": "b", "namespace": "ns"}}));
    /// let team_a = facts.list(&cluster, "ns", &[("team".into(), "a".into())]).unwrap();
    /// assert_eq!(team_a.len(), 1);
    /// assert_eq!(facts.list(&cluster, "ns", &[]).unwrap().len(), 2);
    /// ```
    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError>;
    /// Whether an optional API is usable in a namespace.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Availability, Facts, mock::MockFacts, spec::kind_ref};
    /// let store = kind_ref("barmancloud.cnpg.io", "v1", "ObjectStore");
    /// let facts = MockFacts::at(0).with_availability(&store, "ns", Availability::NotServed);
    /// assert_eq!(facts.api_availability(&store, "ns"), Availability::NotServed);
    /// assert_eq!(facts.api_availability(&store, "other"), Availability::Available);
    /// ```
    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability;
    /// The NetworkPolicies of `namespace` (their ingress side), sorted by
    /// name.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, LabelSelectorFact, NetworkPolicyFact, mock::{MockFacts, meta}};
    /// let deny_all = NetworkPolicyFact {
    ///     meta: meta("ns", "deny-all"),
    ///     pod_selector: LabelSelectorFact { match_labels: vec![], match_expressions: vec![] },
    ///     isolates_ingress: true,
    ///     ingress: vec![],
    /// };
    /// let facts = MockFacts::at(0).with_network_policy(deny_all);
    /// assert!(facts.network_policies("ns").unwrap()[0].isolates_ingress);
    /// ```
    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError>;
    /// The Nodes' pod CIDRs, or why they could not be checked.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, NodeCidrs, NodePodCidrsFact, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_node_pod_cidrs(NodePodCidrsFact::Known(vec![
    ///     NodeCidrs { node: "n1".into(), pod_cidrs: vec!["10.244.0.0/24".into()] },
    /// ]));
    /// assert!(matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Known(nodes) if nodes.len() == 1));
    /// ```
    fn node_pod_cidrs(&self) -> NodePodCidrsFact;
    /// The Route, Ingress or HTTPRoute `name`, with its admission.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Admission, ExposureFact, ExposureKind, Facts, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_exposure(ExposureFact {
    ///     meta: meta("ns", "orders-console"),
    ///     kind: ExposureKind::Ingress,
    ///     hostnames: vec!["orders.apps.example.com".into()],
    ///     admission: Admission::Admitted,
    /// });
    /// let ingress = facts.exposure(ExposureKind::Ingress, "ns", "orders-console").unwrap().unwrap();
    /// assert_eq!(ingress.admission, Admission::Admitted);
    /// ```
    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError>;
    /// The ClusterRole `name` (metadata only).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_cluster_role("pgtoolbox-console");
    /// assert!(facts.cluster_role("pgtoolbox-console").unwrap().is_some());
    /// assert!(facts.cluster_role("other").unwrap().is_none());
    /// ```
    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError>;
    /// The certificates under `key` of the Secret `name` (never the data).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{CertificateBundleFact, CertificateFact, Facts, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_certificates("ca.crt", CertificateBundleFact {
    ///     meta: meta("ns", "pg-ca"),
    ///     has_key: true,
    ///     certificates: vec![CertificateFact { sha256: "ab12".into(), pem_bytes: 1200 }],
    /// });
    /// let bundle = facts.secret_certificates("ns", "pg-ca", "ca.crt").unwrap().unwrap();
    /// assert_eq!(bundle.certificates.len(), 1);
    /// ```
    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError>;
    /// How the API server answered the host's last apply of a child
    /// (none before the first).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ApplyOutcome, ApplyRefusal, Facts, mock::MockFacts, spec::kind_ref};
    /// let policy = kind_ref("networking.k8s.io", "v1", "NetworkPolicy");
    /// let refused = ApplyOutcome::Refused(ApplyRefusal { code: 422, reason: "Invalid".into(), message: "bad cidr".into() });
    /// let facts = MockFacts::at(0).with_last_apply(&policy, "ns", "a-ingress", refused.clone());
    /// assert_eq!(facts.last_apply(&policy, "ns", "a-ingress"), Some(refused));
    /// assert_eq!(facts.last_apply(&policy, "ns", "b-ingress"), None);
    /// ```
    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome>;
    /// The parent's own children of `kind`, a kind the guest writes: the
    /// objects of its namespace it controls, sorted by name.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let config_map = kind_ref("", "v1", "ConfigMap");
    /// let facts = MockFacts::at(0)
    ///     .with_child(&config_map, serde_json::json!({"metadata": {"name": "b-config", "namespace": "ns"}}))
    ///     .with_child(&config_map, serde_json::json!({"metadata": {"name": "a-config", "namespace": "ns"}}));
    /// let names: Vec<String> = facts.children(&config_map).unwrap().into_iter().map(|o| o.meta.name).collect();
    /// assert_eq!(names, ["a-config", "b-config"]);
    /// ```
    fn children(&self, kind: &KindRef) -> Result<Vec<Object>, ReadError>;
    /// When the API server answered the host's last apply of the child.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let job = kind_ref("batch", "v1", "Job");
    /// let facts = MockFacts::at(100).with_last_apply_time(&job, "ns", "register", 40);
    /// assert_eq!(facts.last_apply_time(&job, "ns", "register").map(|t| t.seconds), Some(40));
    /// ```
    fn last_apply_time(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Timestamp>;
    /// Since 0.4.0: the Job `name` with its conditions and its latest Pod
    /// failure. A `Facts` that does not serve Jobs (a test's own, written
    /// before them) answers `failed`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, JobFact, JobState, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_job(JobFact {
    ///     meta: meta("ns", "register"), active: 0, succeeded: 1, failed: 0,
    ///     start: None, completion: None, conditions: vec![], failed_pod: None,
    ///     state: JobState::Succeeded,
    /// });
    /// assert_eq!(facts.job("ns", "register").unwrap().unwrap().state, JobState::Succeeded);
    /// ```
    fn job(&self, namespace: &str, name: &str) -> Result<Option<JobFact>, ReadError> {
        Err(not_served_here("facts.job", namespace, name))
    }
    /// Since 0.4.0: the egress side of the NetworkPolicies of `namespace`,
    /// sorted by name; answers `failed` as `job` does.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{EgressPolicyFact, Facts, LabelSelectorFact, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_egress_policy(EgressPolicyFact {
    ///     meta: meta("ns", "egress"),
    ///     pod_selector: LabelSelectorFact { match_labels: vec![], match_expressions: vec![] },
    ///     isolates_egress: true,
    ///     egress: vec![],
    /// });
    /// assert!(facts.egress_policies("ns").unwrap()[0].isolates_egress);
    /// ```
    fn egress_policies(&self, namespace: &str) -> Result<Vec<EgressPolicyFact>, ReadError> {
        Err(not_served_here("facts.egress-policies", namespace, ""))
    }
    /// Since 0.5.0: what became of the change the guest asked for the
    /// child `name` of `kind` (made, held and by what, refused, withdrawn),
    /// answered for the pass itself: the host evaluates the pass again
    /// once it made its changes when this answers otherwise, and writes
    /// the status of that evaluation. `None`: the host has not acted on a
    /// change of that child yet. [`change::aspect`](crate::change::aspect)
    /// says it in a condition. A `Facts` that does not serve it (a test's
    /// own, written before it) answers `Some(Made)`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ChangeOutcome, Facts, Hold, mock::MockFacts, spec::kind_ref};
    /// let cron = kind_ref("batch", "v1", "CronJob");
    /// let facts = MockFacts::at(0)
    ///     .with_change_state(&cron, "ns", "nightly", Some(ChangeOutcome::Held(Hold::AwaitingApproval)));
    /// assert_eq!(facts.change_state(&cron, "ns", "nightly"), Some(ChangeOutcome::Held(Hold::AwaitingApproval)));
    /// assert_eq!(facts.change_state(&cron, "ns", "other"), Some(ChangeOutcome::Made));
    /// ```
    fn change_state(
        &self,
        _kind: &KindRef,
        _namespace: &str,
        _name: &str,
    ) -> Option<ChangeOutcome> {
        Some(ChangeOutcome::Made)
    }
}

/// The answer of a `Facts` that does not serve a call.
fn not_served_here(call: &str, namespace: &str, name: &str) -> ReadError {
    ReadError::Failed(format!(
        "{call} ({namespace}/{name}) is not served by these facts"
    ))
}

/// The facts the host serves through the component's `facts` import.
/// Only usable inside a wasm guest: [`export_guest!`](crate::export_guest)
/// passes it to `evaluate` and `reconcile`; a guest never names it.
///
/// ```no_run
/// // In wasm only: natively the import is not there.
/// use reconciler_guest_sdk::{Facts, HostFacts};
/// let now = HostFacts.now();
/// ```
pub struct HostFacts;

impl Facts for HostFacts {
    fn now(&self) -> Timestamp {
        host::now()
    }

    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError> {
        host::workload(namespace, name)
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError> {
        host::secret(namespace, name)
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError> {
        host::config_map(namespace, name)
    }

    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ReadError> {
        host::get(kind, namespace, name)
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError> {
        host::list(kind, namespace, selector)
    }

    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        host::api_availability(kind, namespace)
    }

    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        host::network_policies(namespace)
    }

    fn node_pod_cidrs(&self) -> NodePodCidrsFact {
        host::node_pod_cidrs()
    }

    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError> {
        host::exposure(kind, namespace, name)
    }

    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError> {
        host::cluster_role(name)
    }

    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        host::secret_certificates(namespace, name, key)
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        host::last_apply(kind, namespace, name)
    }

    fn children(&self, kind: &KindRef) -> Result<Vec<Object>, ReadError> {
        host::children(kind)
    }

    fn last_apply_time(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Timestamp> {
        host::last_apply_time(kind, namespace, name)
    }

    fn job(&self, namespace: &str, name: &str) -> Result<Option<JobFact>, ReadError> {
        host::job(namespace, name)
    }

    fn egress_policies(&self, namespace: &str) -> Result<Vec<EgressPolicyFact>, ReadError> {
        host::egress_policies(namespace)
    }

    fn change_state(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ChangeOutcome> {
        host::change_state(kind, namespace, name)
    }
}
