//! A kind built against `reconciler:guest@0.5.0`, the released fifth
//! contract, with wit-bindgen directly (not the SDK, which follows the
//! current contract): the host's tests load it to show that a 0.5
//! component keeps loading and reconciling on a host serving 0.6, its
//! reads (which cannot name their fields) served whole objects, as before
//! 0.6.
//!
//! `LegacyGauge` reads Services; its one aspect, Read, is True with the
//! `spec.clusterIP` of the first Service of its namespace as its message.

wit_bindgen::generate!({
    path: "../../../wit/deps/reconciler-guest-0.5.0",
    world: "guest",
});

use exports::reconciler::guest::reconciler::{
    Condition, ConventionProfile, Evaluation, Gate, Guest, KindSpec, ReadDecl, Reconciliation,
    Verdict,
};
use reconciler::guest::facts;
use reconciler::guest::types::{ConditionStatus, KindRef};

pub struct LegacyGauge;

fn service() -> KindRef {
    KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: "Service".into(),
    }
}

impl Guest for LegacyGauge {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "LegacyGauge".into(),
            plural: "legacygauges".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["Read".into()],
            advisory: vec![],
            reasons: vec![],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: vec![ReadDecl {
                kind: service(),
                optional: false,
                cross_namespace: false,
            }],
            pause: None,
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn evaluate(input: Evaluation) -> Verdict {
        Self::reconcile(input).verdict
    }

    fn writes() -> Vec<KindRef> {
        vec![]
    }

    fn parent_gates() -> Vec<Gate> {
        vec![]
    }

    fn reconcile(input: Evaluation) -> Reconciliation {
        let namespace = input.parent.meta.namespace.clone();
        let said = match facts::list(&service(), &namespace, &[]) {
            Ok(services) => services.first().map_or_else(
                || "no Service".to_owned(),
                |s| {
                    let service: serde_json::Value =
                        serde_json::from_str(&s.json).unwrap_or_default();
                    let ip = service["spec"]["clusterIP"].as_str().unwrap_or("absent");
                    format!("clusterIP {ip}")
                },
            ),
            Err(e) => format!("list refused: {e:?}"),
        };
        Reconciliation {
            verdict: Verdict {
                aspects: vec![Condition {
                    type_: "Read".into(),
                    status: ConditionStatus::True,
                    reason: "AsExpected".into(),
                    message: said,
                }],
                advisory: vec![],
                stall: None,
                status_fields: "{}".into(),
                events: vec![],
                requeue_after_seconds: None,
            },
            changes: vec![],
        }
    }
}

#[cfg(target_arch = "wasm32")]
export!(LegacyGauge);
