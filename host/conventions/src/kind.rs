//! A kind's static spec, as its guest describes it, and the checks that
//! refuse an inconsistent one at module load.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The most conditions an object may carry (seed 000: "at most 16").
pub const MAX_CONDITIONS: usize = 16;

/// The roll-up condition of every kind.
pub const READY: &str = "Ready";
/// Stalled: negative polarity in both profiles.
pub const STALLED: &str = "Stalled";
/// The `progressing` profile's convergence condition (positive).
pub const PROGRESSING: &str = "Progressing";
/// The `kstatus` profile's convergence condition (abnormal-true).
pub const RECONCILING: &str = "Reconciling";
/// The `kstatus` profile's "serving, but not as specified" (negative).
pub const DEGRADED: &str = "Degraded";

/// Seed 004's negative-polarity registry ("Six condition types mean
/// trouble when True"): in the `kstatus` profile, True on a condition of
/// one of these types is its bad state, whether or not the kind lists it
/// in [`KindSpec::negative_polarity`]. A kind that declares one of them
/// declares it advisory: an aspect's True must be its good state.
pub const KSTATUS_NEGATIVE_POLARITY: &[&str] = &[
    DEGRADED,
    STALLED,
    "ContentDrift",
    "Superseded",
    "DuplicateVersion",
    "InsecureEgressTestHosts",
];

/// The owner of the reasons every kind shares.
pub const COMMON_OWNER: &str = "common";

/// Stalled=True: a change the host made twice did not settle (issue 51).
pub const CHANGE_NOT_SETTLING: &str = "ChangeNotSettling";

/// The host's own stalls, whatever stalls the kind declares.
pub const HOST_STALLS: &[&str] = &[CHANGE_NOT_SETTLING];

/// Reasons the host itself sets, whatever the kind: always registered.
pub const HOST_REASONS: &[(&str, &str)] = &[
    (
        "AsExpected",
        "The healthy reason of every aspect and of Ready.",
    ),
    (
        "Initializing",
        "Not evaluated yet (Unknown on first touch).",
    ),
    (
        "Reconciling",
        "Progressing=True while children converge; also Unknown for a child not observed yet.",
    ),
    (
        "ReconcileError",
        "Ready=False: the last reconciliation ended with an error; the message carries the bounded text.",
    ),
    (
        "ReconciliationPaused",
        "The kind's pause annotation is set.",
    ),
    (
        "ReconciliationFailed",
        "Event: a reconciliation ended with an API error of no more specific class.",
    ),
    (
        "QuotaExceeded",
        "Event: a reconciliation ended because a ResourceQuota refused a write.",
    ),
    (
        "AdmissionDenied",
        "Event: a reconciliation ended because admission (a webhook or policy) denied a write.",
    ),
    (
        "GuestFailed",
        "Event: a reconciliation ended because the kind's guest trapped, ran out of time or memory, or broke the contract.",
    ),
    (
        "ObjectUndecodable",
        "Event: a reconciliation ended because the parent, or an object its guest reads, nests arrays and objects deeper than the host reads (100 levels); the message names the object and the field path.",
    ),
    (
        "NamespaceNotWatched",
        "Ready=Unknown: the namespace was left out of the watch for missing permissions; the message names them.",
    ),
    (
        "Planned",
        "Ready=True in mode observe: the changes are planned in a ReconcilePlan and never made. An aspect False with it: its child's change is planned so (facts.change-state).",
    ),
    (
        "ChangesPending",
        "Drifted=True: changes are planned and not made (mode observe, or awaiting approval); the message names the plan.",
    ),
    (
        "InSync",
        "Drifted=False: nothing to change (mode observe or approval manual).",
    ),
    (
        "ObserveMode",
        "ApprovalIgnored=True: a decision was recorded on a plan made in mode observe; nothing is executed.",
    ),
    (
        "PlanCreated",
        "Event: a ReconcilePlan was created for the parent's pending changes.",
    ),
    (
        "PlanApproved",
        "Event: a reviewer approved the parent's ReconcilePlan; it is executed.",
    ),
    (
        "PlanRejected",
        "Event: a reviewer denied the parent's ReconcilePlan; a replacement comes on a later pass.",
    ),
    (
        "PlanSuperseded",
        "Event: the parent's ReconcilePlan no longer describes its changes (they changed, went, or the target moved) and is void.",
    ),
    (
        "PlanApplied",
        "Event: the changes of the parent's ReconcilePlan were made.",
    ),
    (
        "PlanFailed",
        "Event: the execution of the parent's ReconcilePlan failed or was interrupted; what is left is a new plan.",
    ),
    (
        "AwaitingApproval",
        "Ready=False in mode apply with approval manual: the changes the parent asks for are planned in a ReconcilePlan awaiting a reviewer's decision; the message names the plan. An aspect False with it: its child's change awaits that decision (facts.change-state).",
    ),
    (
        CHANGE_NOT_SETTLING,
        "Stalled=True (and Ready=False): the host made the same change of a child twice in a row (once under approval manual) and the API server stored it otherwise each time, the object unchanged since; the message names the object and the field path that does not settle. The change is not made or planned again until the parent, what the guest asks for or the object changes.",
    ),
    (
        "ChangesDenied",
        "Ready=False in mode apply: a reviewer denied the changes the parent asks for; the message names the plan and when they are planned again. An aspect False with it: its child's change was denied (facts.change-state).",
    ),
];

