//! The PgToolBoxConsole guest: ConfigurationValid, WorkloadReady and ExposureReady of a console, with the advisory ExposureConfined and InstanceCABundleComplete, and the children it asks the host for.

pub mod cabundle;
pub mod children;
pub mod configuration;
pub mod confinement;
pub mod exposure;
pub mod hostname;
pub mod image;
pub mod recovery;
pub mod registry;
pub mod render;
pub mod spec;
pub mod workload;

use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::read;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Change, Condition, ConditionStatus, Evaluation, Facts, Guest, KindRef, KindSpec, PodFact,
    ReadError, Reconciliation, Verdict, VerdictBuilder, WorkloadFact,
};
use serde_json::Value;

use children::Children;
use configuration::{NotValid, PolicyRefusal, Valid};
use confinement::ConfinementContext;
use confinement::policy::Desired;
use exposure::{Observation, Read, Url};
use registry::*;
use render::exposure::Withdrawal;
use render::{CaBundleSource, Plan};
use spec::ExposureType;

pub struct PgToolBoxConsole;

/// How soon the pass after a HostnameNotAllowed recovery runs: the
/// conditions that said it are Unknown until then.
pub const RECOVERY_REQUEUE_SECONDS: u32 = 1;

impl Guest for PgToolBoxConsole {
    fn describe() -> KindSpec {
        registry::describe()
    }

