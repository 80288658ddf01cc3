//! The EvidenceAgent's `spec`, parsed from the parent with errors that name the field.

use serde_json::Value;

/// What an EvidenceAgent asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    /// `spec.cluster.name`: a CloudNativePG Cluster in the agent's namespace.
    pub cluster: String,
    /// `spec.image`, when set.
    pub image: Option<String>,
}

/// A spec the CRD schema let through but the agent cannot use; the text
/// names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses the parent's `spec`.
pub fn parse(parent: &Value) -> Result<AgentSpec, SpecError> {
    let spec = parent
        .get("spec")
        .filter(|s| s.is_object())
        .ok_or_else(|| SpecError("spec is missing or is not an object".into()))?;
    let cluster = match spec.get("cluster") {
        Some(Value::Object(cluster)) => match cluster.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                return Err(SpecError("spec.cluster.name is required".into()));
            }
            Some(other) => {
                return Err(SpecError(format!(
                    "spec.cluster.name must be a string, not {other}"
                )));
            }
        },
        None | Some(Value::Null) => return Err(SpecError("spec.cluster is required".into())),
        Some(other) => {
            return Err(SpecError(format!(
                "spec.cluster must be an object with a name, not {other}"
            )));
        }
    };
    if !is_object_name(&cluster) {
        return Err(SpecError(format!(
            "spec.cluster.name {cluster:?} is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253 characters)"
        )));
    }
    let image = match spec.get("image") {
        None | Some(Value::Null) => None,
        Some(Value::String(image)) if image.trim().is_empty() => None,
        Some(Value::String(image)) => Some(image.clone()),
        Some(other) => {
            return Err(SpecError(format!(
                "spec.image must be a string, not {other}"
            )));
        }
    };
    Ok(AgentSpec { cluster, image })
}

/// A DNS-1123 subdomain, the rule for a Cluster's name.
fn is_object_name(name: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    name.len() <= 253
        && edge(name.chars().next())
        && edge(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_full_spec_parses() {
        let spec = parse(&json!({"spec": {"cluster": {"name": "pg"}, "image": "ghcr.io/a/b:1"}}));
        assert_eq!(
            spec,
            Ok(AgentSpec {
                cluster: "pg".into(),
                image: Some("ghcr.io/a/b:1".into())
            })
        );
    }

    #[test]
    fn an_empty_image_is_no_image() {
        let spec = parse(&json!({"spec": {"cluster": {"name": "pg"}, "image": " "}})).unwrap();
        assert_eq!(spec.image, None);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({}), "spec is missing"),
            (json!({"spec": {}}), "spec.cluster is required"),
            (
                json!({"spec": {"cluster": "pg"}}),
                "spec.cluster must be an object",
            ),
            (
                json!({"spec": {"cluster": {}}}),
                "spec.cluster.name is required",
            ),
            (
                json!({"spec": {"cluster": {"name": 3}}}),
                "spec.cluster.name must be a string",
            ),
            (
                json!({"spec": {"cluster": {"name": "PG_main"}}}),
                "not a Kubernetes object name",
            ),
            (
                json!({"spec": {"cluster": {"name": "pg"}, "image": 1}}),
                "spec.image must be a string",
            ),
        ];
        for (parent, expected) in cases {
            let error = parse(&parent).unwrap_err();
            assert!(error.0.contains(expected), "{parent}: {error}");
        }
    }
}
