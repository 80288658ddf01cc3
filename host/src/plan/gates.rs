//! The gates a parent's changes pass before they are made (seed 003, "What
//! executes"): suspend (the kind's pause), then mode, then approval. This
//! module resolves the last two for one object; the pause is the engine's.
//!
//! Where they come from, first match wins (docs/design.md, "Plans and
//! approval"):
//!
//! 1. the parent's own `spec.mode` / `spec.approval`, when its kind's
//!    schema (the guest's spec schema) declares the field and the kind
//!    lets its parents set that gate (`parent-gates`, contract 0.5.0);
//! 2. otherwise the annotations `reconciler.dev/mode` and
//!    `reconciler.dev/approval` on the parent, where the kind lets its
//!    parents set that gate, except that the approval
//!    annotation can only make review stricter (`manual` over a kind set
//!    to `auto`): who may annotate an object may not waive its review;
//! 3. otherwise the kind's setting (`--mode Kind=observe`,
//!    `--approval Kind=manual`);
//! 4. otherwise `apply` and `auto`.

use reconciler_conventions::kind::ParentGates;
use serde_json::Value;

use crate::plan::digest::Mode;

/// The annotation choosing a parent's mode when its schema has no field.
pub(crate) const MODE_ANNOTATION: &str = "reconciler.dev/mode";
/// The annotation asking for manual approval when its schema has no field.
pub(crate) const APPROVAL_ANNOTATION: &str = "reconciler.dev/approval";

/// Whether a plan in mode `apply` waits for a reviewer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approval {
    /// The host approves its own plan (recorded as its decision).
    #[default]
    Auto,
    /// A reviewer holding `approve` on the parent's kind decides.
    Manual,
}

impl Approval {
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Auto => "auto",
            Approval::Manual => "manual",
        }
    }

    pub fn parse(text: &str) -> Option<Approval> {
        match text {
            "auto" => Some(Approval::Auto),
            "manual" => Some(Approval::Manual),
            _ => None,
        }
    }
}

impl Mode {
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "observe" => Some(Mode::Observe),
            "apply" => Some(Mode::Apply),
            _ => None,
        }
    }
}

/// The mode and approval of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gates {
    pub mode: Mode,
    pub approval: Approval,
}

impl Gates {
    /// Changes made in the pass that plans them, no reviewer involved.
    pub(crate) fn is_direct(self) -> bool {
        self.mode == Mode::Apply && self.approval == Approval::Auto
    }
}

/// A kind's gates, from the operator's settings; `None`: the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindGates {
    pub mode: Option<Mode>,
    pub approval: Option<Approval>,
}

/// Which gate fields a kind's schema declares under `spec`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchemaFields {
    pub mode: bool,
    pub approval: bool,
}

impl SchemaFields {
    /// From a guest's spec schema (an OpenAPI object schema, as JSON text).
    pub fn of(spec_schema: Option<&str>) -> SchemaFields {
        let Some(text) =
            spec_schema.filter(|s| s.contains("\"mode\"") || s.contains("\"approval\""))
        else {
            return SchemaFields::default();
        };
        let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let properties = &schema["properties"];
        SchemaFields {
            mode: properties.get("mode").is_some(),
            approval: properties.get("approval").is_some(),
        }
    }
}

/// A gate the object sets to something it cannot be.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{place} is {value:?}; it must be {allowed}: nothing is changed until it is")]
pub struct GateError {
    /// The field or annotation, e.g. `spec.mode` or `annotation reconciler.dev/mode`.
    pub place: String,
    pub value: String,
    pub allowed: &'static str,
}

