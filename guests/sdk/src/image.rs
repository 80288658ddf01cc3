//! An image reference held to the operator's allow-list of repository prefixes (`allowedImageRepositories`).

/// The setting listing allowed repository prefixes, comma-separated. Unset
/// or empty: every repository is allowed.
///
/// ```
/// use reconciler_guest_sdk::{image, mock::evaluation};
/// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}}),
///     &[(image::ALLOWED_REPOSITORIES, "ghcr.io/fyannk/, quay.io/oauth2-proxy/")]);
/// assert_eq!(input.setting_list(image::ALLOWED_REPOSITORIES), ["ghcr.io/fyannk/", "quay.io/oauth2-proxy/"]);
/// ```
pub const ALLOWED_REPOSITORIES: &str = "allowedImageRepositories";

/// Why an image reference cannot be used.
///
/// ```
/// use reconciler_guest_sdk::image::{Refusal, check};
/// assert!(matches!(check("ghcr.io/a b", "spec.image", &[]), Err(Refusal::Invalid(_))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The reference does not parse (ConfigurationInvalid).
    Invalid(String),
    /// The repository is outside the allow-list (ImageNotAllowed).
    NotAllowed(String),
}

impl Refusal {
    /// The common reason of the refusal: ConfigurationInvalid or ImageNotAllowed.
    ///
    /// ```
    /// use reconciler_guest_sdk::image::check;
    /// let refusal = check("docker.io/evil/agent:1", "spec.image", &["ghcr.io/fyannk/"]).unwrap_err();
    /// assert_eq!(refusal.reason(), "ImageNotAllowed");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Invalid(_) => "ConfigurationInvalid",
            Refusal::NotAllowed(_) => "ImageNotAllowed",
        }
    }

    /// The refusal's message, naming the image and what allows it.
    ///
    /// ```
    /// use reconciler_guest_sdk::image::check;
    /// let refusal = check("docker.io/evil/agent:1", "spec.image", &["ghcr.io/fyannk/"]).unwrap_err();
    /// assert_eq!(refusal.message(), "spec.image \"docker.io/evil/agent:1\": repository docker.io/evil/agent is outside the operator's allowedImageRepositories (ghcr.io/fyannk/)");
    /// ```
    pub fn message(&self) -> &str {
        match self {
            Refusal::Invalid(m) | Refusal::NotAllowed(m) => m,
        }
    }
}

/// `image` when it parses and its repository is within `allowed` (every
/// repository when empty). `origin` names where the image comes from in
/// the messages (`spec.image`, `the operator's defaultImage`).
///
/// ```
/// use reconciler_guest_sdk::image::check;
/// assert_eq!(check("ghcr.io/fyannk/agent:1.0", "spec.image", &["ghcr.io/fyannk"]).unwrap(), "ghcr.io/fyannk/agent:1.0");
/// assert!(check("ghcr.io/fyannkx/agent:1.0", "spec.image", &["ghcr.io/fyannk"]).is_err());
/// ```
pub fn check(image: &str, origin: &str, allowed: &[&str]) -> Result<String, Refusal> {
    let repository = repository(image)
        .ok_or_else(|| Refusal::Invalid(format!("{origin} {image:?} is not an image reference")))?;
    if allowed.is_empty() || allowed.iter().any(|prefix| within(repository, prefix)) {
        Ok(image.to_owned())
    } else {
        Err(Refusal::NotAllowed(format!(
            "{origin} {image:?}: repository {repository} is outside the operator's allowedImageRepositories ({})",
            allowed.join(", ")
        )))
    }
}

/// The image to run: `spec_image` when set, else the operator's `default`
/// (the setting `default_setting`, blank meaning unset), held to
/// `allowed` by [`check`]. None when neither is set.
///
/// ```
/// use reconciler_guest_sdk::image::choose;
/// let allowed = ["ghcr.io/fyannk/"];
/// assert_eq!(choose(None, Some("ghcr.io/fyannk/agent:1"), "defaultImage", &allowed), Ok(Some("ghcr.io/fyannk/agent:1".into())));
/// assert_eq!(choose(None, Some(" "), "defaultImage", &allowed), Ok(None));
/// let refused = choose(None, Some("docker.io/a/b"), "defaultImage", &allowed).unwrap_err();
/// assert!(refused.message().starts_with("the operator's defaultImage"));
/// ```
pub fn choose(
    spec_image: Option<&str>,
    default: Option<&str>,
    default_setting: &str,
    allowed: &[&str],
) -> Result<Option<String>, Refusal> {
    match (spec_image, default.map(str::trim).filter(|d| !d.is_empty())) {
        (Some(image), _) => check(image, "spec.image", allowed).map(Some),
        (None, Some(default)) => check(
            default,
            &format!("the operator's {default_setting}"),
            allowed,
        )
        .map(Some),
        (None, None) => Ok(None),
    }
}