/// Which condition vocabulary the host writes for the kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Ready, Progressing, Stalled (seed "Conditions and reasons").
    #[default]
    Progressing,
    /// Ready, Reconciling, Stalled, Degraded where declared (seed "Status conventions").
    Kstatus,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KindRef {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl KindRef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for KindRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonEntry {
    pub name: String,
    pub owner: String,
    pub meaning: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallRule {
    pub reason: String,
    pub recheck_seconds: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadDecl {
    pub kind: KindRef,
    pub optional: bool,
    /// Read in other namespaces than the parent's too (contract 0.4.0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cross_namespace: bool,
    /// The fields of the kind's objects the guest reads, as paths
    /// ([`crate::projection::FieldPath`]); none: the whole object
    /// (contract 0.6.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
}

impl ReadDecl {
    /// What of the kind's objects the guest is served: the fields it
    /// declares, or the whole object. Its paths are valid once the spec
    /// is ([`KindSpec::validate`]).
    pub fn projection(&self) -> crate::projection::Projection {
        match &self.fields {
            None => crate::projection::Projection::Whole,
            Some(paths) => {
                crate::projection::Projection::of_paths(paths.iter().map(String::as_str))
                    .unwrap_or(crate::projection::Projection::Whole)
            }
        }
    }
}

/// A column of `kubectl get` beside Ready, Reason and Age (the CRD's
/// additionalPrinterColumns; since contract 0.4.0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// A JSONPath into the object, such as `.status.url`.
    pub json_path: String,
    /// Shown only with `-o wide`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The most columns a kind declares (kubectl's table stays readable).
pub const MAX_PRINTER_COLUMNS: usize = 8;

/// The column types a CRD accepts.
const PRINTER_COLUMN_TYPES: &[&str] = &["string", "integer", "number", "boolean", "date"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseAnnotation {
    pub key: String,
    pub value: String,
}

/// Everything the host needs to serve a kind, as its guest describes it.
/// `Default` is an empty spec on the Progressing profile, for building one
/// field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    pub profile: Profile,
    pub aspects: Vec<String>,
    pub advisory: Vec<String>,
    pub reasons: Vec<ReasonEntry>,
    pub negative_polarity: Vec<String>,
    pub quiet_reasons: Vec<String>,
    pub stalls: Vec<StallRule>,
    pub reads: Vec<ReadDecl>,
    pub pause: Option<PauseAnnotation>,
    pub spec_schema: Option<String>,
    /// Columns `kubectl get` shows beside Ready, Reason and Age.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub printer_columns: Vec<PrinterColumn>,
    /// The kinds the guest writes (since contract 0.3.0): the host applies
    /// and deletes their objects for it, watches them and serves its
    /// children of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<KindRef>,
    /// The gates a parent may set on itself (since contract 0.5.0; both
    /// before it).
    #[serde(default, skip_serializing_if = "ParentGates::is_all")]
    pub parent_gates: ParentGates,
}

/// Which gates a parent of the kind may set on itself, by annotation or
/// by its own spec field (contract 0.5.0, `parent-gates`). The operator's
/// settings for the kind apply whatever this says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentGates {
    /// `reconciler.dev/mode` or `spec.mode`.
    pub mode: bool,
    /// `reconciler.dev/approval` or `spec.approval`.
    pub approval: bool,
}

impl ParentGates {
    /// Both, as every kind had before contract 0.5.0.
    pub const ALL: ParentGates = ParentGates {
        mode: true,
        approval: true,
    };
    /// Neither: only the operator gates the kind's parents.
    pub const NONE: ParentGates = ParentGates {
        mode: false,
        approval: false,
    };

    pub fn is_all(&self) -> bool {
        *self == ParentGates::ALL
    }
}

impl Default for ParentGates {
    /// [`ParentGates::ALL`]: a guest older than contract 0.5.0 cannot say,
    /// and its parents keep the gates they had.
    fn default() -> Self {
        ParentGates::ALL
    }
}

/// Why a kind spec is refused at module load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("{field} is empty")]
    Empty { field: &'static str },
    #[error("condition type {0:?} is declared twice")]
    DuplicateCondition(String),
    #[error(
        "condition type {0:?} is the host's own; a kind may not declare it as an aspect or advisory"
    )]
    ReservedCondition(String),
    #[error("the kind declares no aspect: Ready needs at least one")]
    NoAspects,
    #[error("{count} condition types in all ({types}); an object carries at most {MAX_CONDITIONS}")]
    TooManyConditions { count: usize, types: String },
    #[error("reason {0:?} is registered twice")]
    DuplicateReason(String),
    #[error("reason {reason:?} is registered by {owner:?} but the host owns it as a common reason")]
    HostReasonRedefined { reason: String, owner: String },
    #[error("{what} {reason:?} is not in the reason registry")]
    Unregistered { what: &'static str, reason: String },
    #[error("negative-polarity type {0:?} is not a condition type of the kind")]
    UnknownPolarityType(String),
    #[error(
        "aspect {0:?} has negative polarity: Ready copies an aspect's status, so True must be an aspect's good state"
    )]
    NegativeAspect(String),
    #[error("reason {0:?} is not a CamelCase identifier")]
    BadReasonName(String),
    #[error("condition type {0:?} is not a CamelCase identifier")]
    BadConditionName(String),
    #[error("read of {0} is declared twice")]
    DuplicateRead(KindRef),
    #[error("read of {kind} declares the field {path:?}: {why}")]
    BadFieldPath {
        kind: Box<KindRef>,
        path: String,
        why: Box<crate::projection::FieldPathError>,
    },
    #[error("write of {0} is declared twice")]
    DuplicateWrite(KindRef),
    #[error("the kind declares it writes itself ({0}); a guest writes its parent's status only")]
    WritesItself(KindRef),
    #[error("spec schema is not a JSON object: {0}")]
    BadSchema(String),
    #[error("printer column {name:?}: {why}")]
    BadPrinterColumn { name: String, why: String },
}

