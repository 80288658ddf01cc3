//! What one guest pass decided, in the host's own types.

use serde::{Deserialize, Serialize};

/// A condition's status, as Kubernetes spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition as a guest decides it: no timestamps, no generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

/// The object cannot make progress without a change of input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventType {
    Normal,
    Warning,
}

/// An Event of the kind's own vocabulary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindEvent {
    #[serde(rename = "type")]
    pub type_: EventType,
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

/// What one pass decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub aspects: Vec<Decision>,
    #[serde(default)]
    pub advisory: Vec<Decision>,
    #[serde(default)]
    pub stall: Option<Stall>,
    /// A JSON object merged into `.status`.
    #[serde(default)]
    pub status_fields: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub events: Vec<KindEvent>,
    #[serde(default)]
    pub requeue_after_seconds: Option<u32>,
}
