//! Contract 0.2.0, served by delegating to the current version: later
//! versions only add, so each 0.2 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin ([`convert`]).

use crate::contract::convert;
use crate::contract::facts::Host as Current;
use crate::contract::v0_2::reconciler::guest0_2_0::{facts as v2, types as v2_types};
use crate::facts::FactServer;

impl v2_types::Host for FactServer {}

impl v2::Host for FactServer {
    fn now(&mut self) -> v2_types::Timestamp {
        convert(Current::now(self))
    }

    fn workload(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v2::WorkloadFact>, v2::ReadError> {
        convert(Current::workload(self, namespace, name))
    }

    fn secret(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v2::SecretFact>, v2::ReadError> {
        convert(Current::secret(self, namespace, name))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v2::ConfigMapFact>, v2::ReadError> {
        convert(Current::config_map(self, namespace, name))
    }

    fn get(
        &mut self,
        kind: v2_types::KindRef,
        namespace: String,
        name: String,
    ) -> Result<Option<v2_types::Object>, v2::ReadError> {
        convert(Current::get(self, convert(kind), namespace, name))
    }

    fn list(
        &mut self,
        kind: v2_types::KindRef,
        namespace: String,
        selector: v2::LabelSelector,
    ) -> Result<Vec<v2_types::Object>, v2::ReadError> {
        convert(Current::list(self, convert(kind), namespace, selector))
    }

    fn api_availability(&mut self, kind: v2_types::KindRef, namespace: String) -> v2::Availability {
        convert(Current::api_availability(self, convert(kind), namespace))
    }

    fn network_policies(
        &mut self,
        namespace: String,
    ) -> Result<Vec<v2::NetworkPolicyFact>, v2::ReadError> {
        convert(Current::network_policies(self, namespace))
    }

    fn node_pod_cidrs(&mut self) -> v2::NodePodCidrsFact {
        convert(Current::node_pod_cidrs(self))
    }

    fn exposure(
        &mut self,
        kind: v2::ExposureKind,
        namespace: String,
        name: String,
    ) -> Result<Option<v2::ExposureFact>, v2::ReadError> {
        convert(Current::exposure(self, convert(kind), namespace, name))
    }

    fn cluster_role(
        &mut self,
        name: String,
    ) -> Result<Option<v2_types::ObjectMeta>, v2::ReadError> {
        convert(Current::cluster_role(self, name))
    }

    fn secret_certificates(
        &mut self,
        namespace: String,
        name: String,
        key: String,
    ) -> Result<Option<v2::CertificateBundleFact>, v2::ReadError> {
        convert(Current::secret_certificates(self, namespace, name, key))
    }

    fn last_apply(
        &mut self,
        kind: v2_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<v2::ApplyOutcome> {
        convert(Current::last_apply(self, convert(kind), namespace, name))
    }
}
