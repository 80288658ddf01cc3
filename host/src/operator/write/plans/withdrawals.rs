//! Withdrawals (contract 0.5.0): the deletions a guest marks as taking
//! access or exposure away, made before the parent's other changes and
//! whatever holds those (the pause, mode `observe`, approval `manual`, a
//! pending or denied plan, a gate set to what it cannot be, a read that
//! failed); each announced by the Event its guest names once it is made,
//! and recorded where the cluster serves plans: a ReconcilePlan made
//! without review, saying why, written Applying before the first deletion
//! and Applied (or Failed) after the last, so that a host stopped between
//! them leaves a record that a later pass ends ([`finish_interrupted`]).
//!
//! Each withdrawal is checked as every deletion is (the parent controls
//! the object, which still has the UID the guest saw) and made on its
//! own: one the API server refuses does not hold back the next, and a
//! record that cannot be written holds back none.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use reconciler_conventions::engine::Event;
use serde_json::{Value, json};

use crate::contract::model::{Change, Withdrawal};
use crate::facts::ChangeState;
use crate::facts::past_cache::PastCache;
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::write::children::{self, ChildrenError, Made};
use crate::operator::write::plans::{
    PlanError, PlanPass, Planner, parent_plans, plan_name, plans_served,
};
use crate::plan::artifact::{self, Counts};
use crate::plan::digest::{self, Mode, Target};
use crate::plan::record::{self, Phase, WITHDRAWAL_LABEL};

/// The reason of a withdrawal plan's Approved condition: the host made it
/// without review.
pub(crate) const WITHDRAWAL_REASON: &str = "Withdrawal";

/// What a pass's withdrawals came to.
#[derive(Debug, Default)]
pub struct Withdrawn {
    /// The deletions made (and of those, read past the cache).
    pub made: Made,
    /// The guests' Events of the withdrawals made, to publish now.
    pub events: Vec<Event>,
    /// The first withdrawal the API server refused (the others were
    /// tried all the same): the pass reports it.
    pub failed: Option<ChildrenError>,
    /// The plan recording them, where plans are served.
    pub plan: Option<String>,
}

