//! The reconciler host: loads kinds' WebAssembly guests and runs them as a
//! Kubernetes operator.

pub mod capture;
pub mod children;
pub mod conditions_page;
pub mod contract;
pub mod crd;
mod disk_bound;
pub mod facts;
pub mod fixture;
pub mod marks;
pub mod oci;
pub mod operator;
pub mod pass;
pub mod plan;
pub mod rbac;
pub mod runtime;
pub mod shadow;
pub mod telemetry;
