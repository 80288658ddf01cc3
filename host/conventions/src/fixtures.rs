//! Kind specs and builders the crate's tests share: a PgToolBoxConsole
//! (profile `progressing`) and a kstatus kind with Degraded.

use crate::kind::{KindSpec, PauseAnnotation, Profile, ReasonEntry, StallRule};
use crate::status::Status;
use crate::verdict::{ConditionStatus, Decision as Fact, EventType, KindEvent, Stall, Verdict};

use crate::engine::{ErrorClass, Input, Outcome, Output, Reported, decide};

fn reasons(owner: &str, names: &[&str]) -> Vec<ReasonEntry> {
    names
        .iter()
        .map(|n| ReasonEntry {
            name: (*n).to_owned(),
            owner: owner.to_owned(),
            meaning: format!("{n} (test)"),
        })
        .collect()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// PgToolBoxConsole as seed 000 describes it.
pub(crate) fn console() -> KindSpec {
    let mut registry = reasons(
        "common",
        &[
            "ResourceNotOwned",
            "SecretNotFound",
            "SecretKeyMissing",
            "ConfigMapNotFound",
            "RolloutInProgress",
            "RolloutStuck",
            "PodUnschedulable",
            "ImagePullFailed",
            "CrashLoopBackOff",
            "ReplicaFailure",
            "PodNotReady",
            "NotRequested",
            "NotAdmitted",
            "NotAccepted",
            "RouteAPIUnavailable",
            "GatewayAPIUnavailable",
            "ImageNotAllowed",
            "HostnameNotAllowed",
        ],
    );
    registry.extend(reasons(
        "console",
        &[
            "ConsoleImageRequired",
            "ConsoleRoleMissing",
            "InstanceCAMissing",
            "ExposureOpen",
            "ExposurePolicyKept",
            "ExposurePolicyInvalid",
            "RolloutStarted",
        ],
    ));
    KindSpec {
        group: "pgtoolbox.fyannk.dev".to_owned(),
        version: "v1alpha1".to_owned(),
        kind: "PgToolBoxConsole".to_owned(),
        plural: "pgtoolboxconsoles".to_owned(),
        namespaced: true,
        profile: Profile::Progressing,
        aspects: strings(&["ConfigurationValid", "WorkloadReady", "ExposureReady"]),
        advisory: strings(&["InstanceCABundleComplete", "ExposureConfined"]),
        reasons: registry,
        negative_polarity: Vec::new(),
        quiet_reasons: Vec::new(),
        stalls: vec![
            stall_rule("ConsoleImageRequired", None),
            stall_rule("ImageNotAllowed", None),
            stall_rule("HostnameNotAllowed", None),
            stall_rule("ConsoleRoleMissing", Some(120)),
            stall_rule("SecretNotFound", None),
            stall_rule("ConfigMapNotFound", Some(120)),
            stall_rule("ExposurePolicyInvalid", Some(300)),
            stall_rule("ResourceNotOwned", None),
        ],
        reads: Vec::new(),
        pause: Some(PauseAnnotation {
            key: "pgtoolbox.fyannk.dev/reconcile".to_owned(),
            value: "skip".to_owned(),
        }),
        spec_schema: None,
        printer_columns: vec![],
        writes: vec![],
        parent_gates: Default::default(),
    }
}

/// A kstatus kind (seed 004): two aspects, Degraded advisory (negative),
/// ContentDrift advisory declared negative, one quiet reason.
pub(crate) fn registry_kind() -> KindSpec {
    KindSpec {
        group: "omnia.example".to_owned(),
        version: "v1alpha1".to_owned(),
        kind: "ToolRegistry".to_owned(),
        plural: "toolregistries".to_owned(),
        namespaced: true,
        profile: Profile::Kstatus,
        aspects: strings(&["SourceValid", "ToolsDiscovered"]),
        advisory: strings(&["Degraded", "ContentDrift"]),
        reasons: reasons(
            "registry",
            &[
                "SourceInvalid",
                "SourceNotFound",
                "DiscoveryRunning",
                "DiscoveryFailed",
                "ToolsMissing",
                "DigestMismatch",
                "ToolsDiscoveredEvent",
            ],
        ),
        negative_polarity: strings(&["ContentDrift"]),
        quiet_reasons: strings(&["DiscoveryRunning"]),
        stalls: vec![stall_rule("SourceInvalid", Some(60))],
        reads: Vec::new(),
        pause: None,
        spec_schema: None,
        printer_columns: vec![],
        writes: vec![],
        parent_gates: Default::default(),
    }
}

pub(crate) fn stall_rule(reason: &str, recheck_seconds: Option<u32>) -> StallRule {
    StallRule {
        reason: reason.to_owned(),
        recheck_seconds,
    }
}

pub(crate) fn t(seconds: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_767_225_600 + seconds).expect("a valid test time")
}