/// Makes `withdrawals` of the pass `at`: all checked, the record of those
/// still there opened where plans are served, each deleted, its Event
/// raised, the record closed. `why` says what held the other changes,
/// for the record.
///
/// Fails only when a withdrawal is refused before anything is made (the
/// parent does not control the object, or it is another one now: the
/// guest's fault) or the record could not be written (the withdrawals are
/// made all the same).
pub async fn make(
    planner: &Planner,
    at: &PlanPass<'_>,
    past_cache: &PastCache,
    withdrawals: &[Withdrawal],
    why: &str,
) -> Result<Withdrawn, WithdrawalError> {
    let deletions: Vec<Change> = withdrawals.iter().map(Withdrawal::deletion).collect();
    // All checked first: a withdrawal the guest may not ask for refuses
    // them all, as any change would.
    let checked = children::check(
        at.source,
        past_cache,
        at.resource,
        at.parent,
        &deletions,
        None,
    )
    .map_err(WithdrawalError::Refused)?;
    let to_make = checked.pending(at.authority, jiff::Timestamp::now());
    let namespace = at.parent["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    // The record before the first deletion: a host stopped mid-way leaves
    // it Applying. One that cannot be written holds nothing back.
    let mut record_error = None;
    let mut opened = None;
    if !to_make.is_empty() && plans_served(at.source, namespace) {
        match open(planner, at, namespace, &to_make, why).await {
            Ok(plan) => opened = Some(plan),
            Err(e) => record_error = Some(e),
        }
    }
    let mut out = Withdrawn::default();
    for (withdrawal, deletion) in withdrawals.iter().zip(&deletions) {
        let one = std::slice::from_ref(deletion);
        let checked = children::check(at.source, past_cache, at.resource, at.parent, one, None)
            .map_err(WithdrawalError::Refused)?;
        let made = planner.execute(at, checked).await;
        if made.is_ok() {
            // Taken away now, or gone already: withdrawn either way.
            at.source.record_change(
                deletion.kind(),
                namespace,
                deletion.name(),
                ChangeState::Withdrawn,
            );
        }
        match made {
            Ok(made) if made.deleted > 0 => {
                out.made.deleted += made.deleted;
                out.made.deleted_unwatched += made.deleted_unwatched;
                out.events.extend(withdrawal.gone_event());
            }
            // Gone already: nothing was taken away now.
            Ok(_) => {}
            // The first failure is the pass's to report; any other is
            // logged here, the next pass trying it again.
            Err(e) if out.failed.is_none() => out.failed = Some(e),
            Err(e) => {
                tracing::warn!(withdrawal = %withdrawal, error = %e, "another withdrawal failed too");
            }
        }
    }
    if out.made.deleted > 0 {
        tracing::info!(withdrawn = out.made.deleted, why, "withdrawals made");
    }
    if let Some((name, resource_version)) = opened {
        let failed = out.failed.as_ref().map(ToString::to_string);
        match close(planner, at, namespace, &name, &resource_version, failed).await {
            Ok(()) => out.plan = Some(name),
            Err(e) => record_error = Some(e),
        }
    }
    match record_error {
        Some(e) => Err(WithdrawalError::Record(Box::new(e), out)),
        None => Ok(out),
    }
}

/// Why a pass's withdrawals were not all made or recorded.
#[derive(Debug, thiserror::Error)]
pub enum WithdrawalError {
    /// The guest asked to withdraw what it may not delete: nothing was
    /// made (the guest's fault; not retried until the guest changes).
    #[error(transparent)]
    Refused(ChildrenError),
    /// The withdrawals were made (`.1`: their Events are to be raised all
    /// the same), but the plan recording them was not written: the pass
    /// reports it.
    #[error("the withdrawals were made, but not recorded: {0}")]
    Record(Box<PlanError>, Withdrawn),
}

/// The record of `to_make` (deletions of the parent's children), created
/// and written Applying in one status write, approved by the host under
/// its authenticated name with the reason [`WITHDRAWAL_REASON`]: its name
/// and resource version.
async fn open(
    planner: &Planner,
    at: &PlanPass<'_>,
    namespace: &str,
    to_make: &[Change],
    why: &str,
) -> Result<(String, String), PlanError> {
    let identity = planner.identity().await?;
    let md = &at.parent["metadata"];
    let parent_uid = md["uid"].as_str().unwrap_or_default();
    let parent_name = md["name"].as_str().unwrap_or_default();
    let target = Target {
        cluster: identity.cluster.clone(),
        parent: parent_uid.to_owned(),
    };
    // A withdrawal is made as mode apply makes changes, whatever mode the
    // parent is in: that is what the record says.
    let digest = digest::digest(to_make, Mode::Apply, &target);
    let name = plan_name(parent_name);
    // Deletions are a line each: inline, far below its limit.
    let mut object = record::new_plan(
        &name,
        &record::ParentRef::of(at.resource, at.parent),
        Mode::Apply,
        &digest,
        &target,
        &artifact::recorded(to_make),
        Counts::of(to_make),
    );
    object["metadata"]["labels"][WITHDRAWAL_LABEL] = json!("true");
    let object: DynamicObject = serde_json::from_value(object).expect("a plan object deserializes");
    let created = api(planner, namespace)
        .create(&PostParams::default(), &Decoded::new(object))
        .await
        .map_err(|e| PlanError::api(format!("creating plan {name} of withdrawals"), &e))?;
    let now = reconciler_conventions::status::rfc3339_seconds(jiff::Timestamp::now());
    let message = format!(
        "a withdrawal takes access or exposure away: made without review, whatever holds the \
         parent's other changes ({why})"
    );
    let status = json!({
        "phase": Phase::Applying.as_str(),
        "decidedBy": {"username": identity.username},
        "revalidatedGeneration": md["generation"].as_i64().unwrap_or(0),
        "revalidatedAt": now,
        "conditions": [record::condition("Approved", "True", WITHDRAWAL_REASON, &message, &now)],
    });
    let rv = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let stored = write_status(planner, at, namespace, &name, &rv, status).await?;
    Ok((name, stored))
}

/// The record `name` (read at `resource_version`) closed: Applied, or
/// Failed naming the withdrawal the API server refused (`failed`).
async fn close(
    planner: &Planner,
    at: &PlanPass<'_>,
    namespace: &str,
    name: &str,
    resource_version: &str,
    failed: Option<String>,
) -> Result<(), PlanError> {
    let status = match failed {
        None => json!({"phase": Phase::Applied.as_str()}),
        Some(why) => json!({
            "phase": Phase::Failed.as_str(),
            "conditions": ended_conditions(at, namespace, name, "ExecutionFailed", &why),
        }),
    };
    write_status(planner, at, namespace, name, resource_version, status)
        .await
        .map(|_| ())
}

/// Ends the parent's records of withdrawals that a stopped host left
/// Applying: Applied when every object they name is gone (with the UID
/// they name) from the cache, else Failed (the withdrawals still wanted
/// are made again, under a record of their own). Best effort: a record
/// that cannot be ended now is ended by a later pass.
pub(crate) async fn finish_interrupted(planner: &Planner, at: &PlanPass<'_>) {
    let md = &at.parent["metadata"];
    let namespace = md["namespace"].as_str().unwrap_or_default();
    let parent_uid = md["uid"].as_str().unwrap_or_default();
    if !plans_served(at.source, namespace) {
        return;
    }
    for plan in parent_plans(at.source, namespace, parent_uid) {
        if !plan.withdrawal || plan.phase != Phase::Applying {
            continue;
        }
        let object = at
            .source
            .cache(&record::kind_ref())
            .and_then(|c| c.get(namespace, &plan.name));
        let gone = object
            .as_deref()
            .is_some_and(|o| all_gone(at, namespace, o));
        let status = if gone {
            json!({"phase": Phase::Applied.as_str()})
        } else {
            json!({
                "phase": Phase::Failed.as_str(),
                "conditions": ended_conditions(
                    at,
                    namespace,
                    &plan.name,
                    "ExecutionInterrupted",
                    "the host stopped before these withdrawals were all made: those still \
                     wanted are made again under a record of their own",
                ),
            })
        };
        match write_status(
            planner,
            at,
            namespace,
            &plan.name,
            &plan.resource_version,
            status,
        )
        .await
        {
            Ok(_) => {
                tracing::info!(plan = %plan.name, gone, "an interrupted record of withdrawals ended")
            }
            Err(e) => {
                tracing::warn!(plan = %plan.name, error = %e, "an interrupted record of withdrawals is not ended yet")
            }
        }
    }
}

/// Whether every deletion of the record `plan` (its inline effects) is
/// made: its object is not in the cache, or is another one (another UID).
/// Not when an object's kind is not cached (nothing tells).
fn all_gone(at: &PlanPass<'_>, namespace: &str, plan: &Value) -> bool {
    let Some(effects) = plan["spec"]["effects"]["inline"].as_str() else {
        return false;
    };
    let Ok(effects) = serde_yaml::from_str::<Vec<Value>>(effects) else {
        return false;
    };
    effects.iter().all(|e| {
        let kind = reconciler_conventions::kind::KindRef {
            group: e["kind"]["group"].as_str().unwrap_or_default().into(),
            version: e["kind"]["version"].as_str().unwrap_or_default().into(),
            kind: e["kind"]["kind"].as_str().unwrap_or_default().into(),
        };
        let name = e["name"].as_str().unwrap_or_default();
        at.source.cache(&kind).is_some_and(|cache| {
            cache
                .get(namespace, name)
                .is_none_or(|o| o["metadata"]["uid"] != e["uid"])
        })
    })
}

/// The record's conditions (as cached) with Failed=True (`reason`, `why`).
fn ended_conditions(
    at: &PlanPass<'_>,
    namespace: &str,
    name: &str,
    reason: &str,
    why: &str,
) -> Vec<Value> {
    let now = reconciler_conventions::status::rfc3339_seconds(jiff::Timestamp::now());
    let conditions: Vec<Value> = at
        .source
        .cache(&record::kind_ref())
        .and_then(|c| c.get(namespace, name))
        .and_then(|o| o["status"]["conditions"].as_array().cloned())
        .unwrap_or_default();
    record::with_condition(
        &conditions,
        record::condition("Failed", "True", reason, why, &now),
    )
}

fn api(planner: &Planner, namespace: &str) -> Api<Decoded> {
    decode::api(planner.client(), &record::resource(), namespace)
}

/// Writes `status` over the record `name` read at `resource_version`; the
/// stored record enters the cache. Its new resource version.
async fn write_status(
    planner: &Planner,
    at: &PlanPass<'_>,
    namespace: &str,
    name: &str,
    resource_version: &str,
    status: Value,
) -> Result<String, PlanError> {
    let patch = record::status_patch(resource_version, status);
    let stored = api(planner, namespace)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| PlanError::api(format!("writing the status of plan {name}"), &e))?;
    let rv = stored.metadata.resource_version.clone().unwrap_or_default();
    if let Some(cache) = at.source.cache(&record::kind_ref()) {
        cache.apply_if_newer(crate::operator::cluster::cache::slim(stored.into_value()));
    }
    Ok(rv)
}