impl KindSpec {
    pub fn kind_ref(&self) -> KindRef {
        KindRef {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
        }
    }

    /// The condition types the host writes itself for this kind's profile.
    pub fn host_conditions(&self) -> &'static [&'static str] {
        match self.profile {
            Profile::Progressing => &[READY, PROGRESSING, STALLED],
            Profile::Kstatus => &[READY, RECONCILING, STALLED],
        }
    }

    /// Every condition type an object of the kind can carry, in the order
    /// the host writes them: the host's, the aspects, then the advisory ones.
    pub fn condition_types(&self) -> impl Iterator<Item = &str> {
        self.host_conditions()
            .iter()
            .copied()
            .chain(self.aspects.iter().map(String::as_str))
            .chain(self.advisory.iter().map(String::as_str))
    }

    /// Every kind the guest may read through `facts`: what it declares it
    /// reads, and what it writes (its children).
    pub fn readable(&self) -> impl Iterator<Item = &KindRef> {
        self.reads.iter().map(|r| &r.kind).chain(&self.writes)
    }

    /// True on this type is the bad state: Stalled in both profiles; in
    /// the kstatus profile Reconciling (abnormal-true) and the types of
    /// [`KSTATUS_NEGATIVE_POLARITY`]; and the types the kind declares.
    pub fn is_negative_polarity(&self, type_: &str) -> bool {
        type_ == STALLED
            || (self.profile == Profile::Kstatus
                && (type_ == RECONCILING || KSTATUS_NEGATIVE_POLARITY.contains(&type_)))
            || self.negative_polarity.iter().any(|t| t == type_)
    }

    pub fn is_registered(&self, reason: &str) -> bool {
        HOST_REASONS.iter().any(|(r, _)| *r == reason)
            || self.reasons.iter().any(|r| r.name == reason)
    }

    pub fn is_quiet(&self, reason: &str) -> bool {
        reason == "RolloutInProgress"
            || reason == "PodNotReady"
            || self.quiet_reasons.iter().any(|r| r == reason)
    }

    /// Whether the object's JSON carries the kind's pause annotation.
    pub fn is_paused(&self, object: &serde_json::Value) -> bool {
        self.pause.as_ref().is_some_and(|p| {
            object["metadata"]["annotations"][&p.key].as_str() == Some(p.value.as_str())
        })
    }

    pub fn stall_rule(&self, reason: &str) -> Option<&StallRule> {
        self.stalls.iter().find(|s| s.reason == reason)
    }

    /// The full registry: the host's reasons and the kind's, sorted by name.
    pub fn registry(&self) -> Vec<ReasonEntry> {
        let mut all: Vec<ReasonEntry> = HOST_REASONS
            .iter()
            .map(|(name, meaning)| ReasonEntry {
                name: (*name).to_owned(),
                owner: COMMON_OWNER.to_owned(),
                meaning: (*meaning).to_owned(),
            })
            .chain(self.reasons.iter().cloned())
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Refuses a spec the host cannot serve consistently.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_conditions()?;
        self.validate_reasons()?;
        self.validate_polarity()?;
        self.validate_reads_and_writes()?;
        self.validate_printer_columns()?;
        self.validate_schema()
    }

    /// The names present, at least one aspect, and every condition type
    /// well formed, not the host's own, declared once, within the bound.
    fn validate_conditions(&self) -> Result<(), SpecError> {
        for (field, value) in [
            ("version", &self.version),
            ("kind", &self.kind),
            ("plural", &self.plural),
        ] {
            if value.is_empty() {
                return Err(SpecError::Empty { field });
            }
        }
        if self.aspects.is_empty() {
            return Err(SpecError::NoAspects);
        }
        let mut seen = BTreeSet::new();
        for t in self.aspects.iter().chain(&self.advisory) {
            if !is_camel_identifier(t) {
                return Err(SpecError::BadConditionName(t.clone()));
            }
            if [READY, PROGRESSING, RECONCILING, STALLED].contains(&t.as_str()) {
                return Err(SpecError::ReservedCondition(t.clone()));
            }
            if !seen.insert(t.as_str()) {
                return Err(SpecError::DuplicateCondition(t.clone()));
            }
        }
        let count = self.condition_types().count();
        if count > MAX_CONDITIONS {
            return Err(SpecError::TooManyConditions {
                count,
                types: self.condition_types().collect::<Vec<_>>().join(", "),
            });
        }
        Ok(())
    }

    /// Every reason well formed, owned, not the host's, declared once; every
    /// quiet and stall reason registered.
    fn validate_reasons(&self) -> Result<(), SpecError> {
        let mut reasons = BTreeSet::new();
        for r in &self.reasons {
            if !is_camel_identifier(&r.name) {
                return Err(SpecError::BadReasonName(r.name.clone()));
            }
            if r.owner.is_empty() {
                return Err(SpecError::Empty {
                    field: "reason owner",
                });
            }
            if HOST_REASONS.iter().any(|(h, _)| *h == r.name) {
                return Err(SpecError::HostReasonRedefined {
                    reason: r.name.clone(),
                    owner: r.owner.clone(),
                });
            }
            if !reasons.insert(r.name.as_str()) {
                return Err(SpecError::DuplicateReason(r.name.clone()));
            }
        }
        for q in &self.quiet_reasons {
            if !self.is_registered(q) {
                return Err(SpecError::Unregistered {
                    what: "quiet reason",
                    reason: q.clone(),
                });
            }
        }
        for s in &self.stalls {
            if !self.is_registered(&s.reason) {
                return Err(SpecError::Unregistered {
                    what: "stall reason",
                    reason: s.reason.clone(),
                });
            }
        }
        Ok(())
    }

    /// Negative polarity only on the kind's own conditions, never an aspect.
    fn validate_polarity(&self) -> Result<(), SpecError> {
        for t in &self.negative_polarity {
            if !self.condition_types().any(|c| c == t) {
                return Err(SpecError::UnknownPolarityType(t.clone()));
            }
        }
        if let Some(a) = self.aspects.iter().find(|a| self.is_negative_polarity(a)) {
            return Err(SpecError::NegativeAspect(a.clone()));
        }
        Ok(())
    }

    /// Each kind read once, each written once, and never the kind itself.
    fn validate_reads_and_writes(&self) -> Result<(), SpecError> {
        let mut reads = BTreeSet::new();
        for r in &self.reads {
            if !reads.insert(&r.kind) {
                return Err(SpecError::DuplicateRead(r.kind.clone()));
            }
            let paths = r.fields.iter().flatten().map(String::as_str);
            crate::projection::Projection::of_paths(paths).map_err(|(path, why)| {
                SpecError::BadFieldPath {
                    kind: Box::new(r.kind.clone()),
                    path,
                    why: Box::new(why),
                }
            })?;
        }
        let mut writes = BTreeSet::new();
        for w in &self.writes {
            if *w == self.kind_ref() {
                return Err(SpecError::WritesItself(w.clone()));
            }
            if !writes.insert(w) {
                return Err(SpecError::DuplicateWrite(w.clone()));
            }
        }
        Ok(())
    }

    /// At most the bound of columns, each named once (not as the host's),
    /// of a known type, with a path into the object.
    fn validate_printer_columns(&self) -> Result<(), SpecError> {
        if self.printer_columns.len() > MAX_PRINTER_COLUMNS {
            return Err(SpecError::BadPrinterColumn {
                name: self.printer_columns[MAX_PRINTER_COLUMNS].name.clone(),
                why: format!("a kind declares at most {MAX_PRINTER_COLUMNS} columns"),
            });
        }
        let mut columns = BTreeSet::from(["Ready", "Reason", "Age"]);
        for c in &self.printer_columns {
            let bad = |why: String| SpecError::BadPrinterColumn {
                name: c.name.clone(),
                why,
            };
            if c.name.is_empty() || c.name.len() > 63 {
                return Err(bad("a name is 1 to 63 characters".into()));
            }
            if !columns.insert(c.name.as_str()) {
                return Err(bad(
                    "the name is taken (Ready, Reason and Age are the host's)".into(),
                ));
            }
            if !PRINTER_COLUMN_TYPES.contains(&c.type_.as_str()) {
                return Err(bad(format!(
                    "type {:?} is not one of {}",
                    c.type_,
                    PRINTER_COLUMN_TYPES.join(", ")
                )));
            }
            if !c.json_path.starts_with('.') {
                return Err(bad(format!(
                    "jsonPath {:?} must start with `.` (such as .status.url)",
                    c.json_path
                )));
            }
        }
        Ok(())
    }

    /// The spec's schema, when given, a JSON object.
    fn validate_schema(&self) -> Result<(), SpecError> {
        if let Some(schema) = &self.spec_schema {
            match serde_json::from_str::<serde_json::Value>(schema) {
                Ok(serde_json::Value::Object(_)) => {}
                Ok(other) => return Err(SpecError::BadSchema(format!("got {other}"))),
                Err(e) => return Err(SpecError::BadSchema(e.to_string())),
            }
        }
        Ok(())
    }
}

