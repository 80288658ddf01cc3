//! NetworkPolicy analysis that several kinds' guests share.
//!
//! [`cidr`] is the CIDR arithmetic (IPv4 and IPv6), [`broad`] decides when an
//! `ipBlock` admits (nearly) everyone, and [`peers`] does the same for a
//! whole `NetworkPolicyPeer`, selectors included. [`selector`] matches label
//! selectors (`matchLabels` and `matchExpressions`) and compares them,
//! [`ports`] reads a rule's `ports`, and [`within`] decides whether one peer
//! admits no source another does not. [`egress`] decides whether an egress
//! rule confines traffic to named destinations. Everything is pure and std-only, so
//! it runs the same natively and inside a `wasm32-wasip2` guest.

pub mod broad;
pub mod cidr;
pub mod egress;
pub mod peers;
pub mod ports;
pub mod selector;
pub mod within;
