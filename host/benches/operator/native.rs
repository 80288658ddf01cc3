//! The native baseline's evaluator: the EvidenceAgent guest crate's own logic, compiled into the process, answering the host's passes in place of its wasm module.
//!
//! A pass gets what the wasm call would give the guest and take back: the
//! host's `FactServer` over the operator's cache (the same declared,
//! optional and cross-namespace kinds the module holds, for the same
//! parent), served to the SDK's `Facts` trait through `convert` (the WIT
//! types are the same on both sides); the guest's `reconcile`; its
//! verdict and changes checked by the same `contract::model` functions the
//! runtime uses; the reads, the failed read and what the guest wants read
//! past the cache taken from the server as the runtime takes them. No
//! sandbox, no instance, no canonical ABI: what is left is what a
//! compiled-in operator would do with the same logic. A module of any
//! other kind is evaluated through wasm.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;

use evidenceagent_guest::EvidenceAgent;
use reconciler_conventions::kind::{KindRef, KindSpec};
use reconciler_guest_sdk as sdk;
use reconciler_guest_sdk::{Facts, Guest as _};
use reconciler_host::contract::convert;
use reconciler_host::contract::facts::Host as _;
use reconciler_host::contract::model;
use reconciler_host::contract::types as ht;
use reconciler_host::facts::FactServer;
use reconciler_host::facts::meta::object_meta;
use reconciler_host::operator::kinds::evaluator::Evaluator;
use reconciler_host::runtime::{EvaluateRequest, Evaluated, GuestError, GuestErrorClass, Module};

/// The kind the native logic serves.
pub(crate) const KIND: &str = "EvidenceAgent";

/// [`EvidenceAgent`] natively for its kind, wasm for any other.
#[derive(Default)]
pub(crate) struct NativeEvidenceAgent;

/// What a module's spec says the fact server may read (as the runtime
/// collects it once per module; here once per pass, a few entries).
fn kinds(spec: &KindSpec) -> [Arc<BTreeSet<KindRef>>; 3] {
    let of = |f: fn(&reconciler_conventions::kind::ReadDecl) -> bool| {
        Arc::new(
            spec.reads
                .iter()
                .filter(|r| f(r))
                .map(|r| r.kind.clone())
                .collect(),
        )
    };
    [
        Arc::new(spec.readable().cloned().collect()),
        of(|r| r.optional),
        of(|r| r.cross_namespace),
    ]
}

impl Evaluator for NativeEvidenceAgent {
    fn evaluate(&self, module: &Module, req: EvaluateRequest<'_>) -> Evaluated {
        let spec = module.spec();
        if spec.kind != KIND {
            return module.evaluate(req);
        }
        let namespace = req.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let [declared, optional, across] = kinds(spec);
        let server = FactServer::with_declared(req.source, declared, req.now)
            .with_optional(optional)
            .with_cross_namespace(across)
            .for_parent(req.parent);
        let input = sdk::Evaluation {
            parent: sdk::Object {
                meta: convert(object_meta(req.parent)),
                json: req.parent.to_string(),
            },
            paused: req.paused,
            settings: req.settings.to_vec(),
        };
        let facts = ServerFacts(RefCell::new(server));
        let reconciled = EvidenceAgent::reconcile(&input, &facts);
        let contract = |detail| GuestError::new(module.name(), GuestErrorClass::Contract, detail);
        let outcome = model::verdict(convert(reconciled.verdict))
            .and_then(|v| {
                model::changes(convert(reconciled.changes), spec, namespace).map(|c| (v, c))
            })
            .map_err(contract);
        let mut server = facts.0.into_inner();
        let failed_read = server.take_failed_read();
        let past_cache_wanted = server.take_past_cache_wanted();
        let change_states = server.take_change_states();
        let reads = server.into_reads();
        let (outcome, (changes, withdrawals)) = match outcome {
            Ok((verdict, changes)) => (Ok(verdict), changes),
            Err(e) => (Err(e), Default::default()),
        };
        Evaluated {
            outcome,
            changes,
            withdrawals,
            reads,
            failed_read,
            past_cache_wanted,
            change_states,
        }
    }
}

