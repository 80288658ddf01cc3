//! A kind built against `reconciler:guest@0.2.0`, the released second
//! contract, with wit-bindgen directly (not the SDK, which follows the
//! current contract): the host's tests load it to show that a 0.2
//! component keeps loading, describing and evaluating on a host serving
//! 0.3.
//!
//! `LegacyGadget` has one aspect, Configured: True with the parent's
//! `spec.message` as its message, or False (MessageMissing) without one;
//! `status.nodes` says what `facts.node-pod-cidrs` (a 0.2 function)
//! answered.

wit_bindgen::generate!({
    path: "../../../wit/deps/reconciler-guest-0.2.0",
    world: "guest",
});

use exports::reconciler::guest::reconciler::{
    Condition, ConventionProfile, Evaluation, Guest, KindSpec, ReadDecl, ReasonEntry, Verdict,
};
use reconciler::guest::facts::{self, NodePodCidrsFact};
use reconciler::guest::types::{ConditionStatus, KindRef};

pub struct LegacyGadget;

impl Guest for LegacyGadget {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "LegacyGadget".into(),
            plural: "legacygadgets".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["Configured".into()],
            advisory: vec![],
            reasons: vec![ReasonEntry {
                name: "MessageMissing".into(),
                owner: "legacygadget".into(),
                meaning: "spec.message is not set.".into(),
            }],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: vec![ReadDecl {
                kind: KindRef {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "Node".into(),
                },
                optional: true,
            }],
            pause: None,
            spec_schema: None,
        }
    }

    fn evaluate(input: Evaluation) -> Verdict {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let configured = match parent["spec"]["message"].as_str() {
            Some(m) => Condition {
                type_: "Configured".into(),
                status: ConditionStatus::True,
                reason: "AsExpected".into(),
                message: m.to_owned(),
            },
            None => Condition {
                type_: "Configured".into(),
                status: ConditionStatus::False,
                reason: "MessageMissing".into(),
                message: "spec.message is not set".into(),
            },
        };
        let nodes = match facts::node_pod_cidrs() {
            NodePodCidrsFact::Known(nodes) => format!("{} known", nodes.len()),
            NodePodCidrsFact::Forbidden(why) => format!("forbidden: {why}"),
            NodePodCidrsFact::TooMany(n) => format!("too many: {n}"),
            NodePodCidrsFact::Incomplete(names) => format!("incomplete: {}", names.join(",")),
        };
        Verdict {
            aspects: vec![configured],
            advisory: vec![],
            stall: None,
            status_fields: serde_json::json!({ "nodes": nodes }).to_string(),
            events: vec![],
            requeue_after_seconds: None,
        }
    }
}

#[cfg(target_arch = "wasm32")]
export!(LegacyGadget);
