//! Whether `spec.exposure.hostname` is within the operator's allowed host suffixes (EXPOSURE_ALLOWED_HOST_SUFFIXES), checked before anything else.

use serde_json::Value;

use crate::spec::ExposureType;

/// The setting listing the allowed host suffixes, comma-separated (the
/// chart's `operator.exposure.allowedHostSuffixes`, the operator's
/// `EXPOSURE_ALLOWED_HOST_SUFFIXES`). Unset or empty: no hostname is
/// allowed, fail closed.
pub const ALLOWED_HOST_SUFFIXES: &str = "allowedHostSuffixes";

/// What a refusal for want of any suffix tells the operator to set.
const SET_SUFFIXES: &str = "set the operator's PgToolBoxConsole setting allowedHostSuffixes (--setting=PgToolBoxConsole.allowedHostSuffixes=<suffix>,...; the chart's operator.exposure.allowedHostSuffixes, EXPOSURE_ALLOWED_HOST_SUFFIXES) to the suffixes your routers serve";

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

/// A suffix as configured: `.example.com` admits only names below
/// `example.com`; `example.com` admits `example.com` itself and the names
/// below it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Suffix {
    domain: String,
    below_only: bool,
}

fn suffix(raw: &str) -> Option<Suffix> {
    let lowered = raw.trim().to_ascii_lowercase();
    let trimmed = lowered.strip_suffix('.').unwrap_or(&lowered);
    let (domain, below_only) = match trimmed.strip_prefix('.') {
        Some(rest) => (rest, true),
        None => (trimmed, false),
    };
    // An empty suffix (".", "") would admit every name: it is ignored, so
    // allowing everything is never one typo away.
    is_dns_name(domain).then(|| Suffix {
        domain: domain.to_owned(),
        below_only,
    })
}

/// A DNS-1123 subdomain: labels of 1–63 `a-z 0-9 -`, not starting or
/// ending with `-`, at most 253 characters. A wildcard label is not one.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// `hostname` ends with `suffix` at a label boundary.
fn within(hostname: &str, suffix: &Suffix) -> bool {
    if hostname == suffix.domain {
        return !suffix.below_only;
    }
    hostname
        .strip_suffix(suffix.domain.as_str())
        .is_some_and(|rest| rest.ends_with('.'))
}

/// Checks `hostname` against the configured suffixes; the error is the
/// refusal's message, naming the hostname and the suffixes.
pub fn check(hostname: &str, configured: &[&str]) -> Result<(), String> {
    let lowered = hostname.trim().to_ascii_lowercase();
    let name = lowered.strip_suffix('.').unwrap_or(&lowered);
    let suffixes: Vec<Suffix> = configured.iter().filter_map(|s| suffix(s)).collect();
    let listed = || {
        configured
            .iter()
            .map(|s| s.trim())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if suffixes.is_empty() {
        let none = if configured.is_empty() {
            "no host suffix is configured".to_owned()
        } else {
            format!(
                "no usable host suffix is configured (allowedHostSuffixes is {:?}; an empty suffix is ignored)",
                listed()
            )
        };
        return Err(format!(
            "spec.exposure.hostname {hostname:?} is not allowed: {none}, so the operator allows no hostname; {SET_SUFFIXES}"
        ));
    }
    if !is_dns_name(name) {
        return Err(format!(
            "spec.exposure.hostname {hostname:?} is not a DNS name (a wildcard is never allowed), so it is outside the operator's allowedHostSuffixes ({})",
            listed()
        ));
    }
    if suffixes.iter().any(|s| within(name, s)) {
        Ok(())
    } else {
        Err(format!(
            "spec.exposure.hostname {hostname:?} is outside the operator's allowedHostSuffixes ({})",
            listed()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_suffix_matches_at_a_label_boundary_only() {
        let allowed = ["apps.example.com"];
        assert!(check("console.apps.example.com", &allowed).is_ok());
        assert!(check("a.b.apps.example.com", &allowed).is_ok());
        assert!(check("apps.example.com", &allowed).is_ok());
        assert!(check("evilapps.example.com", &allowed).is_err());
        assert!(check("apps.example.com.evil.io", &allowed).is_err());
    }

    #[test]
    fn a_leading_dot_admits_only_names_below() {
        let allowed = [".apps.example.com"];
        assert!(check("console.apps.example.com", &allowed).is_ok());
        assert!(check("apps.example.com", &allowed).is_err());
    }

    #[test]
    fn case_and_a_trailing_dot_do_not_matter() {
        assert!(check("Console.Apps.Example.COM.", &["APPS.example.com."]).is_ok());
    }

    #[test]
    fn no_suffix_allows_nothing_and_an_empty_suffix_is_ignored() {
        let e = check("console.apps.example.com", &[]).unwrap_err();
        assert!(e.contains("no host suffix is configured"), "{e}");
        assert!(
            e.contains("--setting=PgToolBoxConsole.allowedHostSuffixes="),
            "{e}"
        );
        assert!(!e.contains("()"), "no empty list: {e}");
        let e = check("console.apps.example.com", &[".", " "]).unwrap_err();
        assert!(e.contains("no usable host suffix is configured"), "{e}");
        assert!(e.contains("operator.exposure.allowedHostSuffixes"), "{e}");
    }

    #[test]
    fn wildcards_and_non_names_are_refused() {
        let allowed = ["example.com"];
        assert!(
            check("*.example.com", &allowed)
                .unwrap_err()
                .contains("wildcard")
        );
        assert!(check("a..example.com", &allowed).is_err());
        assert!(check("-a.example.com", &allowed).is_err());
    }

    #[test]
    fn the_message_names_the_hostname_and_the_suffixes() {
        let e = check("c.other.io", &[".apps.example.com", "example.org"]).unwrap_err();
        assert!(e.contains("\"c.other.io\""));
        assert!(e.contains(".apps.example.com, example.org"));
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
