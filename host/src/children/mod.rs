//! The children a guest asks for, pure: the bodies the host sends for
//! them ([`bodies`]), whether a change would change anything
//! ([`pending`]), whether the host still owns what it asked for
//! ([`owned`]), for the operator's planner and the fixture runner alike;
//! and when a change that does not settle is not made again
//! ([`settling`]), the operator's memory.

pub mod bodies;
pub mod owned;
pub mod pending;
pub mod settling;
