//! The ReconcilePlan object (deploy/plans-crd.yaml): the plan the host
//! creates for a parent's pending changes, read back as a [`Plan`], and
//! the status writes that move it through its phases.
//!
//! Every status write is a JSON merge patch conditional on the
//! resourceVersion the host read ([`status_patch`]): a reviewer's decision
//! landing meanwhile makes it fail (409), and the pass starts again from
//! what the reviewer wrote, so a supersede racing an approval executes
//! nothing. The conditions list is written whole, a recorded decision
//! (Approved=True or Denied=True) always exactly as it was: decisions are
//! write-once (the CRD's CEL refuses anything else).

use kube::core::{ApiResource, GroupVersionKind};
use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use crate::plan::artifact::{Artifact, Counts};
use crate::plan::digest::{Digest, Mode, Target};

pub const GROUP: &str = "reconciler.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "ReconcilePlan";
pub const PLURAL: &str = "reconcileplans";
/// The label naming the UID of a plan's parent (how the host finds a
/// parent's plans in its cache).
pub(crate) const PARENT_UID_LABEL: &str = "reconciler.dev/parent-uid";
/// The annotation exempting a plan from retention (`"true"`).
pub(crate) const KEEP_ANNOTATION: &str = "reconciler.dev/keep";
/// The label marking a plan that records withdrawals (`"true"`): made
/// without review, never a plan awaiting one, never executed from its
/// phase.
pub(crate) const WITHDRAWAL_LABEL: &str = "reconciler.dev/withdrawal";

/// The plan kind, as the host's cache keys it.
pub fn kind_ref() -> KindRef {
    KindRef {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
    }
}

/// The plan kind's API resource.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

/// Where a plan stands (seed 003).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Pending,
    Approved,
    Applying,
    Applied,
    Rejected,
    Superseded,
    Failed,
}

impl Phase {
    pub const ALL: [Phase; 7] = [
        Phase::Pending,
        Phase::Approved,
        Phase::Applying,
        Phase::Applied,
        Phase::Rejected,
        Phase::Superseded,
        Phase::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Approved => "Approved",
            Phase::Applying => "Applying",
            Phase::Applied => "Applied",
            Phase::Rejected => "Rejected",
            Phase::Superseded => "Superseded",
            Phase::Failed => "Failed",
        }
    }

    pub fn parse(text: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// A plan in this phase is done with: never executed again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Phase::Applied | Phase::Rejected | Phase::Superseded | Phase::Failed
        )
    }
}

/// A recorded decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Approved { by: String },
    Denied { by: String },
}

/// A plan as the host reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// RFC 3339, as the server wrote it (sorts as time).
    pub created: String,
    pub mode: Option<Mode>,
    pub digest: String,
    pub encoding: String,
    pub target: Target,
    /// Pending when the host has not written a phase yet.
    pub phase: Phase,
    pub decision: Option<Decision>,
    /// When the decision was recorded (its condition's time).
    pub decided_at: Option<String>,
    pub conditions: Vec<Value>,
    pub keep: bool,
    /// A record of withdrawals ([`WITHDRAWAL_LABEL`]).
    pub withdrawal: bool,
    /// `spec.effects.configMapRef`, where the effects are in a ConfigMap.
    pub effects_ref: Option<Value>,
    /// It is being deleted (a deletionTimestamp: a finalizer holds it).
    pub deleting: bool,
    pub revalidated_generation: Option<i64>,
    pub counts: Counts,
}

impl Plan {
    /// A plan named `name` as the host makes it (created at `created`, not
    /// yet stored: version 1), describing `digest` for `target` in `mode`:
    /// Pending, undecided, counting no change. What the offline planner
    /// and the tests start from; they set what their plan has been through.
    pub(crate) fn describing(
        name: &str,
        created: String,
        mode: Mode,
        digest: &Digest,
        target: &Target,
    ) -> Plan {
        Plan {
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            resource_version: "1".into(),
            created,
            mode: Some(mode),
            digest: digest.to_string(),
            encoding: digest.tag.into(),
            target: target.clone(),
            phase: Phase::Pending,
            decision: None,
            decided_at: None,
            conditions: Vec::new(),
            keep: false,
            withdrawal: false,
            effects_ref: None,
            deleting: false,
            revalidated_generation: None,
            counts: Counts::default(),
        }
    }

