//! Reading the parent and the operator's settings from an evaluation.

use crate::Evaluation;

impl Evaluation {
    /// The parent object as JSON (`spec`, `status`, `metadata`).
    pub fn parent_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.parent.json).unwrap_or(serde_json::Value::Null)
    }

    /// An operator setting for the kind, if configured.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A comma-separated setting as a list (empty entries dropped).
    pub fn setting_list(&self, name: &str) -> Vec<&str> {
        self.setting(name)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}
