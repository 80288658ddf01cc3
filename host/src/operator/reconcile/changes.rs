//! What a pass does of the changes its guest asked for: the withdrawals
//! first, whatever holds the rest (the pause, the gates, a plan, a read
//! that failed: contract 0.5.0), then the other changes through the
//! parent's plan (made, planned or held, as its gates say), with what
//! became of each recorded for `facts.change-state`.

use std::time::Duration;

use tracing::Instrument;

use super::driver::Pass;
use super::effects::Effects;
use super::evaluation::Evaluations;
use crate::contract::model::Change;
use crate::facts::{ChangeState, Hold};
use crate::operator::cluster::past_cache_reads::Rounds;
use crate::operator::write::children::{self, ChildrenError, Made};
use crate::operator::write::plans::withdrawals::{WithdrawalError, Withdrawn};
use crate::operator::write::plans::{PlanError, Planned};
use crate::pass::{self, Failure};
use crate::plan::digest::Mode;
use crate::plan::gates::Approval;
use crate::runtime::Evaluated;

/// How soon after deleting an object read past the cache its parent
/// passes again, to observe what no watch reports.
const OBSERVE_UNWATCHED_AFTER: Duration = Duration::from_secs(1);

/// What became of a pass's changes.
#[derive(Default)]
pub(crate) struct Carried {
    pub withdrawn: Withdrawn,
    /// The withdrawals were made or tried.
    pub withdrew: bool,
    pub planned: Planned,
    /// The changes made, where the pass made them.
    pub made: Option<Result<Made, ChildrenError>>,
    /// The plan could not be made or moved (or the withdrawals recorded).
    pub plan_error: Option<PlanError>,
    /// Changes held back for not settling (docs/design.md "Every change
    /// settles"): what the stall says of each.
    pub not_settling: Vec<String>,
}

impl Carried {
    /// When the changes ask to pass again: a serving certificate made or
    /// kept, when it is due for renewal; an object deleted past the cache
    /// (no watch event comes), soon after to observe it gone; a plan's
    /// hold, when it ends.
    pub(crate) fn host_requeue(&self) -> Vec<Duration> {
        let made = self.made.as_ref().and_then(|m| m.as_ref().ok());
        let deleted_unwatched =
            made.map_or(0, |m| m.deleted_unwatched) + self.withdrawn.made.deleted_unwatched;
        made.and_then(|m| m.renew_after)
            .into_iter()
            .chain((deleted_unwatched > 0).then_some(OBSERVE_UNWATCHED_AFTER))
            .chain(self.planned.requeue_after)
            .collect()
    }

    /// The host's stall, where a change does not settle: held back by
    /// the check, or made a second time in a row by this pass.
    pub(crate) fn not_settling(&self) -> Option<String> {
        let made = self.made.as_ref().and_then(|m| m.as_ref().ok());
        self.not_settling
            .iter()
            .chain(made.into_iter().flat_map(|m| &m.not_settling))
            .next()
            .cloned()
    }

    /// The plan's failure, as the pass's core settles it.
    pub(crate) fn plan_failure(&self) -> Option<Failure> {
        self.plan_error.as_ref().map(|e| Failure {
            class: e.class(),
            text: e.to_string(),
            guest: false,
        })
    }

    /// The changes' failure, as the pass's core settles it: a change the
    /// contract refuses is the guest's (`guest <name>: ...`).
    pub(crate) fn changes_failure(&self, guest: &str) -> Option<Failure> {
        let Some(Err(e)) = &self.made else {
            return None;
        };
        let refused = matches!(e, ChildrenError::Refused { .. });
        Some(Failure {
            class: e.class(),
            text: if refused {
                format!("guest {guest}: {e}")
            } else {
                e.to_string()
            },
            guest: refused,
        })
    }
}

