//! A kind built against `reconciler:guest@0.4.0`, the released fourth
//! contract, with wit-bindgen directly (not the SDK, which follows the
//! current contract): the host's tests load it to show that a 0.4
//! component keeps loading, describing and reconciling on a host serving
//! 0.5, its deletions ordinary changes (never withdrawals) and its
//! parents free to set both gates, as before 0.5.
//!
//! `LegacyWidget` wants the ConfigMap `<name>-legacy` holding its
//! `spec.message` and deletes the RoleBinding `<name>-legacy` it controls
//! (two 0.4 changes); its one aspect, Applied, is True with the number of
//! ConfigMaps it controls (`facts.children`) as its message.

wit_bindgen::generate!({
    path: "../../../wit/deps/reconciler-guest-0.4.0",
    world: "guest",
});

use exports::reconciler::guest::reconciler::{
    ApplyObject, Change, Condition, ConventionProfile, DeleteObject, Evaluation, Guest, KindSpec,
    Reconciliation, Verdict,
};
use reconciler::guest::facts;
use reconciler::guest::types::{ConditionStatus, KindRef};

pub struct LegacyWidget;

fn config_map() -> KindRef {
    KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
    }
}

fn role_binding() -> KindRef {
    KindRef {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        kind: "RoleBinding".into(),
    }
}

impl Guest for LegacyWidget {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "LegacyWidget".into(),
            plural: "legacywidgets".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["Applied".into()],
            advisory: vec![],
            reasons: vec![],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: vec![],
            pause: None,
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn evaluate(input: Evaluation) -> Verdict {
        Self::reconcile(input).verdict
    }

    fn writes() -> Vec<KindRef> {
        vec![config_map(), role_binding()]
    }

    fn reconcile(input: Evaluation) -> Reconciliation {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let name = format!("{}-legacy", input.parent.meta.name);
        let message = parent["spec"]["message"].as_str().unwrap_or_default();
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"message": message}});
        let controlled = facts::children(&config_map()).map(|c| c.len()).unwrap_or(0);
        let mut changes = vec![Change::Apply(ApplyObject {
            kind: config_map(),
            name: name.clone(),
            body: body.to_string(),
        })];
        changes.extend(
            facts::children(&role_binding())
                .unwrap_or_default()
                .into_iter()
                .filter(|b| b.meta.name == name)
                .map(|b| {
                    Change::Delete(DeleteObject {
                        kind: role_binding(),
                        name: b.meta.name,
                        uid: b.meta.uid,
                    })
                }),
        );
        Reconciliation {
            verdict: Verdict {
                aspects: vec![Condition {
                    type_: "Applied".into(),
                    status: ConditionStatus::True,
                    reason: "AsExpected".into(),
                    message: format!("{controlled} ConfigMaps controlled"),
                }],
                advisory: vec![],
                stall: None,
                status_fields: "{}".into(),
                events: vec![],
                requeue_after_seconds: None,
            },
            changes,
        }
    }
}

#[cfg(target_arch = "wasm32")]
export!(LegacyWidget);