    fn writes() -> Vec<KindRef> {
        registry::writes()
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    /// The hostname is checked first, paused or not: a refused one stalls
    /// the console (ConfigurationValid and ExposureReady False with
    /// HostnameNotAllowed, `status.url` cleared), and the console's own
    /// exposure objects are deleted (the only changes asked for then, and
    /// the only ones while paused). Otherwise a paused pass gives only the
    /// recovery of conditions that still say HostnameNotAllowed and the
    /// advisory conditions, and asks for nothing; an unpaused one decides
    /// ConfigurationValid, then the later aspects on a valid
    /// configuration, and asks for the children only while
    /// ConfigurationValid is True and every read succeeded. See the README
    /// for every decision.
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let parent = input.parent_json();
        let status = &parent["status"];
        let console = Parent::of(KIND, &input.parent.meta);
        let children = Children::of(console.name);
        let hostname = hostname::requested(&parent);
        let refusal = hostname.and_then(|h| {
            hostname::check(h, &input.setting_list(hostname::ALLOWED_HOST_SUFFIXES)).err()
        });
        let requested = ExposureType::of(&parent).and_then(ExposureType::kind);
        let observation = exposure::observe(facts, &console, &children.exposure, requested, status);
        let deployment = facts.workload(console.namespace, &children.workload);
        let network_policy = parent["spec"]["exposure"]["networkPolicy"].clone();

        let mut pass = Pass::default();
        let mut valid: Option<Valid> = None;
        let mut withdrawal: Option<Withdrawal> = None;
        if let Some(refusal) = &refusal {
            let found = render::exposure::withdraw(facts, &observation, None);
            pass.hostname_refused(input, &parent, refusal, &observation, &console, &found);
            withdrawal = Some(found);
        } else if !input.paused {
            let policy_rendered = matches!(
                confinement::policy::desired(requested, &network_policy),
                Desired::Rendered { .. }
            );
            let inputs = Inputs {
                input,
                facts,
                console: &console,
                children: &children,
                observation: &observation,
                deployment: &deployment,
                hostname,
            };
            valid = pass.unpaused(&inputs, policy_rendered, spec_changed(input, status));
            // What another exposure kind publishes is not known either.
            if observation
                .entries
                .iter()
                .any(|e| matches!(e.read, Read::Failed(_)))
            {
                pass.unread();
            }
        }
        pass.recover(status, input.paused);

        let mut verdict = VerdictBuilder::new();
        // ExposureReady's may-remain sentences follow the changes asked
        // (what this pass deletes is not left): it is set once they are.
        let exposure_evaluated = pass.exposure.take();
        let configuration_valid = pass
            .configuration
            .as_ref()
            .is_some_and(|c| c.status == ConditionStatus::True);
        for c in [
            pass.configuration.take(),
            pass.workload.take(),
            exposure_evaluated.clone(),
        ]
        .into_iter()
        .flatten()
        {
            verdict.aspect(c);
        }
        if let Some((reason, message)) = &pass.stall {
            verdict.stall(reason, message.clone());
        }

        // Advisory: the instance CA bundle, then the exposure's confinement.
        let ca_bundle = instance_ca_bundle(
            facts,
            &console,
            &children,
            &parent,
            valid.as_ref(),
            &mut pass,
            &mut verdict,
        );
        let pods: Vec<PodFact> = match &deployment {
            Ok(Some(w)) => w.pods.clone(),
            _ => Vec::new(),
        };
        let confined = confinement::evaluate(
            &ConfinementContext {
                namespace: console.namespace,
                name: console.name,
                requested,
                published: exposure::published(&observation),
                network_policy: &network_policy,
                hostname_refused: refusal.is_some(),
                pods: &pods,
                previous_status: status,
            },
            facts,
        );
        // Only a pass that may render depends on the policies read.
        if confined.unread && valid.is_some() {
            pass.unread();
        }
        if let Some(c) = confined.condition {
            verdict.advisory(c);
        }
        // The confinement's fields first: the fields this module owns win.
        for (key, value) in confined.status_fields {
            verdict.field(&key, value);
        }
        match &pass.url {
            Url::Set(url) => {
                verdict.field(exposure::URL_FIELD, Value::String(url.clone()));
            }
            Url::Clear => {
                verdict.field(exposure::URL_FIELD, Value::Null);
            }
            Url::Keep => {}
        }
        verdict.field(
            exposure::PUBLISHED_KINDS_FIELD,
            observation.published_kinds(),
        );

        let changes: Vec<Change> = match (withdrawal, &valid) {
            // Withdrawn whatever else stalls, paused too (seed).
            (Some(withdrawal), _) => withdrawal.deletes,
            // `valid`: unpaused, the hostname allowed, the spec valid.
            (None, Some(valid)) if configuration_valid && !pass.unread => {
                let rendered = render::changes(
                    &Plan {
                        console: &console,
                        children: &children,
                        valid,
                        trust_every_peer: confined.trust_every_peer,
                        policy: &confined.policy,
                        ca_bundle: match (&valid.spec.instance_ca_bundle_ref, &ca_bundle) {
                            (Some(own), _) => CaBundleSource::Reference(own),
                            (None, Some(sources)) => CaBundleSource::Mirror(sources),
                            (None, None) => CaBundleSource::NotMounted,
                        },
                        observation: &observation,
                    },
                    facts,
                );
                if !rendered.unread.is_empty() {
                    pass.retry(read::RETRY_SECONDS);
                }
                rendered.changes
            }
            _ => Vec::new(),
        };
        let may_remain = observation.may_remain(&changes);
        let exposure = match exposure_evaluated {
            Some(exposure) => Some(exposure::with_sentences(exposure, &may_remain)),
            // Not evaluated, but what may remain is said whatever else
            // holds (seed 000): what the operator cannot observe now.
            None if !input.paused && !may_remain.is_empty() => Some(exposure::with_sentences(
                unknown(
                    EXPOSURE_READY,
                    RECONCILING,
                    "not evaluated while ConfigurationValid is not True",
                ),
                &may_remain,
            )),
            None => None,
        };
        if let Some(exposure) = exposure {
            verdict.aspect(exposure);
        }
        if let Some(seconds) = pass.requeue {
            verdict.requeue_after(seconds);
        }
        Reconciliation {
            verdict: verdict.build(),
            changes,
        }
    }
}

/// Whether the spec changed since the pass before: `metadata.generation`
/// is not the `status.observedGeneration` that pass stamped (or none was).
fn spec_changed(input: &Evaluation, status: &Value) -> bool {
    status["observedGeneration"].as_i64() != Some(input.parent.meta.generation)
}

