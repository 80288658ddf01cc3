//! The guest SDK: what a kind's author writes a reconciler guest with.
//!
//! A guest implements [`Guest`]: `describe` returns the kind's static spec,
//! `evaluate` turns the parent and the [`Facts`] it reads into a
//! [`Verdict`]. [`export_guest!`] exports it as a WebAssembly component for
//! the host; under plain `cargo test` the same logic runs natively against
//! [`mock::MockFacts`].

#![deny(missing_docs)]

extern crate self as reconciler_guest_sdk;

pub use serde_json;
pub use wit_bindgen;

// Generated from the WIT: its documentation is the contract's, in `wit/`.
#[allow(missing_docs)]
pub mod bindings;
pub mod configuration;
pub mod facts;
pub mod hostname;
pub mod image;
mod input;
pub mod message;
pub mod mock;
pub mod ownership;
pub mod read;
pub mod spec;
pub mod testing;
pub mod verdict;
pub mod workload;

pub use bindings::exports::reconciler::guest0_4_0::reconciler::{
    ApplyObject, CaBundle, Change, Condition, ConventionProfile, DeleteObject, Evaluation,
    EventType, GenerateSecret, KindEvent, KindSpec, PauseAnnotation, PrinterColumn, ReadDecl,
    ReasonEntry, Reconciliation, ServingCertificate, Stall, StallRule, Verdict,
};
pub use bindings::reconciler::guest0_4_0::facts::{
    Admission, ApplyOutcome, ApplyRefusal, Availability, CertificateBundleFact, CertificateFact,
    ConfigMapFact, ContainerWaiting, EgressPolicyFact, EgressRuleFact, ExposureFact, ExposureKind,
    IngressRuleFact, IpBlockFact, JobCondition, JobFact, JobPodFailure, JobState,
    LabelSelectorFact, NetworkPolicyFact, NodeCidrs, NodePodCidrsFact, PeerFact, PodFact, PortFact,
    ReadError, SecretFact, SelectorRequirement, WorkloadFact, WorkloadState,
};
pub use bindings::reconciler::guest0_4_0::types::{
    ConditionStatus, ControllerRef, KindRef, Object, ObjectMeta, Timestamp,
};
pub use facts::{Facts, HostFacts};
pub use verdict::VerdictBuilder;

/// A kind's business logic.
pub trait Guest {
    /// The kind's static spec (called once per module load).
    fn describe() -> KindSpec;
    /// One pass: the parent and the facts it reads, to a verdict.
    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict;
    /// The kinds the guest writes (the host applies and deletes their
    /// objects for it); none unless a guest says otherwise.
    fn writes() -> Vec<KindRef> {
        Vec::new()
    }
    /// One pass with the changes it wants made: by default, `evaluate`'s
    /// verdict and none. A guest that writes implements this (and its
    /// `evaluate` returns this verdict).
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        Reconciliation {
            verdict: Self::evaluate(input, facts),
            changes: Vec::new(),
        }
    }
}

/// Exports a [`Guest`] as the component's `reconciler` interface. Only on
/// wasm targets: natively the same crate is a plain library for tests.
///
/// ```ignore
/// struct EvidenceAgent;
/// impl reconciler_guest_sdk::Guest for EvidenceAgent { /* ... */ }
/// reconciler_guest_sdk::export_guest!(EvidenceAgent);
/// ```
#[macro_export]
macro_rules! export_guest {
    ($guest:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        pub struct __ReconcilerGuestExport;

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::reconciler::guest0_4_0::reconciler::Guest
            for __ReconcilerGuestExport
        {
            fn describe() -> $crate::KindSpec {
                <$guest as $crate::Guest>::describe()
            }

            fn evaluate(input: $crate::Evaluation) -> $crate::Verdict {
                <$guest as $crate::Guest>::evaluate(&input, &$crate::HostFacts)
            }

            fn writes() -> Vec<$crate::KindRef> {
                <$guest as $crate::Guest>::writes()
            }

            fn reconcile(input: $crate::Evaluation) -> $crate::Reconciliation {
                <$guest as $crate::Guest>::reconcile(&input, &$crate::HostFacts)
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::bindings::export!(__ReconcilerGuestExport with_types_in $crate::bindings);
    };
}
