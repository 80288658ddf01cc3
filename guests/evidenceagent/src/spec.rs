//! The EvidenceAgent's `spec`: one Rust type, the CRD's schema and the parse with errors that name the field.

use reconciler_guest_sdk::configuration::{NotValid, stalled};
use reconciler_guest_sdk::spec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::registry::CONFIGURATION_INVALID;

/// What an EvidenceAgent asks for: `.spec`, read by [`parse`], and its
/// schema in the CRD ([`schema`]; the fields' doc comments are its
/// descriptions).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct AgentSpec {
    /// The CloudNativePG Cluster, in the agent's namespace, whose Barman Cloud backups the agent gathers evidence of.
    pub cluster: ClusterRef,
    /// The agent's image; defaults to the operator's defaultImage. Its repository must be within allowedImageRepositories when the operator sets it.
    #[schemars(length(min = 1))]
    pub image: Option<String>,
}

/// `spec.cluster`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(expecting = "an object with a name")]
pub struct ClusterRef {
    // The Cluster's name: a DNS-1123 subdomain, checked by `parse` (the
    // schema holds its length only).
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The OpenAPI v3 schema of `spec`: `src/spec-schema.json`, the schema of
/// [`AgentSpec`] generated natively (the test
/// `the_shipped_schema_is_the_spec_types` holds it so; `BLESS=1 cargo test
/// -p evidenceagent-guest` rewrites it), so that the component carries no
/// schema generator.
pub fn schema() -> String {
    include_str!("spec-schema.json").to_owned()
}

/// Parses the parent's `spec` (ConfigurationInvalid, naming the field,
/// when it cannot be used).
pub fn parse(parent: &Value) -> Result<AgentSpec, NotValid> {
    if !parent.get("spec").is_some_and(Value::is_object) {
        return Err(stalled(
            CONFIGURATION_INVALID,
            "spec is missing or is not an object",
        ));
    }
    let spec: AgentSpec = spec::parse(parent)?;
    if !is_object_name(&spec.cluster.name) {
        return Err(stalled(
            CONFIGURATION_INVALID,
            format!(
                "spec.cluster.name {:?} is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253 characters)",
                spec.cluster.name
            ),
        ));
    }
    Ok(spec)
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

    fn message(parent: &Value) -> String {
        match parse(parent) {
            Err(NotValid::Stalled { reason, message }) => {
                assert_eq!(reason, CONFIGURATION_INVALID);
                message
            }
            other => panic!("{parent}: {other:?}"),
        }
    }

    #[test]
    fn the_shipped_schema_is_the_spec_types() {
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/spec-schema.json");
        reconciler_guest_sdk::testing::schema_golden::<AgentSpec>(&golden, env!("CARGO_PKG_NAME"));
    }

    #[test]
    fn a_full_spec_parses() {
        let spec = parse(&json!({"spec": {"cluster": {"name": "pg"}, "image": "ghcr.io/a/b:1"}}));
        assert_eq!(
            spec,
            Ok(AgentSpec {
                cluster: ClusterRef { name: "pg".into() },
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
            (json!({}), "spec is missing or is not an object"),
            (json!({"spec": 3}), "spec is missing or is not an object"),
            (json!({"spec": {}}), "spec.cluster is required"),
            (
                json!({"spec": {"cluster": null}}),
                "spec.cluster is required",
            ),
            (
                json!({"spec": {"cluster": "pg"}}),
                "spec.cluster must be an object with a name, not \"pg\"",
            ),
            (
                json!({"spec": {"cluster": {}}}),
                "spec.cluster.name is required",
            ),
            (
                json!({"spec": {"cluster": {"name": ""}}}),
                "spec.cluster.name is required",
            ),
            (
                json!({"spec": {"cluster": {"name": 3}}}),
                "spec.cluster.name must be a string, not 3",
            ),
            (
                json!({"spec": {"cluster": {"name": "PG_main"}}}),
                "spec.cluster.name \"PG_main\" is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253 characters)",
            ),
            (
                json!({"spec": {"cluster": {"name": "pg"}, "image": 1}}),
                "spec.image must be a string, not 1",
            ),
        ];
        for (parent, expected) in cases {
            assert_eq!(message(&parent), expected, "{parent}");
        }
    }
}
