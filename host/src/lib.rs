//! The reconciler host: loads kinds' WebAssembly guests and runs them as a
//! Kubernetes operator.

pub mod bindings;
pub mod facts;
pub mod fixture;
pub mod runtime;