/// Kubernetes' rule for condition types and reasons: CamelCase, starting
/// with a letter, letters and digits only.
fn is_camel_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
        && s.len() <= 316
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_printer_column_is_named_typed_and_rooted() {
        let column = |name: &str, type_: &str, path: &str| PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            json_path: path.into(),
            wide: false,
            description: None,
        };
        let spec = |columns: Vec<PrinterColumn>| KindSpec {
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            aspects: vec!["Ok".into()],
            printer_columns: columns,
            ..KindSpec::default()
        };
        assert_eq!(
            spec(vec![column("URL", "string", ".status.url")]).validate(),
            Ok(())
        );
        for (bad, says) in [
            (column("Ready", "string", ".status.x"), "the name is taken"),
            (
                column("URL", "text", ".status.url"),
                "type \"text\" is not one of",
            ),
            (column("URL", "string", "status.url"), "must start with `.`"),
            (column("", "string", ".x"), "1 to 63 characters"),
        ] {
            let e = spec(vec![bad]).validate().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let nine = (0..9)
            .map(|i| column(&format!("C{i}"), "string", ".x"))
            .collect();
        assert!(
            spec(nine)
                .validate()
                .unwrap_err()
                .to_string()
                .contains("at most 8")
        );
    }
    use super::*;
    use crate::fixtures::{console, registry_kind, stall_rule};

    fn refused(spec: &KindSpec) -> SpecError {
        match spec.validate() {
            Err(e) => e,
            Ok(()) => panic!("{} should be refused", spec.kind),
        }
    }

    #[test]
    fn validate_accepts_both_profiles() {
        assert_eq!(console().validate(), Ok(()));
        assert_eq!(registry_kind().validate(), Ok(()));
    }

    #[test]
    fn validate_refuses_an_empty_kind() {
        let mut spec = console();
        spec.kind.clear();
        assert_eq!(refused(&spec), SpecError::Empty { field: "kind" });
    }

    #[test]
    fn validate_refuses_a_kind_without_aspects() {
        let mut spec = console();
        spec.aspects.clear();
        assert_eq!(refused(&spec), SpecError::NoAspects);
    }

    #[test]
    fn validate_refuses_a_duplicate_aspect() {
        let mut spec = console();
        spec.aspects.push("WorkloadReady".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::DuplicateCondition("WorkloadReady".to_owned())
        );
    }

    #[test]
    fn validate_refuses_a_type_both_aspect_and_advisory() {
        let mut spec = console();
        spec.advisory.push("ExposureReady".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::DuplicateCondition("ExposureReady".to_owned())
        );
    }

    #[test]
    fn validate_refuses_a_host_condition_declared_by_the_kind() {
        for host in [READY, PROGRESSING, RECONCILING, STALLED] {
            let mut spec = console();
            spec.advisory.push(host.to_owned());
            assert_eq!(
                refused(&spec),
                SpecError::ReservedCondition(host.to_owned())
            );
        }
    }

    #[test]
    fn validate_refuses_more_than_sixteen_conditions() {
        let mut spec = console();
        // 3 host + 3 aspects + 2 advisory = 8; 8 more make 16, one more 17.
        spec.advisory.extend((0..8).map(|i| format!("Extra{i}")));
        assert_eq!(spec.validate(), Ok(()), "16 is the bound, allowed");
        spec.advisory.push("OneTooMany".to_owned());
        assert!(matches!(
            refused(&spec),
            SpecError::TooManyConditions { count: 17, .. }
        ));
    }

    #[test]
    fn validate_refuses_an_unregistered_quiet_reason() {
        let mut spec = console();
        spec.quiet_reasons.push("Warming".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::Unregistered {
                what: "quiet reason",
                reason: "Warming".to_owned()
            }
        );
    }

    #[test]
    fn validate_refuses_an_unregistered_stall_reason() {
        let mut spec = console();
        spec.stalls.push(stall_rule("Meltdown", None));
        assert_eq!(
            refused(&spec),
            SpecError::Unregistered {
                what: "stall reason",
                reason: "Meltdown".to_owned()
            }
        );
    }

    #[test]
    fn validate_refuses_a_duplicate_or_host_reason() {
        let mut spec = console();
        let again = spec.reasons[0].clone();
        spec.reasons.push(again.clone());
        assert_eq!(refused(&spec), SpecError::DuplicateReason(again.name));
        let mut spec = console();
        spec.reasons.push(ReasonEntry {
            name: "AsExpected".to_owned(),
            owner: "console".to_owned(),
            meaning: String::new(),
        });
        assert!(matches!(
            refused(&spec),
            SpecError::HostReasonRedefined { .. }
        ));
    }

    #[test]
    fn validate_refuses_names_that_are_not_camel_case() {
        let mut spec = console();
        spec.aspects.push("workload-ready".to_owned());
        assert!(matches!(refused(&spec), SpecError::BadConditionName(_)));
        let mut spec = console();
        spec.reasons[0].name = "not_camel".to_owned();
        assert!(matches!(refused(&spec), SpecError::BadReasonName(_)));
    }

    #[test]
    fn validate_refuses_negative_polarity_of_an_unknown_type() {
        let mut spec = console();
        spec.negative_polarity.push("Superseded".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::UnknownPolarityType("Superseded".to_owned())
        );
    }

    #[test]
    fn validate_refuses_a_negative_polarity_aspect() {
        let mut spec = console();
        spec.negative_polarity.push("WorkloadReady".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::NegativeAspect("WorkloadReady".to_owned())
        );
        let mut spec = registry_kind();
        spec.advisory.retain(|a| a != DEGRADED);
        spec.aspects.push(DEGRADED.to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::NegativeAspect(DEGRADED.to_owned())
        );
    }

    /// Seed 004: "Six condition types mean trouble when True" (Degraded,
    /// Stalled, ContentDrift, Superseded, DuplicateVersion,
    /// InsecureEgressTestHosts), and Reconciling is abnormal-true.
    #[test]
    fn kstatus_registers_seed_004s_negative_polarity_types() {
        let mut spec = registry_kind();
        spec.negative_polarity.clear();
        for t in [
            "Degraded",
            "Stalled",
            "ContentDrift",
            "Superseded",
            "DuplicateVersion",
            "InsecureEgressTestHosts",
            "Reconciling",
        ] {
            assert!(spec.is_negative_polarity(t), "{t} is negative");
        }
        for t in ["Ready", "SourceValid", "ToolsDiscovered"] {
            assert!(!spec.is_negative_polarity(t), "{t} is positive");
        }
        assert!(!console().is_negative_polarity("Superseded"));
        assert!(console().is_negative_polarity("Stalled"));
    }

    #[test]
    fn kstatus_refuses_a_registered_negative_type_as_an_aspect() {
        let mut spec = registry_kind();
        spec.aspects.push("Superseded".to_owned());
        assert_eq!(
            refused(&spec),
            SpecError::NegativeAspect("Superseded".to_owned())
        );
    }

    #[test]
    fn validate_refuses_a_duplicate_read_and_a_bad_schema() {
        let mut spec = console();
        let read = ReadDecl {
            kind: KindRef {
                group: "apps".to_owned(),
                version: "v1".to_owned(),
                kind: "Deployment".to_owned(),
            },
            optional: false,
            cross_namespace: false,
            fields: None,
        };
        spec.reads = vec![read.clone(), read.clone()];
        assert!(matches!(refused(&spec), SpecError::DuplicateRead(_)));
        let mut spec = console();
        spec.reads = vec![ReadDecl {
            fields: Some(vec!["spec.replicas".to_owned(), "status..x".to_owned()]),
            ..read
        }];
        assert_eq!(
            refused(&spec).to_string(),
            "read of apps/v1/Deployment declares the field \"status..x\": a field name in it is empty (two `.` in a row, or one at an end)"
        );
        let mut spec = console();
        spec.spec_schema = Some("[1]".to_owned());
        assert!(matches!(refused(&spec), SpecError::BadSchema(_)));
    }
}
