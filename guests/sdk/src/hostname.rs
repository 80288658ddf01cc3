//! Whether an exposure's hostname is within the operator's allowed host suffixes (EXPOSURE_ALLOWED_HOST_SUFFIXES): the rule a PgAdmin shares with a PgToolBoxConsole.

/// The setting listing the allowed host suffixes, comma-separated (the
/// chart's `operator.exposure.allowedHostSuffixes`, the operator's
/// `EXPOSURE_ALLOWED_HOST_SUFFIXES`). Unset or empty: no hostname is
/// allowed, fail closed.
///
/// ```
/// use reconciler_guest_sdk::{hostname, mock::evaluation};
/// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}}), &[(hostname::ALLOWED_HOST_SUFFIXES, ".apps.example.com")]);
/// assert_eq!(input.setting_list(hostname::ALLOWED_HOST_SUFFIXES), [".apps.example.com"]);
/// ```
pub const ALLOWED_HOST_SUFFIXES: &str = "allowedHostSuffixes";

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

/// Checks `hostname` against the configured suffixes of the operator's
/// `kind` setting; the error is the refusal's message, naming the hostname
/// and the suffixes.
///
/// ```
/// use reconciler_guest_sdk::hostname::check;
/// assert_eq!(check("orders.apps.example.com", &[".apps.example.com"], "PgToolBoxConsole"), Ok(()));
/// assert!(check("orders.corp.example.net", &[".apps.example.com"], "PgToolBoxConsole").is_err());
/// assert!(check("apps.example.com", &[".apps.example.com"], "PgToolBoxConsole").is_err(), "a leading dot: below only");
/// ```
pub fn check(hostname: &str, configured: &[&str], kind: &str) -> Result<(), String> {
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
            "spec.exposure.hostname {hostname:?} is not allowed: {none}, so the operator allows no hostname; set the operator's {kind} setting allowedHostSuffixes (--setting={kind}.allowedHostSuffixes=<suffix>,...; the chart's operator.exposure.allowedHostSuffixes, EXPOSURE_ALLOWED_HOST_SUFFIXES) to the suffixes your routers serve"
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

    #[test]
    fn a_suffix_matches_at_a_label_boundary_only() {
        let allowed = ["apps.example.com"];
        assert!(check("console.apps.example.com", &allowed, "PgToolBoxConsole").is_ok());
        assert!(check("a.b.apps.example.com", &allowed, "PgToolBoxConsole").is_ok());
        assert!(check("apps.example.com", &allowed, "PgToolBoxConsole").is_ok());
        assert!(check("evilapps.example.com", &allowed, "PgToolBoxConsole").is_err());
        assert!(check("apps.example.com.evil.io", &allowed, "PgToolBoxConsole").is_err());
    }

    #[test]
    fn a_leading_dot_admits_only_names_below() {
        let allowed = [".apps.example.com"];
        assert!(check("console.apps.example.com", &allowed, "PgToolBoxConsole").is_ok());
        assert!(check("apps.example.com", &allowed, "PgToolBoxConsole").is_err());
    }

    #[test]
    fn case_and_a_trailing_dot_do_not_matter() {
        assert!(
            check(
                "Console.Apps.Example.COM.",
                &["APPS.example.com."],
                "PgToolBoxConsole"
            )
            .is_ok()
        );
    }

    #[test]
    fn no_suffix_allows_nothing_and_an_empty_suffix_is_ignored() {
        let e = check("console.apps.example.com", &[], "PgToolBoxConsole").unwrap_err();
        assert!(e.contains("no host suffix is configured"), "{e}");
        assert!(
            e.contains("--setting=PgToolBoxConsole.allowedHostSuffixes="),
            "{e}"
        );
        assert!(!e.contains("()"), "no empty list: {e}");
        let e = check("console.apps.example.com", &[".", " "], "PgToolBoxConsole").unwrap_err();
        assert!(e.contains("no usable host suffix is configured"), "{e}");
        assert!(e.contains("operator.exposure.allowedHostSuffixes"), "{e}");
    }

    #[test]
    fn wildcards_and_non_names_are_refused() {
        let allowed = ["example.com"];
        assert!(
            check("*.example.com", &allowed, "PgToolBoxConsole")
                .unwrap_err()
                .contains("wildcard")
        );
        assert!(check("a..example.com", &allowed, "PgToolBoxConsole").is_err());
        assert!(check("-a.example.com", &allowed, "PgToolBoxConsole").is_err());
    }

    #[test]
    fn the_message_names_the_hostname_and_the_suffixes() {
        let e = check(
            "c.other.io",
            &[".apps.example.com", "example.org"],
            "PgToolBoxConsole",
        )
        .unwrap_err();
        assert!(e.contains("\"c.other.io\""));
        assert!(e.contains(".apps.example.com, example.org"));
    }
}
