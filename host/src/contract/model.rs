//! Conversions between the contract's generated types and the host's model.

use reconciler_conventions::kind::{self as model, KindSpec};
use reconciler_conventions::verdict::{
    ConditionStatus, Decision, EventType, KindEvent, Stall, Verdict,
};

use crate::contract::exports as wit;
use crate::contract::types as wit_types;

pub fn kind_ref(k: &wit_types::KindRef) -> model::KindRef {
    model::KindRef {
        group: k.group.clone(),
        version: k.version.clone(),
        kind: k.kind.clone(),
    }
}

pub fn kind_spec(s: wit::KindSpec) -> KindSpec {
    KindSpec {
        group: s.group,
        version: s.version,
        kind: s.kind,
        plural: s.plural,
        namespaced: s.namespaced,
        profile: match s.profile {
            wit::ConventionProfile::Progressing => model::Profile::Progressing,
            wit::ConventionProfile::Kstatus => model::Profile::Kstatus,
        },
        aspects: s.aspects,
        advisory: s.advisory,
        reasons: s
            .reasons
            .into_iter()
            .map(|r| model::ReasonEntry {
                name: r.name,
                owner: r.owner,
                meaning: r.meaning,
            })
            .collect(),
        negative_polarity: s.negative_polarity,
        quiet_reasons: s.quiet_reasons,
        stalls: s
            .stalls
            .into_iter()
            .map(|r| model::StallRule {
                reason: r.reason,
                recheck_seconds: r.recheck_seconds,
            })
            .collect(),
        reads: s
            .reads
            .iter()
            .map(|r| model::ReadDecl {
                kind: kind_ref(&r.kind),
                optional: r.optional,
            })
            .collect(),
        pause: s.pause.map(|p| model::PauseAnnotation {
            key: p.key,
            value: p.value,
        }),
        spec_schema: s.spec_schema,
    }
}

/// A verdict in the host's model. Fails when the status fields are not a
/// JSON object: that is a malformed verdict.
pub fn verdict(v: wit::Verdict) -> Result<Verdict, String> {
    let status_fields = if v.status_fields.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_json::from_str(&v.status_fields) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                return Err(format!(
                    "status-fields must be a JSON object, got {}",
                    kind_of_json(&other)
                ));
            }
            Err(e) => return Err(format!("status-fields is not JSON: {e}")),
        }
    };
    Ok(Verdict {
        aspects: v.aspects.into_iter().map(decision).collect(),
        advisory: v.advisory.into_iter().map(decision).collect(),
        stall: v.stall.map(|s| Stall {
            reason: s.reason,
            message: s.message,
        }),
        status_fields,
        events: v
            .events
            .into_iter()
            .map(|e| KindEvent {
                type_: match e.type_ {
                    wit::EventType::Normal => EventType::Normal,
                    wit::EventType::Warning => EventType::Warning,
                },
                reason: e.reason,
                message: e.message,
            })
            .collect(),
        requeue_after_seconds: v.requeue_after_seconds,
    })
}

fn decision(c: wit::Condition) -> Decision {
    Decision {
        type_: c.type_,
        status: match c.status {
            wit_types::ConditionStatus::True => ConditionStatus::True,
            wit_types::ConditionStatus::False => ConditionStatus::False,
            wit_types::ConditionStatus::Unknown => ConditionStatus::Unknown,
        },
        reason: c.reason,
        message: c.message,
    }
}

fn kind_of_json(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
