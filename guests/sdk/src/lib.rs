//! The guest SDK: what a kind's author writes a reconciler guest with.
//!
//! A guest implements [`Guest`]: `describe` returns the kind's static spec,
//! `evaluate` turns the parent and the [`Facts`] it reads into a
//! [`Verdict`]. [`export_guest!`] exports it as a WebAssembly component for
//! the host; under plain `cargo test` the same logic runs natively against
//! [`mock::MockFacts`].

#![deny(missing_docs)]

extern crate self as reconciler_guest_sdk;

pub use schemars;
pub use serde_json;
pub use wit_bindgen;

// Generated from the WIT: its documentation is the contract's, in `wit/`.
#[allow(missing_docs)]
pub mod bindings;
pub mod change;
pub mod configuration;
pub mod exposure;
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

pub use bindings::exports::reconciler::guest0_6_0::reconciler::{
    ApplyObject, CaBundle, Change, Condition, ConventionProfile, DeleteObject, Evaluation,
    EventType, Gate, GenerateSecret, KindEvent, KindSpec, PauseAnnotation, PrinterColumn, ReadDecl,
    ReasonEntry, Reconciliation, ServingCertificate, Stall, StallRule, Verdict, Withdrawal,
};
pub use bindings::reconciler::guest0_6_0::facts::{
    Admission, ApplyOutcome, ApplyRefusal, Availability, CertificateBundleFact, CertificateFact,
    ChangeOutcome, ConfigMapFact, ContainerWaiting, EgressPolicyFact, EgressRuleFact, ExposureFact,
    ExposureKind, Hold, IngressRuleFact, IpBlockFact, JobCondition, JobFact, JobPodFailure,
    JobState, LabelSelectorFact, NetworkPolicyFact, NodeCidrs, NodePodCidrsFact, PeerFact, PodFact,
    PortFact, ReadError, SecretFact, SelectorRequirement, WorkloadFact, WorkloadState,
};
pub use bindings::reconciler::guest0_6_0::types::{
    ConditionStatus, ControllerRef, KindRef, Object, ObjectMeta, Timestamp,
};
pub use facts::{Facts, HostFacts};
pub use verdict::VerdictBuilder;

/// A kind's business logic.
///
/// ```
/// use reconciler_guest_sdk::mock::{MockFacts, evaluation};
/// use reconciler_guest_sdk::verdict::{fails, ok};
/// use reconciler_guest_sdk::{ConventionProfile, Evaluation, Facts, Guest, KindSpec, Verdict, VerdictBuilder, spec};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// pub struct GreetingSpec {
///     /// What to say.
///     pub greeting: Option<String>,
/// }
///
/// pub struct Greeting;
///
/// impl Guest for Greeting {
///     fn describe() -> KindSpec {
///         KindSpec {
///             group: "example.dev".into(), version: "v1".into(), kind: "Greeting".into(),
///             plural: "greetings".into(), namespaced: true, profile: ConventionProfile::Progressing,
///             aspects: vec!["ConfigurationValid".into()], advisory: vec![],
///             reasons: spec::registry("greeting", &["ConfigurationInvalid"], &[("GreetingMissing", "spec.greeting is not set.")]),
///             negative_polarity: vec![], quiet_reasons: vec![],
///             stalls: vec![spec::stalls("ConfigurationInvalid"), spec::stalls("GreetingMissing")],
///             reads: vec![], pause: spec::pause("example.dev/reconcile", "skip"),
///             spec_schema: Some(spec::schema_of::<GreetingSpec>()), printer_columns: vec![],
///         }
///     }
///     fn evaluate(input: &Evaluation, _facts: &dyn Facts) -> Verdict {
///         let mut v = VerdictBuilder::new();
///         match input.spec::<GreetingSpec>() {
///             Ok(GreetingSpec { greeting: Some(g) }) => { v.aspect(ok("ConfigurationValid", format!("says {g}"))); }
///             Ok(_) => { v.aspect(fails("ConfigurationValid", "GreetingMissing", "spec.greeting is not set"))
///                 .stall("GreetingMissing", "spec.greeting is not set"); }
///             Err(e) => { v.aspect(fails("ConfigurationValid", "ConfigurationInvalid", e.message()))
///                 .stall("ConfigurationInvalid", e.message()); }
///         }
///         v.build()
///     }
/// }
///
/// reconciler_guest_sdk::export_guest!(Greeting);
///
/// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}, "spec": {"greeting": "hi"}}), &[]);
/// let verdict = Greeting::evaluate(&input, &MockFacts::at(0));
/// reconciler_guest_sdk::testing::keeps_contract(&Greeting::describe(), &verdict, false);
/// assert_eq!(verdict.aspect("ConfigurationValid").unwrap().message, "says hi");
/// ```
pub trait Guest {
    /// The kind's static spec (called once per module load): see
    /// [`spec`] for its helpers, [`spec::Registry`] for the reasons,
    /// [`spec::schema_of`] for the schema of `.spec`.
    fn describe() -> KindSpec;
    /// One pass: the parent and the facts it reads, to a verdict (see the
    /// trait's example).
    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict;
    /// The kinds the guest writes (the host applies and deletes their
    /// objects for it); none unless a guest says otherwise.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Evaluation, Facts, Guest, KindRef, KindSpec, Verdict, VerdictBuilder, spec::kind_ref};
    /// # struct Writer;
    /// impl Guest for Writer {
    /// #   fn describe() -> KindSpec { unimplemented!() }
    /// #   fn evaluate(_: &Evaluation, _: &dyn Facts) -> Verdict { VerdictBuilder::new().build() }
    ///     fn writes() -> Vec<KindRef> {
    ///         vec![kind_ref("", "v1", "ConfigMap")]
    ///     }
    /// }
    /// assert_eq!(Writer::writes()[0].kind, "ConfigMap");
    /// ```
    fn writes() -> Vec<KindRef> {
        Vec::new()
    }
    /// One pass with the changes it wants made: by default, `evaluate`'s
    /// verdict and none. A guest that writes implements this (and its
    /// `evaluate` returns this verdict).
    ///
    /// ```
    /// # use reconciler_guest_sdk::{ApplyObject, Change, Evaluation, Facts, Guest, KindSpec, Reconciliation, Verdict, VerdictBuilder, spec::kind_ref};
    /// # use reconciler_guest_sdk::mock::{MockFacts, evaluation};
    /// struct Writer;
    /// impl Guest for Writer {
    /// #   fn describe() -> KindSpec { unimplemented!() }
    ///     fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
    ///         Self::reconcile(input, facts).verdict
    ///     }
    ///     fn reconcile(input: &Evaluation, _facts: &dyn Facts) -> Reconciliation {
    ///         let name = format!("{}-config", input.parent.meta.name);
    ///         let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
    ///             "metadata": {"name": name}, "data": {"a": "1"}});
    ///         Reconciliation {
    ///             verdict: VerdictBuilder::new().build(),
    ///             changes: vec![Change::Apply(ApplyObject { kind: kind_ref("", "v1", "ConfigMap"), name, body: body.to_string() })],
    ///         }
    ///     }
    /// }
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}), &[]);
    /// assert_eq!(Writer::reconcile(&input, &MockFacts::at(0)).changes.len(), 1);
    /// ```
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        Reconciliation {
            verdict: Self::evaluate(input, facts),
            changes: Vec::new(),
        }
    }
    /// The gates a parent may set on itself (the annotations
    /// `reconciler.dev/mode` and `reconciler.dev/approval`, or `spec.mode`
    /// and `spec.approval` where the spec declares them): both unless a
    /// guest says otherwise. A kind whose parents are made by someone who
    /// must not hold back the operator's changes (a requester of access)
    /// lets them set none.
    ///
    /// ```
    /// # use reconciler_guest_sdk::{Evaluation, Facts, Gate, Guest, KindSpec, Verdict, VerdictBuilder};
    /// # struct Request;
    /// impl Guest for Request {
    /// #   fn describe() -> KindSpec { unimplemented!() }
    /// #   fn evaluate(_: &Evaluation, _: &dyn Facts) -> Verdict { VerdictBuilder::new().build() }
    ///     fn parent_gates() -> Vec<Gate> {
    ///         Vec::new()
    ///     }
    /// }
    /// assert!(Request::parent_gates().is_empty());
    /// ```
    fn parent_gates() -> Vec<Gate> {
        vec![Gate::Mode, Gate::Approval]
    }
}