/// What an unpaused pass reads its aspects from.
struct Inputs<'a> {
    input: &'a Evaluation,
    facts: &'a dyn Facts,
    console: &'a Parent<'a>,
    children: &'a Children,
    observation: &'a Observation,
    deployment: &'a Result<Option<WorkloadFact>, ReadError>,
    hostname: Option<&'a str>,
}

/// What one pass decided, before it becomes a verdict.
#[derive(Default)]
struct Pass {
    configuration: Option<Condition>,
    workload: Option<Condition>,
    exposure: Option<Condition>,
    stall: Option<(&'static str, String)>,
    url: Url,
    requeue: Option<u32>,
    /// A read failed: nothing is asked for, and the pass is tried again
    /// soon.
    unread: bool,
}

impl Pass {
    fn retry(&mut self, seconds: u32) {
        self.requeue = Some(self.requeue.map_or(seconds, |s| s.min(seconds)));
    }

    fn unread(&mut self) {
        self.unread = true;
        self.retry(read::RETRY_SECONDS);
    }

    /// HostnameNotAllowed, paused or not: checked first, whatever else
    /// stalls; the message names the image's refusal too, ExposureReady's
    /// what is withdrawn (`withdrawal`).
    fn hostname_refused(
        &mut self,
        input: &Evaluation,
        parent: &Value,
        refusal: &str,
        observation: &Observation,
        console: &Parent,
        withdrawal: &Withdrawal,
    ) {
        let message = match configuration::image_refusal(input, parent) {
            Some((reason, image)) => {
                format!("{refusal}; the image is refused too ({reason}): {image}")
            }
            None => refusal.to_owned(),
        };
        self.configuration = Some(fails(
            CONFIGURATION_VALID,
            HOSTNAME_NOT_ALLOWED,
            message.clone(),
        ));
        self.exposure = Some(fails(
            EXPOSURE_READY,
            HOSTNAME_NOT_ALLOWED,
            format!(
                "{refusal}: {}",
                exposure::withdrawn(
                    observation,
                    console,
                    &withdrawal.withdrawn,
                    &withdrawal.still_there,
                    &withdrawal.unread
                )
            ),
        ));
        if !withdrawal.unread.is_empty() {
            self.retry(read::RETRY_SECONDS);
        }
        self.stall = Some((HOSTNAME_NOT_ALLOWED, message));
        self.url = Url::Clear;
    }

    /// An unpaused pass with an allowed hostname: ConfigurationValid, then
    /// WorkloadReady and ExposureReady on a valid configuration.
    /// `policy_rendered`: the spec renders the ingress NetworkPolicy (whose
    /// recent refusal is ExposurePolicyInvalid); `spec_changed`: since the
    /// pass before.
    fn unpaused(
        &mut self,
        inputs: &Inputs,
        policy_rendered: bool,
        spec_changed: bool,
    ) -> Option<Valid> {
        let Inputs {
            input,
            facts,
            console,
            children,
            observation,
            deployment,
            hostname,
        } = *inputs;
        let refused: Option<PolicyRefusal> = policy_rendered
            .then(|| configuration::policy_refusal(facts, console, children, spec_changed))
            .flatten();
        match configuration::evaluate(
            input,
            facts,
            console,
            children,
            refused.as_ref(),
            policy_rendered,
        ) {
            Ok(valid) => {
                self.configuration = Some(ok(CONFIGURATION_VALID, valid_message(&valid, children)));
                let w = workload::evaluate(
                    facts,
                    console.namespace,
                    &children.workload,
                    deployment,
                    valid
                        .spec
                        .oauth_proxy
                        .as_ref()
                        .map(|p| p.client_secret.as_str()),
                );
                if w.retry {
                    self.unread();
                }
                self.workload = Some(w.condition);
                let e = exposure::decide(observation, hostname);
                if e.retry {
                    self.unread();
                }
                self.exposure = Some(e.condition);
                self.url = e.url;
                Some(valid)
            }
            Err(NotValid::Stalled { reason, message }) => {
                // The refused policy is held back for the rest of its five
                // minutes, then asked for again.
                if let Some(refused) = refused.filter(|_| reason == EXPOSURE_POLICY_INVALID) {
                    self.retry(refused.retry_in);
                }
                self.configuration = Some(fails(CONFIGURATION_VALID, reason, message.clone()));
                self.stall = Some((reason, message));
                None
            }
            Err(NotValid::Unread(message)) => {
                self.configuration = Some(unknown(CONFIGURATION_VALID, RECONCILING, message));
                self.unread();
                None
            }
        }
    }

