//! The capture's own check: the fixture evaluated offline, as `reconciler-host test` evaluates it, reads, decides and asks for exactly what the live pass did.

use std::sync::Arc;

use crate::fixture::Fixture;
use crate::fixture::format::DEFAULT_NOW;
use crate::fixture::runner::memory_source;
use crate::operator::reconcile::dry_run::DryPass;
use crate::runtime::{EvaluateRequest, Evaluated, GuestError, Module};
use reconciler_conventions::verdict::Verdict;

/// The fixture's pass evaluated through `module` from its own objects.
pub fn evaluate(module: &Module, fixture: &Fixture) -> Evaluated {
    let settings: Vec<(String, String)> = fixture
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let source = memory_source(
        &fixture.objects,
        &fixture.unavailable,
        &fixture.last_applies,
    );
    module.evaluate(EvaluateRequest {
        parent: &fixture.parent,
        paused: module.spec().is_paused(&fixture.parent),
        settings: &settings,
        source: Arc::new(source),
        now: fixture
            .now
            .unwrap_or_else(|| DEFAULT_NOW.parse().expect("a valid default clock")),
    })
}

/// Every way the fixture's replay differs from the live pass `live`:
/// what its first evaluation read, failed to read and asked for beside
/// `replayed` (the fixture's first evaluation), and the verdict the pass
/// settled on beside `settled` (the fixture's).
pub(crate) fn differences(
    live: &DryPass,
    replayed: &Evaluated,
    settled: &Result<Verdict, GuestError>,
) -> Vec<String> {
    let mut out = Vec::new();
    for read in live.first_reads.difference(&replayed.reads) {
        out.push(format!("read live, not in the replay: {read}"));
    }
    for read in replayed.reads.difference(&live.first_reads) {
        out.push(format!("read in the replay, not live: {read}"));
    }
    let live_evaluated = &live.evaluated;
    match (&live_evaluated.outcome, settled) {
        (Ok(a), Ok(b)) if a == b => {}
        (Ok(a), Ok(b)) => out.push(format!(
            "the verdict differs: live {}, replayed {}",
            serde_json::to_string(a).unwrap_or_default(),
            serde_json::to_string(b).unwrap_or_default()
        )),
        (Err(a), Err(b)) if a.to_string() == b.to_string() => {}
        (a, b) => out.push(format!(
            "the outcome differs: live {}, replayed {}",
            describe(a),
            describe(b)
        )),
    }
    if live_evaluated.failed_read != replayed.failed_read {
        out.push(format!(
            "the failed read differs: live {:?}, replayed {:?}",
            live_evaluated.failed_read.as_ref().map(ToString::to_string),
            replayed.failed_read.as_ref().map(ToString::to_string)
        ));
    }
    if live_evaluated.changes != replayed.changes {
        out.push(format!(
            "the changes differ: live {:?}, replayed {:?}",
            live_evaluated.changes, replayed.changes
        ));
    }
    if live_evaluated.withdrawals != replayed.withdrawals {
        out.push(format!(
            "the withdrawals differ: live {:?}, replayed {:?}",
            live_evaluated.withdrawals, replayed.withdrawals
        ));
    }
    out
}

fn describe<T>(outcome: &Result<T, crate::runtime::GuestError>) -> String {
    match outcome {
        Ok(_) => "a verdict".to_owned(),
        Err(e) => format!("the error {e}"),
    }
}
