//! A test guest on the kstatus profile (seed 004): a `Beacon` whose
//! `spec.state` says how its one aspect, Serving, stands: `serving` (the
//! default) True; `starting` False with the quiet reason Starting (work in
//! progress: Reconciling True); `broken` False with Broken (a settled
//! failure: Ready False, Reconciling False); `refused` False with
//! SpecRefused and a stall of that reason (Stalled True). While serving,
//! `spec.degraded: true` says Degraded True (PartlyServing): serving, but
//! not as specified. The annotation `testing.reconciler.dev/reconcile:
//! skip` pauses it; a paused pass evaluates nothing and carries Degraded
//! forward as the status has it.

use reconciler_guest_sdk::verdict::{AS_EXPECTED, condition, fails, ok};
use reconciler_guest_sdk::{
    Condition, ConditionStatus, ConventionProfile, Evaluation, Facts, Guest, KindSpec, Verdict,
    VerdictBuilder, spec,
};

/// The kind's group and kind.
pub const GROUP: &str = "testing.reconciler.dev";
pub const KIND: &str = "Beacon";
/// The aspect.
pub const SERVING: &str = "Serving";
/// Seed 004's "serving, but not as specified" (negative polarity).
pub const DEGRADED: &str = "Degraded";
/// Serving False on its way (quiet): Reconciling True.
pub const STARTING: &str = "Starting";
/// Serving False, settled: Ready False, Reconciling False.
pub const BROKEN: &str = "Broken";
/// Serving False and a stall: Stalled True.
pub const SPEC_REFUSED: &str = "SpecRefused";
/// Degraded True.
pub const PARTLY_SERVING: &str = "PartlyServing";

const OWNER: &str = "beacon";

pub struct Beacon;

impl Guest for Beacon {
    fn describe() -> KindSpec {
        KindSpec {
            group: GROUP.into(),
            version: "v1".into(),
            kind: KIND.into(),
            plural: "beacons".into(),
            namespaced: true,
            profile: ConventionProfile::Kstatus,
            aspects: vec![SERVING.into()],
            advisory: vec![DEGRADED.into()],
            reasons: vec![
                spec::owned(
                    OWNER,
                    STARTING,
                    "Serving=False while the beacon starts (quiet: work in progress).",
                ),
                spec::owned(
                    OWNER,
                    BROKEN,
                    "Serving=False: the beacon is down until something changes (settled).",
                ),
                spec::owned(
                    OWNER,
                    SPEC_REFUSED,
                    "Serving=False and a stall: only a spec change helps.",
                ),
                spec::owned(
                    OWNER,
                    PARTLY_SERVING,
                    "Degraded=True: the beacon serves, but not as specified.",
                ),
            ],
            negative_polarity: vec![],
            quiet_reasons: vec![STARTING.into()],
            stalls: vec![spec::stalls(SPEC_REFUSED)],
            reads: vec![],
            pause: spec::pause("testing.reconciler.dev/reconcile", "skip"),
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn evaluate(input: &Evaluation, _facts: &dyn Facts) -> Verdict {
        let mut verdict = VerdictBuilder::new();
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        if input.paused {
            if let Some(degraded) = degraded_as_written(&parent) {
                verdict.advisory(degraded);
            }
            return verdict.build();
        }
        let spec = &parent["spec"];
        match spec["state"].as_str().unwrap_or("serving") {
            "starting" => {
                verdict.aspect(fails(SERVING, STARTING, "The beacon is starting"));
            }
            "broken" => {
                verdict.aspect(fails(
                    SERVING,
                    BROKEN,
                    "The beacon is down (spec.state is broken)",
                ));
            }
            "refused" => {
                let message = "spec.state refused is refused: change the spec";
                verdict.aspect(fails(SERVING, SPEC_REFUSED, message));
                verdict.stall(SPEC_REFUSED, message);
            }
            _ => {
                verdict.aspect(ok(SERVING, "The beacon serves"));
                verdict.advisory(if spec["degraded"] == true {
                    condition(
                        DEGRADED,
                        ConditionStatus::True,
                        PARTLY_SERVING,
                        "The beacon serves, but not as specified (spec.degraded)",
                    )
                } else {
                    condition(
                        DEGRADED,
                        ConditionStatus::False,
                        AS_EXPECTED,
                        "The beacon serves as specified",
                    )
                });
            }
        }
        verdict.build()
    }
}

/// Degraded as the parent's status has it: what a paused pass, which
/// evaluates nothing, gives to carry it forward.
fn degraded_as_written(parent: &serde_json::Value) -> Option<Condition> {
    let written = parent["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == DEGRADED)?;
    let status = match written["status"].as_str()? {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    Some(condition(
        DEGRADED,
        status,
        written["reason"].as_str()?,
        written["message"].as_str().unwrap_or_default(),
    ))
}

reconciler_guest_sdk::export_guest!(Beacon);
