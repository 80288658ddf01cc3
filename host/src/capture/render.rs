//! The captured fixture as YAML: a leading comment saying where it comes from and what was left out, then the name, clock, settings, parent, objects, unavailable APIs and plans, and the expect block of what the live pass produced.

use std::collections::BTreeMap;

use reconciler_conventions::verdict::{Decision, Verdict};
use serde_json::{Map, Value, json};

use super::live::Subject;
use super::plans::RecordedPlans;
use super::select::SelectedReads;
use crate::runtime::{GuestError, Module};

/// What a captured fixture holds.
pub struct CapturedFixture<'a> {
    pub module: &'a Module,
    pub target: &'a Subject,
    pub now: jiff::Timestamp,
    /// The kind's settings, each name once.
    pub settings: &'a BTreeMap<String, String>,
    /// The parent, as the operator's cache holds it.
    pub parent: &'a Value,
    pub selection: &'a SelectedReads,
    /// The parent's plans, as the operator's pass would find them.
    pub plans: &'a RecordedPlans,
    /// How many reads the pass recorded.
    pub reads: usize,
    /// Where the live status differs from the pass, each condition a line
    /// (kept beside the expectation when the capture is accepted so).
    pub live_differences: &'a [String],
}

/// What a capture leaves out of a fixture, one item a line: the fixture's
/// leading comment, and `docs/guests.md`.
pub const LEFT_OUT: &[&str] = &[
    "every Secret's values: its keys are kept with empty values, and its certificates as",
    "  SHA-256 and PEM size only (the host never holds the rest; no fact serves more);",
    "ConfigMap values (kept as SHA-256 digests, as the host's cache keeps them), the values",
    "  of Pods' environment variables, the last-applied annotation, and managedFields but the",
    "  host's own status entry (reduced to the names of what it owns);",
    "every object the pass did not read;",
    "lastApplies: the running host's memory of its own applies (a capture answers as a host",
    "  just started, nothing applied; add a `lastApplies` entry to replay a refused apply);",
    "a parent's plan for other changes than the pass's (the fixture states the kind's gates",
    "  as given, --mode, --approval and --replan-after as `run` takes them, and the parent's",
    "  current plan for the pass's very changes); the capture made none of the changes, and",
    "  wrote no status, no plan and no Event.",
];

/// The fixture's text; `expect` is its expect block (`{}` before the
/// replay has produced one).
pub fn fixture_text(c: &CapturedFixture<'_>, expect: &Value) -> String {
    let kind = c.module.spec().kind_ref();
    let mut out = String::new();
    out.push_str(&format!(
        "# Captured from a live pass: `reconciler-host capture {} {}` at {},\n",
        kind.kind, c.target, c.now
    ));
    out.push_str(&format!(
        "# guest {} (digest {}), {} reads, {} objects read.\n",
        c.module.name(),
        c.module.digest(),
        c.reads,
        c.selection.objects.len()
    ));
    out.push_str(
        "# The parent and every object the pass read, as the operator's cache holds them,\n\
         # with the settings and the clock: `reconciler-host test <guest.wasm> <this file>`\n\
         # replays the pass offline; the golden beside it holds everything it produced.\n\
         # Left out:\n",
    );
    for line in LEFT_OUT {
        out.push_str(&format!("#   {line}\n"));
    }
    if let Some(plan) = &c.plans.left_out {
        out.push_str(&format!("#   {plan}.\n"));
    }
    let field = |key: &str, value: Value| {
        serde_yaml::to_string(&Value::Object(Map::from_iter([(key.to_owned(), value)])))
            .expect("JSON values always render as YAML")
    };
    out.push_str(&field(
        "name",
        Value::String(format!("captured: {} {}", kind.kind, c.target)),
    ));
    out.push_str(&field("now", Value::String(c.now.to_string())));
    out.push_str(&field(
        "settings",
        Value::Object(
            c.settings
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ),
    ));
    out.push_str(&field("parent", c.parent.clone()));
    out.push_str(&field("objects", Value::Array(c.selection.objects.clone())));
    out.push_str(&field(
        "unavailable",
        Value::Array(c.selection.unavailable.clone()),
    ));
    if let Some(plans) = &c.plans.plans {
        out.push_str(&field("plans", plans.clone()));
    }
    out.push_str(
        "# Captured, not written from the seed: what the live pass produced (each aspect's and\n\
         # condition's status and reason, the Events, whether it writes). Check it against the\n\
         # seed before keeping this fixture as a test of what the kind must do.\n",
    );
    if !c.live_differences.is_empty() {
        out.push_str(
            "# The live status differs from this pass (written with --accept-difference):
",
        );
        for line in c.live_differences {
            out.push_str(&format!("#   {line}\n"));
        }
    }
    out.push_str(&field("expect", expect.clone()));
    out
}

