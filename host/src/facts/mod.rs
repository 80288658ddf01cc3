//! Facts: what the host derives from Kubernetes objects and serves to
//! guests through the `facts` import, with every read recorded.

pub mod certificates;
pub mod exposure;
pub mod memo;
pub mod meta;
pub mod network_policy;
pub mod nodes;
#[cfg(test)]
mod robustness;
pub mod selector;
pub mod serve;
pub mod source;
pub mod workload;

pub use memo::Cached;
pub use selector::Selector;
pub use serve::{Dependency, FactServer};
pub use source::{ApplyOutcome, Availability, MemorySource, ObjectSource, SourceError};
