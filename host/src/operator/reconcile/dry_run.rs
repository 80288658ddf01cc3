//! A dry run of a pass's effects ([`DryRun`]): nothing is made, written or
//! published; each effect is answered as the operator would find it now. A
//! change whose object already is what the guest asks (the comparison the
//! host skips an apply on) is made; one the parent's gates or plan would
//! hold is held as they say; the rest would be applied, and are answered
//! made. `facts.change-state` is answered from what the dry run made, never
//! from what this process applied before: `capture`, `shadow` and a
//! promotion's shadow see what a host just started would see, and the
//! guest's second evaluation reads what the operator's would.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::core::ApiResource;
use reconciler_conventions::engine::{Event, Reported};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::Value;

use super::driver::{self, Pass};
use super::effects::Effects;
use super::owned_status;
use crate::contract::model::{Change, Withdrawal};
use crate::facts::past_cache::PastCache;
use crate::facts::source::{ChangeStates, ChildKey};
use crate::facts::{ChangeState, Dependency, ObjectSource};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::write::authority::Authority;
use crate::operator::write::children::{self, Checked, Made};
use crate::operator::write::plans::withdrawals::{WithdrawalError, Withdrawn};
use crate::operator::write::plans::{PlanError, Planned, parent_plans, plans_served};
use crate::pass::Settled;
use crate::plan::accepted::{self, Playing};
use crate::plan::digest::Target;
use crate::plan::gates::{self, KindGates, SchemaFields};
use crate::plan::played::Unavailable;
use crate::runtime::Evaluated;

/// The effects of a pass made nothing of, for a parent of the kind
/// `resource` read from `source`.
pub(crate) struct DryRun<'a> {
    source: &'a ClusterSource,
    resource: &'a ApiResource,
    /// The operator's CA, to tell whether a certificate is still good;
    /// without one, a certificate's Secret that is there is.
    authority: Option<&'a Authority>,
    kind_gates: KindGates,
    /// The cluster's identity, as the operator's plans bind it.
    cluster: &'a str,
    replan_after: Duration,
    now: jiff::Timestamp,
    states: Arc<Memory>,
    published: Mutex<Vec<Event>>,
}

/// Where a dry run is made: the world's caches, the parent's kind, and
/// the host's settings for its changes.
pub(crate) struct Setting<'a> {
    pub source: &'a ClusterSource,
    pub resource: &'a ApiResource,
    pub authority: Option<&'a Authority>,
    pub kind_gates: KindGates,
    pub cluster: &'a str,
    pub replan_after: Duration,
}

impl<'a> DryRun<'a> {
    pub(crate) fn new(setting: &Setting<'a>, now: jiff::Timestamp) -> Self {
        DryRun {
            source: setting.source,
            resource: setting.resource,
            authority: setting.authority,
            kind_gates: setting.kind_gates,
            cluster: setting.cluster,
            replan_after: setting.replan_after,
            now,
            states: Arc::default(),
            published: Mutex::new(Vec::new()),
        }
    }

    fn pending(&self, checked: &Checked<'_>) -> Vec<Change> {
        match self.authority {
            Some(authority) => checked.pending(authority, self.now),
            None => checked.pending_offline(),
        }
    }
}

