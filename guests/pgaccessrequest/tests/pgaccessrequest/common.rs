//! Shared test fixtures: a request, its RoleBindings and the facts around them, and the contract every verdict keeps.

use pgaccessrequest_guest::PgAccessRequest;
use pgaccessrequest_guest::registry::{self, REQUEST_LABEL, cluster_kind, role_binding_kind};
use reconciler_guest_sdk::mock::{MockFacts, evaluation};
use reconciler_guest_sdk::testing::keeps_contract;
use reconciler_guest_sdk::{Change, ConditionStatus, Guest, Reconciliation, Verdict};
use serde_json::{Value, json};

pub const NS: &str = "team-a";
pub const NAME: &str = "dave-orders";
pub const UID: &str = "uid-request";
/// 2026-11-29T12:00:00Z.
pub const NOW: i64 = 1_795_953_600;
pub const CREATED: &str = "2026-11-29T11:55:00Z";
/// An hour after [`NOW`].
pub const EXPIRES: &str = "2026-11-29T13:00:00Z";
pub const DAVE: &str = "dave@example.com";

pub fn request(status: Value) -> Value {
    json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": NAME, "namespace": NS, "uid": UID, "generation": 1, "creationTimestamp": CREATED},
        "spec": {
            "cluster": {"name": "orders"}, "clusterRole": "pg-reader",
            "subject": {"kind": "User", "name": DAVE}, "expiresAt": EXPIRES,
        },
        "status": status,
    })
}

pub fn approved_by(user: &str) -> Value {
    json!({"decision": {"outcome": "Approved", "decidedBy": {"username": user, "groups": ["approvers"]}}})
}

/// A RoleBinding of `subjects` to ClusterRole `role`, labelled for the
/// request, controlled by `controller_uid` (none: no controller).
pub fn role_binding(
    name: &str,
    created: &str,
    subjects: Value,
    role: &str,
    controller_uid: Option<&str>,
) -> Value {
    let mut rb = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": name, "namespace": NS, "uid": format!("uid-{name}"),
            "creationTimestamp": created, "labels": {REQUEST_LABEL: NAME},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    });
    if let Some(uid) = controller_uid {
        rb["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
            "name": NAME, "uid": uid, "controller": true,
        }]);
    }
    rb
}

pub fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

/// The request's own exact RoleBinding, created at `created`.
pub fn granted_binding(created: &str) -> Value {
    role_binding(NAME, created, json!([user(DAVE)]), "pg-reader", Some(UID))
}

/// The facts of the world around the request.
pub struct World {
    pub now: i64,
    pub cluster: bool,
    pub cluster_role: bool,
    /// RoleBindings in the namespace; those the request controls are its
    /// children too.
    pub bindings: Vec<Value>,
}

impl World {
    pub fn at(now: i64) -> World {
        World {
            now,
            cluster: true,
            cluster_role: true,
            bindings: Vec::new(),
        }
    }

    pub fn with(mut self, binding: Value) -> World {
        self.bindings.push(binding);
        self
    }

    pub fn facts(&self) -> MockFacts {
        let mut facts = MockFacts::at(self.now);
        if self.cluster {
            facts = facts.with_object(
                &cluster_kind(),
                json!({"metadata": {"name": "orders", "namespace": NS}}),
            );
        }
        if self.cluster_role {
            facts = facts.with_cluster_role("pg-reader");
        }
        for b in &self.bindings {
            facts = facts.with_object(&role_binding_kind(), b.clone());
            let controlled = b["metadata"]["ownerReferences"][0]["uid"] == UID;
            if controlled {
                facts = facts.with_child(&role_binding_kind(), b.clone());
            }
        }
        facts
    }
}

/// One pass over `parent` in `world`, held to the contract.
pub fn reconcile_with(parent: Value, settings: &[(&str, &str)], world: &World) -> Reconciliation {
    let input = evaluation(parent, settings);
    let r = PgAccessRequest::reconcile(&input, &world.facts());
    contract(&r.verdict);
    r
}

pub fn reconcile(parent: Value, world: &World) -> Reconciliation {
    reconcile_with(parent, &[], world)
}

/// What the host checks of every verdict, and the kind's own rule: both
/// aspects always given, never a stall (ConfigurationValid=False
/// included: the SDK's `keeps_contract` holds every other kind to a stall
/// there, so it is asked of the verdict without that condition).
pub fn contract(verdict: &Verdict) {
    let spec = registry::describe();
    assert!(verdict.stall.is_none(), "a PgAccessRequest never stalls");
    assert_eq!(verdict.aspects.len(), 2, "both aspects, every pass");
    let mut without = verdict.clone();
    without.aspects.retain(|c| {
        !(c.type_ == registry::CONFIGURATION_VALID && c.status == ConditionStatus::False)
    });
    if without.aspects.len() == 2 {
        keeps_contract(&spec, &without, false);
    } else {
        let c = verdict
            .aspect(registry::CONFIGURATION_VALID)
            .expect("ConfigurationValid");
        assert_eq!(c.reason, registry::CLUSTER_NOT_FOUND);
        assert!(
            spec.reasons
                .iter()
                .any(|r| r.name == verdict.aspects[1].reason)
                || ["Reconciling"].contains(&verdict.aspects[1].reason.as_str())
        );
    }
}

/// The UIDs the pass deletes.
pub fn deleted(r: &Reconciliation) -> Vec<String> {
    r.changes
        .iter()
        .map(|c| match c {
            Change::Withdraw(w) => w.object.uid.clone(),
            other => panic!("the guest only withdraws: {other:?}"),
        })
        .collect()
}

/// The Events of a pass in the order the host raises them: each
/// withdrawal's once it is made, then the verdict's after the status write.
pub fn events(r: &Reconciliation) -> Vec<(reconciler_guest_sdk::EventType, String, String)> {
    r.changes
        .iter()
        .filter_map(|c| match c {
            Change::Withdraw(w) => w.event.as_ref(),
            _ => None,
        })
        .chain(&r.verdict.events)
        .map(|e| (e.type_, e.reason.clone(), e.message.clone()))
        .collect()
}
