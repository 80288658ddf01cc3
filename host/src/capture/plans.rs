//! The plans a capture records, as the fixture's `plans:` states them: the
//! kind's gates as `run` is given them, and the parent's current plan read
//! from the cluster where it describes the pass's very changes (a fixture
//! cannot state a plan of other changes: it is left out, and said so).

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::{Api, Client};
use reconciler_conventions::kind::KindSpec;
use serde_json::{Map, Value, json};

use super::CaptureError;
use super::live::Subject;
use crate::children::pending;
use crate::contract::model::Change;
use crate::facts::ObjectSource;
use crate::operator::cluster::{decode, probe};
use crate::plan::digest;
use crate::plan::gates::{self, KindGates, SchemaFields};
use crate::plan::record::{self, Decision, Divergence, PARENT_UID_LABEL, Phase, Plan};

/// The gates a capture is given, as `run` takes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct GivenGates {
    pub kind: KindGates,
    pub replan_after: Option<Duration>,
}

/// What a capture records of the parent's plans.
#[derive(Debug, Default, PartialEq)]
pub struct RecordedPlans {
    /// The fixture's `plans:`; `None`: the cluster serves no ReconcilePlan,
    /// so the operator makes changes directly or fails the pass.
    pub plans: Option<Value>,
    /// The parent's plan the fixture does not state, and why.
    pub left_out: Option<String>,
}

/// The parent's plans as the operator's pass would find them, for `module`
/// of kind `spec` whose live pass of `parent` asked for `changes` (reading
/// `source`), under the gates `given`. Nothing is written.
pub async fn record(
    client: &Client,
    spec: &KindSpec,
    target: &Subject,
    parent: &Value,
    changes: &[Change],
    source: &dyn ObjectSource,
    given: GivenGates,
) -> Result<RecordedPlans, CaptureError> {
    let resolved = probe::resolve(client, &record::kind_ref())
        .await
        .map_err(|e| CaptureError::Probe(Box::new(e)))?;
    if resolved.is_none() {
        return Ok(RecordedPlans::default());
    }
    let what = format!("the ReconcilePlans of {} {target}", spec.kind);
    let api = decode::api(client, &record::resource(), &target.namespace);
    let uid = parent["metadata"]["uid"].as_str().unwrap_or_default();
    let listed = api
        .list(&ListParams::default().labels(&format!("{PARENT_UID_LABEL}={uid}")))
        .await
        .map_err(|e| api_error("list", &what, e))?;
    let mut plans: Vec<Plan> = listed
        .items
        .into_iter()
        .filter_map(|o| Plan::of(&o.into_value()))
        .collect();
    plans.sort_by(|a, b| (&a.created, &a.name).cmp(&(&b.created, &b.name)));
    let mut block = Map::new();
    if let Some(mode) = given.kind.mode {
        block.insert("mode".into(), mode.as_str().into());
    }
    if let Some(approval) = given.kind.approval {
        block.insert("approval".into(), approval.as_str().into());
    }
    if let Some(after) = given.replan_after {
        block.insert("replanAfterSeconds".into(), after.as_secs().into());
    }
    let mut recorded = RecordedPlans::default();
    if let Some(plan) = current(&plans) {
        let gates = gates::resolve(
            SchemaFields::of(spec.spec_schema.as_deref()),
            spec.parent_gates,
            given.kind,
            parent,
        );
        let pending = pending::offline(changes, parent, source);
        // With nothing pending, every plan is voided (EffectsGone) alike
        // offline and live; with gates the parent cannot have, the pass
        // fails before its plans are read.
        let divergence = match gates {
            Ok(gates) if !pending.is_empty() => {
                let target = digest::Target {
                    cluster: cluster_identity(client).await?,
                    parent: uid.into(),
                };
                let digest = digest::digest(&pending, gates.mode, &target);
                plan.divergence(&digest, gates.mode, &target)
            }
            _ => None,
        };
        match divergence {
            None | Some(Divergence::ModeChanged) => {
                block.insert("current".into(), current_of(plan));
            }
            Some(other) => {
                recorded.left_out = Some(format!(
                    "ReconcilePlan {} ({}): it describes other changes than this pass's ({}), \
                     which a fixture does not state; the operator supersedes it",
                    plan.name,
                    plan.phase.as_str(),
                    other.reason()
                ));
            }
        }
    }
    recorded.plans = Some(Value::Object(block));
    Ok(recorded)
}

