//! Plans and approval (issue 14, seed 003): what a pass would change, reviewed before it is made.

pub mod accepted;
pub mod artifact;
pub mod digest;
pub mod events;
pub mod gates;
pub mod lifecycle;
pub mod played;
pub mod record;
pub mod review;
