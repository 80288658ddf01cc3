//! Facts: what the host derives from Kubernetes objects and serves to
//! guests, through a reader that records every read.

pub mod applied;
pub mod cached;
pub mod certificates;
pub mod dependency;
pub mod diagnose;
pub mod exposure;
pub(crate) mod fields;
mod import;
pub mod job;
pub mod known_kinds;
pub mod memo;
pub mod meta;
pub mod network_policy;
pub mod nodes;
pub mod packed;
pub mod past_cache;
#[cfg(test)]
mod robustness;
pub mod selector;
pub mod server;
pub mod snapshot;
pub mod source;
pub mod workload;

pub use cached::Cached;
pub use dependency::Dependency;
pub use selector::Selector;
pub use server::FactServer;
pub use source::{
    ApplyOutcome, Availability, ChangeState, Hold, MemorySource, ObjectSource, SourceError,
};
