//! A test guest that asks for what its parent says, verbatim (contract
//! 0.3.0): a `Mirror` wants applied each object of its `spec.children`
//! (ConfigMaps, Secrets, Services, Deployments, CronJobs, RoleBindings,
//! NetworkPolicies), as written, so that a test can ask the host for any
//! body and see whether it settles against what the API server stores
//! (issue 51).
//!
//! Mirrored says how that went: True once the host made every child
//! (`facts.change-state`), else what holds or refused the first one.

use reconciler_guest_sdk::change;
use reconciler_guest_sdk::verdict::ok;
use reconciler_guest_sdk::{
    ApplyObject, Change, ConventionProfile, Evaluation, Facts, Guest, KindRef, KindSpec,
    Reconciliation, Verdict, VerdictBuilder, spec,
};

/// The kind's group, version and kind.
pub const GROUP: &str = "testing.reconciler.dev";
pub const KIND: &str = "Mirror";
/// The aspect.
pub const MIRRORED: &str = "Mirrored";
/// The API server refused a child.
pub const CHILD_REFUSED: &str = "ChildRefused";

/// The kinds an Mirror may ask for.
const WRITES: [(&str, &str, &str); 7] = [
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("apps", "v1", "Deployment"),
    ("batch", "v1", "CronJob"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
];

pub struct Mirror;

fn kind_ref((group, version, kind): (&str, &str, &str)) -> KindRef {
    KindRef {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

/// The kind of `body`, if it is one an Mirror may ask for.
fn kind_of(body: &serde_json::Value) -> Option<KindRef> {
    let api_version = body["apiVersion"].as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    WRITES
        .iter()
        .find(|(g, v, k)| *g == group && *v == version && body["kind"] == *k)
        .map(|w| kind_ref(*w))
}

impl Guest for Mirror {
    fn describe() -> KindSpec {
        KindSpec {
            group: GROUP.into(),
            version: "v1".into(),
            kind: KIND.into(),
            plural: "mirrors".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec![MIRRORED.into()],
            advisory: vec![],
            reasons: vec![spec::owned(
                "mirror",
                CHILD_REFUSED,
                "The API server refused the host's apply of a child.",
            )],
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
        WRITES.iter().map(|w| kind_ref(*w)).collect()
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let parent: serde_json::Value =
            serde_json::from_str(&input.parent.json).unwrap_or_default();
        let namespace = &input.parent.meta.namespace;
        let mut changes = Vec::new();
        let mut aspect = None;
        for body in parent["spec"]["children"].as_array().into_iter().flatten() {
            let (Some(kind), Some(name)) = (kind_of(body), body["metadata"]["name"].as_str())
            else {
                continue;
            };
            let state = facts.change_state(&kind, namespace, name);
            let what = format!("{} {name}", kind.kind);
            let condition = change::aspect(MIRRORED, &what, state.as_ref(), CHILD_REFUSED, || {
                ok(MIRRORED, "every child is made")
            });
            if aspect.is_none() && condition.status != reconciler_guest_sdk::ConditionStatus::True {
                aspect = Some(condition);
            }
            changes.push(Change::Apply(ApplyObject {
                kind,
                name: name.to_owned(),
                body: body.to_string(),
            }));
        }
        let mut verdict = VerdictBuilder::new();
        verdict.aspect(aspect.unwrap_or_else(|| ok(MIRRORED, "every child is made")));
        Reconciliation {
            verdict: verdict.build(),
            changes,
        }
    }
}

reconciler_guest_sdk::export_guest!(Mirror);
