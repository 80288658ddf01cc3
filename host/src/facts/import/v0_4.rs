//! Contract 0.4.0, served by delegating to the current version: later
//! versions only add, so each 0.4 `facts` function is its current
//! namesake, and every value crosses as its same-shaped twin ([`convert`]).

use crate::contract::convert;
use crate::contract::facts::Host as Current;
use crate::contract::v0_4::reconciler::guest0_4_0::{facts as v4, types as v4_types};
use crate::facts::FactServer;

impl v4_types::Host for FactServer {}

impl v4::Host for FactServer {
    fn now(&mut self) -> v4_types::Timestamp {
        convert(Current::now(self))
    }

    fn workload(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v4::WorkloadFact>, v4::ReadError> {
        convert(Current::workload(self, namespace, name))
    }

    fn secret(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v4::SecretFact>, v4::ReadError> {
        convert(Current::secret(self, namespace, name))
    }

    fn config_map(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v4::ConfigMapFact>, v4::ReadError> {
        convert(Current::config_map(self, namespace, name))
    }

    fn get(
        &mut self,
        kind: v4_types::KindRef,
        namespace: String,
        name: String,
    ) -> Result<Option<v4_types::Object>, v4::ReadError> {
        convert(Current::get(self, convert(kind), namespace, name))
    }

    fn list(
        &mut self,
        kind: v4_types::KindRef,
        namespace: String,
        selector: v4::LabelSelector,
    ) -> Result<Vec<v4_types::Object>, v4::ReadError> {
        convert(Current::list(self, convert(kind), namespace, selector))
    }

    fn api_availability(&mut self, kind: v4_types::KindRef, namespace: String) -> v4::Availability {
        convert(Current::api_availability(self, convert(kind), namespace))
    }

    fn network_policies(
        &mut self,
        namespace: String,
    ) -> Result<Vec<v4::NetworkPolicyFact>, v4::ReadError> {
        convert(Current::network_policies(self, namespace))
    }

    fn node_pod_cidrs(&mut self) -> v4::NodePodCidrsFact {
        convert(Current::node_pod_cidrs(self))
    }

    fn exposure(
        &mut self,
        kind: v4::ExposureKind,
        namespace: String,
        name: String,
    ) -> Result<Option<v4::ExposureFact>, v4::ReadError> {
        convert(Current::exposure(self, convert(kind), namespace, name))
    }

    fn cluster_role(
        &mut self,
        name: String,
    ) -> Result<Option<v4_types::ObjectMeta>, v4::ReadError> {
        convert(Current::cluster_role(self, name))
    }

    fn secret_certificates(
        &mut self,
        namespace: String,
        name: String,
        key: String,
    ) -> Result<Option<v4::CertificateBundleFact>, v4::ReadError> {
        convert(Current::secret_certificates(self, namespace, name, key))
    }

    fn last_apply(
        &mut self,
        kind: v4_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<v4::ApplyOutcome> {
        convert(Current::last_apply(self, convert(kind), namespace, name))
    }

    fn children(
        &mut self,
        kind: v4_types::KindRef,
    ) -> Result<Vec<v4_types::Object>, v4::ReadError> {
        convert(Current::children(self, convert(kind)))
    }

    fn last_apply_time(
        &mut self,
        kind: v4_types::KindRef,
        namespace: String,
        name: String,
    ) -> Option<v4_types::Timestamp> {
        convert(Current::last_apply_time(
            self,
            convert(kind),
            namespace,
            name,
        ))
    }

    fn job(
        &mut self,
        namespace: String,
        name: String,
    ) -> Result<Option<v4::JobFact>, v4::ReadError> {
        convert(Current::job(self, namespace, name))
    }

    fn egress_policies(
        &mut self,
        namespace: String,
    ) -> Result<Vec<v4::EgressPolicyFact>, v4::ReadError> {
        convert(Current::egress_policies(self, namespace))
    }
}