    /// Reads a plan object; `None` when it is no plan the host made (no
    /// spec digest).
    pub fn of(object: &Value) -> Option<Plan> {
        let md = &object["metadata"];
        let spec = &object["spec"];
        let status = &object["status"];
        let digest = spec["digest"].as_str()?.to_owned();
        let conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
        let is_true = |t: &str| {
            conditions
                .iter()
                .find(|c| c["type"] == t && c["status"] == "True")
        };
        let by = status["decidedBy"]["username"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (decision, decided_at) = match (is_true("Approved"), is_true("Denied")) {
            (Some(c), _) => (
                Some(Decision::Approved { by }),
                c["lastTransitionTime"].as_str().map(str::to_owned),
            ),
            (None, Some(c)) => (
                Some(Decision::Denied { by }),
                c["lastTransitionTime"].as_str().map(str::to_owned),
            ),
            (None, None) => (None, None),
        };
        let count = |k: &str| {
            usize::try_from(spec["changes"][k].as_u64().unwrap_or(0)).unwrap_or(usize::MAX)
        };
        Some(Plan {
            name: md["name"].as_str().unwrap_or_default().to_owned(),
            uid: md["uid"].as_str().unwrap_or_default().to_owned(),
            resource_version: md["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            created: md["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            mode: spec["mode"].as_str().and_then(Mode::parse),
            digest,
            encoding: spec["digestEncoding"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            target: Target {
                cluster: spec["target"]["clusterUID"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                parent: spec["target"]["parentUID"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            },
            phase: status["phase"]
                .as_str()
                .and_then(Phase::parse)
                .unwrap_or(Phase::Pending),
            decision,
            decided_at,
            conditions,
            keep: md["annotations"][KEEP_ANNOTATION] == "true",
            withdrawal: md["labels"][WITHDRAWAL_LABEL] == "true",
            effects_ref: spec["effects"].get("configMapRef").cloned(),
            deleting: !md["deletionTimestamp"].is_null(),
            revalidated_generation: status["revalidatedGeneration"].as_i64(),
            counts: Counts {
                applies: count("applies"),
                deletions: count("deletions"),
                generated: count("generated"),
            },
        })
    }

    /// Whether the plan carries a decision the host executes on: approved
    /// (by an approver, as the admission policy holds a decision to, or
    /// by the host itself under approval auto), made in mode apply.
    pub fn executable(&self) -> bool {
        matches!(self.decision, Some(Decision::Approved { .. })) && self.mode == Some(Mode::Apply)
    }

    /// Why this plan does not describe `digest` made in `mode` for
    /// `target`: `None` when it does. The reason is the Superseded
    /// condition's.
    pub(crate) fn divergence(
        &self,
        digest: &Digest,
        mode: Mode,
        target: &Target,
    ) -> Option<Divergence> {
        if self.encoding != digest.tag {
            Some(Divergence::EncodingChanged)
        } else if self.target != *target {
            Some(Divergence::TargetChanged)
        } else if self.mode != Some(mode) {
            Some(Divergence::ModeChanged)
        } else if self.digest != digest.to_string() {
            Some(Divergence::EffectsChanged)
        } else {
            None
        }
    }
}

/// Why a plan is superseded: the reason of its Superseded condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// The effects differ from the plan's.
    EffectsChanged,
    /// Nothing is left to change.
    EffectsGone,
    /// The cluster or the parent is another one.
    TargetChanged,
    /// The parent's mode changed.
    ModeChanged,
    /// The plan's digest is of another encoding: never compared.
    EncodingChanged,
    /// A newer plan of the same parent is current.
    Replaced,
    /// The plan reads Applying without a decision the host executes on
    /// (Approved=True, in mode apply): a phase the host did not write.
    Tampered,
    /// The ConfigMap of the plan's effects is not what the plan recorded
    /// (changed, replaced or gone): what a reviewer read may not be what
    /// would run.
    ArtifactChanged,
}

impl Divergence {
    pub fn reason(self) -> &'static str {
        match self {
            Divergence::EffectsChanged => "EffectsChanged",
            Divergence::EffectsGone => "EffectsGone",
            Divergence::TargetChanged => "TargetChanged",
            Divergence::ModeChanged => "ModeChanged",
            Divergence::EncodingChanged => "EncodingChanged",
            Divergence::Replaced => "Replaced",
            Divergence::Tampered => "PhaseNotByHost",
            Divergence::ArtifactChanged => "ArtifactChanged",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Divergence::EffectsChanged => {
                "the parent's changes are no longer these: a new plan holds them"
            }
            Divergence::EffectsGone => "nothing is left to change: no plan replaces this one",
            Divergence::TargetChanged => {
                "the target is another one (the cluster or the parent's UID): a new plan holds the changes"
            }
            Divergence::ModeChanged => "the parent's mode changed: a new plan holds the changes",
            Divergence::EncodingChanged => {
                "the digest is of an encoding this host does not compare: a new plan holds the changes"
            }
            Divergence::Replaced => "a newer plan of the parent is current",
            Divergence::Tampered => {
                "the plan reads Applying, but it carries no decision the host executes on \
                 (Approved=True by an approver, or the host's own under approval auto, in mode \
                 apply): a phase the host did not write is never a reason to act; nothing was \
                 executed, a new plan holds the changes"
            }
            Divergence::ArtifactChanged => {
                "the ConfigMap of the plan's effects is not the one the plan recorded (its \
                 SHA-256 differs, or it is gone): what was reviewed may not be what would run; \
                 nothing was executed, a new plan holds the changes"
            }
        }
    }
}

/// The parent a plan is for.
pub struct ParentRef<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
}

impl<'a> ParentRef<'a> {
    /// The parent `parent` (an object of `resource`).
    pub fn of(resource: &'a ApiResource, parent: &'a Value) -> ParentRef<'a> {
        let md = &parent["metadata"];
        let text = |v: &'a Value| v.as_str().unwrap_or_default();
        ParentRef {
            group: &resource.group,
            version: &resource.version,
            resource: &resource.plural,
            kind: &resource.kind,
            name: text(&md["name"]),
            namespace: text(&md["namespace"]),
            uid: text(&md["uid"]),
        }
    }
}

/// The plan object to create: named `name`, controlled by the parent (a
/// change of it, a decision, passes the parent; it goes with the parent),
/// labelled with its UID.
pub fn new_plan(
    name: &str,
    parent: &ParentRef<'_>,
    mode: Mode,
    digest: &Digest,
    target: &Target,
    artifact: &Artifact,
    counts: Counts,
) -> Value {
    let api_version = if parent.group.is_empty() {
        parent.version.to_owned()
    } else {
        format!("{}/{}", parent.group, parent.version)
    };
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": parent.namespace,
            "labels": {
                PARENT_UID_LABEL: parent.uid,
                "app.kubernetes.io/managed-by": crate::marks::FIELD_MANAGER,
            },
            "ownerReferences": [{
                "apiVersion": api_version,
                "kind": parent.kind,
                "name": parent.name,
                "uid": parent.uid,
                "controller": true,
            }],
        },
        "spec": {
            "parent": {
                "group": parent.group,
                "version": parent.version,
                "resource": parent.resource,
                "kind": parent.kind,
                "name": parent.name,
                "uid": parent.uid,
            },
            "mode": mode.as_str(),
            "digest": digest.to_string(),
            "digestEncoding": digest.tag,
            "target": {"clusterUID": target.cluster, "parentUID": target.parent},
            "effects": artifact.spec(name),
            "changes": counts.to_json(),
        },
    })
}

