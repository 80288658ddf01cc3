//! Contract 0.3.0, served by delegating to the current version: later
//! versions only add, so each 0.3 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin ([`convert`]).

use crate::contract::convert;
use crate::contract::facts::Host as Current;
use crate::contract::v0_3::reconciler::guest0_3_0::{facts as v3, types as v3_types};
use crate::facts::FactServer;

impl v3_types::Host for FactServer {}

impl v3::Host for FactServer {
    fn now(&mut self) -> v3_types::Timestamp {
        convert(Current::now(self))
    }

    fn workload(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v3::WorkloadFact>, v3::ReadError> {
        convert(Current::workload(self, namespace, name))
    }

    fn secret(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v3::SecretFact>, v3::ReadError> {
        convert(Current::secret(self, namespace, name))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v3::ConfigMapFact>, v3::ReadError> {
        convert(Current::config_map(self, namespace, name))
    }

    fn get(
        &mut self,
        kind: v3_types::KindRef,
        namespace: String,
        name: String,
    ) -> Result<Option<v3_types::Object>, v3::ReadError> {
        convert(Current::get(self, convert(kind), namespace, name))
    }

    fn list(
        &mut self,
        kind: v3_types::KindRef,
        namespace: String,
        selector: v3::LabelSelector,
    ) -> Result<Vec<v3_types::Object>, v3::ReadError> {
        convert(Current::list(self, convert(kind), namespace, selector))
    }

    fn api_availability(&mut self, kind: v3_types::KindRef, namespace: String) -> v3::Availability {
        convert(Current::api_availability(self, convert(kind), namespace))
    }

    fn network_policies(
        &mut self,
        namespace: String,
    ) -> Result<Vec<v3::NetworkPolicyFact>, v3::ReadError> {
        convert(Current::network_policies(self, namespace))
    }

    fn node_pod_cidrs(&mut self) -> v3::NodePodCidrsFact {
        convert(Current::node_pod_cidrs(self))
    }

    fn exposure(
        &mut self,
        kind: v3::ExposureKind,
        namespace: String,
        name: String,
    ) -> Result<Option<v3::ExposureFact>, v3::ReadError> {
        convert(Current::exposure(self, convert(kind), namespace, name))
    }

    fn cluster_role(
        &mut self,
        name: String,
    ) -> Result<Option<v3_types::ObjectMeta>, v3::ReadError> {
        convert(Current::cluster_role(self, name))
    }

    fn secret_certificates(
        &mut self,
        namespace: String,
        name: String,
        key: String,
    ) -> Result<Option<v3::CertificateBundleFact>, v3::ReadError> {
        convert(Current::secret_certificates(self, namespace, name, key))
    }

    fn last_apply(
        &mut self,
        kind: v3_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<v3::ApplyOutcome> {
        convert(Current::last_apply(self, convert(kind), namespace, name))
    }

    fn children(
        &mut self,
        kind: v3_types::KindRef,
    ) -> Result<Vec<v3_types::Object>, v3::ReadError> {
        convert(Current::children(self, convert(kind)))
    }

    fn last_apply_time(
        &mut self,
        kind: v3_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<v3_types::Timestamp> {
        convert(Current::last_apply_time(
            self,
            convert(kind),
            namespace,
            name,
        ))
    }
}
