//! Whether `spec.exposure.hostname` is within the operator's allowed host suffixes (EXPOSURE_ALLOWED_HOST_SUFFIXES), checked before anything else.

use serde_json::Value;

use crate::spec::ExposureType;

pub use reconciler_guest_sdk::hostname::ALLOWED_HOST_SUFFIXES;

/// The hostname an exposure asks to publish, read leniently from the
/// parent so it is checked first, before (and whatever) the rest of the
/// spec parses to. `None` when nothing is requested (clusterIP, or no
/// hostname to check).
pub fn requested(parent: &Value) -> Option<&str> {
    match ExposureType::of(parent) {
        Some(ExposureType::ClusterIp) => None,
        _ => parent["spec"]["exposure"]["hostname"]
            .as_str()
            .filter(|h| !h.trim().is_empty()),
    }
}

/// Checks `hostname` against the configured suffixes (the SDK's rule,
/// shared with the PgAdmin); the error is the refusal's message, naming
/// the hostname, the suffixes and the console's setting.
pub fn check(hostname: &str, configured: &[&str]) -> Result<(), String> {
    reconciler_guest_sdk::hostname::check(hostname, configured, crate::registry::KIND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_refusal_names_the_console_s_setting() {
        let e = check("console.apps.example.com", &[]).unwrap_err();
        assert!(
            e.contains("--setting=PgToolBoxConsole.allowedHostSuffixes="),
            "{e}"
        );
        assert!(check("console.apps.example.com", &["apps.example.com"]).is_ok());
    }

    #[test]
    fn only_an_exposure_requests_a_hostname() {
        let p = |exposure| json!({"spec": {"exposure": exposure}});
        assert_eq!(requested(&p(json!({"hostname": "h.x"}))), None);
        assert_eq!(
            requested(&p(json!({"type": "clusterIP", "hostname": "h.x"}))),
            None
        );
        assert_eq!(
            requested(&p(json!({"type": "route", "hostname": "h.x"}))),
            Some("h.x")
        );
        assert_eq!(
            requested(&p(json!({"type": "weird", "hostname": "h.x"}))),
            Some("h.x")
        );
        assert_eq!(requested(&p(json!({"type": "route"}))), None);
    }
}
