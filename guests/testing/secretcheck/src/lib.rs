//! The Python SecretCheck (`guests/py/secretcheck/app.py`) written in Rust,
//! line for line: a spec naming a Secret and the keys an application needs
//! from it; KeysPresent True when the Secret has every one, False with
//! SecretNotFound or SecretKeyMissing otherwise, and ConfigurationInvalid
//! (a stall) for a spec naming no Secret or no keys.
//!
//! It runs the Python guest's fixtures with their goldens (`make
//! fixtures`), so the two verdicts are the same ones; `make bench` times
//! a pass of each, and of this logic natively.

use reconciler_guest_sdk::configuration::CONFIGURATION_INVALID;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    ConventionProfile, Evaluation, Facts, Guest, KindSpec, Verdict, VerdictBuilder, read, spec,
};

pub const KIND: &str = "SecretCheck";
pub const KEYS_PRESENT: &str = "KeysPresent";

/// The Python guest's schema, its keys sorted as `json.dumps(...,
/// sort_keys=True)` writes them.
const SPEC_SCHEMA: &str = r#"{"properties": {"keys": {"description": "The keys the Secret must hold.", "items": {"type": "string"}, "type": "array"}, "secretName": {"description": "The Secret, in the object's namespace.", "minLength": 1, "type": "string"}}, "required": ["secretName", "keys"], "type": "object"}"#;

pub struct SecretCheck;

impl Guest for SecretCheck {
    fn describe() -> KindSpec {
        KindSpec {
            group: "examples.reconciler.dev".into(),
            version: "v1alpha1".into(),
            kind: KIND.into(),
            plural: "secretchecks".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec![KEYS_PRESENT.into()],
            advisory: vec![],
            reasons: spec::registry(
                "secretcheck",
                &[CONFIGURATION_INVALID, "SecretNotFound", "SecretKeyMissing"],
                &[],
            ),
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![spec::stalls(CONFIGURATION_INVALID)],
            reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret"))],
            pause: None,
            spec_schema: Some(SPEC_SCHEMA.into()),
            printer_columns: vec![],
        }
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        let mut verdict = VerdictBuilder::new();
        if input.paused {
            return verdict.build();
        }
        let parent = input.parent_json();
        let spec = &parent["spec"];
        let name = spec["secretName"].as_str().unwrap_or_default();
        if name.trim().is_empty() {
            return invalid(verdict, "spec.secretName is required");
        }
        let keys: Option<Vec<&str>> = spec["keys"].as_array().and_then(|keys| {
            keys.iter()
                .map(|k| k.as_str().filter(|k| !k.is_empty()))
                .collect()
        });
        let Some(keys) = keys.filter(|k| !k.is_empty()) else {
            return invalid(verdict, "spec.keys must be a non-empty list of key names");
        };
        let namespace = input.parent.meta.namespace.as_str();
        match facts.secret(namespace, name) {
            Err(e) => {
                verdict.aspect(unknown(
                    KEYS_PRESENT,
                    RECONCILING,
                    read::failure(&format!("Secret {name}"), &e),
                ));
                verdict.requeue_after(read::RETRY_SECONDS);
            }
            Ok(None) => {
                verdict.aspect(fails(
                    KEYS_PRESENT,
                    "SecretNotFound",
                    format!("Secret {name} does not exist in {namespace}"),
                ));
            }
            Ok(Some(secret)) => {
                let missing: Vec<&str> = keys
                    .iter()
                    .copied()
                    .filter(|k| !secret.keys.iter().any(|have| have == k))
                    .collect();
                if missing.is_empty() {
                    verdict.aspect(ok(
                        KEYS_PRESENT,
                        format!("Secret {name} holds {}", keys.join(", ")),
                    ));
                } else {
                    verdict.aspect(fails(
                        KEYS_PRESENT,
                        "SecretKeyMissing",
                        format!("Secret {name} has no key {}", missing.join(", ")),
                    ));
                }
            }
        }
        verdict.field("checkedKeys", keys.len().into());
        verdict.build()
    }
}

