//! The step after a HostnameNotAllowed refusal: a condition that still says it turns Unknown (Reconciling) until the loop says what holds now.

use reconciler_guest_sdk::Condition;
use reconciler_guest_sdk::verdict::{RECONCILING, unknown};
use serde_json::Value;

use crate::registry::HOSTNAME_NOT_ALLOWED;

/// Whether the previous `status` (the parent's, `null` on first touch) has
/// the condition `type_` with reason HostnameNotAllowed.
pub fn said_hostname_not_allowed(status: &Value, type_: &str) -> bool {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"].as_str() == Some(type_) && c["reason"].as_str() == Some(HOSTNAME_NOT_ALLOWED)
        })
}

/// The condition `type_` in the recovery step.
pub fn condition(type_: &str) -> Condition {
    unknown(
        type_,
        RECONCILING,
        format!(
            "spec.exposure.hostname is no longer refused; {type_} said HostnameNotAllowed and is evaluated again"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_condition_that_said_it_recovers() {
        let status = json!({"conditions": [
            {"type": "ConfigurationValid", "status": "False", "reason": "HostnameNotAllowed"},
            {"type": "ExposureReady", "status": "True", "reason": "AsExpected"},
        ]});
        assert!(said_hostname_not_allowed(&status, "ConfigurationValid"));
        assert!(!said_hostname_not_allowed(&status, "ExposureReady"));
        assert!(!said_hostname_not_allowed(
            &Value::Null,
            "ConfigurationValid"
        ));
        let c = condition("ExposureReady");
        assert_eq!(c.reason, "Reconciling");
        assert!(c.message.contains("no longer refused"));
    }
}
