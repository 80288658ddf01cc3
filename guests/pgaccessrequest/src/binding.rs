//! A RoleBinding against the request: whether it binds exactly the subject to the ClusterRole, and what it binds, said.

use reconciler_guest_sdk::change::not_withdrawn;
use reconciler_guest_sdk::{ChangeOutcome, Object};
use serde_json::Value;

use crate::spec::{AccessSpec, SubjectKind};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// A RoleBinding as the request sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    pub uid: String,
    /// `metadata.creationTimestamp`.
    pub created: Option<reconciler_guest_sdk::Timestamp>,
    /// It binds exactly the subject to the ClusterRole, nothing else.
    pub exact: bool,
    /// What it binds: `User bob, Group ops to ClusterRole edit`.
    pub binds: String,
    /// What became of the request's last withdrawal of it
    /// (`facts.change-state`): withdrawn once the host deleted it.
    pub deletion: Option<ChangeOutcome>,
}

impl Binding {
    pub fn of(object: &Object, spec: &AccessSpec, deletion: Option<ChangeOutcome>) -> Binding {
        let json: Value = serde_json::from_str(&object.json).unwrap_or(Value::Null);
        Binding {
            name: object.meta.name.clone(),
            uid: object.meta.uid.clone(),
            created: object.meta.creation,
            exact: binds_exactly(&json, spec),
            binds: describe(&json),
            deletion,
        }
    }

    /// Why it is still there though the pass withdrew it, if it is:
    /// `None` once the host deleted it.
    pub fn still_there(&self) -> Option<String> {
        not_withdrawn(
            &format!("RoleBinding {} (which binds {})", self.name, self.binds),
            self.deletion.as_ref(),
        )
    }
}

/// `roleRef` is the ClusterRole `spec.clusterRole`, and `subjects` is the
/// one subject of the spec (its API group and, for a ServiceAccount, its
/// namespace as well).
pub fn binds_exactly(binding: &Value, spec: &AccessSpec) -> bool {
    if spec.unbindable() {
        return false;
    }
    let role = &binding["roleRef"];
    let role_matches = role["apiGroup"] == RBAC_GROUP
        && role["kind"] == "ClusterRole"
        && role["name"] == spec.cluster_role.as_str();
    let subjects = binding["subjects"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let [only] = subjects else {
        return false;
    };
    let want = &spec.subject;
    let (kind, group) = match want.kind {
        SubjectKind::User => ("User", RBAC_GROUP),
        SubjectKind::Group => ("Group", RBAC_GROUP),
        SubjectKind::ServiceAccount => ("ServiceAccount", ""),
        SubjectKind::Unknown(_) => return false,
    };
    role_matches
        && only["kind"] == kind
        && only["name"] == want.name.as_str()
        && only["apiGroup"].as_str().unwrap_or_default() == group
        && only["namespace"].as_str().unwrap_or_default() == want.namespace
}

/// What a RoleBinding binds, to what.
pub fn describe(binding: &Value) -> String {
    let subjects: Vec<String> = binding["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let name = s["name"].as_str().unwrap_or("?");
            match s["namespace"].as_str() {
                Some(ns) if !ns.is_empty() => {
                    format!("{} {ns}/{name}", s["kind"].as_str().unwrap_or("?"))
                }
                _ => format!("{} {name}", s["kind"].as_str().unwrap_or("?")),
            }
        })
        .collect();
    let subjects = if subjects.is_empty() {
        "no subject".to_owned()
    } else {
        subjects.join(", ")
    };
    let role = &binding["roleRef"];
    format!(
        "{subjects} to {} {}",
        role["kind"].as_str().unwrap_or("?"),
        role["name"].as_str().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;
    use serde_json::json;

    fn spec(subject: Value) -> AccessSpec {
        parse(
            &json!({"spec": {
                "cluster": {"name": "orders"}, "clusterRole": "pg-reader",
                "subject": subject, "expiresAt": "2026-11-29T13:00:00Z",
            }}),
            "team-a",
        )
    }

    fn binding(subjects: Value, role: &str) -> Value {
        json!({
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": subjects,
        })
    }

    #[test]
    fn exactly_the_subject_to_the_cluster_role() {
        let dave = spec(json!({"kind": "User", "name": "dave"}));
        let user = json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": "dave"});
        assert!(binds_exactly(&binding(json!([user]), "pg-reader"), &dave));
        assert!(!binds_exactly(&binding(json!([user]), "edit"), &dave));
        let bob = json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": "bob"});
        let both = binding(json!([user, bob]), "pg-reader");
        assert!(!binds_exactly(&both, &dave));
        assert_eq!(
            describe(&both),
            "User dave, User bob to ClusterRole pg-reader"
        );
        assert!(!binds_exactly(&binding(json!([]), "pg-reader"), &dave));
        let group = json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": "dave"});
        assert!(!binds_exactly(&binding(json!([group]), "pg-reader"), &dave));
    }

    #[test]
    fn a_service_account_in_its_namespace() {
        let ci = spec(json!({"kind": "ServiceAccount", "name": "ci"}));
        let here = json!({"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"});
        let there = json!({"kind": "ServiceAccount", "name": "ci", "namespace": "ops"});
        assert!(binds_exactly(&binding(json!([here]), "pg-reader"), &ci));
        assert!(!binds_exactly(&binding(json!([there]), "pg-reader"), &ci));
        assert_eq!(
            describe(&binding(json!([there]), "pg-reader")),
            "ServiceAccount ops/ci to ClusterRole pg-reader"
        );
    }

    #[test]
    fn an_unknown_subject_kind_matches_nothing() {
        let robot = spec(json!({"kind": "Robot", "name": "r2"}));
        let any = json!({"kind": "Robot", "name": "r2"});
        assert!(!binds_exactly(&binding(json!([any]), "pg-reader"), &robot));
    }
}
