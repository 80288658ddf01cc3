//! Plans in a pass (seed 003): the gates a parent's changes pass before
//! they are made, the ReconcilePlan that records them, and its lifecycle:
//! created for pending changes, revalidated every pass, superseded when
//! it no longer describes them, rejected, or executed on approval after
//! the effects are recomputed and the digest compared; then retention.
//!
//! A parent in mode `apply` with approval `auto` has its changes made in
//! the pass that plans them, its plan approved by the host under its own
//! authenticated name. Where the cluster serves no ReconcilePlan, such a
//! parent's changes are made without a record (as before plans existed);
//! mode `observe` or approval `manual` then make nothing and fail the pass
//! ([`PlanError::Unavailable`]).

//!
//! - [`lifecycle`]: the plan's state machine in a pass (created, held,
//!   revalidated, superseded, rejected, executed, finished);
//! - [`object`]: the ReconcilePlan object's writes (created with its
//!   effects ConfigMap, its status, the host's approval);
//! - [`retention`]: how many terminal plans are kept;
//! - [`first_seen`]: when a rejection with no decision time was first
//!   seen, where its hold counts from;
//! - [`identity`]: who the host is, and where, as its plans record it.

mod first_seen;
mod identity;
mod lifecycle;
mod object;
mod retention;
pub mod withdrawals;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::Client;
use reconciler_conventions::engine::{ErrorClass, Event, PlanFacts};
use reconciler_conventions::kind::KindSpec;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::contract::model::Change;
use crate::facts::Hold;
use crate::facts::source::ChildKey;
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::replica::metrics::Metrics;
use crate::operator::write::api_error::{self, ApiErrorClass};
use crate::operator::write::authority::Authority;
use crate::operator::write::children::{self, Checked, ChildrenError, Made};
use crate::plan::gates::{self, GateError, Gates, KindGates, SchemaFields};
use crate::plan::played;
use crate::plan::record::{self, Plan};

pub use identity::Identity;
use lifecycle::Run;
pub use object::plan_name;
pub use retention::Retention;

/// How plans are made, per kind and for all.
#[derive(Clone, Debug, Default)]
pub struct PlanConfig {
    /// Gates per kind (by kind name, any case), from `--mode` and
    /// `--approval`.
    pub kinds: BTreeMap<String, KindGates>,
    pub retention: Retention,
    /// How long after a rejection the same changes are planned again.
    pub replan_after: Duration,
}

impl PlanConfig {
    /// The gates for kind `spec` (by its name, any case).
    pub fn kind_gates(&self, spec: &KindSpec) -> KindGates {
        self.kinds
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&spec.kind))
            .map(|(_, g)| *g)
            .unwrap_or_default()
    }
}

/// Why a pass's plan could not be made or moved. Only `Conflict` is
/// retried at once; the rest end the pass (ReconcileError, backoff).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Review was asked for where the cluster serves no ReconcilePlan.
    #[error(
        "mode {mode} with approval {approval} needs ReconcilePlans, which this cluster does not serve \
         (install deploy/plans-crd.yaml): nothing was changed"
    )]
    Unavailable {
        mode: &'static str,
        approval: &'static str,
    },
    /// A gate set to what it cannot be.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The plan was written meanwhile (a decision landed): nothing was
    /// executed; the pass runs again from what is there now.
    #[error("plan {plan} changed meanwhile")]
    Conflict { plan: String },
    /// The API server refused a plan's write or what planning needs.
    #[error("{what}: {text}")]
    Api {
        what: String,
        class: ApiErrorClass,
        text: String,
    },
}

impl PlanError {
    /// The class the pass reports, or `None` for a conflict.
    pub fn class(&self) -> Option<ErrorClass> {
        match self {
            PlanError::Conflict { .. } => None,
            PlanError::Api {
                class: ApiErrorClass::Conflict,
                ..
            } => None,
            PlanError::Api {
                class: ApiErrorClass::Reported(class),
                ..
            } => Some(*class),
            PlanError::Unavailable { .. } | PlanError::Gate(_) => {
                Some(ErrorClass::ReconciliationFailed)
            }
        }
    }

