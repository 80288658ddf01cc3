//! The EvidenceAgent guest: ConfigurationValid, ServingCertificateReady and WorkloadReady of an agent that gathers evidence of a CloudNativePG Cluster's Barman Cloud backups, and the children it renders.

pub mod certificate;
pub mod changes;
pub mod children;
pub mod configuration;
pub mod image;
pub mod issuer;
pub mod objectstore;
pub mod registry;
pub mod render;
pub mod spec;
pub mod workload;

use reconciler_guest_sdk::configuration::NotValid;
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Evaluation, Facts, Guest, KindRef, KindSpec, Reconciliation, Verdict, VerdictBuilder, read,
};

use children::Children;
use registry::{CONFIGURATION_VALID, KIND};

pub struct EvidenceAgent;

impl Guest for EvidenceAgent {
    fn describe() -> KindSpec {
        registry::describe()
    }

    fn writes() -> Vec<KindRef> {
        registry::writes()
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    /// A paused agent has nothing it still checks and asks for nothing:
    /// the verdict is empty and the host keeps the previous aspects.
    /// Otherwise ConfigurationValid is decided first; only a valid
    /// configuration renders the children (nothing is rendered, nor
    /// deleted, before). On an invalid or unknown one the later aspects are
    /// not evaluated and left out: the host keeps what they said at an
    /// older generation, or says Initializing for one never evaluated.
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let mut verdict = VerdictBuilder::new();
        let mut changes = Vec::new();
        if input.paused {
            return Reconciliation {
                verdict: verdict.build(),
                changes,
            };
        }
        let agent = Parent::of(KIND, &input.parent.meta);
        let children = Children::of(agent.name);
        match configuration::evaluate(input, facts, &agent, &children) {
            Ok(valid) => {
                verdict.aspect(ok(
                    CONFIGURATION_VALID,
                    format!(
                        "Cluster {} archives to ObjectStore {} ({}); image {}",
                        valid.spec.cluster.name,
                        valid.object_store,
                        valid.store.destination,
                        valid.image
                    ),
                ));
                changes = changes::of(facts, &agent, &children, &valid, &mut verdict);
                certificate::evaluate(input, facts, &agent, &children, valid.issuer, &mut verdict);
                workload::evaluate(
                    facts,
                    agent.namespace,
                    &children.workload,
                    &valid.object_store,
                    &valid.store.secrets,
                    &mut verdict,
                );
            }
            Err(NotValid::Stalled { reason, message }) => {
                verdict
                    .aspect(fails(CONFIGURATION_VALID, reason, message.clone()))
                    .stall(reason, message);
            }
            Err(NotValid::Unread(message)) => {
                verdict
                    .aspect(unknown(CONFIGURATION_VALID, RECONCILING, message))
                    .requeue_after(read::RETRY_SECONDS);
            }
        }
        Reconciliation {
            verdict: verdict.build(),
            changes,
        }
    }
}

reconciler_guest_sdk::export_guest!(EvidenceAgent);
