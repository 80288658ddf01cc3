//! The operator's pass without an API server: a real guest (the writer
//! test guest: a Widget wants the ConfigMap `<name>-config`) in its
//! sandbox, the host's cache and memory as they are, and the pass's
//! effects recorded where the operator makes them against the API server,
//! answered as the test says.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kube::core::{ApiResource, GroupVersionKind};
use reconciler_conventions::engine::Event;
use reconciler_conventions::kind::{KindRef, KindSpec};
use reconciler_conventions::status::Status;
use serde_json::{Value, json};

use super::effects::Effects;
use super::{Ended, reconcile};
use crate::contract::model::Withdrawal;
use crate::facts::past_cache::PastCache;
use crate::facts::source::{ChangeStates, ChildKey};
use crate::facts::{ChangeState, Hold, ObjectSource};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::kinds::Registry;
use crate::operator::replica::metrics::Metrics;
use crate::operator::schedule::{KindId, ParentKey};
use crate::operator::write::authority::{Authority, AuthorityConfig};
use crate::operator::write::children::{Checked, Made};
use crate::operator::write::plans::withdrawals::{WithdrawalError, Withdrawn};
use crate::operator::write::plans::{PlanConfig, PlanError, Planned, Planner};
use crate::pass::Done;
use crate::plan::artifact::Counts;
use crate::plan::digest::Mode;
use crate::plan::gates::{Approval, Gates};
use crate::plan::{events, lifecycle};
use crate::runtime::{Runtime, RuntimeConfig};

const NAMESPACE: &str = "team-a";
const NAME: &str = "w1";

/// One effect of a pass, as a user of the cluster would see it.
#[derive(Clone, Debug, PartialEq)]
enum Effect {
    /// Changes carried through the plan: the names of their objects.
    ThroughPlan(Vec<String>),
    /// A status written: its Ready condition's status and reason.
    StatusWritten(String, String),
    /// Events published: their reasons.
    Published(Vec<String>),
}

/// What the parent's plan does with the changes it is given.
#[derive(Clone, Copy)]
enum PlanAnswer {
    /// Makes them (mode apply, approval auto).
    Make,
    /// Plans them for a reviewer (approval manual).
    AwaitApproval,
    /// Cannot plan them: the cluster serves no ReconcilePlan.
    Unavailable,
}

/// The pass's effects, recorded; the API server's answers to status writes
/// are the test's.
struct Recorded {
    source: Arc<ClusterSource>,
    log: Mutex<Vec<Effect>>,
    plan: PlanAnswer,
    /// The next status writes' refusals (code, reason, message), in order;
    /// a write with none left succeeds.
    refusals: Mutex<VecDeque<(u16, &'static str, &'static str)>>,
    /// Events published, every pass together.
    events: AtomicU64,
}

impl Recorded {
    fn new(source: Arc<ClusterSource>, plan: PlanAnswer) -> Self {
        Recorded {
            source,
            log: Mutex::default(),
            plan,
            refusals: Mutex::default(),
            events: AtomicU64::new(0),
        }
    }

    fn refuse_next(&self, code: u16, reason: &'static str, message: &'static str) {
        self.refusals
            .lock()
            .unwrap()
            .push_back((code, reason, message));
    }

    fn record(&self, effect: Effect) {
        self.log.lock().unwrap().push(effect);
    }

    /// The Events published, every pass together.
    fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// The effects recorded since the last call.
    fn take(&self) -> Vec<Effect> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

impl Effects for Recorded {
    fn remembered(&self) -> Option<Arc<dyn ChangeStates>> {
        None
    }

    fn change_state(&self, (kind, namespace, name): &ChildKey) -> Option<ChangeState> {
        self.source.change_state(kind, namespace, name)
    }

    fn record_change(&self, (kind, namespace, name): ChildKey, state: ChangeState) {
        self.source.record_change(kind, &namespace, &name, state);
    }

    async fn finish_interrupted(&self, _: &KindSpec, _: &Value) {}

    async fn withdraw(
        &self,
        _: &KindSpec,
        _: &Value,
        _: &PastCache,
        _: &[Withdrawal],
        _: &str,
    ) -> Result<Withdrawn, WithdrawalError> {
        unreachable!("the writer guest (contract 0.3.0) asks for no withdrawal")
    }

