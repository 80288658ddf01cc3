//! The PgToolBoxConsole guest: ConfigurationValid, WorkloadReady and ExposureReady of a console, with the advisory ExposureConfined and InstanceCABundleComplete.

pub mod cabundle;
pub mod children;
pub mod configuration;
pub mod confinement;
pub mod exposure;
pub mod hostname;
pub mod image;
pub mod recovery;
pub mod registry;
pub mod spec;
pub mod workload;

use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::read;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Condition, Evaluation, Facts, Guest, KindSpec, PodFact, Verdict, VerdictBuilder,
};
use serde_json::Value;

use children::Children;
use configuration::{NotValid, Valid};
use confinement::ConfinementContext;
use exposure::{Observation, Url};
use registry::*;
use spec::ExposureType;

pub struct PgToolBoxConsole;

/// How soon the pass after a HostnameNotAllowed recovery runs: the
/// conditions that said it are Unknown until then.
pub const RECOVERY_REQUEUE_SECONDS: u32 = 1;

impl Guest for PgToolBoxConsole {
    fn describe() -> KindSpec {
        registry::describe()
    }

    /// The hostname is checked first, paused or not: a refused one stalls
    /// the console (ConfigurationValid and ExposureReady False with
    /// HostnameNotAllowed, `status.url` cleared). Otherwise a paused pass
    /// gives only the recovery of conditions that still say
    /// HostnameNotAllowed and the advisory conditions; an unpaused one
    /// decides ConfigurationValid, then the later aspects on a valid
    /// configuration. See the README for every decision.
    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        let parent = input.parent_json();
        let status = &parent["status"];
        let console = Parent::of(KIND, &input.parent.meta);
        let children = Children::of(console.name);
        let hostname = hostname::requested(&parent);
        let refusal = hostname.and_then(|h| {
            hostname::check(h, &input.setting_list(hostname::ALLOWED_HOST_SUFFIXES)).err()
        });
        let requested = ExposureType::of(&parent).and_then(ExposureType::kind);
        let observation = exposure::observe(
            facts,
            console.namespace,
            &children.exposure,
            requested,
            status,
        );
        let deployment = facts.workload(console.namespace, &children.workload);

        let mut pass = Pass::default();
        let mut valid: Option<Valid> = None;
        if let Some(refusal) = &refusal {
            pass.hostname_refused(input, &parent, refusal, &observation);
        } else if !input.paused {
            valid = pass.unpaused(
                input,
                facts,
                &console,
                &children,
                &observation,
                &deployment,
                hostname,
            );
        }
        pass.recover(status, input.paused);

        let mut verdict = VerdictBuilder::new();
        if let Some(exposure) = pass.exposure.take() {
            pass.exposure = Some(exposure::with_sentences(
                exposure,
                &observation.may_remain(),
            ));
        }
        for c in [
            pass.configuration.take(),
            pass.workload.take(),
            pass.exposure.take(),
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
        instance_ca_bundle(
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
        let network_policy = parent["spec"]["exposure"]["networkPolicy"].clone();
        let confined = confinement::evaluate(
            &ConfinementContext {
                namespace: console.namespace,
                name: console.name,
                requested,
                published: observation.published(),
                network_policy: &network_policy,
                hostname_refused: refusal.is_some(),
                pods: &pods,
                previous_status: status,
            },
            facts,
        );
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
        if let Some(seconds) = pass.requeue {
            verdict.requeue_after(seconds);
        }
        verdict.build()
    }
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
}

impl Pass {
    fn retry(&mut self, seconds: u32) {
        self.requeue = Some(self.requeue.map_or(seconds, |s| s.min(seconds)));
    }

