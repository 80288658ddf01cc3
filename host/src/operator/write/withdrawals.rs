//! Withdrawals (contract 0.5.0): the deletions a guest marks as taking
//! access or exposure away, made before the parent's other changes and
//! whatever holds those (the pause, mode `observe`, approval `manual`, a
//! pending or denied plan, a gate set to what it cannot be, a read that
//! failed); each announced by the Event its guest names once it is made,
//! and recorded where the cluster serves plans (a ReconcilePlan made
//! without review, saying why).
//!
//! Each withdrawal is checked as every deletion is (the parent controls
//! the object, which still has the UID the guest saw) and made on its
//! own: one the API server refuses does not hold back the next.

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use reconciler_conventions::engine::Event;
use serde_json::json;

use crate::contract::model::{Change, Withdrawal};
use crate::facts::ChangeState;
use crate::facts::past_cache::PastCache;
use crate::operator::write::children::{self, ChildrenError, Made};
use crate::operator::write::plans::{PlanError, PlanPass, Planner, plan_name, plans_served};
use crate::plan::artifact::{self, Artifact, Counts};
use crate::plan::digest::{self, Mode, Target};
use crate::plan::record;

/// The label marking a plan that records withdrawals (`"true"`): made
/// without review, never a plan awaiting one.
pub const WITHDRAWAL_LABEL: &str = "reconciler.dev/withdrawal";

/// The reason of a withdrawal plan's Approved condition: the host made it
/// without review.
pub const WITHDRAWAL_REASON: &str = "Withdrawal";

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

/// Makes `withdrawals` of the pass `at`: each checked, deleted if it is
/// still there, its Event raised; then recorded as one plan where plans
/// are served. `why` says what held the other changes, for the record.
///
/// Fails only when a withdrawal is refused before anything is made (the
/// parent does not control the object, or it is another one now: the
/// guest's fault) or the record could not be written.
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
    children::check(at.source, past_cache, at.resource, at.parent, &deletions)
        .map_err(WithdrawalError::Refused)?;
    let namespace = at.parent["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default();
    let mut out = Withdrawn::default();
    let mut made_ones = Vec::new();
    for (withdrawal, deletion) in withdrawals.iter().zip(&deletions) {
        let one = std::slice::from_ref(deletion);
        let checked = children::check(at.source, past_cache, at.resource, at.parent, one)
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
                out.events.extend(withdrawal.event.as_ref().map(|e| Event {
                    type_: e.type_,
                    reason: e.reason.clone(),
                    note: reconciler_conventions::message::bound(&e.message),
                }));
                made_ones.push(deletion.clone());
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
    if !made_ones.is_empty() {
        tracing::info!(withdrawn = made_ones.len(), why, "withdrawals made");
        if plans_served(at.source, namespace) {
            match record(planner, at, namespace, &made_ones, why).await {
                Ok(plan) => out.plan = Some(plan),
                Err(e) => return Err(WithdrawalError::Record(Box::new(e), out)),
            }
        }
    }
    Ok(out)
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

/// A plan holding `made` (deletions of the parent's children), created
/// and written Applied in one status write, approved by the host under
/// its authenticated name with the reason [`WITHDRAWAL_REASON`].
async fn record(
    planner: &Planner,
    at: &PlanPass<'_>,
    namespace: &str,
    made: &[Change],
    why: &str,
) -> Result<String, PlanError> {
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
    let digest = digest::digest(made, Mode::Apply, &target);
    let name = plan_name(parent_name);
    let counts = Counts::of(made);
    // Deletions are a line each: far below the inline limit.
    let artifact = match artifact::artifact(made) {
        Artifact::ConfigMap(_) => Artifact::Preview(counts.summary()),
        inline => inline,
    };
    let parent_ref = record::ParentRef {
        group: &at.resource.group,
        version: &at.resource.version,
        resource: &at.resource.plural,
        kind: &at.resource.kind,
        name: parent_name,
        namespace,
        uid: parent_uid,
    };
    let mut object = record::new_plan(
        &name,
        &parent_ref,
        Mode::Apply,
        &digest,
        &target,
        &artifact,
        counts,
    );
    object["metadata"]["labels"][WITHDRAWAL_LABEL] = json!("true");
    let object: DynamicObject = serde_json::from_value(object).expect("a plan object deserializes");
    let api: Api<DynamicObject> =
        Api::namespaced_with(planner.client().clone(), namespace, &record::resource());
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .map_err(|e| PlanError::api(format!("creating plan {name} of withdrawals"), &e))?;
    let now = reconciler_conventions::status::rfc3339_seconds(jiff::Timestamp::now());
    let message = format!(
        "a withdrawal takes access or exposure away: made without review, whatever holds the \
         parent's other changes ({why})"
    );
    let status = json!({
        "phase": record::Phase::Applied.as_str(),
        "decidedBy": {"username": identity.username},
        "revalidatedGeneration": md["generation"].as_i64().unwrap_or(0),
        "revalidatedAt": now,
        "conditions": [record::condition("Approved", "True", WITHDRAWAL_REASON, &message, &now)],
    });
    let patch = record::status_patch(
        created
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default(),
        status,
    );
    let stored = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| PlanError::api(format!("writing the status of plan {name}"), &e))?;
    if let (Some(cache), Ok(stored)) = (
        at.source.cache(&record::kind_ref()),
        serde_json::to_value(stored),
    ) {
        cache.apply_if_newer(crate::operator::cluster::cache::slim(stored));
    }
    Ok(name)
}
