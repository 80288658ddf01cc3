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

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::{Api, Client};
use reconciler_conventions::engine::{ErrorClass, Event, PlanFacts};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::verdict::EventType;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::contract::model::Change;
use crate::facts::Hold;
use crate::facts::source::ChildKey;
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::metrics::Metrics;
use crate::operator::write::api_error::{self, ApiErrorClass};
use crate::operator::write::authority::Authority;
use crate::operator::write::children::{self, Checked, ChildrenError, Made};
use crate::plan::artifact::{self, Artifact, Counts};
use crate::plan::digest::{self, Digest, Mode, Target};
use crate::plan::gates::{self, Approval, GateError, Gates, KindGates, SchemaFields};
use crate::plan::record::{self, Decision, Divergence, Phase, Plan};

/// The reason of the host's own approval (approval auto), whoever it
/// authenticates as.
const AUTO_APPROVED: &str = "AutoApproved";

/// How many terminal plans of one parent are kept per phase (the oldest
/// beyond go, unless annotated `reconciler.dev/keep: "true"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention(pub BTreeMap<&'static str, usize>);

impl Default for Retention {
    /// Applied plans are kept longest: they are the record of what changed.
    fn default() -> Self {
        Retention(BTreeMap::from([
            (Phase::Applied.as_str(), 10),
            (Phase::Rejected.as_str(), 5),
            (Phase::Superseded.as_str(), 5),
            (Phase::Failed.as_str(), 5),
        ]))
    }
}

impl Retention {
    fn bound(&self, phase: Phase) -> usize {
        self.0.get(phase.as_str()).copied().unwrap_or(usize::MAX)
    }
}

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
        let facts = self.facts.as_ref()?;
        if self.made.is_some() || facts.pending.is_none() {
            return None;
        }
        Some(if facts.observe {
            Hold::Observe
        } else if facts.plan.is_some() {
            Hold::AwaitingApproval
        } else {
            Hold::Denied
        })
    }
}

/// Who the host is, and where: what its decisions and plans bind.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The username the API server authenticates the host as.
    pub username: String,
    /// The UID of the cluster's `kube-system` namespace.
    pub cluster: String,
}

/// Whether the cluster serves ReconcilePlans to the host in `namespace`.
pub fn plans_served(source: &ClusterSource, namespace: &str) -> bool {
    source.resource(&record::kind_ref()).is_some()
        && source
            .cache(&record::kind_ref())
            .is_some_and(|c| c.is_served(namespace))
}

/// The plans of the parent with UID `parent_uid` in `namespace`, as the
/// cache holds them, oldest first.
pub fn parent_plans(source: &ClusterSource, namespace: &str, parent_uid: &str) -> Vec<Plan> {
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
        }
    }

    /// The gates of `parent`, of kind `spec`.
    pub fn gates(&self, spec: &KindSpec, parent: &Value) -> Result<Gates, GateError> {
        let kind = self
            .config
            .kinds
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&spec.kind))
            .map(|(_, g)| *g)
            .unwrap_or_default();
        gates::resolve(
            SchemaFields::of(spec.spec_schema.as_deref()),
            spec.parent_gates,
            kind,
            parent,
        )
    }

    /// The API client plans are written with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Who the host is and where, asked of the cluster once.
    pub async fn identity(&self) -> Result<&Identity, PlanError> {
        self.identity
            .get_or_try_init(|| async {
                let review = Api::<SelfSubjectReview>::all(self.client.clone())
                    .create(&PostParams::default(), &SelfSubjectReview::default())
                    .await
                    .map_err(|e| {
                        PlanError::api("asking the cluster who the host is (SelfSubjectReview)", &e)
                    })?;
                let username = review
                    .status
                    .and_then(|s| s.user_info)
                    .and_then(|u| u.username)
                    .filter(|u| !u.is_empty())
                    .ok_or_else(|| PlanError::Api {
                        what: "asking the cluster who the host is (SelfSubjectReview)".into(),
                        class: ApiErrorClass::Reported(ErrorClass::ReconciliationFailed),
                        text: "no username in the answer".into(),
                    })?;
                let kube_system = Api::<Namespace>::all(self.client.clone())
                    .get("kube-system")
                    .await
                    .map_err(|e| {
                        PlanError::api(
                            "reading the kube-system namespace (the cluster's identity)",
                            &e,
                        )
                    })?;
                Ok(Identity {
                    username,
                    cluster: kube_system.metadata.uid.unwrap_or_default(),
                })
            })
            .await
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
            if gates.is_direct() {
                return Ok(Planned {
                    made: Some(self.execute(at, checked).await),
                    ..Planned::default()
                });
            }
            let now = jiff::Timestamp::now();
            if checked.pending(at.authority, now).is_empty() {
                return Ok(Planned {
                    facts: Some(PlanFacts {
                        observe: gates.mode == Mode::Observe,
                        ..PlanFacts::default()
                    }),
                    ..Planned::default()
                });
            }
            return Err(PlanError::Unavailable {
                mode: gates.mode.as_str(),
                approval: gates.approval.as_str(),
            });
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
            out: Planned::default(),
            now,
        };
        run.go(checked, &pending).await?;
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