/// The expect block of a pass: the verdict's aspects, advisory conditions
/// and stall (or the guest's error class), and from what the pass
/// `produced` (a golden entry) the written conditions, the Events and
/// whether it writes.
pub(crate) fn expect_of(outcome: &Result<Verdict, GuestError>, produced: &Value) -> Value {
    let mut expect = Map::new();
    let by_type = |decisions: &[Decision]| -> Value {
        decisions
            .iter()
            .map(|d| {
                (
                    d.type_.clone(),
                    json!({"status": d.status, "reason": d.reason}),
                )
            })
            .collect::<Map<_, _>>()
            .into()
    };
    match outcome {
        Ok(verdict) => {
            expect.insert("aspects".into(), by_type(&verdict.aspects));
            expect.insert("advisory".into(), by_type(&verdict.advisory));
            expect.insert(
                "stall".into(),
                verdict
                    .stall
                    .as_ref()
                    .map_or(Value::Null, |s| json!({"reason": s.reason})),
            );
        }
        Err(e) => {
            expect.insert("error".into(), json!({"class": e.class.as_str()}));
        }
    }
    let conditions: Map<String, Value> = produced["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some((
                c["type"].as_str()?.to_owned(),
                json!({"status": c["status"], "reason": c["reason"]}),
            ))
        })
        .collect();
    expect.insert("conditions".into(), conditions.into());
    let events: Vec<Value> = produced["events"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| json!({"type": e["type"], "reason": e["reason"]}))
        .collect();
    expect.insert("events".into(), events.into());
    expect.insert("writes".into(), produced["writes"].clone());
    Value::Object(expect)
}

#[cfg(test)]
mod tests {
    use reconciler_conventions::verdict::{ConditionStatus, Stall};

    use super::*;

    #[test]
    fn the_expect_block_says_what_the_pass_produced() {
        let verdict = Verdict {
            aspects: vec![Decision {
                type_: "WorkloadReady".into(),
                status: ConditionStatus::False,
                reason: "CrashLoopBackOff".into(),
                message: "back-off".into(),
            }],
            stall: Some(Stall {
                reason: "ImageNotAllowed".into(),
                message: "m".into(),
            }),
            ..Verdict::default()
        };
        let produced = json!({
            "writes": true,
            "status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "CrashLoopBackOff", "message": "m"}
            ]},
            "events": [{"type": "Warning", "reason": "CrashLoopBackOff", "note": "n"}],
        });
        assert_eq!(
            expect_of(&Ok(verdict), &produced),
            json!({
                "aspects": {"WorkloadReady": {"status": "False", "reason": "CrashLoopBackOff"}},
                "advisory": {},
                "stall": {"reason": "ImageNotAllowed"},
                "conditions": {"Ready": {"status": "False", "reason": "CrashLoopBackOff"}},
                "events": [{"type": "Warning", "reason": "CrashLoopBackOff"}],
                "writes": true,
            })
        );
    }
}