impl Effects for DryRun<'_> {
    fn remembered(&self) -> Option<Arc<dyn ChangeStates>> {
        Some(self.states.clone())
    }

    fn change_state(&self, child: &ChildKey) -> Option<ChangeState> {
        self.states.change_state(child)
    }

    fn record_change(&self, child: ChildKey, state: ChangeState) {
        self.states
            .0
            .lock()
            .expect("states lock")
            .insert(child, state);
    }

    /// A record a stopped host left Applying is the operator's to end; the
    /// pass's status does not read it.
    async fn finish_interrupted(&self, _: &KindSpec, _: &Value) {}

    async fn withdraw(
        &self,
        _: &KindSpec,
        parent: &Value,
        past_cache: &PastCache,
        withdrawals: &[Withdrawal],
        _: &str,
    ) -> Result<Withdrawn, WithdrawalError> {
        let deletions: Vec<Change> = withdrawals.iter().map(Withdrawal::deletion).collect();
        children::check(
            self.source,
            past_cache,
            self.resource,
            parent,
            &deletions,
            None,
        )
        .map_err(WithdrawalError::Refused)?;
        let namespace = parent["metadata"]["namespace"].as_str().unwrap_or_default();
        let mut out = Withdrawn::default();
        for (withdrawal, deletion) in withdrawals.iter().zip(&deletions) {
            let one = std::slice::from_ref(deletion);
            let checked =
                children::check(self.source, past_cache, self.resource, parent, one, None)
                    .map_err(WithdrawalError::Refused)?;
            if !self.pending(&checked).is_empty() {
                out.made.deleted += 1;
                out.events.extend(withdrawal.gone_event());
            }
            self.record_change(
                (
                    deletion.kind(),
                    namespace.to_owned(),
                    deletion.name().to_owned(),
                ),
                ChangeState::Withdrawn,
            );
        }
        Ok(out)
    }

    async fn through_plan(
        &self,
        spec: &KindSpec,
        parent: &Value,
        checked: Checked<'_>,
    ) -> Result<Planned, PlanError> {
        let gates = gates::resolve(
            SchemaFields::of(spec.spec_schema.as_deref()),
            spec.parent_gates,
            self.kind_gates,
            parent,
        )?;
        let md = &parent["metadata"];
        let namespace = md["namespace"].as_str().unwrap_or_default();
        let uid = md["uid"].as_str().unwrap_or_default();
        let pending = self.pending(&checked);
        let plans =
            plans_served(self.source, namespace).then(|| parent_plans(self.source, namespace, uid));
        let target = Target {
            cluster: self.cluster.to_owned(),
            parent: uid.to_owned(),
        };
        // The operator names a plan `<parent>-<5 random characters>`; a
        // dry run, `<parent>-plan`, so what it says stays still.
        let plan_name = format!("{}-plan", md["name"].as_str().unwrap_or_default());
        let now = self.now;
        let played = accepted::play(&Playing {
            plans: plans.as_deref(),
            gates,
            pending: &pending,
            target: &target,
            plan_name: &plan_name,
            now,
            replan_after: self.replan_after,
            first_seen: &|_| now,
        })
        .map_err(|Unavailable(gates)| PlanError::Unavailable {
            mode: gates.mode.as_str(),
            approval: gates.approval.as_str(),
        })?;
        let changes = checked.changes();
        let made = played.made.then(|| {
            for change in &changes {
                self.record_change(
                    (
                        change.kind(),
                        namespace.to_owned(),
                        change.name().to_owned(),
                    ),
                    ChangeState::Made,
                );
            }
            Ok(Made {
                applied: pending.len(),
                unchanged: changes.len() - pending.len(),
                ..Made::default()
            })
        });
        let held = pending
            .iter()
            .map(|c| (c.kind(), namespace.to_owned(), c.name().to_owned()))
            .collect();
        Ok(Planned {
            made,
            held: played.hold.map(|hold| (hold, held)),
            facts: played.facts,
            events: played.events,
            requeue_after: played.requeue_after,
        })
    }

    /// Nothing is written: the parent as it would be stored.
    async fn write_status(&self, parent: &Value, status: &Status) -> Result<Value, kube::Error> {
        let mut written = parent.clone();
        written["status"] = status.to_json();
        Ok(written)
    }

    async fn publish(&self, _: &Value, events: &[Event]) {
        self.published
            .lock()
            .expect("published lock")
            .extend_from_slice(events);
    }
}

/// A pass made as a dry run: what the operator's pass would settle on.
pub struct DryPass {
    /// The status the pass would write (the part the host owns), or the
    /// one it read where the pass would write none.
    pub status: Status,
    /// The status it read (the part the host owns).
    pub previous: Status,
    /// That status where a pass settled on it for the parent's current
    /// generation (its Ready observed it): what the operator's pass is to
    /// reproduce. `None` for a parent never passed, or changed since.
    pub live: Option<Status>,
    /// The Events it would publish, in order.
    pub events: Vec<Event>,
    /// The guest's last evaluation (its outcome the one settled on).
    pub evaluated: Evaluated,
    /// What the evaluations before the changes read.
    pub first_reads: BTreeSet<Dependency>,
    /// Everything the pass's evaluations read.
    pub reads: BTreeSet<Dependency>,
    /// The facts the last evaluation read from, held still.
    pub facts: Arc<dyn ObjectSource>,
}

/// Drives `pass` as a dry run in `setting`: nothing is written.
pub(crate) async fn pass(pass: &Pass<'_>, setting: &Setting<'_>) -> DryPass {
    let effects = DryRun::new(setting, pass.evaluation.now);
    let parent = &**pass.evaluation.parent;
    let previous = owned_status(pass.spec, parent);
    let driven = driver::drive(pass, &effects, &previous, &Reported::default(), |_| {}).await;
    let mut events = effects.published.into_inner().expect("published lock");
    events.extend(driven.carried.planned.events.iter().cloned());
    let status = match driven.settled {
        Settled::Decided { output, .. } => {
            if output.changed {
                events.extend(output.events);
            }
            output.status
        }
        Settled::Retry => previous.clone(),
    };
    let mut reads = driven.reads.clone();
    if let Some((again, _)) = driven.again {
        reads.extend(again);
    }
    let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);
    let live = previous
        .condition("Ready")
        .is_some_and(|ready| ready.observed_generation == generation)
        .then(|| previous.clone());
    DryPass {
        status,
        live,
        previous,
        events,
        evaluated: driven.evaluated,
        first_reads: driven.reads,
        reads,
        facts: driven.facts,
    }
}

/// What became of changes, as a dry run remembers them.
#[derive(Default)]
struct Memory(Mutex<BTreeMap<ChildKey, ChangeState>>);

impl ChangeStates for Memory {
    fn change_state(&self, child: &ChildKey) -> Option<ChangeState> {
        self.0.lock().expect("states lock").get(child).cloned()
    }
}
