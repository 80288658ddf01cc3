//! Which images the console Pod runs: `spec.image` or the operator's default, and the OAuth2 proxy's, within the allow-list.

use reconciler_guest_sdk::image::{Refusal, check, choose};

pub use reconciler_guest_sdk::image::ALLOWED_REPOSITORIES;

/// The setting naming the console image used when `spec.image` is not set.
pub const DEFAULT_CONSOLE_IMAGE: &str = "defaultConsoleImage";

/// Why an image cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageProblem {
    /// Neither `spec.image` nor a default (ConsoleImageRequired).
    Required(String),
    /// The reference does not parse (ConfigurationInvalid), or its
    /// repository is outside the allow-list (ImageNotAllowed).
    Refused(Refusal),
}

impl ImageProblem {
    pub fn message(&self) -> &str {
        match self {
            ImageProblem::Required(m) => m,
            ImageProblem::Refused(r) => r.message(),
        }
    }
}

/// The console's image.
pub fn console(
    spec_image: Option<&str>,
    default: Option<&str>,
    allowed: &[&str],
) -> Result<String, ImageProblem> {
    choose(spec_image, default, DEFAULT_CONSOLE_IMAGE, allowed)
        .map_err(ImageProblem::Refused)?
        .ok_or_else(|| {
            ImageProblem::Required(
                "spec.image is not set and the operator has no default console image (defaultConsoleImage)".into(),
            )
        })
}

/// The OAuth2 proxy's image (`spec.oauthProxy.image`), held to the same list.
pub fn oauth_proxy(image: &str, allowed: &[&str]) -> Result<String, ImageProblem> {
    check(image, "spec.oauthProxy.image", allowed).map_err(ImageProblem::Refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_spec_image_nor_default_the_console_image_is_required() {
        assert!(matches!(
            console(None, Some(" "), &[]),
            Err(ImageProblem::Required(m)) if m.contains("defaultConsoleImage")
        ));
    }

    #[test]
    fn the_default_and_the_proxy_are_held_to_the_allow_list() {
        let refused = console(None, Some("docker.io/x/y:1"), &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(ImageProblem::Refused(Refusal::NotAllowed(m))) if m.contains("defaultConsoleImage"))
        );
        let refused = oauth_proxy("docker.io/x/proxy:1", &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(ImageProblem::Refused(Refusal::NotAllowed(m))) if m.contains("spec.oauthProxy.image"))
        );
        assert!(oauth_proxy("bad image", &[]).is_err());
    }
}
