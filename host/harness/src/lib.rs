//! What the host's integration tests and benchmarks share, as one crate
//! (a dev-dependency of `reconciler-host`), compiled once for every test
//! binary:
//!
//! - [`paths`]: the workspace, the target directory, the host binary;
//! - [`guests`]: guest components built for the tests;
//! - [`makefile`]: the bundled guests, as the Makefile lists them;
//! - [`operator`]: the host as a child process against the test API
//!   server, polling, statuses and Events;
//! - [`objects`] and [`console_objects`]: the objects the tests create;
//!   [`pgadmin_objects`]: the PgAdmin tests', and the Job controller's
//!   verdict they write in its place;
//! - [`kstatus`]: sigs.k8s.io/cli-utils' kstatus, a client reading the
//!   kstatus conventions, computing an object's status;
//! - [`pod_states`]: the crash-loop chooser, annotating the Pods kwok
//!   (the test cluster's simulated Nodes) is to report crash-looping;
//! - [`plans`]: the plans' manifests of `deploy/`, and the reviewer CLI;
//! - [`identity`]: a least-privilege user's RBAC and kubeconfig;
//! - [`proxy`]: a fault-injecting proxy in front of an API server of a
//!   test's own, which the test may restart (TCP: outages, latency);
//!   [`http_proxy`]: one that answers 503 on request (HTTP);
//! - [`registry`] and [`cosign`]: an OCI registry on loopback, and the
//!   real cosign signing what is pushed to it;
//! - [`bench`]: the benches' host process, metrics and printed table;
//! - [`scaffold`]: the guest `reconciler-host new Probe --child
//!   ConfigMap` scaffolds, its variants, and the host serving them.

pub mod access_requests;
pub mod bench;
pub mod console_objects;
pub mod cosign;
pub mod escape;
pub mod go_programs;
pub mod guests;
pub mod http_proxy;
pub mod identity;
pub mod kstatus;
pub mod makefile;
pub mod objects;
pub mod operator;
pub mod paths;
pub mod pgadmin_objects;
pub mod plans;
pub mod pod_states;
pub mod process;
pub mod proxy;
pub mod registry;
pub mod ring;
pub mod scaffold;
pub mod widgets;
