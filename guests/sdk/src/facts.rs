//! The facts a guest reads, as a trait: served by the host's `facts`
//! import in wasm, and by [`crate::mock::MockFacts`] in native tests.

use crate::bindings::reconciler::guest::facts as host;
use crate::{
    Availability, ConfigMapFact, KindRef, Object, ReadError, SecretFact, Timestamp, WorkloadFact,
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
}
