//! The EvidenceAgent guest: ConfigurationValid, ServingCertificateReady and WorkloadReady of an agent that gathers evidence of a CloudNativePG Cluster's Barman Cloud backups.

pub mod certificate;
pub mod children;
pub mod configuration;
pub mod image;
pub mod objectstore;
pub mod registry;
pub mod spec;
pub mod workload;

use reconciler_guest_sdk::configuration::NotValid;
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{Evaluation, Facts, Guest, KindSpec, Verdict, VerdictBuilder, read};

use children::Children;
use registry::{CONFIGURATION_VALID, KIND, SERVING_CERTIFICATE_READY, WORKLOAD_READY};

pub struct EvidenceAgent;

impl Guest for EvidenceAgent {
    fn describe() -> KindSpec {
        registry::describe()
    }

    /// A paused agent has nothing it still checks: the verdict is empty and
    /// the host keeps the previous aspects. Otherwise ConfigurationValid is
    /// decided first; the later aspects are evaluated only on a valid
    /// configuration (nothing is rendered before), and say so otherwise.
    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        let mut verdict = VerdictBuilder::new();
        if input.paused {
            return verdict.build();
        }
        let agent = Parent::of(KIND, &input.parent.meta);
        let children = Children::of(agent.name);
        match configuration::evaluate(input, facts, &agent, &children) {
            Ok(valid) => {
                verdict.aspect(ok(
                    CONFIGURATION_VALID,
                    format!(
                        "Cluster {} archives to ObjectStore {} ({}); image {}",
                        valid.spec.cluster,
                        valid.object_store,
                        valid.store.destination,
                        valid.image
                    ),
                ));
                certificate::evaluate(input, facts, agent.namespace, &children, &mut verdict);
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
                not_evaluated(
                    &mut verdict,
                    &format!("ConfigurationValid is False ({reason})"),
                );
            }
            Err(NotValid::Unread(message)) => {
                verdict
                    .aspect(unknown(CONFIGURATION_VALID, RECONCILING, message))
                    .requeue_after(read::RETRY_SECONDS);
                not_evaluated(&mut verdict, "ConfigurationValid is not known yet");
            }
        }
        verdict.build()
    }
}

/// The aspects after ConfigurationValid, while nothing is rendered.
fn not_evaluated(verdict: &mut VerdictBuilder, why: &str) {
    for aspect in [SERVING_CERTIFICATE_READY, WORKLOAD_READY] {
        verdict.aspect(unknown(
            aspect,
            RECONCILING,
            format!("not evaluated while {why}"),
        ));
    }
}

reconciler_guest_sdk::export_guest!(EvidenceAgent);