    pub(crate) fn api(what: impl Into<String>, e: &kube::Error) -> PlanError {
        match api_error::classify(e) {
            ApiErrorClass::Conflict => PlanError::Conflict { plan: what.into() },
            class => PlanError::Api {
                what: what.into(),
                class,
                text: api_error::text(e),
            },
        }
    }
}

/// What a pass's plan came to.
#[derive(Debug, Default)]
pub struct Planned {
    /// What was made, when the pass made its changes.
    pub made: Option<Result<Made, ChildrenError>>,
    /// What the parent's status says of its plan; `None` where changes are
    /// made directly.
    pub facts: Option<PlanFacts>,
    /// The plan's Events, about the parent.
    pub events: Vec<Event>,
    /// When to pass again for the plan's sake (a rejection's hold ending).
    pub requeue_after: Option<Duration>,
    /// The changes the plan holds, and what holds them; every other
    /// change of the pass was made (or found made).
    pub held: Option<(Hold, Vec<ChildKey>)>,
}

impl Planned {
    /// What holds the changes when the pass made none: as the parent's
    /// Ready says it (observe, awaiting a decision, denied).
    fn hold(&self) -> Option<Hold> {
        crate::plan::lifecycle::hold(self.facts.as_ref(), self.made.is_some())
    }
}

/// Whether the cluster serves ReconcilePlans to the host in `namespace`.
pub(crate) fn plans_served(source: &ClusterSource, namespace: &str) -> bool {
    source.resource(&record::kind_ref()).is_some()
        && source
            .cache(&record::kind_ref())
            .is_some_and(|c| c.is_served(namespace))
}

/// The plans of the parent with UID `parent_uid` in `namespace`, as the
/// cache holds them, oldest first.
pub(crate) fn parent_plans(source: &ClusterSource, namespace: &str, parent_uid: &str) -> Vec<Plan> {
    let Some(cache) = source.cache(&record::kind_ref()) else {
        return Vec::new();
    };
    let selector =
        crate::facts::selector::Selector::from_pairs([(record::PARENT_UID_LABEL, parent_uid)]);
    let mut plans: Vec<Plan> = cache
        .list(namespace, &selector)
        .iter()
        .filter_map(|o| Plan::of(o))
        .collect();
    plans.sort_by(|a, b| (&a.created, &a.name).cmp(&(&b.created, &b.name)));
    plans
}

/// The plans of every kind: settings and the host's identity.
pub struct Planner {
    client: Client,
    config: PlanConfig,
    identity: OnceCell<Identity>,
    /// Notified when a pass had changes to record and ReconcilePlans were
    /// not served: the host looks again whether they are ([`Planner::wanted`]).
    wanted: tokio::sync::Notify,
    /// When each rejection with no decision time was first seen.
    first_seen: first_seen::FirstSeen,
}

/// What a pass's plan is about.
pub struct PlanPass<'a> {
    pub source: &'a ClusterSource,
    pub metrics: &'a Metrics,
    pub authority: &'a Authority,
    pub spec: &'a KindSpec,
    /// The parent's API resource.
    pub resource: &'a kube::core::ApiResource,
    pub parent: &'a Value,
}

impl Planner {
    pub fn new(client: Client, config: PlanConfig) -> Self {
        Planner {
            client,
            config,
            identity: OnceCell::new(),
            wanted: tokio::sync::Notify::new(),
            first_seen: first_seen::FirstSeen::default(),
        }
    }

    /// Notified when a pass had changes a plan would have recorded and
    /// ReconcilePlans were not served (none at steady state: no pass, or
    /// nothing to change).
    pub(crate) fn wanted(&self) -> &tokio::sync::Notify {
        &self.wanted
    }

