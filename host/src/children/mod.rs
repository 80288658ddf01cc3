//! The children a guest asks for, pure: the bodies the host sends for
//! them ([`bodies`]) and whether a change would change anything
//! ([`pending`]), for the operator's planner and the fixture runner alike.

pub mod bodies;
pub mod pending;