/// The repository of an image reference: without its digest and tag.
/// None when the reference is malformed: it must follow the distribution
/// reference grammar (`[domain[:port]/]path[:tag][@digest]`, the path's
/// components lowercase alphanumerics joined by `.`, `_`, `__` or dashes,
/// a tag of at most 128 word characters, dots and dashes not starting
/// with either, a digest `algorithm:hex` of at least 32 hex digits, a name
/// of at most 255 characters), as the kubelet's runtime parses it.
///
/// ```
/// use reconciler_guest_sdk::image::repository;
/// assert_eq!(repository("registry:5000/team/agent:1.0@sha256:0123456789abcdef0123456789abcdef"),
///     Some("registry:5000/team/agent"));
/// assert_eq!(repository("a//b"), None);
/// assert_eq!(repository("ghcr.io/fyannk/../../evil:1"), None);
/// assert_eq!(repository("ghcr.io/fyannk/UPPER:1"), None);
/// ```
pub fn repository(image: &str) -> Option<&str> {
    let (named, digest) = match image.split_once('@') {
        Some((named, digest)) => (named, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        valid_digest(digest).then_some(())?;
    }
    let last_slash = named.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match named[last_slash..].find(':') {
        Some(colon) => (
            &named[..last_slash + colon],
            Some(&named[last_slash + colon + 1..]),
        ),
        None => (named, None),
    };
    if let Some(tag) = tag {
        valid_tag(tag).then_some(())?;
    }
    (repository.len() <= 255 && valid_name(repository)).then_some(repository)
}

/// `[domain[:port]/]path`: the first component is a domain when it holds
/// a dot or a colon, or is `localhost`.
fn valid_name(name: &str) -> bool {
    let (domain, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    domain.is_none_or(valid_domain) && !path.is_empty() && path.split('/').all(valid_component)
}

/// `host[:port]`, the host's labels alphanumerics and inner dashes.
fn valid_domain(domain: &str) -> bool {
    let (host, port) = match domain.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    let label = |l: &str| {
        !l.is_empty()
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !host.is_empty()
        && host.split('.').all(label)
        && port.is_none_or(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Lowercase alphanumerics joined by one `.`, one `_`, `__`, or dashes.
fn valid_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes: Vec<char> = component.chars().collect();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator: String = bytes[start..i].iter().collect();
        let ok =
            matches!(separator.as_str(), "." | "_" | "__") || separator.chars().all(|c| c == '-');
        if !ok {
            return false;
        }
    }
    true
}

/// A word character, then up to 127 word characters, dots and dashes.
fn valid_tag(tag: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = tag.chars();
    chars.next().is_some_and(word)
        && tag.len() <= 128
        && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// `algorithm:hex`: components of letters and digits (a letter first)
/// joined by `+`, `.`, `-` or `_`, and at least 32 hex digits.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let component = |c: &str| {
        c.chars().next().is_some_and(|f| f.is_ascii_alphabetic())
            && c.chars().all(|c| c.is_ascii_alphanumeric())
    };
    algorithm.split(['+', '.', '-', '_']).all(component)
        && hex.len() >= 32
        && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// `repository` is `prefix` or below it: a prefix matches whole path
/// components only (`ghcr.io/fyannk` does not allow `ghcr.io/fyannkx/a`).
///
/// ```
/// use reconciler_guest_sdk::image::within;
/// assert!(within("ghcr.io/fyannk/a", "ghcr.io/fyannk"));
/// assert!(!within("ghcr.io/fyannkx/a", "ghcr.io/fyannk"));
/// ```
pub fn within(repository: &str, prefix: &str) -> bool {
    match repository.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_drops_tag_and_digest_but_keeps_a_registry_port() {
        assert_eq!(repository("ghcr.io/a/b:1.0"), Some("ghcr.io/a/b"));
        let digest = "sha256:0123456789abcdef0123456789abcdef";
        assert_eq!(
            repository(&format!("ghcr.io/a/b@{digest}")),
            Some("ghcr.io/a/b")
        );
        assert_eq!(
            repository(&format!("ghcr.io/a/b:1@{digest}")),
            Some("ghcr.io/a/b")
        );
        assert_eq!(repository("registry:5000/a/b"), Some("registry:5000/a/b"));
        assert_eq!(repository("registry:5000/a/b:2"), Some("registry:5000/a/b"));
        assert_eq!(repository("busybox"), Some("busybox"));
        assert_eq!(repository(":1"), None);
        assert_eq!(repository("ghcr.io/a b"), None);
    }

    #[test]
    fn malformed_references_are_refused_by_the_grammar() {
        let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        for good in [
            "busybox".to_owned(),
            "library/busybox:1.36".to_owned(),
            "ghcr.io/fyannk/evidence-agent:1.0".to_owned(),
            "localhost/a:b".to_owned(),
            "localhost:5000/a/b_c__d.e-f---g:v1.2-rc_3".to_owned(),
            "Registry.Example.com/a:Latest".to_owned(),
            format!("ghcr.io/fyannk/x@{digest}"),
            format!("ghcr.io/fyannk/x:1@{digest}"),
        ] {
            assert!(repository(&good).is_some(), "{good}");
        }
        for bad in [
            "ghcr.io/fyannk/x:::@@",
            "ghcr.io/fyannk/UPPER:1",
            "ghcr.io/fyannk/x@sha256:nothex",
            "ghcr.io/fyannk/x@sha256:0123",
            "ghcr.io/fyannk/../../evil:1",
            "ghcr.io/fyannk/.hidden:1",
            "ghcr.io/fyannk/a..b:1",
            "ghcr.io/fyannk/x:.tag",
            "ghcr.io/fyannk/x:",
            "-ghcr.io/x:1",
            "ghcr.io:/x:1",
            "ghcr.io:port/x:1",
            "ghcr.io/",
            "UPPER/x:1",
        ] {
            assert_eq!(repository(bad), None, "{bad}");
        }
        let long = format!("ghcr.io/{}", "a".repeat(250));
        assert_eq!(repository(&long), None);
        assert_eq!(repository(&format!("ghcr.io/x:{}", "t".repeat(129))), None);
    }

    #[test]
    fn prefixes_match_whole_components() {
        assert!(within("ghcr.io/fyannk/agent", "ghcr.io/fyannk/"));
        assert!(within("ghcr.io/fyannk/agent", "ghcr.io/fyannk"));
        assert!(within("ghcr.io/fyannk/agent", "ghcr.io/fyannk/agent"));
        assert!(!within("ghcr.io/fyannkx/agent", "ghcr.io/fyannk"));
        assert!(!within("docker.io/fyannk/agent", "ghcr.io/fyannk/"));
    }

    #[test]
    fn spec_image_wins_over_the_default_which_is_held_to_the_list_too() {
        let choose =
            |spec, default, allowed: &[&str]| choose(spec, default, "defaultImage", allowed);
        assert_eq!(
            choose(Some("a/b:1"), Some("c/d:2"), &[]),
            Ok(Some("a/b:1".into()))
        );
        assert_eq!(choose(None, Some("c/d:2"), &[]), Ok(Some("c/d:2".into())));
        assert_eq!(choose(None, Some(" "), &[]), Ok(None));
        assert_eq!(choose(None, None, &["a/"]), Ok(None));
        let refused = choose(None, Some("docker.io/x/y:1"), &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(Refusal::NotAllowed(m)) if m.starts_with("the operator's defaultImage \"docker.io/x/y:1\""))
        );
        assert!(
            matches!(choose(Some("a b"), None, &[]), Err(Refusal::Invalid(m)) if m.starts_with("spec.image"))
        );
    }

    #[test]
    fn check_names_the_origin_and_the_list() {
        assert_eq!(check("a/b:1", "spec.image", &[]), Ok("a/b:1".into()));
        assert_eq!(
            check("bad image", "spec.image", &[]),
            Err(Refusal::Invalid(
                "spec.image \"bad image\" is not an image reference".into()
            ))
        );
        assert_eq!(
            check("docker.io/x/y:1", "spec.image", &["ghcr.io/a/", "quay.io/b/"]),
            Err(Refusal::NotAllowed(
                "spec.image \"docker.io/x/y:1\": repository docker.io/x/y is outside the operator's allowedImageRepositories (ghcr.io/a/, quay.io/b/)".into()
            ))
        );
        assert!(
            check(
                "quay.io/b/c@sha256:0123456789abcdef0123456789abcdef",
                "x",
                &["ghcr.io/a/", "quay.io/b/"]
            )
            .is_ok()
        );
        let refused = check("docker.io/x/y:1", "x", &["ghcr.io/a/"]).unwrap_err();
        assert_eq!(refused.reason(), "ImageNotAllowed");
        assert!(refused.message().contains("repository docker.io/x/y"));
        let invalid = check("a b", "x", &[]).unwrap_err();
        assert_eq!(invalid.reason(), "ConfigurationInvalid");
    }
}
