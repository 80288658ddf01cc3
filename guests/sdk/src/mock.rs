//! A native mock of the `facts` import, so a guest's logic runs under plain
//! `cargo test` with no host and no cluster.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::facts::Facts;
use crate::{
    ApplyOutcome, Availability, CertificateBundleFact, ChangeOutcome, ConfigMapFact, ControllerRef,
    EgressPolicyFact, ExposureFact, ExposureKind, JobFact, KindRef, NetworkPolicyFact,
    NodePodCidrsFact, Object, ObjectMeta, ReadError, SecretFact, Timestamp, WorkloadFact,
    WorkloadState,
};

type Key = (String, String);

/// Facts held in memory. Reads are recorded, so a test can assert what a
/// pass depends on ([`reads`](MockFacts::reads)).
///
/// Start from [`MockFacts::at`] (the clock) and add what the pass reads
/// with the `with_*` builders; a read of anything not added answers
/// `Ok(None)` (or an empty list), an optional API is available unless
/// [`with_availability`](MockFacts::with_availability) says otherwise, and
/// [`failing`](MockFacts::failing) makes a read fail.
///
/// ```
/// use reconciler_guest_sdk::mock::{MockFacts, evaluation, workload_ready};
/// use reconciler_guest_sdk::{Facts, ReadError};
///
/// let facts = MockFacts::at(1_796_000_000)
///     .with_workload(workload_ready("ns", "a-agent", 1))
///     .with_secret("ns", "creds", &["ACCESS_KEY_ID"])
///     .failing("configmap", "a-ca");
/// assert!(facts.workload("ns", "a-agent").unwrap().is_some());
/// assert!(matches!(facts.config_map("ns", "a-ca"), Err(ReadError::Failed(_))));
/// assert_eq!(facts.reads(), ["configmap ns/a-ca", "workload ns/a-agent"]);
/// ```
#[derive(Default)]
pub struct MockFacts {
    now: i64,
    workloads: BTreeMap<Key, WorkloadFact>,
    secrets: BTreeMap<Key, SecretFact>,
    config_maps: BTreeMap<Key, ConfigMapFact>,
    objects: BTreeMap<(String, String, String), Vec<Object>>,
    unavailable: BTreeMap<(String, String), Availability>,
    network_policies: BTreeMap<String, Vec<NetworkPolicyFact>>,
    node_pod_cidrs: Option<NodePodCidrsFact>,
    exposures: Vec<ExposureFact>,
    cluster_roles: BTreeMap<String, ObjectMeta>,
    certificates: BTreeMap<(String, String, String), CertificateBundleFact>,
    applies: BTreeMap<(String, String, String, String), ApplyOutcome>,
    apply_times: BTreeMap<(String, String, String, String), i64>,
    change_states: BTreeMap<(String, String, String, String), Option<ChangeOutcome>>,
    controllers: BTreeMap<String, ControllerRef>,
    children: BTreeMap<(String, String), Vec<Object>>,
    jobs: BTreeMap<Key, JobFact>,
    egress_policies: BTreeMap<String, Vec<EgressPolicyFact>>,
    failing: BTreeSet<(String, String)>,
    direct_get: BTreeSet<(String, String)>,
    reads: RefCell<BTreeSet<String>>,
}

