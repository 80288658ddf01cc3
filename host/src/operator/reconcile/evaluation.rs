//! The guest's evaluations in one pass, each on a blocking thread: on the
//! cached facts of the world the pass reads ([`World`]); again with what it
//! wanted read past the cache (at most MAX_READS objects a pass, in as many
//! rounds); and once more when what became of its changes, as the pass's
//! effects remember it, is not what it read.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use super::effects::Effects;
use crate::facts::snapshot::Snapshot;
use crate::facts::{Dependency, ObjectSource};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::cluster::past_cache_reads::{PastReads, Rounds};
use crate::operator::kinds::evaluator::Evaluator;
use crate::runtime::{EvaluateRequest, Evaluated, Module};

/// The world a pass reads: object caches (the operator's, live; a
/// capture's, held still; a fixture's objects) and what answers the reads
/// past them.
#[derive(Clone, Copy)]
pub(crate) struct World<'a> {
    pub source: &'a Arc<ClusterSource>,
    pub past: PastReads<'a>,
}

/// One evaluation of a pass's parent by its guest.
pub(crate) struct Evaluation<'a> {
    pub world: World<'a>,
    pub evaluator: &'a Arc<dyn Evaluator>,
    pub module: &'a Module,
    pub settings: &'a [(String, String)],
    pub parent: &'a Arc<Value>,
    pub paused: bool,
    pub now: jiff::Timestamp,
}

/// What a pass's evaluations came to.
pub(crate) struct Evaluations {
    /// The last evaluation (its outcome that of a second one, where what
    /// became of the changes moved).
    pub evaluated: Evaluated,
    /// The facts it read, held still for an evaluation again.
    pub facts: Arc<dyn ObjectSource>,
    /// The objects read past the cache, and their answers.
    pub rounds: Rounds,
    /// How long the guest took, every evaluation together.
    pub guest_time: Duration,
}

impl Evaluation<'_> {
    /// Evaluates the parent, `facts.change-state` answered by `effects`;
    /// objects the cache refused are read past it after an evaluation
    /// that wanted them, and the parent is evaluated again with them.
    pub(crate) async fn with_reads(&self, effects: &impl Effects) -> Evaluations {
        let World { source, past } = self.world;
        let mut rounds = Rounds::default();
        let mut guest_time = Duration::ZERO;
        loop {
            let facts: Arc<dyn ObjectSource> =
                Arc::new(Snapshot::new(rounds.source(source), effects.remembered()));
            let (evaluated, time) = self.run(facts.clone()).await;
            guest_time += time;
            let read = rounds
                .read_wanted(past, source, &evaluated)
                .instrument(tracing::info_span!("read past the cache"))
                .await;
            if !read {
                return Evaluations {
                    evaluated,
                    facts,
                    rounds,
                    guest_time,
                };
            }
        }
    }

    /// The guest read what became of its changes before the pass made
    /// them: where `effects` now answer otherwise, the parent is
    /// evaluated again on the same world reading what the pass did, and
    /// that verdict is the pass's (its changes are the next pass's).
    /// Returns the reads of that evaluation and whether it wants other
    /// changes (then the parent passes again).
    pub(crate) async fn again_if_moved(
        &self,
        effects: &impl Effects,
        evaluations: &mut Evaluations,
    ) -> Option<(BTreeSet<Dependency>, bool)> {
        let evaluated = &evaluations.evaluated;
        let (child, read) = evaluated
            .change_states
            .iter()
            .find(|(child, read)| effects.change_state(child) != **read)?;
        let (kind, namespace, name) = child;
        tracing::debug!(
            child = %format_args!("{} {namespace}/{name}", kind.kind),
            ?read,
            now = ?effects.change_state(child),
            "what became of a change is not what the guest read: evaluated again"
        );
        let (second, time) = self.run(evaluations.facts.clone()).await;
        evaluations.guest_time += time;
        let evaluated = &mut evaluations.evaluated;
        let again = second.outcome.is_ok()
            && (second.changes != evaluated.changes || second.withdrawals != evaluated.withdrawals);
        evaluated.outcome = second.outcome;
        Some((second.reads, again))
    }

    /// Evaluates the parent on `source`; how long the guest took.
    async fn run(&self, source: Arc<dyn ObjectSource>) -> (Evaluated, Duration) {
        let module = self.module.clone();
        let settings = self.settings.to_vec();
        let parent = self.parent.clone();
        let evaluator = self.evaluator.clone();
        let (paused, now) = (self.paused, self.now);
        let pass_span = tracing::Span::current();
        let evaluating = tokio::task::spawn_blocking(move || {
            let _evaluating =
                tracing::info_span!(parent: &pass_span, "evaluate", guest = %module.name())
                    .entered();
            let started = std::time::Instant::now();
            let evaluated = evaluator.evaluate(
                &module,
                EvaluateRequest {
                    parent: &parent,
                    paused,
                    settings: &settings,
                    source,
                    now,
                },
            );
            (evaluated, started.elapsed())
        });
        match evaluating.await {
            Ok(evaluated) => evaluated,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: the runtime is shutting down (a deposed leader
            // returns at once, its passes in flight) and refused the
            // evaluation; the runtime drops this pass next, so it waits
            // for that and goes no further.
            Err(_) => std::future::pending().await,
        }
    }
}
