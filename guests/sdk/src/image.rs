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
/// None when the reference is malformed.
///
/// ```
/// use reconciler_guest_sdk::image::repository;
/// assert_eq!(repository("registry:5000/team/agent:1.0@sha256:ab"), Some("registry:5000/team/agent"));
/// assert_eq!(repository("a//b"), None);
/// ```
pub fn repository(image: &str) -> Option<&str> {
    let named = image.split_once('@').map_or(image, |(name, _)| name);
    let last_slash = named.rfind('/').map_or(0, |i| i + 1);
    let repository = match named[last_slash..].find(':') {
        Some(colon) => &named[..last_slash + colon],
        None => named,
    };
    let well_formed = !repository.is_empty()
        && !repository.starts_with('/')
        && !repository.ends_with('/')
        && !repository.contains("//")
        && !image.chars().any(|c| c.is_whitespace() || c.is_control());
    well_formed.then_some(repository)
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
        assert_eq!(repository("ghcr.io/a/b@sha256:abc"), Some("ghcr.io/a/b"));
        assert_eq!(repository("ghcr.io/a/b:1@sha256:abc"), Some("ghcr.io/a/b"));
        assert_eq!(repository("registry:5000/a/b"), Some("registry:5000/a/b"));
        assert_eq!(repository("registry:5000/a/b:2"), Some("registry:5000/a/b"));
        assert_eq!(repository("busybox"), Some("busybox"));
        assert_eq!(repository(":1"), None);
        assert_eq!(repository("ghcr.io/a b"), None);
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
        assert!(check("quay.io/b/c@sha256:0", "x", &["ghcr.io/a/", "quay.io/b/"]).is_ok());
        let refused = check("docker.io/x/y:1", "x", &["ghcr.io/a/"]).unwrap_err();
        assert_eq!(refused.reason(), "ImageNotAllowed");
        assert!(refused.message().contains("repository docker.io/x/y"));
        let invalid = check("a b", "x", &[]).unwrap_err();
        assert_eq!(invalid.reason(), "ConfigurationInvalid");
    }
}
