//! What the host sees of the cluster: the kinds it serves (probing), the
//! namespaces it may watch, the caches that watches keep in step with the
//! API server (each holding what the kind's readers declare), and the
//! watches' health.

pub mod cache;
pub(crate) mod child_records;
pub mod decode;
pub mod health;
pub mod managed_fields;
pub mod namespaces;
pub mod objects;
pub mod past_cache_reads;
pub mod probe;
pub(crate) mod projected;
pub(crate) mod projections;
pub mod selection;
pub mod watch;
pub mod watching;