    async fn through_plan(
        &self,
        _: &KindSpec,
        _: &Value,
        checked: Checked<'_>,
    ) -> Result<Planned, PlanError> {
        let changes = checked.changes();
        self.record(Effect::ThroughPlan(
            changes.iter().map(|c| c.name().to_owned()).collect(),
        ));
        let keys = changes
            .iter()
            .map(|c| (c.kind(), NAMESPACE.to_owned(), c.name().to_owned()));
        match self.plan {
            PlanAnswer::Make => {
                // As the host remembers a change the API server took.
                for (kind, namespace, name) in keys {
                    self.source
                        .record_change(kind, &namespace, &name, ChangeState::Made);
                }
                Ok(Planned {
                    made: Some(Ok(Made {
                        applied: changes.len(),
                        ..Made::default()
                    })),
                    ..Planned::default()
                })
            }
            PlanAnswer::AwaitApproval => {
                let gates = Gates {
                    mode: Mode::Apply,
                    approval: Approval::Manual,
                };
                let counts = Counts::of(&changes);
                let plan = "w1-plan-1";
                Ok(Planned {
                    facts: lifecycle::plan_facts(gates, Some(plan), counts, None),
                    events: vec![events::created(plan, counts, gates)],
                    held: Some((Hold::AwaitingApproval, keys.collect())),
                    ..Planned::default()
                })
            }
            PlanAnswer::Unavailable => Err(PlanError::Unavailable {
                mode: "apply",
                approval: "manual",
            }),
        }
    }

    async fn write_status(&self, parent: &Value, status: &Status) -> Result<Value, kube::Error> {
        if let Some((code, reason, message)) = self.refusals.lock().unwrap().pop_front() {
            let refusal = json!({"code": code, "reason": reason, "message": message});
            return Err(kube::Error::Api(Box::new(
                serde_json::from_value(refusal).unwrap(),
            )));
        }
        let ready = status.condition("Ready").expect("a status says Ready");
        self.record(Effect::StatusWritten(
            format!("{:?}", ready.status),
            ready.reason.clone(),
        ));
        Ok(stored_with(parent, status))
    }