fn invalid(mut verdict: VerdictBuilder, message: &str) -> Verdict {
    verdict.aspect(fails(KEYS_PRESENT, CONFIGURATION_INVALID, message));
    verdict.stall(CONFIGURATION_INVALID, message);
    verdict.build()
}

reconciler_guest_sdk::export_guest!(SecretCheck);

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::ConditionStatus;
    use reconciler_guest_sdk::mock::{self, MockFacts};
    use reconciler_guest_sdk::testing::keeps_contract;

    const NOW: i64 = 1_795_953_600;

    fn parent(spec: serde_json::Value) -> Evaluation {
        mock::evaluation(
            serde_json::json!({
                "apiVersion": "examples.reconciler.dev/v1alpha1", "kind": KIND,
                "metadata": {"name": "app", "namespace": "team-a", "uid": "u", "generation": 1},
                "spec": spec
            }),
            &[],
        )
    }

    /// The verdict, held to the kind's contract, and its one aspect.
    fn check(
        input: &Evaluation,
        facts: &MockFacts,
    ) -> (Verdict, (ConditionStatus, String, String)) {
        let verdict = SecretCheck::evaluate(input, facts);
        keeps_contract(&SecretCheck::describe(), &verdict, input.paused);
        let c = &verdict.aspects[0];
        let aspect = (c.status, c.reason.clone(), c.message.clone());
        (verdict, aspect)
    }

    #[test]
    fn every_key_present_is_true_and_counted() {
        let facts = MockFacts::at(NOW).with_secret("team-a", "db", &["user", "password"]);
        let (v, aspect) = check(
            &parent(serde_json::json!({"secretName": "db", "keys": ["user", "password"]})),
            &facts,
        );
        assert_eq!(
            aspect,
            (
                ConditionStatus::True,
                "AsExpected".into(),
                "Secret db holds user, password".into()
            )
        );
        assert_eq!(v.status_fields, r#"{"checkedKeys":2}"#);
    }

    #[test]
    fn missing_keys_are_named_in_the_spec_s_order() {
        let facts = MockFacts::at(NOW).with_secret("team-a", "db", &["user"]);
        let (_, aspect) = check(
            &parent(serde_json::json!({"secretName": "db", "keys": ["host", "user", "port"]})),
            &facts,
        );
        assert_eq!(
            aspect,
            (
                ConditionStatus::False,
                "SecretKeyMissing".into(),
                "Secret db has no key host, port".into()
            )
        );
    }

    #[test]
    fn an_absent_secret_and_a_failed_read_differ() {
        let input = parent(serde_json::json!({"secretName": "db", "keys": ["user"]}));
        let (v, aspect) = check(&input, &MockFacts::at(NOW));
        assert_eq!(
            aspect,
            (
                ConditionStatus::False,
                "SecretNotFound".into(),
                "Secret db does not exist in team-a".into()
            )
        );
        assert_eq!(v.requeue_after_seconds, None);
        let (v, aspect) = check(&input, &MockFacts::at(NOW).failing("secret", "db"));
        assert_eq!(
            (aspect.0, aspect.1.as_str()),
            (ConditionStatus::Unknown, RECONCILING)
        );
        assert!(
            aspect.2.starts_with("could not read Secret db: "),
            "{}",
            aspect.2
        );
        assert_eq!(v.requeue_after_seconds, Some(read::RETRY_SECONDS));
    }

    #[test]
    fn a_spec_without_a_secret_or_keys_stalls() {
        for spec in [
            serde_json::json!({"keys": ["a"]}),
            serde_json::json!({"secretName": " ", "keys": ["a"]}),
            serde_json::json!({"secretName": "db", "keys": []}),
            serde_json::json!({"secretName": "db", "keys": ["a", ""]}),
            serde_json::json!({"secretName": "db", "keys": "a"}),
        ] {
            let (v, aspect) = check(&parent(spec.clone()), &MockFacts::at(NOW));
            assert_eq!(aspect.1, CONFIGURATION_INVALID, "{spec}");
            assert_eq!(
                v.stall.as_ref().map(|s| s.reason.as_str()),
                Some(CONFIGURATION_INVALID),
                "{spec}"
            );
            assert_eq!(v.status_fields, "{}", "{spec}");
        }
    }
}
