//! The facts a guest reads, as a trait: served by the host's `facts`
//! import in wasm, and by [`crate::mock::MockFacts`] in native tests.

use crate::bindings::reconciler::guest0_4_0::facts as host;
use crate::{
    ApplyOutcome, Availability, CertificateBundleFact, ConfigMapFact, EgressPolicyFact,
    ExposureFact, ExposureKind, JobFact, KindRef, NetworkPolicyFact, NodePodCidrsFact, Object,
    ObjectMeta, ReadError, SecretFact, Timestamp, WorkloadFact,
};

/// Read-only facts about the cluster. Every read becomes a dependency of
/// the parent: a change to what a pass read re-queues it.
pub trait Facts {
    /// The clock of this pass.
    fn now(&self) -> Timestamp;
    /// The Deployment `name` with its Pods.
    fn workload(&self, namespace: &str, name: &str) -> Result<Option<WorkloadFact>, ReadError>;
    /// The Secret `name`: key names only.
    fn secret(&self, namespace: &str, name: &str) -> Result<Option<SecretFact>, ReadError>;
    /// The ConfigMap `name`: key names only.
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMapFact>, ReadError>;
    /// Any declared kind by name.
    fn get(&self, kind: &KindRef, namespace: &str, name: &str)
    -> Result<Option<Object>, ReadError>;
    /// Any declared kind by label selector (`matchLabels`), sorted by name.
    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<Object>, ReadError>;
    /// Whether an optional API is usable in a namespace.
    fn api_availability(&self, kind: &KindRef, namespace: &str) -> Availability;
    /// The NetworkPolicies of `namespace`, sorted by name.
    fn network_policies(&self, namespace: &str) -> Result<Vec<NetworkPolicyFact>, ReadError>;
    /// The Nodes' pod CIDRs, or why they could not be checked.
    fn node_pod_cidrs(&self) -> NodePodCidrsFact;
    /// The Route, Ingress or HTTPRoute `name`, with its admission.
    fn exposure(
        &self,
        kind: ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ExposureFact>, ReadError>;
    /// The ClusterRole `name` (metadata only).
    fn cluster_role(&self, name: &str) -> Result<Option<ObjectMeta>, ReadError>;
    /// The certificates under `key` of the Secret `name` (never the data).
    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<CertificateBundleFact>, ReadError>;
    /// How the API server answered the host's last apply of a child.
    fn last_apply(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<ApplyOutcome>;
    /// The parent's own children of `kind`, a kind the guest writes: the
    /// objects of its namespace it controls, sorted by name.
    fn children(&self, kind: &KindRef) -> Result<Vec<Object>, ReadError>;
    /// When the API server answered the host's last apply of the child.
    fn last_apply_time(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<Timestamp>;
    /// Since 0.4.0: the Job `name` with its conditions and its latest Pod
    /// failure. A `Facts` that does not serve Jobs (a test's own, written
    /// before them) answers `failed`.
    fn job(&self, namespace: &str, name: &str) -> Result<Option<JobFact>, ReadError> {
        Err(not_served_here("facts.job", namespace, name))
    }
    /// Since 0.4.0: the egress side of the NetworkPolicies of `namespace`,
    /// sorted by name; answers `failed` as `job` does.
    fn egress_policies(&self, namespace: &str) -> Result<Vec<EgressPolicyFact>, ReadError> {
        Err(not_served_here("facts.egress-policies", namespace, ""))
    }
}

/// The answer of a `Facts` that does not serve a call.
fn not_served_here(call: &str, namespace: &str, name: &str) -> ReadError {
    ReadError::Failed(format!(
        "{call} ({namespace}/{name}) is not served by these facts"
    ))
}

/// The facts the host serves through the component's `facts` import.
/// Only usable inside a wasm guest.
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
}