    /// The host's gates for kind `spec` (`--mode`, `--approval`).
    pub fn kind_gates(&self, spec: &KindSpec) -> KindGates {
        self.config.kind_gates(spec)
    }

    /// The gates of `parent`, of kind `spec`.
    pub fn gates(&self, spec: &KindSpec, parent: &Value) -> Result<Gates, GateError> {
        gates::resolve(
            SchemaFields::of(spec.spec_schema.as_deref()),
            spec.parent_gates,
            self.kind_gates(spec),
            parent,
        )
    }

    /// How long after a rejection the same changes are planned again.
    pub fn replan_after(&self) -> Duration {
        self.config.replan_after
    }

    /// The API client plans are written with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The plan of one pass: `checked` made, planned or held, as the
    /// parent's gates say.
    pub async fn pass(
        &self,
        at: &PlanPass<'_>,
        checked: Checked<'_>,
    ) -> Result<Planned, PlanError> {
        let gates = self.gates(at.spec, at.parent)?;
        let namespace = at.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        if !plans_served(at.source, namespace) {
            let pending = !checked
                .pending(at.authority, jiff::Timestamp::now())
                .is_empty();
            if pending {
                self.wanted.notify_one();
            }
            // Made directly, or nothing to make: what is there is as the
            // guest asks (found so; no request is sent).
            return match played::unserved(gates, pending) {
                Ok(facts) => Ok(Planned {
                    made: Some(self.execute(at, checked).await),
                    facts,
                    ..Planned::default()
                }),
                Err(played::Unavailable(gates)) => Err(PlanError::Unavailable {
                    mode: gates.mode.as_str(),
                    approval: gates.approval.as_str(),
                }),
            };
        }
        let identity = self.identity().await?.clone();
        let now = jiff::Timestamp::now();
        let pending = checked.pending(at.authority, now);
        let namespace_of = |c: &Change| (c.kind(), namespace.to_owned(), c.name().to_owned());
        let held = pending.iter().map(namespace_of).collect();
        let mut run = Run {
            planner: self,
            at,
            gates,
            identity,
            namespace,
            checked: Some(checked),
            out: Planned::default(),
            now,
        };
        run.go(&pending).await?;
        run.retain().await;
        run.out.held = run.out.hold().map(|hold| (hold, held));
        Ok(run.out)
    }

    /// Makes `checked` changes of the pass `at`.
    pub async fn execute(
        &self,
        at: &PlanPass<'_>,
        checked: Checked<'_>,
    ) -> Result<Made, ChildrenError> {
        self.make(at, checked, &|| None).await
    }

    /// Makes `checked` changes of the pass `at` as the plan `plan`
    /// executes them: none after the plan is gone (deleted, or being
    /// deleted, as the cache holds it).
    async fn execute_plan(
        &self,
        at: &PlanPass<'_>,
        checked: Checked<'_>,
        plan: &Plan,
    ) -> Result<Made, ChildrenError> {
        let namespace = at.parent["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default();
        let gone = || {
            let stored = at
                .source
                .cache(&record::kind_ref())
                .and_then(|c| c.get(namespace, &plan.name));
            let here = stored.as_deref().is_some_and(|o| {
                o["metadata"]["uid"] == plan.uid.as_str()
                    && o["metadata"]["deletionTimestamp"].is_null()
            });
            (!here).then(|| format!("ReconcilePlan {} was deleted while Applying", plan.name))
        };
        self.make(at, checked, &gone).await
    }

    /// Makes `checked` changes of the pass `at`, none after `stop` says why.
    async fn make(
        &self,
        at: &PlanPass<'_>,
        checked: Checked<'_>,
        stop: children::Stop<'_>,
    ) -> Result<Made, ChildrenError> {
        children::execute(
            &self.client,
            at.source,
            at.metrics,
            at.authority,
            checked,
            stop,
        )
        .await
    }
}