/// The plan the operator's lifecycle decides on: the newest open one (not
/// a record of withdrawals), else the newest rejected one, whose denial
/// may still hold the same changes.
fn current(plans: &[Plan]) -> Option<&Plan> {
    plans
        .iter()
        .rev()
        .find(|p| !p.phase.is_terminal() && !p.withdrawal)
        .or_else(|| plans.iter().rev().find(|p| p.phase == Phase::Rejected))
}

/// `plan` as the fixture's `plans.current` states it.
fn current_of(plan: &Plan) -> Value {
    let mut current = json!({"name": plan.name, "phase": plan.phase.as_str()});
    if let Some(mode) = plan.mode {
        current["mode"] = mode.as_str().into();
    }
    match &plan.decision {
        Some(Decision::Approved { by }) => current["approvedBy"] = by.as_str().into(),
        Some(Decision::Denied { by }) => current["deniedBy"] = by.as_str().into(),
        None => {}
    }
    if let Some(at) = plan
        .decided_at
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        current["decidedAt"] = at.to_string().into();
    }
    current
}

/// The cluster's identity as the operator binds it into its plans: the UID
/// of the `kube-system` namespace.
async fn cluster_identity(client: &Client) -> Result<String, CaptureError> {
    let what = "the kube-system namespace (the cluster's identity, bound into every plan)";
    let namespace = Api::<Namespace>::all(client.clone())
        .get("kube-system")
        .await
        .map_err(|e| api_error("get", what, e))?;
    Ok(namespace.metadata.uid.unwrap_or_default())
}

/// A failed `verb` (get, list) of `what`.
fn api_error(verb: &str, what: &str, e: kube::Error) -> CaptureError {
    match e {
        kube::Error::Api(s) if s.code == 403 => CaptureError::Forbidden {
            what: format!("{verb} {what}"),
            message: s.message,
        },
        e => CaptureError::Api {
            what: format!("reading {what}"),
            source: Box::new(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(name: &str, created: &str, phase: Phase) -> Plan {
        let mut object = json!({
            "metadata": {"name": name, "uid": format!("u-{name}"), "resourceVersion": "1",
                         "creationTimestamp": created},
            "spec": {"digest": "d", "mode": "apply"},
        });
        if phase != Phase::Pending {
            object["status"] = json!({"phase": phase.as_str()});
        }
        Plan::of(&object).expect("a plan the host made")
    }

    #[test]
    fn the_current_plan_is_the_newest_open_one_else_the_newest_rejected_one() {
        let old = plan("old", "2026-01-01T00:00:00Z", Phase::Rejected);
        let rejected = plan("rejected", "2026-01-02T00:00:00Z", Phase::Rejected);
        let applied = plan("applied", "2026-01-03T00:00:00Z", Phase::Applied);
        let open = plan("open", "2026-01-01T12:00:00Z", Phase::Pending);
        let named = |p: Option<&Plan>| p.map(|p| p.name.clone());
        assert_eq!(
            named(current(&[
                old.clone(),
                open.clone(),
                rejected.clone(),
                applied.clone()
            ])),
            Some("open".into())
        );
        assert_eq!(
            named(current(&[old, rejected, applied.clone()])),
            Some("rejected".into())
        );
        assert_eq!(named(current(&[applied])), None);
    }

    #[test]
    fn a_decided_plan_is_stated_with_its_decision_and_time() {
        let mut p = plan("p", "2026-01-01T00:00:00Z", Phase::Approved);
        p.decision = Some(Decision::Denied { by: "rev".into() });
        p.decided_at = Some("2026-01-01T00:05:00Z".into());
        assert_eq!(
            current_of(&p),
            json!({"name": "p", "phase": "Approved", "mode": "apply", "deniedBy": "rev",
                   "decidedAt": "2026-01-01T00:05:00Z"})
        );
    }
}
