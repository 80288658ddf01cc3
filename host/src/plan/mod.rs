//! Plans and approval (issue 14, seed 003): what a pass would change, reviewed before it is made.

pub mod digest;
