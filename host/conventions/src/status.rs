//! The status the host writes: conditions, `observedGeneration` and the
//! guest's status fields, in the shape of a Kubernetes `.status`.

use serde::{Deserialize, Serialize};

use crate::verdict::ConditionStatus;

/// A `metav1.Condition`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    #[serde(default)]
    pub message: String,
    /// RFC 3339, seconds precision.
    pub last_transition_time: String,
    #[serde(default)]
    pub observed_generation: i64,
}

/// An object's `.status` as the host owns it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Everything else under `.status`: the guest's status fields.
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl Status {
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Reads a `.status` value; `null` or absent is the empty status.
    pub fn from_json(value: &serde_json::Value) -> Result<Status, serde_json::Error> {
        if value.is_null() {
            return Ok(Status::default());
        }
        serde_json::from_value(value.clone())
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a status always serializes")
    }
}

/// Formats a time the way Kubernetes writes `lastTransitionTime`.
pub fn rfc3339_seconds(t: jiff::Timestamp) -> String {
    let secs = jiff::Timestamp::from_second(t.as_second()).expect("seconds of a valid timestamp");
    secs.to_string()
}