/// A withdrawal (contract 0.5.0): the deletion of a child whose going takes
/// access or exposure away, which the host makes whatever holds the
/// parent's other changes (pause, mode `observe`, approval `manual`, a
/// failed read), raising `event` (a reason of the kind's registry) once
/// the child is gone; `None` where the verdict's own transition says it.
///
/// ```
/// use reconciler_guest_sdk::{Change, EventType, KindEvent, spec::kind_ref, withdraw};
/// let event = KindEvent {
///     type_: EventType::Normal,
///     reason: "RoleBindingDeleted".into(),
///     message: "deleted RoleBinding grant at expiry".into(),
/// };
/// let change = withdraw(
///     kind_ref("rbac.authorization.k8s.io", "v1", "RoleBinding"), "grant", "u-1", Some(event),
/// );
/// assert!(matches!(change, Change::Withdraw(w) if w.object.name == "grant"));
/// ```
pub fn withdraw(
    kind: KindRef,
    name: impl Into<String>,
    uid: impl Into<String>,
    event: Option<KindEvent>,
) -> Change {
    Change::Withdraw(Withdrawal {
        object: DeleteObject {
            kind,
            name: name.into(),
            uid: uid.into(),
        },
        event,
    })
}

/// Exports a [`Guest`] as the component's `reconciler` interface. Only on
/// wasm targets: natively the same crate is a plain library for tests.
///
/// ```
/// use reconciler_guest_sdk::{Evaluation, Facts, Guest, KindSpec, Verdict, VerdictBuilder};
/// pub struct EvidenceAgent;
/// impl Guest for EvidenceAgent {
/// #   fn describe() -> KindSpec { unimplemented!() }
///     /* describe, evaluate ... */
/// #   fn evaluate(_: &Evaluation, _: &dyn Facts) -> Verdict { VerdictBuilder::new().build() }
/// }
/// reconciler_guest_sdk::export_guest!(EvidenceAgent);
/// ```
#[macro_export]
macro_rules! export_guest {
    ($guest:ty) => {
        #[cfg(target_arch = "wasm32")]
        #[doc(hidden)]
        pub struct __ReconcilerGuestExport;

        #[cfg(target_arch = "wasm32")]
        impl $crate::bindings::exports::reconciler::guest0_6_0::reconciler::Guest
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

            fn parent_gates() -> Vec<$crate::Gate> {
                <$guest as $crate::Guest>::parent_gates()
            }
        }

        #[cfg(target_arch = "wasm32")]
        $crate::bindings::export!(__ReconcilerGuestExport with_types_in $crate::bindings);
    };
}
