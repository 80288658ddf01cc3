//! Which image the agent runs: `spec.image` or the operator's default, within the allow-list.

use reconciler_guest_sdk::image::{self, Refusal};

pub use reconciler_guest_sdk::image::ALLOWED_REPOSITORIES;

/// The setting naming the image used when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "defaultImage";

/// Why no image can be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageProblem {
    /// Neither `spec.image` nor a default.
    Required,
    /// The reference does not parse, or its repository is outside the
    /// allow-list.
    Refused(Refusal),
}

/// The image the agent runs.
pub fn choose(
    spec_image: Option<&str>,
    default: Option<&str>,
    allowed: &[&str],
) -> Result<String, ImageProblem> {
    image::choose(spec_image, default, DEFAULT_IMAGE, allowed)
        .map_err(ImageProblem::Refused)?
        .ok_or(ImageProblem::Required)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_spec_image_nor_default_the_image_is_required() {
        assert_eq!(choose(None, Some(" "), &[]), Err(ImageProblem::Required));
        assert_eq!(choose(None, None, &["a/"]), Err(ImageProblem::Required));
        assert_eq!(choose(None, Some("c/d:2"), &[]), Ok("c/d:2".into()));
        let refused = choose(None, Some("docker.io/x/y:1"), &["ghcr.io/fyannk/"]);
        assert!(
            matches!(refused, Err(ImageProblem::Refused(Refusal::NotAllowed(m))) if m.contains("defaultImage"))
        );
    }
}
