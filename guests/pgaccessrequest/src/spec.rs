//! The request's `spec`, read so that a field the CRD should have refused fails closed (nothing can match, the request counts as expired) with a note naming the field, never a crash.

use reconciler_guest_sdk::Timestamp;
use serde_json::Value;

use crate::time::parse_rfc3339;

/// Who gets the access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubjectKind {
    User,
    Group,
    ServiceAccount,
    /// A kind RBAC does not know: no RoleBinding can bind it as asked.
    Unknown(String),
}

/// `spec.subject`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub kind: SubjectKind,
    pub name: String,
    /// A ServiceAccount's namespace (the request's when left out); empty
    /// for a User or Group.
    pub namespace: String,
}

impl Subject {
    /// `User alice`, `ServiceAccount team-a/ci`.
    pub fn describe(&self) -> String {
        match &self.kind {
            SubjectKind::User => format!("User {}", self.name),
            SubjectKind::Group => format!("Group {}", self.name),
            SubjectKind::ServiceAccount => {
                format!("ServiceAccount {}/{}", self.namespace, self.name)
            }
            SubjectKind::Unknown(kind) => format!("{kind} {}", self.name),
        }
    }
}

/// What a PgAccessRequest asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessSpec {
    /// `spec.cluster.name`; empty when missing.
    pub cluster: String,
    /// `spec.clusterRole`; empty when missing.
    pub cluster_role: String,
    pub subject: Subject,
    /// `spec.expiresAt` as written.
    pub expires_at_text: String,
    /// `spec.expiresAt`, read; `None` when it is not a date-time, and the
    /// request then counts as expired (fail closed).
    pub expires_at: Option<Timestamp>,
    /// What the CRD should have refused, each naming its field.
    pub problems: Vec<String>,
}

impl AccessSpec {
    /// Nothing can be bound as asked: a field is missing or unknown.
    pub fn unbindable(&self) -> bool {
        self.cluster_role.is_empty()
            || self.subject.name.is_empty()
            || matches!(self.subject.kind, SubjectKind::Unknown(_))
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// Reads the parent's `spec`; `namespace` is the request's.
pub fn parse(parent: &Value, namespace: &str) -> AccessSpec {
    let spec = &parent["spec"];
    let mut problems = Vec::new();
    let mut required = |path: &str, value: &Value| {
        let value = text(value);
        if value.is_empty() {
            problems.push(format!("{path} is not set"));
        }
        value
    };
    let cluster = required("spec.cluster.name", &spec["cluster"]["name"]);
    let cluster_role = required("spec.clusterRole", &spec["clusterRole"]);
    let name = required("spec.subject.name", &spec["subject"]["name"]);
    let kind_text = required("spec.subject.kind", &spec["subject"]["kind"]);
    let expires_at_text = required("spec.expiresAt", &spec["expiresAt"]);
    let kind = match kind_text.as_str() {
        "User" => SubjectKind::User,
        "Group" => SubjectKind::Group,
        "ServiceAccount" => SubjectKind::ServiceAccount,
        "" => SubjectKind::Unknown("(no kind)".into()),
        other => {
            problems.push(format!(
                "spec.subject.kind {other:?} is not User, Group or ServiceAccount: no RoleBinding can bind it"
            ));
            SubjectKind::Unknown(other.to_owned())
        }
    };
    let namespace = match (&kind, spec["subject"]["namespace"].as_str()) {
        (SubjectKind::ServiceAccount, Some(ns)) if !ns.is_empty() => ns.to_owned(),
        (SubjectKind::ServiceAccount, _) => namespace.to_owned(),
        _ => String::new(),
    };
    let expires_at = parse_rfc3339(&expires_at_text);
    if expires_at.is_none() && !expires_at_text.is_empty() {
        problems.push(format!(
            "spec.expiresAt {expires_at_text:?} is not an RFC 3339 date-time: the request counts as expired"
        ));
    }
    AccessSpec {
        cluster,
        cluster_role,
        subject: Subject {
            kind,
            name,
            namespace,
        },
        expires_at_text,
        expires_at,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(s: Value) -> AccessSpec {
        parse(&json!({ "spec": s }), "team-a")
    }

    #[test]
    fn a_full_spec_reads_whole() {
        let s = spec(json!({
            "cluster": {"name": "orders"}, "clusterRole": "pg-reader",
            "subject": {"kind": "ServiceAccount", "name": "ci"},
            "expiresAt": "2026-11-29T12:00:00Z",
        }));
        assert_eq!(s.cluster, "orders");
        assert_eq!(s.subject.describe(), "ServiceAccount team-a/ci");
        assert_eq!(s.expires_at.unwrap().seconds, 1_795_953_600);
        assert!(s.problems.is_empty() && !s.unbindable());
    }

    #[test]
    fn a_user_has_no_namespace_and_a_service_account_may_name_one() {
        let user = spec(json!({"subject": {"kind": "User", "name": "alice", "namespace": "x"}}));
        assert_eq!(user.subject.namespace, "");
        let sa =
            spec(json!({"subject": {"kind": "ServiceAccount", "name": "ci", "namespace": "ops"}}));
        assert_eq!(sa.subject.describe(), "ServiceAccount ops/ci");
    }

    #[test]
    fn what_the_crd_refuses_fails_closed_naming_the_field() {
        let s = spec(json!({
            "cluster": {"name": "orders"}, "clusterRole": "pg-reader",
            "subject": {"kind": "Robot", "name": "r2"}, "expiresAt": "soon",
        }));
        assert!(s.unbindable());
        assert_eq!(s.expires_at, None);
        assert!(
            s.problems[0].contains("spec.subject.kind \"Robot\""),
            "{s:?}"
        );
        assert!(s.problems[1].contains("spec.expiresAt \"soon\""), "{s:?}");
        let empty = spec(json!({}));
        assert!(empty.unbindable());
        assert_eq!(
            empty.problems,
            [
                "spec.cluster.name is not set",
                "spec.clusterRole is not set",
                "spec.subject.name is not set",
                "spec.subject.kind is not set",
                "spec.expiresAt is not set"
            ]
        );
    }
}