/// One pass's plan, as it goes.
struct Run<'p, 'a> {
    planner: &'p Planner,
    at: &'p PlanPass<'a>,
    gates: Gates,
    identity: Identity,
    namespace: &'a str,
    out: Planned,
    now: jiff::Timestamp,
}

impl Run<'_, '_> {
    fn api(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.planner.client.clone(),
            self.namespace,
            &record::resource(),
        )
    }

    fn parent_uid(&self) -> &str {
        self.at.parent["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
    }

    fn parent_name(&self) -> &str {
        self.at.parent["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
    }

    fn generation(&self) -> i64 {
        self.at.parent["metadata"]["generation"]
            .as_i64()
            .unwrap_or(0)
    }

    fn stamp(&self) -> String {
        reconciler_conventions::status::rfc3339_seconds(self.now)
    }

    /// The parent's plans in the cache, oldest first.
    fn plans(&self) -> Vec<Plan> {
        parent_plans(self.at.source, self.namespace, self.parent_uid())
    }

    fn event(&mut self, type_: EventType, reason: &str, note: String) {
        self.out.events.push(Event {
            type_,
            reason: reason.to_owned(),
            note: reconciler_conventions::message::bound(&note),
        });
    }

    async fn go(&mut self, checked: Checked<'_>, pending: &[Change]) -> Result<(), PlanError> {
        let target = Target {
            cluster: self.identity.cluster.clone(),
            parent: self.parent_uid().to_owned(),
        };
        let digest = digest::digest(pending, self.gates.mode, &target);
        let plans = self.plans();
        let mut open: Vec<Plan> = plans
            .iter()
            // A record of withdrawals is never executed from its phase:
            // one a stopped host left Applying is the withdrawals' to end.
            .filter(|p| !p.phase.is_terminal() && !p.withdrawal)
            .cloned()
            .collect();
        let current = open.pop();
        for older in open {
            self.supersede(&older, Divergence::Replaced).await?;
        }
        let mut current = current;
        if let Some(plan) = current.take() {
            let divergence = if pending.is_empty() {
                Some(Divergence::EffectsGone)
            } else {
                plan.divergence(&digest, self.gates.mode, &target)
            };
            match (plan.phase, divergence) {
                // Applying is the host's to write, and only on a decision:
                // a plan that reads it without one is not executed.
                (Phase::Applying, _) if !plan.executable() => {
                    self.supersede(&plan, Divergence::Tampered).await?;
                }
                // Deleted while Applying (a finalizer holds it): its
                // execution stopped and said so; nothing more until it is
                // gone and the changes are planned anew.
                (Phase::Applying, _) if plan.deleting => return Ok(()),
                (Phase::Applying, Some(Divergence::EffectsGone)) => {
                    // Made before the host stopped: done.
                    self.finish(&plan, Ok(Made::default()), pending).await?;
                    return Ok(());
                }
                (Phase::Applying, None) if !self.artifact_intact(&plan).await? => {
                    self.supersede(&plan, Divergence::ArtifactChanged).await?;
                }
                (Phase::Applying, None) => {
                    let made = self.planner.execute_plan(self.at, checked, &plan).await;
                    self.finish(&plan, made, pending).await?;
                    return Ok(());
                }
                (Phase::Applying, Some(_)) => {
                    self.fail(
                        &plan,
                        "the execution did not finish (the host stopped, or a change failed) and \
                         what is left is not what was approved: a new plan holds it",
                    )
                    .await?;
                }
                (_, Some(divergence)) => self.supersede(&plan, divergence).await?,
                (_, None) => return self.decided(plan, checked, pending).await,
            }
        }
        if pending.is_empty() {
            // Nothing to change: the pass still learns when its
            // certificates are due (no request is sent).
            self.out.made = Some(self.planner.execute(self.at, checked).await);
            self.out.facts = self.facts(None, pending, None);
            return Ok(());
        }
        if let Some(held) = self.held(&plans, &digest) {
            return Ok(held);
        }
        self.create(checked, pending, &digest, &target).await
    }

    /// The plan describes the pending changes: its decision, if any,
    /// moves it.
    async fn decided(
        &mut self,
        plan: Plan,
        checked: Checked<'_>,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        match (&plan.decision, self.gates.mode) {
            // Mode observe: any decision is accepted and does nothing.
            (Some(decision), Mode::Observe) => {
                let (verb, by) = match decision {
                    Decision::Approved { by } => ("approved", by),
                    Decision::Denied { by } => ("denied", by),
                };
                let message = format!(
                    "ReconcilePlan {} was {verb} by {by}, but it was made in mode observe: nothing is executed",
                    plan.name
                );
                self.revalidate(&plan).await?;
                self.out.facts = self.facts(Some(&plan), pending, None);
                if let Some(facts) = &mut self.out.facts {
                    facts.ignored = Some(message);
                }
                Ok(())
            }
            (Some(Decision::Denied { by }), Mode::Apply) => {
                let message = format!(
                    "ReconcilePlan {} was denied by {by}; the same changes are planned again after {}s",
                    plan.name,
                    self.planner.config.replan_after.as_secs()
                );
                self.write_status(
                    &plan,
                    json!({"phase": Phase::Rejected.as_str()}),
                    plan.conditions.clone(),
                )
                .await?;
                self.event(EventType::Normal, "PlanRejected", message.clone());
                self.out.facts = self.facts(None, pending, Some(message));
                self.out.requeue_after = Some(self.planner.config.replan_after);
                Ok(())
            }
            (Some(Decision::Approved { .. }), Mode::Apply)
                if !self.artifact_intact(&plan).await? =>
            {
                // The next pass (this write passes the parent) plans anew.
                self.supersede(&plan, Divergence::ArtifactChanged).await
            }
            (Some(Decision::Approved { by }), Mode::Apply) => {
                let by = by.clone();
                let plan = self
                    .write_status(
                        &plan,
                        json!({"phase": Phase::Applying.as_str()}),
                        plan.conditions.clone(),
                    )
                    .await?;
                let automatic = plan
                    .conditions
                    .iter()
                    .any(|c| c["type"] == "Approved" && c["reason"] == AUTO_APPROVED);
                if !automatic {
                    self.event(
                        EventType::Normal,
                        "PlanApproved",
                        format!(
                            "ReconcilePlan {} was approved by {by}: executing it",
                            plan.name
                        ),
                    );
                }
                let made = self.planner.execute_plan(self.at, checked, &plan).await;
                self.finish(&plan, made, pending).await
            }
            (None, Mode::Apply) if self.gates.approval == Approval::Auto => {
                let plan = self.auto_approve(&plan).await?;
                let made = self.planner.execute_plan(self.at, checked, &plan).await;
                self.finish(&plan, made, pending).await
            }
            (None, _) => {
                self.revalidate(&plan).await?;
                self.out.facts = self.facts(Some(&plan), pending, None);
                Ok(())
            }
        }
    }

    /// A plan for the pending changes: created, then approved by the host
    /// and executed under approval auto, else left for review.
    async fn create(
        &mut self,
        checked: Checked<'_>,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<(), PlanError> {
        let name = plan_name(self.parent_name());
        let artifact = artifact::artifact(pending);
        let counts = Counts::of(pending);
        let created = self
            .create_plan(&name, self.gates.mode, digest, target, &artifact, counts)
            .await?;
        if let Artifact::ConfigMap { gz, .. } = &artifact {
            self.effects_config_map(&created, gz).await?;
        }
        let created = serde_json::to_value(created).unwrap_or(Value::Null);
        let plan = self.cached(created).expect("a created plan reads back");
        if self.gates.is_direct() {
            let plan = self.auto_approve(&plan).await?;
            let made = self.planner.execute_plan(self.at, checked, &plan).await;
            return self.finish(&plan, made, pending).await;
        }
        let (reason, message) = match self.gates.mode {
            Mode::Observe => (
                "ObserveMode",
                "made in mode observe: never executed; a decision is recorded and ignored",
            ),
            Mode::Apply => ("Pending", "awaiting a decision"),
        };
        let now = self.stamp();
        let plan = self
            .write_status(
                &plan,
                json!({
                    "phase": Phase::Pending.as_str(),
                    "revalidatedGeneration": self.generation(),
                    "revalidatedAt": now,
                }),
                vec![record::condition(
                    "Approved", "False", reason, message, &now,
                )],
            )
            .await?;
        self.event(
            EventType::Normal,
            "PlanCreated",
            format!(
                "ReconcilePlan {} holds {} (mode {}, approval {})",
                plan.name,
                counts.summary(),
                self.gates.mode.as_str(),
                self.gates.approval.as_str()
            ),
        );
        self.out.facts = self.facts(Some(&plan), pending, None);
        Ok(())
    }

    /// Creates the plan `name` of the parent.
    async fn create_plan(
        &self,
        name: &str,
        mode: Mode,
        digest: &Digest,
        target: &Target,
        artifact: &Artifact,
        counts: Counts,
    ) -> Result<DynamicObject, PlanError> {
        let object = record::new_plan(
            name,
            &record::ParentRef::of(self.at.resource, self.at.parent),
            mode,
            digest,
            target,
            artifact,
            counts,
        );
        let object: DynamicObject =
            serde_json::from_value(object).expect("a plan object deserializes");
        self.api()
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| PlanError::api(format!("creating plan {name}"), &e))
    }

    /// The ConfigMap holding a large plan's gzipped effects, owned by the
    /// plan (it goes with it), immutable: its text's SHA-256 is in the
    /// plan's spec, checked before the plan is executed.
    async fn effects_config_map(&self, plan: &DynamicObject, gz: &[u8]) -> Result<(), PlanError> {
        use base64::Engine as _;
        let name = artifact::config_map_name(plan.metadata.name.as_deref().unwrap_or_default());
        let config_map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {record::PARENT_UID_LABEL: self.parent_uid()},
                "ownerReferences": [{
                    "apiVersion": format!("{}/{}", record::GROUP, record::VERSION),
                    "kind": record::KIND,
                    "name": plan.metadata.name,
                    "uid": plan.metadata.uid,
                    "controller": true,
                }],
            },
            "immutable": true,
            "binaryData": {artifact::CONFIG_MAP_KEY:
                base64::engine::general_purpose::STANDARD.encode(gz)},
        });
        let config_map: DynamicObject =
            serde_json::from_value(config_map).expect("a ConfigMap deserializes");
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.planner.client.clone(),
            self.namespace,
            &kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
        );
        api.create(&PostParams::default(), &config_map)
            .await
            .map(|_| ())
            .map_err(|e| {
                PlanError::api(
                    format!("creating ConfigMap {name} of the plan's effects"),
                    &e,
                )
            })
    }

    /// Approved by the host (approval auto), and marked Applying, in one
    /// write: `decidedBy` is the host's authenticated name.
    async fn auto_approve(&mut self, plan: &Plan) -> Result<Plan, PlanError> {
        let now = self.stamp();
        let conditions = record::with_condition(
            &plan.conditions,
            record::condition(
                "Approved",
                "True",
                AUTO_APPROVED,
                "approval auto: approved by the host",
                &now,
            ),
        );
        self.write_status(
            plan,
            json!({
                "phase": Phase::Applying.as_str(),
                "decidedBy": {"username": self.identity.username},
                "revalidatedGeneration": self.generation(),
                "revalidatedAt": now,
            }),
            conditions,
        )
        .await
    }

    /// The execution's end: Applied, or Failed with the error (which the
    /// pass then reports as its own); when the plan was deleted while
    /// Applying, what was made is recorded ([`Run::deleted_while_applying`]).
    async fn finish(
        &mut self,
        plan: &Plan,
        made: Result<Made, ChildrenError>,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        match &made {
            Ok(done) => {
                let written = self
                    .write_status(
                        plan,
                        json!({"phase": Phase::Applied.as_str()}),
                        plan.conditions.clone(),
                    )
                    .await;
                match written {
                    Err(PlanError::Api { .. }) if self.plan_gone(plan).await => {
                        return self.deleted_while_applying(plan, *done, pending).await;
                    }
                    written => written?,
                };
                self.event(
                    EventType::Normal,
                    "PlanApplied",
                    format!(
                        "ReconcilePlan {} applied: {}",
                        plan.name,
                        plan.counts.summary()
                    ),
                );
                self.out.facts = self.facts(None, &[], None);
            }
            Err(ChildrenError::Stopped { made, .. }) => {
                return self.deleted_while_applying(plan, *made, pending).await;
            }
            Err(e) if e.class().is_none() => {
                // A conflict: the plan stays Applying; the next pass
                // resumes it if what is left is what was approved.
            }
            Err(e) => {
                self.fail(plan, &e.to_string()).await?;
                self.out.facts = self.facts(None, &[], None);
            }
        }
        self.out.made = Some(made);
        Ok(())
    }

    /// Whether `plan` is gone from the API server (a read past the cache).
    async fn plan_gone(&self, plan: &Plan) -> bool {
        match self.api().get_opt(&plan.name).await {
            Ok(None) => true,
            Ok(Some(stored)) => {
                stored.metadata.uid.as_deref() != Some(plan.uid.as_str())
                    || stored.metadata.deletion_timestamp.is_some()
            }
            Err(_) => false,
        }
    }

    /// `plan` was deleted while Applying, `made` made before the host
    /// stopped: a Warning says so and, when anything was made, a new plan
    /// in phase Applied records it (the changes still pending are planned
    /// anew by the next pass).
    async fn deleted_while_applying(
        &mut self,
        plan: &Plan,
        made: Made,
        pending: &[Change],
    ) -> Result<(), PlanError> {
        let count = made.applied + made.deleted;
        let decided = match &plan.decision {
            Some(Decision::Approved { by }) => format!(" (approved by {by})"),
            _ => String::new(),
        };
        self.out.made = Some(Ok(made));
        if count == 0 {
            self.event(
                EventType::Warning,
                "PlanDeleted",
                format!(
                    "ReconcilePlan {}{decided} was deleted while Applying: the host stopped \
                     before its first change, nothing was made",
                    plan.name
                ),
            );
            return Ok(());
        }
        let name = plan_name(self.parent_name());
        let message = format!(
            "ReconcilePlan {}{decided} was deleted while Applying: {count} of its changes \
             ({} applied, {} deleted) were made before the host stopped; this plan records \
             them, and what is left is planned anew",
            plan.name, made.applied, made.deleted
        );
        let target = Target {
            cluster: self.identity.cluster.clone(),
            parent: self.parent_uid().to_owned(),
        };
        let digest = digest::digest(pending, Mode::Apply, &target);
        let created = self
            .create_plan(
                &name,
                Mode::Apply,
                &digest,
                &target,
                &artifact::recorded(pending),
                Counts::of(pending),
            )
            .await?;
        let created = serde_json::to_value(created).unwrap_or(Value::Null);
        let record = self.cached(created).expect("a created plan reads back");
        let now = self.stamp();
        self.write_status(
            &record,
            json!({"phase": Phase::Applied.as_str()}),
            vec![record::condition(
                "Interrupted",
                "True",
                "PlanDeleted",
                &message,
                &now,
            )],
        )
        .await?;
        self.event(EventType::Warning, "PlanDeleted", message);
        Ok(())
    }

    /// Whether the plan's effects, where they are in a ConfigMap, are the
    /// ones its spec records (artifact::verify). A ConfigMap gone or
    /// changed is not: the plan is not executed.
    async fn artifact_intact(&self, plan: &Plan) -> Result<bool, PlanError> {
        let Some(reference) = &plan.effects_ref else {
            return Ok(true);
        };
        let name = reference["name"].as_str().unwrap_or_default();
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.planner.client.clone(),
            self.namespace,
            &kube::core::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
        );
        let stored = api.get_opt(name).await.map_err(|e| {
            PlanError::api(
                format!(
                    "reading ConfigMap {name} of the effects of plan {}",
                    plan.name
                ),
                &e,
            )
        })?;
        let verdict = match stored.map(serde_json::to_value) {
            Some(Ok(config_map)) => artifact::verify(reference, &config_map).map(|_| ()),
            _ => Err(artifact::ArtifactError::Missing(name.to_owned())),
        };
        match verdict {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!(plan = %plan.name, error = %e, "the plan's effects are not the ones it recorded");
                Ok(false)
            }
        }
    }

    async fn fail(&mut self, plan: &Plan, why: &str) -> Result<(), PlanError> {
        let now = self.stamp();
        let conditions = record::with_condition(
            &plan.conditions,
            record::condition("Failed", "True", "ExecutionFailed", why, &now),
        );
        self.write_status(plan, json!({"phase": Phase::Failed.as_str()}), conditions)
            .await?;
        self.event(
            EventType::Warning,
            "PlanFailed",
            format!("ReconcilePlan {} failed: {why}", plan.name),
        );
        Ok(())
    }

    /// Void: Superseded=True naming the cause (on an undecided plan, its
    /// Approved=False too); a decision stays as it was recorded.
    async fn supersede(&mut self, plan: &Plan, why: Divergence) -> Result<(), PlanError> {
        let now = self.stamp();
        let mut conditions = record::with_condition(
            &plan.conditions,
            record::condition("Superseded", "True", why.reason(), why.message(), &now),
        );
        if plan.decision.is_none() {
            conditions = record::with_condition(
                &conditions,
                record::condition("Approved", "False", why.reason(), why.message(), &now),
            );
        }
        self.write_status(
            plan,
            json!({"phase": Phase::Superseded.as_str()}),
            conditions,
        )
        .await?;
        let type_ = if matches!(
            why,
            Divergence::TargetChanged | Divergence::Tampered | Divergence::ArtifactChanged
        ) {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.event(
            type_,
            "PlanSuperseded",
            format!(
                "ReconcilePlan {} superseded ({}): {}",
                plan.name,
                why.reason(),
                why.message()
            ),
        );
        Ok(())
    }

    /// The revalidated fields advance when the parent's generation moved
    /// and the plan still describes its changes.
    async fn revalidate(&mut self, plan: &Plan) -> Result<(), PlanError> {
        if plan.revalidated_generation == Some(self.generation()) {
            return Ok(());
        }
        self.write_status(
            plan,
            json!({"revalidatedGeneration": self.generation(), "revalidatedAt": self.stamp()}),
            plan.conditions.clone(),
        )
        .await
        .map(|_| ())
    }

    /// A rejection of these very changes holds their replacement for
    /// `replan_after` (no reject-recreate loop); a pass at its end makes it.
    fn held(&mut self, plans: &[Plan], digest: &Digest) -> Option<()> {
        let rejected = plans
            .iter()
            .rev()
            .find(|p| p.phase == Phase::Rejected && p.digest == digest.to_string())?;
        let at: jiff::Timestamp = rejected.decided_at.as_deref()?.parse().ok()?;
        let ends = at
            .checked_add(jiff::SignedDuration::try_from(self.planner.config.replan_after).ok()?)
            .ok()?;
        let left = self.now.duration_until(ends);
        if left.is_negative() || left.is_zero() {
            return None;
        }
        let message = format!(
            "ReconcilePlan {} holding these changes was denied; they are planned again at {}",
            rejected.name,
            reconciler_conventions::status::rfc3339_seconds(ends)
        );
        self.out.facts = self.facts(None, &[], Some(message));
        self.out.requeue_after =
            Some(Duration::try_from(left).unwrap_or_default() + Duration::from_secs(1));
        Some(())
    }

    /// What the parent's status says: `None` where changes are made
    /// directly. `held`: changes pending with no current plan.
    fn facts(
        &self,
        plan: Option<&Plan>,
        pending: &[Change],
        held: Option<String>,
    ) -> Option<PlanFacts> {
        if self.gates.is_direct() {
            return None;
        }
        let observe = self.gates.mode == Mode::Observe;
        let mut facts = PlanFacts {
            observe,
            ..PlanFacts::default()
        };
        if let Some(plan) = plan {
            let counts = Counts::of(pending);
            facts.plan = Some(plan.name.clone());
            facts.summary = Some(counts.to_json());
            facts.pending = Some(format!(
                "{} planned in ReconcilePlan {}{}",
                counts.summary(),
                plan.name,
                if observe { "" } else { ", awaiting approval" }
            ));
        } else if let Some(held) = held {
            facts.pending = Some(held);
        }
        Some(facts)
    }

    /// Writes `status` and the whole `conditions` list over `plan` as read;
    /// the stored plan enters the cache.
    async fn write_status(
        &self,
        plan: &Plan,
        mut status: Value,
        conditions: Vec<Value>,
    ) -> Result<Plan, PlanError> {
        status["conditions"] = json!(conditions);
        let patch = record::status_patch(&plan.resource_version, status);
        let stored = self
            .api()
            .patch_status(&plan.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| PlanError::api(format!("writing the status of plan {}", plan.name), &e))?;
        let stored = serde_json::to_value(stored).unwrap_or(Value::Null);
        Ok(self.cached(stored).unwrap_or_else(|| plan.clone()))
    }

    /// Puts a stored plan in the cache (the next pass starts from it even
    /// before the watch delivers it).
    fn cached(&self, stored: Value) -> Option<Plan> {
        let plan = Plan::of(&stored);
        if let Some(cache) = self.at.source.cache(&record::kind_ref()) {
            cache.apply_if_newer(crate::operator::cluster::cache::slim(stored));
        }
        plan
    }

    /// Deletes the oldest terminal plans beyond each phase's bound (never
    /// one annotated to be kept). Best effort: a failure is logged and
    /// tried again at the next pass.
    async fn retain(&self) {
        let plans = self.plans();
        for phase in [
            Phase::Applied,
            Phase::Rejected,
            Phase::Superseded,
            Phase::Failed,
        ] {
            let bound = self.planner.config.retention.bound(phase);
            let of_phase: Vec<&Plan> = plans
                .iter()
                .filter(|p| p.phase == phase && !p.keep)
                .collect();
            let excess = of_phase.len().saturating_sub(bound);
            for plan in &of_phase[..excess] {
                let Some(uid) = self
                    .at
                    .source
                    .cache(&record::kind_ref())
                    .and_then(|c| c.get(self.namespace, &plan.name))
                    .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
                else {
                    continue;
                };
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                match self.api().delete(&plan.name, &params).await {
                    Ok(_) => {
                        tracing::debug!(plan = %plan.name, phase = phase.as_str(), "retention: plan deleted")
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                    Err(e) => {
                        tracing::warn!(plan = %plan.name, error = %e, "retention: cannot delete the plan")
                    }
                }
            }
        }
    }
}

/// `<parent>-<5 random characters>`, within the 253 characters of a name.
pub fn plan_name(parent: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = [0u8; 5];
    // Uniqueness, not secrecy: a failing generator falls back to the clock.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = jiff::Timestamp::now().subsec_nanosecond().unsigned_abs();
        bytes = nanos.to_le_bytes()[..4]
            .iter()
            .chain([&0u8])
            .copied()
            .collect::<Vec<_>>()
            .try_into()
            .unwrap_or([0; 5]);
    }
    let suffix: String = bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    let prefix: String = parent.chars().take(253 - 6).collect();
    format!("{prefix}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_named_for_its_parent() {
        let name = plan_name("web");
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        let long = plan_name(&"a".repeat(253));
        assert_eq!(long.len(), 253);
    }

    #[test]
    fn applied_plans_are_kept_longest() {
        let r = Retention::default();
        assert!(
            Phase::ALL
                .iter()
                .filter(|p| p.is_terminal() && **p != Phase::Applied)
                .all(|p| r.bound(*p) < r.bound(Phase::Applied))
        );
    }
}
