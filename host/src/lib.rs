//! The reconciler host: loads kinds' WebAssembly guests and runs them as a
//! Kubernetes operator.

pub mod capture;
pub mod contract;
pub mod crd;
pub mod docs;
pub mod facts;
pub mod fixture;
pub mod marks;
pub mod operator;
pub mod plan;
pub mod rbac;
pub mod runtime;
pub mod telemetry;