/// The gates of `parent`, whose kind's schema declares `fields`, whose
/// kind lets its parents set `allowed` (a gate it does not allow is not
/// read off the parent at all: neither honoured nor refused), and whose
/// kind is set to `kind`.
pub fn resolve(
    fields: SchemaFields,
    allowed: ParentGates,
    kind: KindGates,
    parent: &Value,
) -> Result<Gates, GateError> {
    let spec = &parent["spec"];
    let no_annotations = Value::Null;
    let (mode_annotations, approval_annotations) = (
        if allowed.mode {
            &parent["metadata"]["annotations"]
        } else {
            &no_annotations
        },
        if allowed.approval {
            &parent["metadata"]["annotations"]
        } else {
            &no_annotations
        },
    );
    let fields = SchemaFields {
        mode: fields.mode && allowed.mode,
        approval: fields.approval && allowed.approval,
    };
    let mode = if fields.mode && !spec["mode"].is_null() {
        parsed(&spec["mode"], "spec.mode", Mode::parse, "observe or apply")?
    } else if !mode_annotations[MODE_ANNOTATION].is_null() {
        parsed(
            &mode_annotations[MODE_ANNOTATION],
            &format!("annotation {MODE_ANNOTATION}"),
            Mode::parse,
            "observe or apply",
        )?
    } else {
        kind.mode.unwrap_or(Mode::Apply)
    };
    let approval = if fields.approval && !spec["approval"].is_null() {
        parsed(
            &spec["approval"],
            "spec.approval",
            Approval::parse,
            "auto or manual",
        )?
    } else {
        let setting = kind.approval.unwrap_or_default();
        let annotated = if approval_annotations[APPROVAL_ANNOTATION].is_null() {
            None
        } else {
            Some(parsed(
                &approval_annotations[APPROVAL_ANNOTATION],
                &format!("annotation {APPROVAL_ANNOTATION}"),
                Approval::parse,
                "auto or manual",
            )?)
        };
        // Only ever stricter than the kind's setting.
        if annotated == Some(Approval::Manual) {
            Approval::Manual
        } else {
            setting
        }
    };
    Ok(Gates { mode, approval })
}

