//! A test guest that changes the cluster through the host (contract
//! 0.3.0): a `Widget` wants the ConfigMap `<name>-config` with the data of
//! its `spec.data`, and, while `spec.extra` is true, `<name>-extra`; once
//! `spec.extra` is false it deletes `<name>-extra` (by the UID it saw).
//!
//! ChildReady says how that went: True once the host made the ConfigMap
//! it asked for (`facts.change-state`), False with the host's reason while
//! a gate holds it (AwaitingApproval, ChangesDenied, Planned); False with
//! ResourceNotOwned when `<name>-config` exists and another
//! object controls it (nothing is asked for it); False with ChildRefused
//! while the host's last apply of it was refused less than five minutes
//! ago (it is held back meanwhile, and asked for again after).

use reconciler_guest_sdk::change;
use reconciler_guest_sdk::ownership::{Parent, RESOURCE_NOT_OWNED};
use reconciler_guest_sdk::verdict::{fails, ok};
use reconciler_guest_sdk::{
    ApplyObject, ApplyOutcome, Change, ConventionProfile, DeleteObject, Evaluation, Facts,
    GenerateSecret, Guest, KindRef, KindSpec, Reconciliation, Verdict, VerdictBuilder, spec,
};
use serde_json::json;

/// The kind's group, version and kind.
pub const GROUP: &str = "testing.reconciler.dev";
pub const KIND: &str = "Widget";
/// The aspect.
pub const CHILD_READY: &str = "ChildReady";
/// The host refused the last apply of the ConfigMap.
pub const CHILD_REFUSED: &str = "ChildRefused";
/// When a refused child is asked for again.
pub const REFUSED_RETRY_SECONDS: u32 = 300;

pub struct Writer;

fn secret() -> KindRef {
    KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: "Secret".into(),
    }
}

fn config_map() -> KindRef {
    KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
    }
}

impl Guest for Writer {
    fn describe() -> KindSpec {
        KindSpec {
            group: GROUP.into(),
            version: "v1".into(),
            kind: KIND.into(),
            plural: "widgets".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec![CHILD_READY.into()],
            advisory: vec![],
            reasons: vec![
                spec::common(RESOURCE_NOT_OWNED),
                spec::owned(
                    "writer",
                    CHILD_REFUSED,
                    "The API server refused the host's apply of the ConfigMap.",
                ),
            ],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: vec![],
            pause: None,
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn writes() -> Vec<KindRef> {
        vec![config_map(), secret()]
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let meta = &input.parent.meta;
        let name = format!("{}-config", meta.name);
        let extra = format!("{}-extra", meta.name);
        let mut verdict = VerdictBuilder::new();
        let mut changes = Vec::new();
        let children = facts.children(&config_map()).unwrap_or_default();
        let owner = Parent::of(KIND, meta);
        let existing = facts.get(&config_map(), &meta.namespace, &name);
        let refused_by_owner = existing
            .ok()
            .flatten()
            .and_then(|o| owner.refusal("ConfigMap", &name, &o.meta));
        let last = facts.last_apply(&config_map(), &meta.namespace, &name);
        let since = facts
            .last_apply_time(&config_map(), &meta.namespace, &name)
            .map(|at| facts.now().seconds - at.seconds);
        let retry = i64::from(REFUSED_RETRY_SECONDS);
        match (refused_by_owner, last, since) {
            (Some(why), _, _) => {
                verdict.aspect(fails(CHILD_READY, RESOURCE_NOT_OWNED, why));
            }
            (None, Some(ApplyOutcome::Refused(r)), Some(since)) if since < retry => {
                verdict.aspect(fails(
                    CHILD_READY,
                    CHILD_REFUSED,
                    format!("the ConfigMap {name} was refused: {}", r.message),
                ));
                verdict.requeue_after(u32::try_from(retry - since).unwrap_or(1).max(1));
            }
            (None, _, _) => {
                changes.push(apply(&name, &parent["spec"]["data"]));
                let state = facts.change_state(&config_map(), &meta.namespace, &name);
                verdict.aspect(change::aspect(
                    CHILD_READY,
                    &format!("ConfigMap {name}"),
                    state.as_ref(),
                    CHILD_REFUSED,
                    || ok(CHILD_READY, format!("ConfigMap {name} holds the data")),
                ));
            }
        }
        if parent["spec"]["extra"] == true {
            changes.push(apply(&extra, &json!({})));
        } else if let Some(child) = children.iter().find(|c| c.meta.name == extra) {
            changes.push(Change::Delete(DeleteObject {
                kind: config_map(),
                name: extra,
                uid: child.meta.uid.clone(),
            }));
        }
        if parent["spec"]["secret"] == true {
            changes.push(Change::Generate(GenerateSecret {
                name: format!("{}-secret", meta.name),
                keys: vec![("password".into(), 32)],
            }));
        }
        Reconciliation {
            verdict: verdict.build(),
            changes,
        }
    }
}

fn apply(name: &str, data: &serde_json::Value) -> Change {
    let data = if data.is_object() {
        data.clone()
    } else {
        json!({})
    };
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
    });
    Change::Apply(ApplyObject {
        kind: config_map(),
        name: name.to_owned(),
        body: body.to_string(),
    })
}

reconciler_guest_sdk::export_guest!(Writer);