/// A condition as the host writes it on a plan.
pub fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    })
}

/// `conditions` with `replacement`'s type replaced (or added), unless
/// the condition there is a recorded decision: never rewritten.
pub(crate) fn with_condition(conditions: &[Value], replacement: Value) -> Vec<Value> {
    let type_ = replacement["type"].clone();
    let decided = conditions.iter().any(|c| {
        c["type"] == type_ && c["status"] == "True" && (type_ == "Approved" || type_ == "Denied")
    });
    if decided {
        return conditions.to_vec();
    }
    let mut out: Vec<Value> = conditions
        .iter()
        .filter(|c| c["type"] != type_)
        .cloned()
        .collect();
    out.push(replacement);
    out
}

/// A JSON merge patch of `status` over the plan read at
/// `resource_version` (refused with 409 if it changed since).
pub(crate) fn status_patch(resource_version: &str, status: Value) -> Value {
    json!({"metadata": {"resourceVersion": resource_version}, "status": status})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_object(status: Value) -> Value {
        json!({
            "metadata": {"name": "w-abc", "resourceVersion": "7",
                         "creationTimestamp": "2026-12-01T00:00:00Z",
                         "annotations": {KEEP_ANNOTATION: "true"}},
            "spec": {"mode": "apply", "digest": "rhd1-sha256:aa", "digestEncoding": "rhd1-sha256",
                     "target": {"clusterUID": "c", "parentUID": "p"},
                     "changes": {"applies": 2, "deletions": 1, "generated": 0}},
            "status": status,
        })
    }

    fn digest(hex: &str) -> Digest {
        Digest {
            tag: "rhd1-sha256",
            hex: hex.into(),
        }
    }

    #[test]
    fn a_plan_reads_its_phase_decision_and_counts() {
        let plan = Plan::of(&plan_object(json!({
            "phase": "Pending",
            "conditions": [{"type": "Approved", "status": "True", "reason": "ApprovedByReviewer",
                            "lastTransitionTime": "2026-12-01T00:01:00Z"}],
            "decidedBy": {"username": "alice"},
        })))
        .unwrap();
        assert_eq!(plan.phase, Phase::Pending);
        assert_eq!(
            plan.decision,
            Some(Decision::Approved { by: "alice".into() })
        );
        assert_eq!(plan.decided_at.as_deref(), Some("2026-12-01T00:01:00Z"));
        assert!(plan.keep);
        assert_eq!(plan.counts.deletions, 1);
        let fresh = Plan::of(&plan_object(Value::Null)).unwrap();
        assert_eq!(fresh.phase, Phase::Pending);
        assert_eq!(fresh.decision, None);
    }

    #[test]
    fn a_plan_diverges_by_encoding_target_mode_then_effects() {
        let plan = Plan::of(&plan_object(Value::Null)).unwrap();
        let target = Target {
            cluster: "c".into(),
            parent: "p".into(),
        };
        assert_eq!(plan.divergence(&digest("aa"), Mode::Apply, &target), None);
        assert_eq!(
            plan.divergence(&digest("bb"), Mode::Apply, &target),
            Some(Divergence::EffectsChanged)
        );
        assert_eq!(
            plan.divergence(&digest("aa"), Mode::Observe, &target),
            Some(Divergence::ModeChanged)
        );
        let moved = Target {
            cluster: "other".into(),
            parent: "p".into(),
        };
        assert_eq!(
            plan.divergence(&digest("aa"), Mode::Apply, &moved),
            Some(Divergence::TargetChanged)
        );
        let newer = Digest {
            tag: "rhd2-sha256",
            hex: "aa".into(),
        };
        assert_eq!(
            plan.divergence(&newer, Mode::Apply, &target),
            Some(Divergence::EncodingChanged)
        );
    }

    #[test]
    fn a_recorded_decision_is_never_rewritten() {
        let decided =
            vec![json!({"type": "Approved", "status": "True", "reason": "ApprovedByReviewer"})];
        let out = with_condition(
            &decided,
            condition("Approved", "False", "Superseded", "m", "t"),
        );
        assert_eq!(out, decided);
        let out = with_condition(
            &decided,
            condition("Superseded", "True", "EffectsChanged", "m", "t"),
        );
        assert_eq!(out.len(), 2);
        let pending = vec![json!({"type": "Approved", "status": "False", "reason": "Pending"})];
        let out = with_condition(
            &pending,
            condition("Approved", "False", "EffectsGone", "m", "t"),
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["reason"], "EffectsGone");
    }
}