fn parsed<T>(
    value: &Value,
    place: &str,
    parse: fn(&str) -> Option<T>,
    allowed: &'static str,
) -> Result<T, GateError> {
    value.as_str().and_then(parse).ok_or_else(|| GateError {
        place: place.to_owned(),
        value: match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
        allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parent(spec: Value, annotations: Value) -> Value {
        json!({"metadata": {"name": "a", "annotations": annotations}, "spec": spec})
    }

    const BOTH: SchemaFields = SchemaFields {
        mode: true,
        approval: true,
    };
    const NONE: SchemaFields = SchemaFields {
        mode: false,
        approval: false,
    };

    #[test]
    fn nothing_set_is_apply_and_auto() {
        let gates = resolve(
            NONE,
            ParentGates::ALL,
            KindGates::default(),
            &parent(json!({}), json!({})),
        );
        assert_eq!(
            gates,
            Ok(Gates {
                mode: Mode::Apply,
                approval: Approval::Auto
            })
        );
        assert!(gates.unwrap().is_direct());
    }

    #[test]
    fn the_parents_fields_win_when_its_schema_has_them() {
        let kind = KindGates {
            mode: Some(Mode::Apply),
            approval: Some(Approval::Manual),
        };
        let p = parent(
            json!({"mode": "observe", "approval": "auto"}),
            json!({MODE_ANNOTATION: "apply", APPROVAL_ANNOTATION: "manual"}),
        );
        assert_eq!(
            resolve(BOTH, ParentGates::ALL, kind, &p),
            Ok(Gates {
                mode: Mode::Observe,
                approval: Approval::Auto
            })
        );
        // Not in the schema: a field of that name is the guest's business.
        assert_eq!(
            resolve(NONE, ParentGates::ALL, kind, &p),
            Ok(Gates {
                mode: Mode::Apply,
                approval: Approval::Manual
            })
        );
    }

    #[test]
    fn the_mode_annotation_overrides_the_kinds_setting_both_ways() {
        let observe = KindGates {
            mode: Some(Mode::Observe),
            approval: None,
        };
        let p = parent(json!({}), json!({MODE_ANNOTATION: "apply"}));
        assert_eq!(
            resolve(NONE, ParentGates::ALL, observe, &p).unwrap().mode,
            Mode::Apply
        );
        let p = parent(json!({}), json!({MODE_ANNOTATION: "observe"}));
        assert_eq!(
            resolve(NONE, ParentGates::ALL, KindGates::default(), &p)
                .unwrap()
                .mode,
            Mode::Observe
        );
        assert_eq!(
            resolve(
                NONE,
                ParentGates::ALL,
                observe,
                &parent(json!({}), json!({}))
            )
            .unwrap()
            .mode,
            Mode::Observe
        );
    }

    #[test]
    fn the_approval_annotation_only_makes_review_stricter() {
        let manual = KindGates {
            mode: None,
            approval: Some(Approval::Manual),
        };
        let waive = parent(json!({}), json!({APPROVAL_ANNOTATION: "auto"}));
        assert_eq!(
            resolve(NONE, ParentGates::ALL, manual, &waive)
                .unwrap()
                .approval,
            Approval::Manual
        );
        let ask = parent(json!({}), json!({APPROVAL_ANNOTATION: "manual"}));
        assert_eq!(
            resolve(NONE, ParentGates::ALL, KindGates::default(), &ask)
                .unwrap()
                .approval,
            Approval::Manual
        );
    }

    #[test]
    fn a_value_that_is_no_gate_names_where_it_is() {
        let p = parent(json!({}), json!({MODE_ANNOTATION: "obsrve"}));
        let e = resolve(NONE, ParentGates::ALL, KindGates::default(), &p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "annotation reconciler.dev/mode is \"obsrve\"; it must be observe or apply: \
             nothing is changed until it is"
        );
        let p = parent(json!({"approval": 3}), json!({}));
        let e = resolve(BOTH, ParentGates::ALL, KindGates::default(), &p).unwrap_err();
        assert_eq!(e.place, "spec.approval");
        assert_eq!(e.value, "3");
    }

    #[test]
    fn a_gate_the_kind_does_not_let_its_parents_set_is_not_read_off_them() {
        let manual = KindGates {
            mode: None,
            approval: Some(Approval::Manual),
        };
        let p = parent(
            json!({"mode": "observe", "approval": "auto"}),
            json!({MODE_ANNOTATION: "bogus", APPROVAL_ANNOTATION: "manual"}),
        );
        // Neither honoured nor refused: the operator's settings decide.
        assert_eq!(
            resolve(BOTH, ParentGates::NONE, KindGates::default(), &p),
            Ok(Gates {
                mode: Mode::Apply,
                approval: Approval::Auto
            })
        );
        assert_eq!(
            resolve(BOTH, ParentGates::NONE, manual, &p),
            Ok(Gates {
                mode: Mode::Apply,
                approval: Approval::Manual
            })
        );
        let mode_only = ParentGates {
            mode: true,
            approval: false,
        };
        assert_eq!(
            resolve(BOTH, mode_only, KindGates::default(), &p),
            Ok(Gates {
                mode: Mode::Observe,
                approval: Approval::Auto
            })
        );
    }

    #[test]
    fn a_schema_declares_the_fields_it_has() {
        assert_eq!(SchemaFields::of(None), NONE);
        assert_eq!(
            SchemaFields::of(Some(r#"{"type":"object","properties":{"image":{}}}"#)),
            NONE
        );
        assert_eq!(
            SchemaFields::of(Some(
                r#"{"type":"object","properties":{"mode":{"type":"string"},"approval":{}}}"#
            )),
            BOTH
        );
        // A nested field of that name is not the parent's gate.
        assert_eq!(
            SchemaFields::of(Some(
                r#"{"type":"object","properties":{"tls":{"properties":{"mode":{}}}}}"#
            )),
            NONE
        );
    }
}
