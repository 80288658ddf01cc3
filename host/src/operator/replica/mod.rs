//! What one replica of the host is, shared by every part of the operator:
//! its API client ([`client`]) and write fence ([`fence`]), its Lease and
//! shard ([`leadership`]), whether it is wedged ([`liveness`]), and what it
//! counts ([`metrics`]).

pub mod client;
pub mod fence;
pub mod leadership;
pub mod liveness;
pub mod metrics;
