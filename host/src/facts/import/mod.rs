//! The `facts` import of every contract version the host serves, each
//! implemented on [`crate::facts::FactServer`] (one WIT interface per
//! module, as Spin's host capabilities are): [`current`], the current
//! contract's, in a file named for no version, so a version bump adds a
//! small delegate and moves nothing; `v0_5`, `v0_4`, `v0_3`, `v0_2` and `v0_1`,
//! the older imports, each a list of the functions it has, delegated to
//! their current namesakes by [`delegate_facts!`].

/// One function of an older contract's `facts` (its interface `$f`, its
/// types `$t`), answered by its current namesake: what it is given and
/// what it answers cross by [`crate::contract::convert`] (later versions
/// only add, so each value has a same-shaped twin).
macro_rules! delegated {
    (now, $f:ident, $t:ident) => {
        fn now(&mut self) -> $t::Timestamp {
            convert(Current::now(self))
        }
    };
    (workload, $f:ident, $t:ident) => {
        fn workload(
            &mut self,
            namespace: String,
            name: String,
        ) -> Result<Option<$f::WorkloadFact>, $f::ReadError> {
            convert(Current::workload(self, namespace, name))
        }
    };
    (secret, $f:ident, $t:ident) => {
        fn secret(
            &mut self,
            namespace: String,
            name: String,
        ) -> Result<Option<$f::SecretFact>, $f::ReadError> {
            convert(Current::secret(self, namespace, name))
        }
    };
    (config_map, $f:ident, $t:ident) => {
        fn config_map(
            &mut self,
            namespace: String,
            name: String,
        ) -> Result<Option<$f::ConfigMapFact>, $f::ReadError> {
            convert(Current::config_map(self, namespace, name))
        }
    };
    (get, $f:ident, $t:ident) => {
        fn get(
            &mut self,
            kind: $t::KindRef,
            namespace: String,
            name: String,
        ) -> Result<Option<$t::Object>, $f::ReadError> {
            convert(Current::get(self, convert(kind), namespace, name))
        }
    };
    (list, $f:ident, $t:ident) => {
        fn list(
            &mut self,
            kind: $t::KindRef,
            namespace: String,
            selector: Vec<(String, String)>,
        ) -> Result<Vec<$t::Object>, $f::ReadError> {
            convert(Current::list(self, convert(kind), namespace, selector))
        }
    };
    (api_availability, $f:ident, $t:ident) => {
        fn api_availability(&mut self, kind: $t::KindRef, namespace: String) -> $f::Availability {
            convert(Current::api_availability(self, convert(kind), namespace))
        }
    };
    (network_policies, $f:ident, $t:ident) => {
        fn network_policies(
            &mut self,
            namespace: String,
        ) -> Result<Vec<$f::NetworkPolicyFact>, $f::ReadError> {
            convert(Current::network_policies(self, namespace))
        }
    };
    (node_pod_cidrs, $f:ident, $t:ident) => {
        fn node_pod_cidrs(&mut self) -> $f::NodePodCidrsFact {
            convert(Current::node_pod_cidrs(self))
        }
    };
    (exposure, $f:ident, $t:ident) => {
        fn exposure(
            &mut self,
            kind: $f::ExposureKind,
            namespace: String,
            name: String,
        ) -> Result<Option<$f::ExposureFact>, $f::ReadError> {
            convert(Current::exposure(self, convert(kind), namespace, name))
        }
    };
    (cluster_role, $f:ident, $t:ident) => {
        fn cluster_role(&mut self, name: String) -> Result<Option<$t::ObjectMeta>, $f::ReadError> {
            convert(Current::cluster_role(self, name))
        }
    };
    (secret_certificates, $f:ident, $t:ident) => {
        fn secret_certificates(
            &mut self,
            namespace: String,
            name: String,
            key: String,
        ) -> Result<Option<$f::CertificateBundleFact>, $f::ReadError> {
            convert(Current::secret_certificates(self, namespace, name, key))
        }
    };
    (last_apply, $f:ident, $t:ident) => {
        fn last_apply(
            &mut self,
            kind: $t::KindRef,
            namespace: String,
            name: String,
        ) -> Option<$f::ApplyOutcome> {
            convert(Current::last_apply(self, convert(kind), namespace, name))
        }
    };
    (children, $f:ident, $t:ident) => {
        fn children(&mut self, kind: $t::KindRef) -> Result<Vec<$t::Object>, $f::ReadError> {
            convert(Current::children(self, convert(kind)))
        }
    };
    (last_apply_time, $f:ident, $t:ident) => {
        fn last_apply_time(
            &mut self,
            kind: $t::KindRef,
            namespace: String,
            name: String,
        ) -> Option<$t::Timestamp> {
            convert(Current::last_apply_time(
                self,
                convert(kind),
                namespace,
                name,
            ))
        }
    };
    (job, $f:ident, $t:ident) => {
        fn job(
            &mut self,
            namespace: String,
            name: String,
        ) -> Result<Option<$f::JobFact>, $f::ReadError> {
            convert(Current::job(self, namespace, name))
        }
    };
    (change_state, $f:ident, $t:ident) => {
        fn change_state(
            &mut self,
            kind: $t::KindRef,
            namespace: String,
            name: String,
        ) -> Option<$f::ChangeOutcome> {
            convert(Current::change_state(self, convert(kind), namespace, name))
        }
    };
    (egress_policies, $f:ident, $t:ident) => {
        fn egress_policies(
            &mut self,
            namespace: String,
        ) -> Result<Vec<$f::EgressPolicyFact>, $f::ReadError> {
            convert(Current::egress_policies(self, namespace))
        }
    };
}

/// An older contract's `facts` (interface `$f`, types `$t`) served on
/// [`crate::facts::FactServer`]: each function it lists answered by its
/// current namesake ([`delegated!`]). A function missing from the list, or
/// one the version does not have, is a compile error.
macro_rules! delegate_facts {
    ($f:ident, $t:ident: $($function:ident),+ $(,)?) => {
        use $crate::contract::convert;
        use $crate::contract::facts::Host as Current;
        use $crate::facts::FactServer;

        impl $t::Host for FactServer {}

        impl $f::Host for FactServer {
            $(delegated!($function, $f, $t);)+
        }
    };
}

mod current;
mod v0_1;
mod v0_2;
mod v0_3;
mod v0_4;
mod v0_5;
