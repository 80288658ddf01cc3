//! What a pass does of the changes its guest asked for: the withdrawals
//! first, whatever holds the rest (the pause, the gates, a plan, a read
//! that failed: contract 0.5.0), then the other changes through the
//! parent's plan (made, planned or held, as its gates say), with what
//! became of each recorded for `facts.change-state`.

use std::time::Duration;

use kube::core::ApiResource;
use serde_json::Value;
use tracing::Instrument;

use super::effects::Effects;
use super::evaluation::{Evaluation, Evaluations};
use crate::contract::model::Change;
use crate::facts::{ChangeState, Hold};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::cluster::past_cache_reads::Rounds;
use crate::operator::replica::metrics::Metrics;
use crate::operator::write::children::{self, ChildrenError, Made};
use crate::operator::write::plans::withdrawals::{WithdrawalError, Withdrawn};
use crate::operator::write::plans::{PlanError, Planned};
use crate::pass::{self, Failure};
use crate::runtime::Evaluated;
use reconciler_conventions::kind::KindSpec;

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
/// evaluation in `evaluations`, of the pass `evaluation` of a parent of
/// kind `spec`.
pub(crate) async fn carry_out(
    evaluation: &Evaluation<'_>,
    effects: &impl Effects,
    spec: &KindSpec,
    evaluations: &Evaluations,
) -> Carried {
    let registry = evaluation.registry;
    let source = registry.source();
    let parent = &**evaluation.parent;
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
        let (kind, namespace, name) = child_key(change);
        source.record_change(kind, &namespace, &name, ChangeState::Held(Hold::PassFailed));
    }
    let mut refused = None;
    if !evaluated.withdrawals.is_empty() {
        let gates = registry.gates(spec, parent);
        let why = pass::held_by(evaluation.paused, &gates, evaluated.failed_read.as_ref());
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
    if refused.is_some() || carried.withdrawn.failed.is_some() {
        registry
            .metrics()
            .withdrawals_refused
            .get_or_create(&Metrics::kind(&evaluation.kind.resource.kind))
            .inc();
    }
    let made = match refused {
        Some(e) => Some(Err(e)),
        None if evaluated.failed_read.is_none() && carried.plan_error.is_none() => {
            let at = At {
                source,
                effects,
                spec,
                resource: &evaluation.kind.resource,
                parent,
                slot: registry.ring().and_then(|m| m.slot_of(parent)),
            };
            through_plan(&at, evaluated, rounds, &mut carried).await
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

/// The parent whose changes go through its plan, and the effects that
/// carry them.
struct At<'a, E> {
    source: &'a ClusterSource,
    effects: &'a E,
    spec: &'a KindSpec,
    resource: &'a ApiResource,
    parent: &'a Value,
    /// Where a ring's API server selects: the slot its children carry.
    slot: Option<crate::operator::ring::slots::Slot>,
}

/// The changes other than withdrawals, checked, then through the plan:
/// what was made, if the pass made them.
async fn through_plan(
    at: &At<'_, impl Effects>,
    evaluated: &Evaluated,
    rounds: &Rounds,
    carried: &mut Carried,
) -> Option<Result<Made, ChildrenError>> {
    let checked = match children::check(
        at.source,
        rounds.answers(),
        at.resource,
        at.parent,
        &evaluated.changes,
        at.slot,
    ) {
        Err(e) => return Some(Err(e)),
        Ok(checked) => checked,
    };
    match at
        .effects
        .through_plan(at.spec, at.parent, checked)
        .instrument(tracing::info_span!("plan"))
        .await
    {
        Ok(mut planned) => {
            if let Some((hold, held)) = &planned.held {
                let namespace = at.parent["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default();
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
                    let (kind, namespace, name) = child;
                    at.source.record_change(kind, &namespace, &name, state);
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