impl MockFacts {
    /// A child of the parent, of a kind the guest writes (served by
    /// `children`, sorted by name).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let config_map = kind_ref("", "v1", "ConfigMap");
    /// let facts = MockFacts::at(0).with_child(&config_map, serde_json::json!({
    ///     "metadata": {"name": "a-config", "namespace": "ns", "uid": "u2"}}));
    /// assert_eq!(facts.children(&config_map).unwrap()[0].meta.uid, "u2");
    /// ```
    pub fn with_child(mut self, kind: &KindRef, json: serde_json::Value) -> Self {
        let (group, _, kind_name) = kind_key(kind);
        let list = self.children.entry((group, kind_name)).or_default();
        list.push(object(json));
        list.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// Facts at `now` (seconds since the epoch), with nothing else.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(1_796_000_000);
    /// assert_eq!(facts.now().seconds, 1_796_000_000);
    /// assert_eq!(facts.secret("ns", "any"), Ok(None));
    /// ```
    pub fn at(now: i64) -> Self {
        MockFacts {
            now,
            ..Default::default()
        }
    }

    /// The workload fact `facts.workload` answers for its Deployment
    /// ([`workload_ready`], [`workload_in`], or one of your own).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, WorkloadState, mock::{MockFacts, workload_in}};
    /// let facts = MockFacts::at(0).with_workload(workload_in("ns", "a", WorkloadState::PodNotReady("0/1".into())));
    /// assert_eq!(facts.workload("ns", "a").unwrap().unwrap().ready_replicas, 0);
    /// ```
    pub fn with_workload(mut self, workload: WorkloadFact) -> Self {
        let key = (workload.meta.namespace.clone(), workload.meta.name.clone());
        self.workloads.insert(key, workload);
        self
    }

    /// A Secret holding `keys` (of type Opaque, no controller).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_secret("ns", "oidc", &["client-id"]);
    /// assert_eq!(facts.secret("ns", "oidc").unwrap().unwrap().keys, ["client-id"]);
    /// ```
    pub fn with_secret(mut self, namespace: &str, name: &str, keys: &[&str]) -> Self {
        self.secrets.insert(
            (namespace.to_owned(), name.to_owned()),
            SecretFact {
                meta: meta(namespace, name),
                type_: "Opaque".to_owned(),
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            },
        );
        self
    }

    /// A Secret as the host reads it (its metadata as given: a controller,
    /// annotations).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, SecretFact, mock::{MockFacts, meta}};
    /// let mut m = meta("ns", "a-tls");
    /// m.annotations.push(("reconciler.dev/certificate-expiry".into(), "2027-11-29T12:00:00Z".into()));
    /// let facts = MockFacts::at(0).with_secret_fact(SecretFact {
    ///     meta: m, type_: "kubernetes.io/tls".into(), keys: vec!["tls.crt".into(), "tls.key".into()] });
    /// assert_eq!(facts.secret("ns", "a-tls").unwrap().unwrap().type_, "kubernetes.io/tls");
    /// ```
    pub fn with_secret_fact(mut self, secret: SecretFact) -> Self {
        let key = (secret.meta.namespace.clone(), secret.meta.name.clone());
        self.secrets.insert(key, secret);
        self
    }

    /// A ConfigMap holding `keys`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_config_map("ns", "cas", &["ca.crt"]);
    /// assert!(facts.config_map("ns", "cas").unwrap().is_some());
    /// ```
    pub fn with_config_map(mut self, namespace: &str, name: &str, keys: &[&str]) -> Self {
        self.config_maps.insert(
            (namespace.to_owned(), name.to_owned()),
            ConfigMapFact {
                meta: meta(namespace, name),
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            },
        );
        self
    }

    /// An object of any kind, from its JSON (metadata is read from it),
    /// served by `get` and `list`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let cluster = kind_ref("postgresql.cnpg.io", "v1", "Cluster");
    /// let facts = MockFacts::at(0).with_object(&cluster, serde_json::json!({
    ///     "metadata": {"name": "pg", "namespace": "ns", "generation": 2}}));
    /// assert_eq!(facts.get(&cluster, "ns", "pg").unwrap().unwrap().meta.generation, 2);
    /// ```
    pub fn with_object(mut self, kind: &KindRef, json: serde_json::Value) -> Self {
        let object = object(json);
        self.objects.entry(kind_key(kind)).or_default().push(object);
        self
    }

    /// The optional API `kind` is not usable in `namespace` (`""`: in
    /// every namespace): `api_availability` says so, and reads of the kind
    /// there answer `NotServed` or `Forbidden`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Availability, Facts, ReadError, mock::MockFacts, spec::kind_ref};
    /// let route = kind_ref("route.openshift.io", "v1", "Route");
    /// let facts = MockFacts::at(0).with_availability(&route, "ns", Availability::NotServed);
    /// assert!(matches!(facts.get(&route, "ns", "a"), Err(ReadError::NotServed(_))));
    /// ```
    pub fn with_availability(
        mut self,
        kind: &KindRef,
        namespace: &str,
        availability: Availability,
    ) -> Self {
        self.unavailable
            .insert((kind.kind.clone(), namespace.to_owned()), availability);
        self
    }

    /// A kind `with_availability` made `Forbidden` in `namespace` whose
    /// objects the host still reads one by one, past its cache (seed 000:
    /// a Route published before its kind was refused): `get` and
    /// `exposure` find them, `list` and `children` stay refused.
    ///
    /// ```
    /// use reconciler_guest_sdk::mock::{MockFacts, exposure_kind_ref};
    /// use reconciler_guest_sdk::{Availability, ExposureKind, Facts};
    /// let route = exposure_kind_ref(ExposureKind::Route);
    /// let facts = MockFacts::at(0)
    ///     .with_availability(&route, "team-b", Availability::Forbidden)
    ///     .with_direct_get(&route, "team-b");
    /// assert_eq!(facts.exposure(ExposureKind::Route, "team-b", "orders-console").unwrap(), None);
    /// ```
    pub fn with_direct_get(mut self, kind: &KindRef, namespace: &str) -> Self {
        self.direct_get
            .insert((kind.kind.clone(), namespace.to_owned()));
        self
    }

    /// A Job (served by `job`).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, JobFact, JobState, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_job(JobFact {
    ///     meta: meta("ns", "register"), active: 1, succeeded: 0, failed: 0, start: None,
    ///     completion: None, conditions: vec![], failed_pod: None, state: JobState::Running });
    /// assert_eq!(facts.job("ns", "register").unwrap().unwrap().active, 1);
    /// ```
    pub fn with_job(mut self, job: JobFact) -> Self {
        let key = (job.meta.namespace.clone(), job.meta.name.clone());
        self.jobs.insert(key, job);
        self
    }

    /// A NetworkPolicy's egress side (served by `egress_policies`).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{EgressPolicyFact, Facts, LabelSelectorFact, mock::{MockFacts, meta}};
    /// let none = LabelSelectorFact { match_labels: vec![], match_expressions: vec![] };
    /// let facts = MockFacts::at(0).with_egress_policy(EgressPolicyFact {
    ///     meta: meta("ns", "egress"), pod_selector: none, isolates_egress: true, egress: vec![] });
    /// assert_eq!(facts.egress_policies("ns").unwrap().len(), 1);
    /// ```
    pub fn with_egress_policy(mut self, policy: EgressPolicyFact) -> Self {
        let policies = self
            .egress_policies
            .entry(policy.meta.namespace.clone())
            .or_default();
        policies.push(policy);
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// A NetworkPolicy of its namespace (its ingress side, served by
    /// `network_policies`).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, LabelSelectorFact, NetworkPolicyFact, mock::{MockFacts, meta}};
    /// let none = LabelSelectorFact { match_labels: vec![], match_expressions: vec![] };
    /// let facts = MockFacts::at(0).with_network_policy(NetworkPolicyFact {
    ///     meta: meta("ns", "a-ingress"), pod_selector: none, isolates_ingress: true, ingress: vec![] });
    /// assert_eq!(facts.network_policies("ns").unwrap()[0].meta.name, "a-ingress");
    /// ```
    pub fn with_network_policy(mut self, policy: NetworkPolicyFact) -> Self {
        let policies = self
            .network_policies
            .entry(policy.meta.namespace.clone())
            .or_default();
        policies.push(policy);
        policies.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        self
    }

    /// What `node_pod_cidrs` answers (`known` with no Nodes unless set).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, NodePodCidrsFact, mock::MockFacts};
    /// let facts = MockFacts::at(0).with_node_pod_cidrs(NodePodCidrsFact::Forbidden("no list on nodes".into()));
    /// assert!(matches!(facts.node_pod_cidrs(), NodePodCidrsFact::Forbidden(_)));
    /// assert!(matches!(MockFacts::at(0).node_pod_cidrs(), NodePodCidrsFact::Known(n) if n.is_empty()));
    /// ```
    pub fn with_node_pod_cidrs(mut self, nodes: NodePodCidrsFact) -> Self {
        self.node_pod_cidrs = Some(nodes);
        self
    }

    /// A Route, Ingress or HTTPRoute (served by `exposure`).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Admission, ExposureFact, ExposureKind, Facts, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_exposure(ExposureFact { meta: meta("ns", "a-console"),
    ///     kind: ExposureKind::Route, hostnames: vec!["a.apps.example.com".into()], admission: Admission::Pending });
    /// assert!(facts.exposure(ExposureKind::Route, "ns", "a-console").unwrap().is_some());
    /// assert!(facts.exposure(ExposureKind::Ingress, "ns", "a-console").unwrap().is_none());
    /// ```
    pub fn with_exposure(mut self, exposure: ExposureFact) -> Self {
        self.exposures.push(exposure);
        self
    }

    /// A ClusterRole that exists.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts};
    /// assert!(MockFacts::at(0).with_cluster_role("view").cluster_role("view").unwrap().is_some());
    /// ```
    pub fn with_cluster_role(mut self, name: &str) -> Self {
        self.cluster_roles.insert(name.to_owned(), meta("", name));
        self
    }

    /// What `secret_certificates(namespace, name, key)` answers (the
    /// namespace and name are the bundle's metadata's).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{CertificateBundleFact, Facts, mock::{MockFacts, meta}};
    /// let facts = MockFacts::at(0).with_certificates("ca.crt",
    ///     CertificateBundleFact { meta: meta("ns", "pg-ca"), has_key: false, certificates: vec![] });
    /// assert!(!facts.secret_certificates("ns", "pg-ca", "ca.crt").unwrap().unwrap().has_key);
    /// ```
    pub fn with_certificates(mut self, key: &str, bundle: CertificateBundleFact) -> Self {
        let id = (
            bundle.meta.namespace.clone(),
            bundle.meta.name.clone(),
            key.to_owned(),
        );
        self.certificates.insert(id, bundle);
        self
    }

    /// The outcome of the host's last apply of a child.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ApplyOutcome, Facts, mock::MockFacts, spec::kind_ref};
    /// let deployment = kind_ref("apps", "v1", "Deployment");
    /// let facts = MockFacts::at(0).with_last_apply(&deployment, "ns", "a", ApplyOutcome::Applied);
    /// assert_eq!(facts.last_apply(&deployment, "ns", "a"), Some(ApplyOutcome::Applied));
    /// ```
    pub fn with_last_apply(
        mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
    ) -> Self {
        let (group, _, kind) = kind_key(kind);
        self.applies.insert(
            (group, kind, namespace.to_owned(), name.to_owned()),
            outcome,
        );
        self
    }

    /// What became of the change asked for a child (`None`: the host has
    /// not acted on one yet); a child not given answers `Some(Made)`, as
    /// if a host made every change.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ChangeOutcome, Facts, mock::MockFacts, spec::kind_ref};
    /// let binding = kind_ref("rbac.authorization.k8s.io", "v1", "RoleBinding");
    /// let facts = MockFacts::at(0).with_change_state(&binding, "ns", "a", Some(ChangeOutcome::Withdrawn));
    /// assert_eq!(facts.change_state(&binding, "ns", "a"), Some(ChangeOutcome::Withdrawn));
    /// ```
    pub fn with_change_state(
        mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        state: Option<ChangeOutcome>,
    ) -> Self {
        let (group, _, kind) = kind_key(kind);
        self.change_states
            .insert((group, kind, namespace.to_owned(), name.to_owned()), state);
        self
    }

    /// When the API server answered the host's last apply of the child
    /// (seconds since the epoch).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, mock::MockFacts, spec::kind_ref};
    /// let job = kind_ref("batch", "v1", "Job");
    /// let facts = MockFacts::at(0).with_last_apply_time(&job, "ns", "a", 12);
    /// assert_eq!(facts.last_apply_time(&job, "ns", "a").unwrap().seconds, 12);
    /// ```
    pub fn with_last_apply_time(
        mut self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        at: i64,
    ) -> Self {
        let (group, _, kind) = kind_key(kind);
        self.apply_times
            .insert((group, kind, namespace.to_owned(), name.to_owned()), at);
        self
    }

    /// The workloads, ConfigMaps and objects (of `get` and `list`) named
    /// `name` that have no controller of their own are controlled by
    /// `controller`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ControllerRef, Facts, mock::{MockFacts, workload_ready}};
    /// let legacy = ControllerRef { api_version: "apps/v1".into(), kind: "Deployment".into(),
    ///     name: "legacy".into(), uid: "u-legacy".into() };
    /// let facts = MockFacts::at(0).with_workload(workload_ready("ns", "a", 1)).with_controller("a", legacy);
    /// assert_eq!(facts.workload("ns", "a").unwrap().unwrap().meta.controller.unwrap().name, "legacy");
    /// ```
    pub fn with_controller(mut self, name: &str, controller: ControllerRef) -> Self {
        self.controllers.insert(name.to_owned(), controller);
        self
    }

    /// The read of `name` by `what` fails (`ReadError::Failed`, "the cache
    /// of `what` is not synced"). `what` is `workload`, `secret`,
    /// `configmap`, `clusterrole`, `exposure`, `certificates` or `job`; a kind
    /// (`Cluster`) for `get`; `list` with the kind as `name` for a list.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Facts, ReadError, mock::MockFacts, spec::kind_ref};
    /// let cluster = kind_ref("postgresql.cnpg.io", "v1", "Cluster");
    /// let facts = MockFacts::at(0).failing("Cluster", "pg").failing("list", "Cluster");
    /// assert_eq!(facts.get(&cluster, "ns", "pg"), Err(ReadError::Failed("the cache of Cluster is not synced".into())));
    /// assert!(facts.list(&cluster, "ns", &[]).is_err());
    /// ```
    pub fn failing(mut self, what: &str, name: &str) -> Self {
        self.failing.insert((what.to_owned(), name.to_owned()));
        self
    }

    /// What the pass read, sorted, one line per distinct read:
    /// `workload ns/name`, `secret ns/name`, `configmap ns/name`,
    /// `get Kind ns/name`, `list Kind ns [selector]`, `job ns/name`,
    /// `egresspolicies ns`, `networkpolicies ns`, `nodes`,
    /// `exposure ExposureKind::Route ns/name`, `clusterrole name`,
    /// `certificates ns/name[key]`, `last-apply Kind ns/name`,
    /// `last-apply-time Kind ns/name`, `children Kind`.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ExposureKind, Facts, mock::MockFacts, spec::kind_ref};
    /// let facts = MockFacts::at(0);
    /// let _ = facts.secret("ns", "oidc");
    /// let _ = facts.get(&kind_ref("postgresql.cnpg.io", "v1", "Cluster"), "ns", "pg");
    /// let _ = facts.exposure(ExposureKind::Route, "ns", "a-console");
    /// let _ = facts.secret("ns", "oidc");
    /// assert_eq!(facts.reads(), ["exposure ExposureKind::Route ns/a-console", "get Cluster ns/pg", "secret ns/oidc"]);
    /// ```
    pub fn reads(&self) -> Vec<String> {
        self.reads.borrow().iter().cloned().collect()
    }

    fn record(&self, what: String) {
        self.reads.borrow_mut().insert(what);
    }

    fn fail(&self, what: &str, name: &str) -> Result<(), ReadError> {
        if self.failing.contains(&(what.to_owned(), name.to_owned())) {
            Err(ReadError::Failed(format!(
                "the cache of {what} is not synced"
            )))
        } else {
            Ok(())
        }
    }

    fn controlled(&self, mut meta: ObjectMeta) -> ObjectMeta {
        if meta.controller.is_none() {
            meta.controller = self.controllers.get(&meta.name).cloned();
        }
        meta
    }
}

impl Facts for MockFacts {
    fn now(&self) -> Timestamp {
        Timestamp {
            seconds: self.now,
            nanos: 0,
        }
    }

    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError> {
        self.record(format!("workload {namespace}/{name}"));
        self.fail("workload", name)?;
        Ok(self
            .workloads
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut w| {
                w.meta = self.controlled(w.meta);
                w
            }))
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError> {
        self.record(format!("secret {namespace}/{name}"));
        self.fail("secret", name)?;
        Ok(self
            .secrets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned())
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError> {
        self.record(format!("configmap {namespace}/{name}"));
        self.fail("configmap", name)?;
        Ok(self
            .config_maps
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut c| {
                c.meta = self.controlled(c.meta);
                c
            }))
    }

    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ReadError> {
        self.record(format!("get {} {namespace}/{name}", kind.kind));
        self.fail(&kind.kind, name)?;
        self.refuse_unreadable(kind, namespace)?;
        Ok(self
            .objects
            .get(&kind_key(kind))
            .and_then(|all| {
                all.iter()
                    .find(|o| o.meta.namespace == namespace && o.meta.name == name)
            })
            .cloned()
            .map(|mut o| {
                o.meta = self.controlled(o.meta);
                o
            }))
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError> {
        self.record(format!("list {} {namespace} {selector:?}", kind.kind));
        self.fail("list", &kind.kind)?;
        self.refuse_unavailable(kind, namespace)?;
        let mut found: Vec<Object> = self
            .objects
            .get(&kind_key(kind))
            .into_iter()
            .flatten()
            .filter(|o| o.meta.namespace == namespace)
            .filter(|o| selector.iter().all(|pair| o.meta.labels.contains(pair)))
            .cloned()
            .map(|mut o| {
                o.meta = self.controlled(o.meta);
                o
            })
            .collect();
        found.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(found)
    }

    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.unavailable
            .get(&(kind.kind.clone(), namespace.to_owned()))
            .copied()
            .unwrap_or(Availability::Available)
    }

    fn job(&self, namespace: &str, name: &str) -> Result<Option<JobFact>, ReadError> {
        self.record(format!("job {namespace}/{name}"));
        self.fail("job", name)?;
        Ok(self
            .jobs
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .map(|mut j| {
                j.meta = self.controlled(j.meta);
                j
            }))
    }

    fn egress_policies(&self, namespace: &str) -> Result<Vec<EgressPolicyFact>, ReadError> {
        self.record(format!("egresspolicies {namespace}"));
        Ok(self
            .egress_policies
            .get(namespace)
            .cloned()
            .unwrap_or_default())
    }

    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        self.record(format!("networkpolicies {namespace}"));
        Ok(self
            .network_policies
            .get(namespace)
            .cloned()
            .unwrap_or_default())
    }

    fn node_pod_cidrs(&self) -> NodePodCidrsFact {
        self.record("nodes".to_owned());
        self.node_pod_cidrs
            .clone()
            .unwrap_or(NodePodCidrsFact::Known(Vec::new()))
    }

    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError> {
        self.record(format!("exposure {kind:?} {namespace}/{name}"));
        self.fail("exposure", name)?;
        let api = exposure_kind_ref(kind);
        self.refuse_unreadable(&api, namespace)?;
        Ok(self
            .exposures
            .iter()
            .find(|e| e.kind == kind && e.meta.namespace == namespace && e.meta.name == name)
            .cloned())
    }

    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError> {
        self.record(format!("clusterrole {name}"));
        self.fail("clusterrole", name)?;
        Ok(self.cluster_roles.get(name).cloned())
    }

    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError> {
        self.record(format!("certificates {namespace}/{name}[{key}]"));
        self.fail("certificates", name)?;
        let id = (namespace.to_owned(), name.to_owned(), key.to_owned());
        if let Some(bundle) = self.certificates.get(&id) {
            return Ok(Some(bundle.clone()));
        }
        let secret = self.secrets.get(&(namespace.to_owned(), name.to_owned()));
        Ok(secret.map(|s| CertificateBundleFact {
            meta: s.meta.clone(),
            has_key: s.keys.iter().any(|k| k == key),
            certificates: Vec::new(),
        }))
    }

    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome> {
        self.record(format!("last-apply {} {namespace}/{name}", kind.kind));
        let (group, _, kind) = kind_key(kind);
        self.applies
            .get(&(group, kind, namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    fn last_apply_time(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Timestamp> {
        self.record(format!("last-apply-time {} {namespace}/{name}", kind.kind));
        let (group, _, kind) = kind_key(kind);
        self.apply_times
            .get(&(group, kind, namespace.to_owned(), name.to_owned()))
            .map(|&seconds| Timestamp { seconds, nanos: 0 })
    }

    fn change_state(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ChangeOutcome> {
        self.record(format!("change-state {} {namespace}/{name}", kind.kind));
        let (group, _, kind) = kind_key(kind);
        self.change_states
            .get(&(group, kind, namespace.to_owned(), name.to_owned()))
            .cloned()
            .unwrap_or(Some(ChangeOutcome::Made))
    }

    fn children(&self, kind: &KindRef) -> Result<Vec<Object>, ReadError> {
        self.record(format!("children {}", kind.kind));
        self.fail("children", &kind.kind)?;
        // As the host: a Secret's data never reaches a guest.
        if kind.group.is_empty() && kind.kind == "Secret" {
            return Err(ReadError::Forbidden(
                "Secrets are served only as key names, through facts.secret".to_owned(),
            ));
        }
        let (group, _, kind) = kind_key(kind);
        Ok(self
            .children
            .get(&(group, kind))
            .cloned()
            .unwrap_or_default())
    }
}

/// The API of an exposure kind, as the host declares and probes it.
///
/// ```
/// use reconciler_guest_sdk::{ExposureKind, mock::exposure_kind_ref};
/// let route = exposure_kind_ref(ExposureKind::Route);
/// assert_eq!((route.group.as_str(), route.kind.as_str()), ("route.openshift.io", "Route"));
/// ```
pub fn exposure_kind_ref(kind: ExposureKind) -> KindRef {
    crate::exposure::kind_ref(kind)
}

impl MockFacts {
    /// As `refuse_unavailable`, for a read of one object: a kind read past
    /// the cache (`with_direct_get`) is answered.
    fn refuse_unreadable(&self, kind: &KindRef, namespace: &str) -> Result<(), ReadError> {
        if self
            .direct_get
            .contains(&(kind.kind.clone(), namespace.to_owned()))
        {
            return Ok(());
        }
        self.refuse_unavailable(kind, namespace)
    }

    fn refuse_unavailable(&self, kind: &KindRef, namespace: &str) -> Result<(), ReadError> {
        match self.api_availability(kind, namespace) {
            Availability::Available => Ok(()),
            Availability::NotServed => Err(ReadError::NotServed(format!(
                "{} is not served by this cluster",
                kind.kind
            ))),
            Availability::Forbidden => Err(ReadError::Forbidden(format!(
                "the host may not read {} in {namespace}",
                kind.kind
            ))),
        }
    }
}

fn kind_key(kind: &KindRef) -> (String, String, String) {
    (kind.group.clone(), kind.version.clone(), kind.kind.clone())
}

/// Metadata with a name and namespace, the UID `uid-<namespace>-<name>`,
/// generation 1, everything else empty.
///
/// ```
/// let m = reconciler_guest_sdk::mock::meta("ns", "a");
/// assert_eq!((m.namespace.as_str(), m.name.as_str(), m.uid.as_str()), ("ns", "a", "uid-ns-a"));
/// ```
pub fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        uid: format!("uid-{namespace}-{name}"),
        generation: 1,
        labels: Vec::new(),
        annotations: Vec::new(),
        controller: None,
        creation: None,
        deletion: None,
    }
}

/// An object from its JSON; its metadata is read as the host reads it
/// (name, namespace, uid, generation, labels, annotations, the controller
/// owner, creation and deletion times).
///
/// ```
/// let o = reconciler_guest_sdk::mock::object(serde_json::json!({"metadata": {"name": "a", "labels": {"x": "y"}}}));
/// assert_eq!(o.meta.labels, [("x".to_owned(), "y".to_owned())]);
/// ```
pub fn object(json: serde_json::Value) -> Object {
    Object {
        meta: object_meta(&json),
        json: json.to_string(),
    }
}

/// Reads `metadata` from an object's JSON the way the host does.
///
/// ```
/// let m = reconciler_guest_sdk::mock::object_meta(&serde_json::json!({"metadata": {
///     "name": "a", "creationTimestamp": "2026-11-29T12:00:00Z"}}));
/// assert_eq!(m.creation.unwrap().seconds, 1_795_953_600);
/// ```
pub fn object_meta(json: &serde_json::Value) -> ObjectMeta {
    let md = &json["metadata"];
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let pairs = |v: &serde_json::Value| -> Vec<(String, String)> {
        v.as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default()
    };
    let time = |v: &serde_json::Value| {
        v.as_str()
            .and_then(parse_rfc3339)
            .map(|seconds| Timestamp { seconds, nanos: 0 })
    };
    let mut meta = meta(&text(&md["namespace"]), &text(&md["name"]));
    if let Some(uid) = md["uid"].as_str() {
        meta.uid = uid.to_owned();
    }
    meta.labels = pairs(&md["labels"]);
    meta.annotations = pairs(&md["annotations"]);
    meta.generation = md["generation"].as_i64().unwrap_or(1);
    meta.controller = md["ownerReferences"].as_array().and_then(|owners| {
        owners
            .iter()
            .find(|o| o["controller"].as_bool() == Some(true))
            .map(|o| crate::ControllerRef {
                api_version: text(&o["apiVersion"]),
                kind: text(&o["kind"]),
                name: text(&o["name"]),
                uid: text(&o["uid"]),
            })
    });
    meta.creation = time(&md["creationTimestamp"]);
    meta.deletion = time(&md["deletionTimestamp"]);
    meta
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (what the API server
/// writes); anything else is `None`.
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (hh, mm, ss) = (n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3_600 + mm * 60 + ss)
}

/// A Deployment whose `replicas` Pods are all Ready on the current template.
///
/// ```
/// use reconciler_guest_sdk::{WorkloadState, mock::workload_ready};
/// let w = workload_ready("ns", "a", 2);
/// assert_eq!((w.ready_replicas, w.state), (2, WorkloadState::Ready));
/// ```
pub fn workload_ready(namespace: &str, name: &str, replicas: u32) -> WorkloadFact {
    WorkloadFact {
        meta: meta(namespace, name),
        generation_observed: true,
        desired_replicas: replicas,
        updated_replicas: replicas,
        ready_replicas: replicas,
        available_replicas: replicas,
        progress_deadline_exceeded: false,
        replica_failure: None,
        pods: Vec::new(),
        state: WorkloadState::Ready,
    }
}

/// A Deployment in `state` (the host's classification), no replica Ready.
///
/// ```
/// use reconciler_guest_sdk::{WorkloadState, mock::workload_in};
/// let w = workload_in("ns", "a", WorkloadState::ImagePullFailed("ErrImagePull".into()));
/// assert_eq!(w.ready_replicas, 0);
/// ```
pub fn workload_in(namespace: &str, name: &str, state: WorkloadState) -> WorkloadFact {
    WorkloadFact {
        ready_replicas: 0,
        available_replicas: 0,
        state,
        ..workload_ready(namespace, name, 1)
    }
}

/// An evaluation of `parent` (its JSON), not paused, with `settings`
/// (set `paused` on it for a paused pass).
///
/// ```
/// use reconciler_guest_sdk::mock::evaluation;
/// let mut input = evaluation(
///     serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"cluster": {"name": "pg"}}}),
///     &[("defaultImage", "ghcr.io/fyannk/agent:1")],
/// );
/// assert_eq!(input.parent.meta.name, "a");
/// assert_eq!(input.setting("defaultImage"), Some("ghcr.io/fyannk/agent:1"));
/// input.paused = true;
/// ```
pub fn evaluation(parent: serde_json::Value, settings: &[(&str, &str)]) -> crate::Evaluation {
    crate::Evaluation {
        parent: object(parent),
        paused: false,
        settings: settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta_reads_what_the_host_reads() {
        let m = object_meta(&serde_json::json!({"metadata": {
            "name": "a", "namespace": "ns", "uid": "u1",
            "creationTimestamp": "2026-11-29T12:00:00Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "p", "uid": "u0", "controller": true}]
        }}));
        assert_eq!(m.uid, "u1");
        assert_eq!(m.controller.unwrap().uid, "u0");
        assert_eq!(m.creation.unwrap().seconds, 1_795_953_600);
    }

    fn someone() -> ControllerRef {
        ControllerRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "legacy".into(),
            uid: "uid-legacy".into(),
        }
    }

    #[test]
    fn a_failing_read_fails_and_is_still_recorded() {
        let facts = MockFacts::at(0)
            .with_secret("ns", "s", &["k"])
            .failing("secret", "s")
            .failing("Cluster", "pg");
        assert_eq!(
            facts.secret("ns", "s"),
            Err(ReadError::Failed(
                "the cache of secret is not synced".into()
            ))
        );
        let cluster = crate::spec::kind_ref("postgresql.cnpg.io", "v1", "Cluster");
        assert!(facts.get(&cluster, "ns", "pg").is_err());
        assert!(facts.config_map("ns", "s").is_ok());
        assert_eq!(
            facts.reads(),
            ["configmap ns/s", "get Cluster ns/pg", "secret ns/s"]
        );
    }

    #[test]
    fn a_controller_is_patched_only_where_there_is_none() {
        let service = crate::spec::kind_ref("", "v1", "Service");
        let mut own = workload_ready("ns", "a", 1);
        own.meta.controller = Some(ControllerRef {
            uid: "uid-mine".into(),
            ..someone()
        });
        let facts = MockFacts::at(0)
            .with_workload(own)
            .with_config_map("ns", "a", &[])
            .with_object(
                &service,
                serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}),
            )
            .with_controller("a", someone());
        let uid = |meta: ObjectMeta| meta.controller.map(|c| c.uid);
        assert_eq!(
            uid(facts.workload("ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-mine")
        );
        assert_eq!(
            uid(facts.config_map("ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-legacy")
        );
        assert_eq!(
            uid(facts.get(&service, "ns", "a").unwrap().unwrap().meta).as_deref(),
            Some("uid-legacy")
        );
    }

    #[test]
    fn a_secret_fact_keeps_its_metadata() {
        let mut meta = meta("ns", "s");
        meta.uid = "reissued".into();
        let facts = MockFacts::at(0).with_secret_fact(SecretFact {
            meta,
            type_: "kubernetes.io/tls".into(),
            keys: vec!["tls.crt".into()],
        });
        assert_eq!(
            facts.secret("ns", "s").unwrap().unwrap().meta.uid,
            "reissued"
        );
    }
}
