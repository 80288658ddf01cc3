//! Reading the parent and the operator's settings from an evaluation.

use crate::Evaluation;
use crate::spec::{self, SpecError};

impl Evaluation {
    /// The parent object as JSON (`spec`, `status`, `metadata`).
    ///
    /// ```
    /// use reconciler_guest_sdk::mock::evaluation;
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}, "status": {"url": "https://a"}}), &[]);
    /// assert_eq!(input.parent_json()["status"]["url"], "https://a");
    /// ```
    pub fn parent_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.parent.json).unwrap_or(serde_json::Value::Null)
    }

    /// The parent's `.spec` as the guest's spec type `T`:
    /// [`spec::parse`] of [`parent_json`](Evaluation::parent_json), with
    /// an error naming the field that converts into ConfigurationInvalid.
    ///
    /// ```
    /// use reconciler_guest_sdk::mock::evaluation;
    /// #[derive(Debug, serde::Deserialize)]
    /// #[serde(rename_all = "camelCase")]
    /// pub struct GreetingSpec { pub greeting: String, pub times: Option<u8> }
    ///
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}, "spec": {"greeting": "hi"}}), &[]);
    /// let spec: GreetingSpec = input.spec().unwrap();
    /// assert_eq!((spec.greeting.as_str(), spec.times), ("hi", None));
    ///
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}, "spec": {"times": 2}}), &[]);
    /// assert_eq!(input.spec::<GreetingSpec>().unwrap_err().message(), "spec.greeting is required");
    /// ```
    pub fn spec<T: serde::de::DeserializeOwned>(&self) -> Result<T, SpecError> {
        spec::parse(&self.parent_json())
    }

    /// An operator setting for the kind, if configured
    /// (`--setting <Kind>.<name>=<value>`).
    ///
    /// ```
    /// use reconciler_guest_sdk::mock::evaluation;
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}}), &[("defaultImage", "ghcr.io/a/b:1")]);
    /// assert_eq!(input.setting("defaultImage"), Some("ghcr.io/a/b:1"));
    /// assert_eq!(input.setting("other"), None);
    /// ```
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A comma-separated setting as a list (entries trimmed, empty ones
    /// dropped).
    ///
    /// ```
    /// use reconciler_guest_sdk::mock::evaluation;
    /// let input = evaluation(serde_json::json!({"metadata": {"name": "a"}}), &[("allowedHostSuffixes", " .a.com, ,.b.com")]);
    /// assert_eq!(input.setting_list("allowedHostSuffixes"), [".a.com", ".b.com"]);
    /// ```
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
