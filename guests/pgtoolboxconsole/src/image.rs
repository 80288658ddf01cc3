//! Which images the console Pod runs: `spec.image` or the operator's default, and the OAuth2 proxy's, within the allow-list.

/// The setting naming the console image used when `spec.image` is not set.
pub const DEFAULT_CONSOLE_IMAGE: &str = "defaultConsoleImage";
/// The setting listing allowed repository prefixes, comma-separated. Unset
/// or empty: every repository is allowed.
pub const ALLOWED_REPOSITORIES: &str = "allowedImageRepositories";

/// Why an image cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageProblem {
    /// Neither `spec.image` nor a default (ConsoleImageRequired).
    Required(String),
    /// The reference does not parse (ConfigurationInvalid).
    Invalid(String),
    /// The repository is outside the allow-list (ImageNotAllowed).
    NotAllowed(String),
}

impl ImageProblem {
    pub fn message(&self) -> &str {
        match self {
            ImageProblem::Required(m) | ImageProblem::Invalid(m) | ImageProblem::NotAllowed(m) => m,
        }
    }
}

/// The console's image.
pub fn console(
    spec_image: Option<&str>,
    default: Option<&str>,
    allowed: &[&str],
) -> Result<String, ImageProblem> {
    let (image, origin) = match (spec_image, default.map(str::trim).filter(|d| !d.is_empty())) {
        (Some(image), _) => (image, "spec.image"),
        (None, Some(default)) => (default, "the operator's defaultConsoleImage"),
        (None, None) => {
            return Err(ImageProblem::Required(
                "spec.image is not set and the operator has no default console image (defaultConsoleImage)".into(),
            ));
        }
    };
    check(image, origin, allowed)
}

/// The OAuth2 proxy's image (`spec.oauthProxy.image`), held to the same list.
pub fn oauth_proxy(image: &str, allowed: &[&str]) -> Result<String, ImageProblem> {
    check(image, "spec.oauthProxy.image", allowed)
}

fn check(image: &str, origin: &str, allowed: &[&str]) -> Result<String, ImageProblem> {
    let repository = repository(image).ok_or_else(|| {
        ImageProblem::Invalid(format!("{origin} {image:?} is not an image reference"))
    })?;
    if allowed.is_empty() || allowed.iter().any(|prefix| within(repository, prefix)) {
        Ok(image.to_owned())
    } else {
        Err(ImageProblem::NotAllowed(format!(
            "{origin} {image:?}: repository {repository} is outside the operator's allowedImageRepositories ({})",
            allowed.join(", ")
        )))
    }
}

/// The repository of an image reference: without its digest and tag.
/// None when the reference is malformed.
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
fn within(repository: &str, prefix: &str) -> bool {
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
        assert_eq!(repository("registry:5000/a/b:2"), Some("registry:5000/a/b"));
        assert_eq!(repository(":1"), None);
        assert_eq!(repository("ghcr.io/a b"), None);
    }

    #[test]
    fn prefixes_match_whole_components() {
        assert!(within("ghcr.io/fyannk/console", "ghcr.io/fyannk/"));
        assert!(within("ghcr.io/fyannk/console", "ghcr.io/fyannk"));
        assert!(!within("ghcr.io/fyannkx/console", "ghcr.io/fyannk"));
    }

    #[test]
    fn spec_image_wins_over_the_default_and_none_is_required() {
        assert_eq!(
            console(Some("a/b:1"), Some("c/d:2"), &[]),
            Ok("a/b:1".into())
        );
        assert_eq!(console(None, Some("c/d:2"), &[]), Ok("c/d:2".into()));
        assert!(matches!(
            console(None, Some(" "), &[]),
            Err(ImageProblem::Required(_))
        ));
    }

    #[test]
    fn the_default_and_the_proxy_are_held_to_the_allow_list() {
        let refused = console(None, Some("docker.io/x/y:1"), &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(ImageProblem::NotAllowed(m)) if m.contains("defaultConsoleImage"))
        );
        let refused = oauth_proxy("docker.io/x/proxy:1", &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(ImageProblem::NotAllowed(m)) if m.contains("spec.oauthProxy.image"))
        );
        assert!(oauth_proxy("bad image", &[]).is_err());
    }
}
