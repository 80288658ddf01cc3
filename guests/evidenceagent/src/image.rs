//! Which image the agent runs: `spec.image` or the operator's default, within the allow-list.

/// The setting naming the image used when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "defaultImage";
/// The setting listing allowed repository prefixes, comma-separated. Unset
/// or empty: every repository is allowed.
pub const ALLOWED_REPOSITORIES: &str = "allowedImageRepositories";

/// Why no image can be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageProblem {
    /// Neither `spec.image` nor a default.
    Required,
    /// The reference does not parse.
    Invalid(String),
    /// The repository is outside the allow-list.
    NotAllowed(String),
}

/// The image the agent runs.
pub fn choose(
    spec_image: Option<&str>,
    default: Option<&str>,
    allowed: &[&str],
) -> Result<String, ImageProblem> {
    let (image, origin) = match (spec_image, default.map(str::trim).filter(|d| !d.is_empty())) {
        (Some(image), _) => (image, "spec.image"),
        (None, Some(default)) => (default, "the operator's defaultImage"),
        (None, None) => return Err(ImageProblem::Required),
    };
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
    fn spec_image_wins_over_the_default() {
        assert_eq!(
            choose(Some("a/b:1"), Some("c/d:2"), &[]),
            Ok("a/b:1".into())
        );
        assert_eq!(choose(None, Some("c/d:2"), &[]), Ok("c/d:2".into()));
        assert_eq!(choose(None, Some(" "), &[]), Err(ImageProblem::Required));
        assert_eq!(choose(None, None, &["a/"]), Err(ImageProblem::Required));
    }

    #[test]
    fn the_default_is_held_to_the_allow_list_too() {
        let refused = choose(None, Some("docker.io/x/y:1"), &["ghcr.io/fyannk/"]);
        assert!(matches!(refused, Err(ImageProblem::NotAllowed(m)) if m.contains("defaultImage")));
    }
}
