//! What the host writes: the children its guests want (applied and
//! deleted, serving certificates signed by its CA), a parent's `.status` by server-side apply under its field
//! manager, then the pass's Events; the plans those changes go through
//! first; and how the API server's refusals are classified.

pub mod api_error;
pub mod authority;
pub mod children;
pub mod events;
pub mod owned;
pub mod plans;
pub mod status;

pub use status::{FIELD_MANAGER, StatusWriter};
