//! The host's conventions engine and the model it works on: kind specs,
//! verdicts and statuses, with no I/O and no clock reads.

pub mod engine;
pub mod kind;
pub mod message;
pub mod projection;
pub mod status;
pub mod verdict;

#[cfg(test)]
mod fixtures;
