//! The guest's evaluations in one pass, each on a blocking thread: on the
//! cached facts; again with what it wanted read past the cache (at most
//! MAX_READS objects a pass, in as many rounds); and once more when what
//! became of its changes is not what it read.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use crate::facts::snapshot::Snapshot;
use crate::facts::{Dependency, ObjectSource};
use crate::operator::cluster::past_cache_reads::Rounds;
use crate::operator::kinds::{Kind, Registry};
use crate::runtime::{EvaluateRequest, Evaluated, GuestModule};

/// One evaluation of a pass's parent by its guest.
pub struct Evaluation<'a> {
    pub registry: &'a Registry,
    pub kind: &'a Kind,
    pub module: &'a GuestModule,
    pub parent: &'a Arc<Value>,
    pub paused: bool,
    pub now: jiff::Timestamp,
}

/// What a pass's evaluations came to.
pub(crate) struct Evaluations {
    /// The last evaluation (its outcome that of a second one, where what
    /// became of the changes moved).
    pub evaluated: Evaluated,
    /// The world it read, held still for an evaluation again.
    world: Arc<dyn ObjectSource>,
    /// The objects read past the cache, and their answers.
    pub rounds: Rounds,
    /// How long the guest took, every evaluation together.
    pub guest_time: Duration,
}

impl Evaluation<'_> {
    /// Evaluates the parent; objects the cache refused are read past it
    /// after an evaluation that wanted them, and the parent is evaluated
    /// again with them.
    pub(crate) async fn with_reads(&self) -> Evaluations {
        let registry = self.registry;
        let mut rounds = Rounds::default();
        let mut guest_time = Duration::ZERO;
        loop {
            let world: Arc<dyn ObjectSource> =
                Arc::new(Snapshot::new(rounds.source(registry.source())));
            let (evaluated, time) = self.run(world.clone()).await;
            guest_time += time;
            let read = rounds
                .read_wanted(self.kind.writer.client(), registry.source(), &evaluated)
                .instrument(tracing::info_span!("read past the cache"))
                .await;
            if !read {
                return Evaluations {
                    evaluated,
                    world,
                    rounds,
                    guest_time,
                };
            }
        }
    }

    /// The guest read what became of its changes before the pass made
    /// them: where the host's memory now answers otherwise, the parent is
    /// evaluated again on the same world reading what the pass did, and
    /// that verdict is the pass's (its changes are the next pass's).
    /// Returns the reads of that evaluation and whether it wants other
    /// changes (then the parent passes again).
    pub(crate) async fn again_if_moved(
        &self,
        evaluations: &mut Evaluations,
    ) -> Option<(BTreeSet<Dependency>, bool)> {
        let source = self.registry.source();
        let evaluated = &evaluations.evaluated;
        let ((kind, namespace, name), read) =
            evaluated
                .change_states
                .iter()
                .find(|((kind, namespace, name), read)| {
                    source.change_state(kind, namespace, name) != **read
                })?;
        tracing::debug!(
            child = %format_args!("{} {namespace}/{name}", kind.kind),
            ?read,
            now = ?source.change_state(kind, namespace, name),
            "what became of a change is not what the guest read: evaluated again"
        );
        let (second, time) = self.run(evaluations.world.clone()).await;
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
        let settings = self.kind.settings.clone();
        let parent = self.parent.clone();
        let evaluator = self.registry.evaluator().clone();
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