/// Carries out, through `effects`, the changes of the guest's last
/// evaluation in `evaluations`, of the pass `pass`.
pub(crate) async fn carry_out(
    pass: &Pass<'_>,
    effects: &impl Effects,
    evaluations: &Evaluations,
) -> Carried {
    let (spec, parent) = (pass.spec, &**pass.evaluation.parent);
    let (evaluated, rounds) = (&evaluations.evaluated, &evaluations.rounds);
    let namespace = parent["metadata"]["namespace"].as_str().unwrap_or_default();
    let child_key = |c: &Change| (c.kind(), namespace.to_owned(), c.name().to_owned());
    let mut carried = Carried::default();
    // A record of withdrawals a stopped host left Applying is ended first.
    effects.finish_interrupted(spec, parent).await;
    if evaluated.outcome.is_err() {
        return carried;
    }
    // Until the pass makes them, the guest's changes are not made
    // (`facts.change-state`): what stops the pass before them holds them.
    for change in &evaluated.changes {
        effects.record_change(child_key(change), ChangeState::Held(Hold::PassFailed));
    }
    let mut refused = None;
    if !evaluated.withdrawals.is_empty() {
        let why = pass::held_by(
            pass.evaluation.paused,
            &pass.gates(),
            evaluated.failed_read.as_ref(),
        );
        match effects
            .withdraw(spec, parent, rounds.answers(), &evaluated.withdrawals, &why)
            .instrument(tracing::info_span!("withdraw"))
            .await
        {
            Ok(w) => {
                carried.withdrawn = w;
                carried.withdrew = true;
            }
            Err(WithdrawalError::Refused(e)) => refused = Some(e),
            Err(WithdrawalError::Record(e, w)) => {
                match &w.failed {
                    None => {
                        tracing::warn!(error = %e, "the withdrawals were made, but not recorded")
                    }
                    Some(_) => tracing::warn!(
                        error = %e,
                        "the withdrawals were tried (the failure follows), and not recorded"
                    ),
                }
                carried.withdrawn = w;
                carried.withdrew = true;
                carried.plan_error = Some(*e);
            }
        }
    }
    let made = match refused {
        Some(e) => Some(Err(e)),
        None if evaluated.failed_read.is_none() && carried.plan_error.is_none() => {
            through_plan(pass, effects, evaluated, rounds, &mut carried).await
        }
        None => None,
    };
    // A withdrawal the API server refused fails the pass as a change
    // would, once the rest is done.
    carried.made = match (carried.withdrawn.failed.take(), made) {
        (Some(e), None | Some(Ok(_))) => Some(Err(e)),
        (_, made) => made,
    };
    match &carried.made {
        Some(Ok(made)) if *made != Made::default() => tracing::debug!(?made, "children made"),
        Some(Err(e)) => tracing::warn!(error = %e, "children not made"),
        _ => {}
    }
    carried
}

/// Whether a reviewer approves each of the pass's changes (approval
/// manual): a change an approved plan made that did not settle is not
/// planned again.
fn reviewed(pass: &Pass<'_>) -> bool {
    pass.gates()
        .is_ok_and(|g| g.mode == Mode::Apply && g.approval == Approval::Manual)
}

/// The changes other than withdrawals, checked, then through the plan:
/// what was made, if the pass made them.
async fn through_plan(
    pass: &Pass<'_>,
    effects: &impl Effects,
    evaluated: &Evaluated,
    rounds: &Rounds,
    carried: &mut Carried,
) -> Option<Result<Made, ChildrenError>> {
    let parent = &**pass.evaluation.parent;
    let checked = match children::check(
        pass.evaluation.world.source,
        rounds.answers(),
        pass.resource,
        parent,
        &evaluated.changes,
        pass.slot,
    ) {
        Err(e) => return Some(Err(e)),
        Ok(checked) if reviewed(pass) => checked.under_review(),
        Ok(checked) => checked,
    };
    carried.not_settling = checked.not_settling();
    match effects
        .through_plan(pass.spec, parent, checked)
        .instrument(tracing::info_span!("plan"))
        .await
    {
        Ok(mut planned) => {
            if let Some((hold, held)) = &planned.held {
                let namespace = parent["metadata"]["namespace"].as_str().unwrap_or_default();
                for change in &evaluated.changes {
                    let child = (
                        change.kind(),
                        namespace.to_owned(),
                        change.name().to_owned(),
                    );
                    let state = if held.contains(&child) {
                        ChangeState::Held(*hold)
                    } else {
                        ChangeState::Made
                    };
                    effects.record_change(child, state);
                }
            }
            let made = planned.made.take();
            carried.planned = planned;
            made
        }
        Err(e) => {
            if e.class().is_some() {
                tracing::warn!(error = %e, "the plan was not made");
            } else {
                tracing::debug!(error = %e, "the plan changed meanwhile; passing again");
            }
            carried.plan_error = Some(e);
            None
        }
    }
}