    /// HostnameNotAllowed, paused or not: checked first, whatever else
    /// stalls; the message names the image's refusal too.
    fn hostname_refused(
        &mut self,
        input: &Evaluation,
        parent: &Value,
        refusal: &str,
        observation: &Observation,
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
            format!("{refusal}: {}", observation.withdrawn()),
        ));
        self.stall = Some((HOSTNAME_NOT_ALLOWED, message));
        self.url = Url::Clear;
        if !input.paused {
            self.workload = Some(not_evaluated(
                WORKLOAD_READY,
                "ConfigurationValid is False (HostnameNotAllowed); the workload stays as it was",
            ));
        }
    }

    /// An unpaused pass with an allowed hostname: ConfigurationValid, then
    /// WorkloadReady and ExposureReady on a valid configuration.
    #[allow(clippy::too_many_arguments)]
    fn unpaused(
        &mut self,
        input: &Evaluation,
        facts: &dyn Facts,
        console: &Parent,
        children: &Children,
        observation: &Observation,
        deployment: &Result<
            Option<reconciler_guest_sdk::WorkloadFact>,
            reconciler_guest_sdk::ReadError,
        >,
        hostname: Option<&str>,
    ) -> Option<Valid> {
        match configuration::evaluate(input, facts, console, children) {
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
                    self.retry(read::RETRY_SECONDS);
                }
                self.workload = Some(w.condition);
                let e = exposure::decide(observation, hostname);
                if e.retry {
                    self.retry(read::RETRY_SECONDS);
                }
                self.exposure = Some(e.condition);
                self.url = e.url;
                Some(valid)
            }
            Err(NotValid::Stalled { reason, message }) => {
                self.configuration = Some(fails(CONFIGURATION_VALID, reason, message.clone()));
                self.stall = Some((reason, message));
                let why = format!("ConfigurationValid is False ({reason})");
                self.workload = Some(not_evaluated(WORKLOAD_READY, &why));
                self.exposure = Some(not_evaluated(EXPOSURE_READY, &why));
                None
            }
            Err(NotValid::Unread(message)) => {
                self.configuration = Some(unknown(CONFIGURATION_VALID, RECONCILING, message));
                self.retry(read::RETRY_SECONDS);
                let why = "ConfigurationValid is not known yet";
                self.workload = Some(not_evaluated(WORKLOAD_READY, why));
                self.exposure = Some(not_evaluated(EXPOSURE_READY, why));
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
            // and the later aspects wait for it.
            self.stall = None;
            if self
                .workload
                .as_ref()
                .is_some_and(|w| w.message.starts_with(NOT_EVALUATED))
            {
                self.workload = Some(not_evaluated(
                    WORKLOAD_READY,
                    "ConfigurationValid is not known yet",
                ));
            }
        }
        if recovery::said_hostname_not_allowed(status, EXPOSURE_READY) {
            self.url = Url::Keep;
        }
        if !paused {
            self.retry(RECOVERY_REQUEUE_SECONDS);
        }
    }
}

const NOT_EVALUATED: &str = "not evaluated while ";

fn not_evaluated(type_: &str, why: &str) -> Condition {
    unknown(type_, RECONCILING, format!("{NOT_EVALUATED}{why}"))
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
/// `status.instanceCABundle` is left as it is.
fn instance_ca_bundle(
    facts: &dyn Facts,
    console: &Parent,
    children: &Children,
    parent: &Value,
    valid: Option<&Valid>,
    pass: &mut Pass,
    verdict: &mut VerdictBuilder,
) {
    if !parent["spec"]["instanceCABundleRef"].is_null() {
        verdict.field(cabundle::FIELD, Value::Null);
        return;
    }
    let Some(valid) = valid else {
        if let Some(previous) = cabundle::previous(&parent["status"], INSTANCE_CA_BUNDLE_COMPLETE) {
            verdict.advisory(previous);
        }
        return;
    };
    let bundle = cabundle::evaluate(
        facts,
        console,
        &children.ca_bundle,
        valid.spec.cluster_selector.as_deref(),
    );
    if bundle.retry {
        pass.retry(read::RETRY_SECONDS);
        verdict.advisory(bundle.condition);
        return;
    }
    verdict.advisory(bundle.condition);
    verdict.field(cabundle::FIELD, bundle.field);
}

reconciler_guest_sdk::export_guest!(PgToolBoxConsole);
