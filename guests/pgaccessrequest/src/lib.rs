//! The PgAccessRequest guest: ConfigurationValid and RoleBindingSynced of a request for a ClusterRole in a namespace until `spec.expiresAt`, whose RoleBinding an approver creates and the operator only ever takes away.

pub mod binding;
pub mod configuration;
pub mod decision;
pub mod registry;
pub mod spec;
pub mod synced;
pub mod time;

use reconciler_guest_sdk::{
    Condition, ConditionStatus, Evaluation, Facts, Gate, Guest, KindRef, KindSpec, Reconciliation,
    Verdict, VerdictBuilder, read,
};
use serde_json::Value;

use binding::Binding;
use registry::{REQUEST_LABEL, ROLE_BINDING_SYNCED, role_binding_kind};
use synced::{Bindings, Request};

pub struct PgAccessRequest;

impl Guest for PgAccessRequest {
    fn describe() -> KindSpec {
        registry::describe()
    }

    fn writes() -> Vec<KindRef> {
        registry::writes()
    }

    /// None: a requester who may create a request must not be able to
    /// hold back the host taking its grant away, nor gate anything else.
    fn parent_gates() -> Vec<Gate> {
        Vec::new()
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    /// Both aspects every pass: ConfigurationValid False (ClusterNotFound)
    /// never stops RoleBindingSynced, so expiry and revocation keep
    /// working without the Cluster. The only changes are deletions, by the
    /// UID the pass saw; nothing is ever applied. The kind has no pause
    /// annotation: taking a grant away is never held back.
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let mut verdict = VerdictBuilder::new();
        let parent = input.parent_json();
        let meta = &input.parent.meta;
        let namespace = meta.namespace.as_str();
        let spec = spec::parse(&parent, namespace);
        let now = facts.now();
        let standing = decision::standing(&parent, &spec, meta.creation.as_ref(), &now);
        let (grace_seconds, grace_note) = configuration::orphan_grace(input);
        let notes: Vec<String> = spec.problems.iter().cloned().chain(grace_note).collect();
        let (configuration, retry) = configuration::evaluate(facts, namespace, &spec, &notes);
        verdict.aspect(configuration);
        if let Some(seconds) = retry {
            verdict.requeue_after(seconds);
        }
        let mut changes = Vec::new();
        match bindings(facts, namespace, &meta.name, &meta.uid, &spec) {
            Ok(bindings) => {
                let cluster_role_exists =
                    if standing.phase.is_terminal() || spec.cluster_role.is_empty() {
                        Some(true)
                    } else {
                        facts
                            .cluster_role(&spec.cluster_role)
                            .ok()
                            .map(|r| r.is_some())
                    };
                let request = Request {
                    name: &meta.name,
                    namespace,
                    spec: &spec,
                    standing: &standing,
                    previous_phase: parent["status"]["phase"].as_str(),
                    previous: previous_condition(&parent),
                    cluster_role_exists,
                    grace_seconds,
                    now: &now,
                };
                let synced = synced::evaluate(&request, &bindings);
                verdict.aspect(synced.condition);
                for (key, value) in synced.fields {
                    verdict.field(key, value);
                }
                for event in synced.events {
                    verdict.event(event.type_, &event.reason, event.message);
                }
                if let Some(seconds) = synced.requeue_after {
                    verdict.requeue_after(seconds);
                }
                changes = synced.withdrawals;
            }
            Err(message) => {
                verdict
                    .aspect(synced::unread(message))
                    .requeue_after(read::RETRY_SECONDS);
            }
        }
        Reconciliation {
            verdict: verdict.build(),
            changes,
        }
    }
}

/// The request's own RoleBindings, and those labelled for it that another
/// object (or none) controls.
fn bindings(
    facts: &dyn Facts,
    namespace: &str,
    name: &str,
    uid: &str,
    spec: &spec::AccessSpec,
) -> Result<Bindings, String> {
    let kind = role_binding_kind();
    let owned = facts
        .children(&kind)
        .map_err(|e| read::failure("the request's RoleBindings", &e))?;
    let labelled = facts
        .list(
            &kind,
            namespace,
            &[(REQUEST_LABEL.to_owned(), name.to_owned())],
        )
        .map_err(|e| read::failure(&format!("RoleBindings labelled {REQUEST_LABEL}={name}"), &e))?;
    let foreign = labelled
        .iter()
        .filter(|o| o.meta.controller.as_ref().is_none_or(|c| c.uid != uid))
        .map(|o| match &o.meta.controller {
            Some(c) => format!(
                "RoleBinding {} (controlled by {} {})",
                o.meta.name, c.kind, c.name
            ),
            None => format!("RoleBinding {} (controlled by no object)", o.meta.name),
        })
        .collect();
    Ok(Bindings {
        owned: owned
            .iter()
            .map(|o| Binding::of(o, spec, facts.change_state(&kind, namespace, &o.meta.name)))
            .collect(),
        foreign,
    })
}

/// RoleBindingSynced as the status has it.
fn previous_condition(parent: &Value) -> Option<Condition> {
    let c = parent["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ROLE_BINDING_SYNCED)?;
    let status = match c["status"].as_str()? {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    Some(Condition {
        type_: ROLE_BINDING_SYNCED.to_owned(),
        status,
        reason: c["reason"].as_str().unwrap_or_default().to_owned(),
        message: c["message"].as_str().unwrap_or_default().to_owned(),
    })
}

reconciler_guest_sdk::export_guest!(PgAccessRequest);