pub(crate) fn cond(type_: &str, status: ConditionStatus, reason: &str, message: &str) -> Fact {
    Fact {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

pub(crate) fn ok(type_: &str) -> Fact {
    cond(type_, ConditionStatus::True, "AsExpected", "")
}

pub(crate) fn bad(type_: &str, reason: &str, message: &str) -> Fact {
    cond(type_, ConditionStatus::False, reason, message)
}

pub(crate) fn unknown(type_: &str, reason: &str) -> Fact {
    cond(type_, ConditionStatus::Unknown, reason, "")
}

pub(crate) fn verdict(aspects: Vec<Fact>) -> Verdict {
    Verdict {
        aspects,
        ..Verdict::default()
    }
}

/// Every aspect of the spec True.
pub(crate) fn all_ok(spec: &KindSpec) -> Verdict {
    verdict(spec.aspects.iter().map(|a| ok(a)).collect())
}

pub(crate) fn stall(reason: &str, message: &str) -> Option<Stall> {
    Some(Stall {
        reason: reason.to_owned(),
        message: message.to_owned(),
    })
}

pub(crate) fn kind_event(type_: EventType, reason: &str, message: &str) -> KindEvent {
    KindEvent {
        type_,
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

/// One pass.
#[derive(Clone, Copy)]
pub(crate) struct Pass<'a> {
    pub spec: &'a KindSpec,
    pub generation: i64,
    pub paused: bool,
    pub now: jiff::Timestamp,
    /// What earlier passes reported; none when not given.
    pub reported: Option<&'a Reported>,
}

impl<'a> Pass<'a> {
    pub(crate) fn new(spec: &'a KindSpec) -> Pass<'a> {
        Pass {
            spec,
            generation: 1,
            paused: false,
            now: t(0),
            reported: None,
        }
    }

    /// The pass follows passes that reported `reported`.
    pub(crate) fn after(self, reported: &'a Reported) -> Pass<'a> {
        Pass {
            reported: Some(reported),
            ..self
        }
    }

    pub(crate) fn at(self, seconds: i64) -> Pass<'a> {
        Pass {
            now: t(seconds),
            ..self
        }
    }

    pub(crate) fn generation(self, generation: i64) -> Pass<'a> {
        Pass { generation, ..self }
    }

    pub(crate) fn paused(self) -> Pass<'a> {
        Pass {
            paused: true,
            ..self
        }
    }

    pub(crate) fn outcome(&self, previous: &Status, outcome: Outcome) -> Output {
        let none = Reported::default();
        decide(Input {
            spec: self.spec,
            generation: self.generation,
            paused: self.paused,
            previous,
            now: self.now,
            outcome,
            reported: self.reported.unwrap_or(&none),
        })
    }

    pub(crate) fn verdict(&self, previous: &Status, verdict: Verdict) -> Output {
        self.outcome(previous, Outcome::Verdict(verdict))
    }

    pub(crate) fn error(&self, previous: &Status, class: ErrorClass, text: &str) -> Output {
        self.outcome(
            previous,
            Outcome::Error {
                class,
                text: text.to_owned(),
            },
        )
    }
}