/// The host's fact server as the SDK's `Facts`.
struct ServerFacts(RefCell<FactServer>);

fn kind(k: &sdk::KindRef) -> ht::KindRef {
    convert(k)
}

impl Facts for ServerFacts {
    fn now(&self) -> sdk::Timestamp {
        convert(self.0.borrow_mut().now())
    }

    fn workload(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<sdk::WorkloadFact>, sdk::ReadError> {
        convert(self.0.borrow_mut().workload(namespace.into(), name.into()))
    }

    fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<sdk::SecretFact>, sdk::ReadError> {
        convert(self.0.borrow_mut().secret(namespace.into(), name.into()))
    }

    fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<sdk::ConfigMapFact>, sdk::ReadError> {
        convert(
            self.0
                .borrow_mut()
                .config_map(namespace.into(), name.into()),
        )
    }

    fn get(
        &self,
        k: &sdk::KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<sdk::Object>, sdk::ReadError> {
        convert(
            self.0
                .borrow_mut()
                .get(kind(k), namespace.into(), name.into()),
        )
    }

    fn list(
        &self,
        k: &sdk::KindRef,
        namespace: &str,
        selector: &[(String, String)],
    ) -> Result<Vec<sdk::Object>, sdk::ReadError> {
        convert(
            self.0
                .borrow_mut()
                .list(kind(k), namespace.into(), selector.to_vec()),
        )
    }

    fn api_availability(&self, k: &sdk::KindRef, namespace: &str) -> sdk::Availability {
        convert(
            self.0
                .borrow_mut()
                .api_availability(kind(k), namespace.into()),
        )
    }

    fn network_policies(
        &self,
        namespace: &str,
    ) -> Result<Vec<sdk::NetworkPolicyFact>, sdk::ReadError> {
        convert(self.0.borrow_mut().network_policies(namespace.into()))
    }

    fn node_pod_cidrs(&self) -> sdk::NodePodCidrsFact {
        convert(self.0.borrow_mut().node_pod_cidrs())
    }

    fn exposure(
        &self,
        k: sdk::ExposureKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<sdk::ExposureFact>, sdk::ReadError> {
        convert(
            self.0
                .borrow_mut()
                .exposure(convert(k), namespace.into(), name.into()),
        )
    }

    fn cluster_role(&self, name: &str) -> Result<Option<sdk::ObjectMeta>, sdk::ReadError> {
        convert(self.0.borrow_mut().cluster_role(name.into()))
    }

    fn secret_certificates(
        &self,
        namespace: &str,
        name: &str,
        key: &str,
    ) -> Result<Option<sdk::CertificateBundleFact>, sdk::ReadError> {
        convert(
            self.0
                .borrow_mut()
                .secret_certificates(namespace.into(), name.into(), key.into()),
        )
    }

    fn last_apply(
        &self,
        k: &sdk::KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<sdk::ApplyOutcome> {
        convert(
            self.0
                .borrow_mut()
                .last_apply(kind(k), namespace.into(), name.into()),
        )
    }

    fn children(&self, k: &sdk::KindRef) -> Result<Vec<sdk::Object>, sdk::ReadError> {
        convert(self.0.borrow_mut().children(kind(k)))
    }

    fn last_apply_time(
        &self,
        k: &sdk::KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<sdk::Timestamp> {
        convert(
            self.0
                .borrow_mut()
                .last_apply_time(kind(k), namespace.into(), name.into()),
        )
    }

    fn job(&self, namespace: &str, name: &str) -> Result<Option<sdk::JobFact>, sdk::ReadError> {
        convert(self.0.borrow_mut().job(namespace.into(), name.into()))
    }

    fn egress_policies(
        &self,
        namespace: &str,
    ) -> Result<Vec<sdk::EgressPolicyFact>, sdk::ReadError> {
        convert(self.0.borrow_mut().egress_policies(namespace.into()))
    }

    fn change_state(
        &self,
        k: &sdk::KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<sdk::ChangeOutcome> {
        convert(
            self.0
                .borrow_mut()
                .change_state(kind(k), namespace.into(), name.into()),
        )
    }
}
