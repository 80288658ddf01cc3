//! The pass driver: one pass of one parent, in the operator's order,
//! whatever the world it reads and whatever its effects make. The
//! operator drives it against the cluster ([`super::effects::Cluster`]);
//! `capture`, `shadow` and promotion drive it as a dry run
//! ([`super::dry_run::DryRun`]) on caches held still: what they say a pass
//! does is what this code does.
//!
//! In order: the guest evaluates (reads past the cache in rounds); its
//! withdrawals are made and their Events published; its other changes go
//! through the parent's plan; where what became of them is not what the
//! guest read, it evaluates again; the pass's core settles the status, the
//! Events and when to pass again ([`crate::pass::settle`]). Reporting the
//! settled pass (the status write) is the caller's.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::core::ApiResource;
use reconciler_conventions::engine::Reported;
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;

use super::changes::{self, Carried};
use super::effects::Effects;
use super::evaluation::{Evaluation, Evaluations};
use crate::facts::{Dependency, ObjectSource};
use crate::operator::ring::slots::Slot;
use crate::pass::{self, Happened, Parent, Settled};
use crate::plan::gates::{self, GateError, Gates, KindGates, SchemaFields};
use crate::runtime::Evaluated;

/// What a pass is of: its parent and the module that evaluates it
/// ([`Evaluation`]), the parent's kind, and where its changes go.
pub(crate) struct Pass<'a> {
    pub evaluation: Evaluation<'a>,
    pub spec: &'a KindSpec,
    /// The parent's API resource (its children's owner).
    pub resource: &'a ApiResource,
    /// The host's gates for the kind (`--mode`, `--approval`).
    pub kind_gates: KindGates,
    /// Where a ring's API server selects: the slot its children carry.
    pub slot: Option<Slot>,
}

impl Pass<'_> {
    /// The parent's gates, as its plan resolves them.
    pub(crate) fn gates(&self) -> Result<Gates, GateError> {
        gates::resolve(
            SchemaFields::of(self.spec.spec_schema.as_deref()),
            self.spec.parent_gates,
            self.kind_gates,
            self.evaluation.parent,
        )
    }
}

/// A pass driven: what it evaluated, made and settled on.
pub(crate) struct Driven {
    pub settled: Settled,
    /// What became of its changes (the plan's Events among them; the
    /// withdrawals' are published already).
    pub carried: Carried,
    /// What the guest's last evaluation read and asked for; its outcome is
    /// the one the pass settled on.
    pub evaluated: Evaluated,
    /// What the evaluations before the changes read (what `read` left).
    pub reads: BTreeSet<Dependency>,
    /// The facts the last evaluation read from, held still.
    pub facts: Arc<dyn ObjectSource>,
    /// Where the guest evaluated again after the changes: what that
    /// evaluation read, and whether it asks for other changes (then the
    /// parent passes again).
    pub again: Option<(BTreeSet<Dependency>, bool)>,
    pub guest_time: Duration,
    /// How long the host took gathering (the first evaluations included)
    /// and settling.
    pub host_time: Duration,
}

/// Drives one pass of `pass` through `effects`, from the `previous`
/// status (the part the host owns) and what its passes `reported`.
/// `read` is given what the evaluations read before any change is made
/// (the operator records it then, so that no watch event of what the pass
/// makes is dispatched before the parent is known to depend on it); what
/// it leaves is the pass's `reads`.
pub(crate) async fn drive(
    pass: &Pass<'_>,
    effects: &impl Effects,
    previous: &Status,
    reported: &Reported,
    read: impl FnOnce(&mut BTreeSet<Dependency>),
) -> Driven {
    let started = std::time::Instant::now();
    let evaluation = &pass.evaluation;
    let mut evaluations = evaluation.with_reads(effects).await;
    let mut reads = std::mem::take(&mut evaluations.evaluated.reads);
    read(&mut reads);
    let gathered = started.elapsed();

    let carried = changes::carry_out(pass, effects, &evaluations).await;
    // The withdrawals' Events, as soon as they are made.
    let parent = &**evaluation.parent;
    if !carried.withdrawn.events.is_empty() {
        effects.publish(parent, &carried.withdrawn.events).await;
    }
    let again = evaluation.again_if_moved(effects, &mut evaluations).await;
    let started = std::time::Instant::now();
    let Evaluations {
        evaluated,
        guest_time,
        facts,
        ..
    } = evaluations;
    if let Err(e) = &evaluated.outcome {
        tracing::warn!(error = %e, blame = ?e.blame(), "guest failed");
    }
    let settled = pass::settle(
        &Parent {
            spec: pass.spec,
            generation: parent["metadata"]["generation"].as_i64().unwrap_or(0),
            paused: evaluation.paused,
            previous,
            now: evaluation.now,
            reported,
        },
        Happened {
            plan: carried.plan_failure(),
            changes: carried.changes_failure(evaluation.module.name()),
            outcome: evaluated.outcome.clone(),
            failed_read: evaluated.failed_read.as_ref(),
            withdrew: carried.withdrew,
            plan_facts: carried.planned.facts.as_ref(),
            host_requeue: carried.host_requeue(),
            not_settling: carried.not_settling(),
        },
    );
    Driven {
        settled,
        carried,
        evaluated,
        reads,
        facts,
        again,
        guest_time,
        host_time: gathered + started.elapsed(),
    }
}
