//! What the host sees of the cluster: the kinds it serves (probing), the
//! namespaces it may watch, and the caches that watches keep in step with
//! the API server.

pub mod cache;
pub mod namespaces;
pub mod probe;
pub mod watch;