    async fn publish(&self, _: &Value, events: &[Event]) {
        self.events
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        self.record(Effect::Published(
            events.iter().map(|e| e.reason.clone()).collect(),
        ));
    }
}

/// `parent` with `status`, at its next resourceVersion: what the API
/// server stores and answers.
fn stored_with(parent: &Value, status: &Status) -> Value {
    let mut stored = parent.clone();
    let version: u64 = parent["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    stored["metadata"]["resourceVersion"] = json!((version + 1).to_string());
    stored["status"] = status.to_json();
    stored
}

/// A client whose every request fails to connect: the pass under test
/// reaches the cluster only through its recorded effects, so any request
/// through it would fail the test's assertions.
fn client_that_reaches_nothing() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

/// A registry serving Widgets from the writer guest, its cache holding
/// `w1`.
struct Host {
    registry: Registry,
    id: KindId,
    key: ParentKey,
}

impl Host {
    fn new() -> Self {
        let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
        let module = runtime
            .load_file(&reconciler_host_harness::guests::guest_wasm("writer-guest"))
            .unwrap();
        let client = client_that_reaches_nothing();
        let source = Arc::new(ClusterSource::watching(&[String::new()]));
        // As discovery and the watches leave them: the kinds the guest
        // reads and writes served, their caches listed.
        for (kind, plural) in [("ConfigMap", "configmaps"), ("Secret", "secrets")] {
            let kind_ref = KindRef {
                group: String::new(),
                version: "v1".into(),
                kind: kind.into(),
            };
            let gvk = GroupVersionKind::gvk("", "v1", kind);
            source.set_resource(
                kind_ref.clone(),
                ApiResource::from_gvk_with_plural(&gvk, plural),
            );
            source.add_kind(kind_ref);
        }
        let authority = AuthorityConfig {
            namespace: "reconciler-system".into(),
            name: "reconciler-ca".into(),
            validity: std::time::Duration::from_secs(3600),
        };
        let registry = Registry::new(
            source.clone(),
            Arc::new(Metrics::new()),
            Arc::new(Authority::new(client.clone(), authority)),
            Arc::new(Planner::new(client.clone(), PlanConfig::default())),
        );
        let spec = module.spec().clone();
        let gvk = GroupVersionKind::gvk(&spec.group, &spec.version, &spec.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &spec.plural);
        let cache = source.add_kind(spec.kind_ref());
        let parent = json!({
            "apiVersion": "testing.reconciler.dev/v1",
            "kind": "Widget",
            "metadata": {
                "name": NAME, "namespace": NAMESPACE, "uid": "uid-w1",
                "generation": 1, "resourceVersion": "10",
            },
            "spec": {"data": {"colour": "blue"}},
        });
        cache.apply(parent.clone());
        let id = registry.add(&client, module, resource, cache, Vec::new());
        Host {
            key: ParentKey::of(id, &parent),
            registry,
            id,
        }
    }

    /// One pass of `w1`, its effects through `effects`.
    async fn pass(&self, effects: &Recorded) -> Ended {
        let kind = self.registry.kind(self.id);
        let queue = self.registry.scheduler().queue(self.id);
        let module = kind.module().unwrap();
        reconcile(&self.registry, effects, &kind, &queue, &module, &self.key).await
    }

    /// What the host remembers of the change to `w1-config`.
    fn remembered(&self) -> Option<ChangeState> {
        let configmap = KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        self.registry
            .source()
            .change_state(&configmap, NAMESPACE, "w1-config")
    }

    fn status_writes(&self) -> u64 {
        self.registry
            .metrics()
            .status_writes
            .get_or_create(&Metrics::kind("Widget"))
            .get()
    }
}

fn written(status: &str, reason: &str) -> Effect {
    Effect::StatusWritten(status.into(), reason.into())
}

fn published(reasons: &[&str]) -> Effect {
    Effect::Published(reasons.iter().map(|r| r.to_string()).collect())
}

fn through_plan() -> Effect {
    Effect::ThroughPlan(vec!["w1-config".into()])
}

/// The ConfigMap made, the status written with Ready True, then its Event
/// (seed 000: Ready turning True, Normal, AsExpected).
fn made_then_ready() -> [Effect; 3] {
    [
        through_plan(),
        written("True", "AsExpected"),
        published(&["AsExpected"]),
    ]
}

/// A host serving `w1`, and the effects its passes will have, the plan
/// answering as `plan` says.
fn start(plan: PlanAnswer) -> (Host, Recorded) {
    let host = Host::new();
    let effects = Recorded::new(host.registry.source().clone(), plan);
    (host, effects)
}

/// Seed 000: Ready is True (AsExpected) once every aspect holds; the
/// status is written once per transition and its Events follow the
/// write; a pass that changes nothing writes nothing and publishes
/// nothing.
#[tokio::test]
async fn a_pass_makes_its_changes_writes_the_status_once_then_publishes() {
    let (host, effects) = start(PlanAnswer::Make);

    let ended = host.pass(&effects).await;
    assert!(
        matches!(ended.done, Done::Converged { .. }),
        "{:?}",
        ended.done
    );
    assert_eq!(effects.take(), made_then_ready());
    assert_eq!((host.status_writes(), effects.events()), (1, 1));

    // Steady state: the same changes asked again, nothing written.
    let again = host.pass(&effects).await;
    assert!(matches!(again.done, Done::Converged { .. }));
    assert_eq!(effects.take(), [through_plan()]);
    assert_eq!(
        (host.status_writes(), effects.events()),
        (1, 1),
        "no status write, no Event at steady state"
    );
}

/// A webhook on `/status` that refuses every status.
const WEBHOOK_DENIAL: &str = "admission webhook \"status.example.com\" denied the request: no";

/// The pass ends to be retried soon, having made its changes and written
/// and published nothing; the next pass writes Ready True and publishes
/// its Event, once.
async fn retried_then_landed(host: &Host, effects: &Recorded) {
    let ended = host.pass(effects).await;
    assert_eq!(ended.done, Done::Retry);
    assert_eq!(effects.take(), [through_plan()]);
    assert_eq!((host.status_writes(), effects.events()), (0, 0));

    let ended = host.pass(effects).await;
    assert!(matches!(ended.done, Done::Converged { .. }));
    assert_eq!(effects.take(), made_then_ready());
    assert_eq!((host.status_writes(), effects.events()), (1, 1));
}

/// A status write that conflicts (another writer, a stale view) writes
/// nothing and publishes nothing: the pass runs again soon, and the
/// Events of the transition come once, with the write that lands.
#[tokio::test]
async fn a_conflicting_status_write_publishes_nothing_until_a_write_lands() {
    let (host, effects) = start(PlanAnswer::Make);
    effects.refuse_next(409, "Conflict", "the object has been modified");

    retried_then_landed(&host, &effects).await;
}

/// Seed 000: a write the API server refuses is a ReconcileError; when the
/// status cannot say it either (a webhook on `/status` refusing every
/// status), its class's Warning is published all the same, once across
/// passes.
#[tokio::test]
async fn a_refused_status_write_is_reported_by_its_class_once() {
    let (host, effects) = start(PlanAnswer::Make);
    for _ in 0..4 {
        effects.refuse_next(400, "BadRequest", WEBHOOK_DENIAL);
    }

    let ended = host.pass(&effects).await;
    assert!(
        matches!(ended.done, Done::Failed { .. }),
        "{:?}",
        ended.done
    );
    assert_eq!(
        effects.take(),
        [through_plan(), published(&["AdmissionDenied"])]
    );

    let ended = host.pass(&effects).await;
    assert!(matches!(ended.done, Done::Failed { .. }));
    assert_eq!(effects.take(), [through_plan()], "reported once");
    assert_eq!((host.status_writes(), effects.events()), (0, 1));
}

/// A refused write whose error write then conflicts (the parent changed
/// meanwhile: a ring member's label, another writer) reports nothing: the
/// pass runs again soon, and what it says comes with the write that lands,
/// so a member that takes the parent over reads that status and does not
/// say it a second time.
#[tokio::test]
async fn an_error_whose_status_write_conflicts_reports_nothing_until_a_write_lands() {
    let (host, effects) = start(PlanAnswer::Make);
    effects.refuse_next(400, "BadRequest", WEBHOOK_DENIAL);
    effects.refuse_next(409, "Conflict", "the object has been modified");

    retried_then_landed(&host, &effects).await;
}

/// Seed 003 (approval manual): the changes wait for a reviewer, the plan's
/// Event is published before the status, and Ready says what holds them.
/// The aspect held turns False with no Event of its own (seed 000: one
/// Event per transition worth attention; the plan's is that one).
#[tokio::test]
async fn changes_awaiting_approval_publish_the_plan_then_say_so_in_ready() {
    let (host, effects) = start(PlanAnswer::AwaitApproval);

    let ended = host.pass(&effects).await;
    assert!(
        matches!(ended.done, Done::Converged { .. }),
        "{:?}",
        ended.done
    );
    assert_eq!(
        effects.take(),
        [
            through_plan(),
            published(&["PlanCreated"]),
            written("False", "AwaitingApproval"),
        ]
    );
    assert_eq!(
        host.remembered(),
        Some(ChangeState::Held(Hold::AwaitingApproval))
    );
}

/// A plan that cannot be made changes nothing and fails the pass: Ready
/// False (ReconcileError) naming why, the change remembered as held by
/// the failure.
#[tokio::test]
async fn a_plan_that_cannot_be_made_fails_the_pass_and_makes_nothing() {
    let (host, effects) = start(PlanAnswer::Unavailable);

    let ended = host.pass(&effects).await;
    assert!(
        matches!(ended.done, Done::Failed { .. }),
        "{:?}",
        ended.done
    );
    // Seed 000: the error's class reported once, after the write.
    assert_eq!(
        effects.take(),
        [
            through_plan(),
            written("False", "ReconcileError"),
            published(&["ReconciliationFailed"]),
        ]
    );
    assert_eq!(host.remembered(), Some(ChangeState::Held(Hold::PassFailed)));
}
