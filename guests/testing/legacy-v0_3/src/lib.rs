//! A kind built against `reconciler:guest@0.3.0`, the released third
//! contract, with wit-bindgen directly (not the SDK, which follows the
//! current contract): the host's tests load it to show that a 0.3
//! component keeps loading, describing and reconciling on a host serving
//! 0.4.
//!
//! `LegacyDevice` wants the ConfigMap `<name>-legacy` holding its
//! `spec.message` (a 0.3 change); its one aspect, Applied, is True with
//! the number of ConfigMaps it controls (`facts.children`, a 0.3 function)
//! as its message.

wit_bindgen::generate!({
    path: "../../../wit/deps/reconciler-guest-0.3.0",
    world: "guest",
});

use exports::reconciler::guest::reconciler::{
    ApplyObject, Change, Condition, ConventionProfile, Evaluation, Guest, KindSpec, Reconciliation,
    Verdict,
};
use reconciler::guest::facts;
use reconciler::guest::types::{ConditionStatus, KindRef};

pub struct LegacyDevice;

fn config_map() -> KindRef {
    KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
    }
}

impl Guest for LegacyDevice {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "LegacyDevice".into(),
            plural: "legacydevices".into(),
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
        }
    }

    fn evaluate(input: Evaluation) -> Verdict {
        Self::reconcile(input).verdict
    }

    fn writes() -> Vec<KindRef> {
        vec![config_map()]
    }

    fn reconcile(input: Evaluation) -> Reconciliation {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let name = format!("{}-legacy", input.parent.meta.name);
        let message = parent["spec"]["message"].as_str().unwrap_or_default();
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"message": message}});
        let controlled = facts::children(&config_map()).map(|c| c.len()).unwrap_or(0);
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
            changes: vec![Change::Apply(ApplyObject {
                kind: config_map(),
                name,
                body: body.to_string(),
            })],
        }
    }
}

#[cfg(target_arch = "wasm32")]
export!(LegacyDevice);