    /// Once the hostname is allowed, a condition that still says
    /// HostnameNotAllowed is Unknown (Reconciling) for this pass, so no
    /// other stall leaves the old refusal on show; the next pass (soon, or
    /// once unpaused) says what holds now.
    fn recover(&mut self, status: &Value, paused: bool) {
        if self
            .stall
            .as_ref()
            .is_some_and(|(r, _)| *r == HOSTNAME_NOT_ALLOWED)
        {
            return;
        }
        let mut recovered = false;
        for (type_, slot) in [
            (CONFIGURATION_VALID, &mut self.configuration),
            (EXPOSURE_READY, &mut self.exposure),
        ] {
            if recovery::said_hostname_not_allowed(status, type_) {
                *slot = Some(recovery::condition(type_));
                recovered = true;
            }
        }
        if !recovered {
            return;
        }
        if recovery::said_hostname_not_allowed(status, CONFIGURATION_VALID) {
            // ConfigurationValid is not known this pass: no stall either,
            // and the later aspects left out wait for it.
            self.stall = None;
        }
        if recovery::said_hostname_not_allowed(status, EXPOSURE_READY) {
            self.url = Url::Keep;
        }
        if !paused {
            self.retry(RECOVERY_REQUEUE_SECONDS);
        }
    }
}

fn valid_message(valid: &Valid, children: &Children) -> String {
    let proxy = valid
        .proxy_image
        .as_ref()
        .map(|p| format!(", OAuth2 proxy {p}"))
        .unwrap_or_default();
    let exposure = match (valid.spec.exposure.type_, &valid.spec.exposure.hostname) {
        (ExposureType::ClusterIp, _) | (_, None) => "exposure clusterIP".to_owned(),
        (t, Some(h)) => format!("exposure {} {} for {h}", t.as_str(), children.exposure),
    };
    format!(
        "image {}{proxy}; ClusterRoles {}; {exposure}",
        valid.image,
        valid.roles.join(", ")
    )
}

/// InstanceCABundleComplete, present only while the operator mirrors the
/// bundle (`spec.instanceCABundleRef` omitted). Evaluated on a valid
/// configuration; paused, stalled or not known yet, the operator does not
/// touch the bundle, so the previous condition (if any) is given again and
/// `status.instanceCABundle` is left as it is. Returns the CA Secrets the
/// mirror holds, when the console writes it.
fn instance_ca_bundle(
    facts: &dyn Facts,
    console: &Parent,
    children: &Children,
    parent: &Value,
    valid: Option<&Valid>,
    pass: &mut Pass,
    verdict: &mut VerdictBuilder,
) -> Option<Vec<String>> {
    if !parent["spec"]["instanceCABundleRef"].is_null() {
        verdict.field(cabundle::FIELD, Value::Null);
        return None;
    }
    let Some(valid) = valid else {
        if let Some(previous) = cabundle::previous(&parent["status"], INSTANCE_CA_BUNDLE_COMPLETE) {
            verdict.advisory(previous);
        }
        return None;
    };
    let bundle = cabundle::evaluate(
        facts,
        console,
        &children.ca_bundle,
        valid.spec.cluster_selector.as_deref(),
    );
    verdict.advisory(bundle.condition);
    if bundle.retry {
        pass.unread();
        return None;
    }
    verdict.field(cabundle::FIELD, bundle.field);
    bundle.sources
}

reconciler_guest_sdk::export_guest!(PgToolBoxConsole);
