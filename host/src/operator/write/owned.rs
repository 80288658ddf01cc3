//! What of a parent's `.status` the host owns, so that its server-side
//! apply carries exactly that and never takes over, or reverts, a field
//! another writer set.
//!
//! The host owns `observedGeneration`, the conditions of the types its kind
//! declares (and those of types it wrote before, which a replaced module
//! dropped, so that applying without them deletes them), and the status
//! fields its guest set. Which fields and conditions it wrote before is
//! what the API server says: the `managedFields` entry of the host's field
//! manager on the status subresource, which the cache keeps (reduced to
//! those names) when it drops every other `managedFields` entry.

use std::collections::BTreeSet;

use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::{Map, Value};

use crate::operator::cluster::managed_fields::host_entry;

/// What the host's field manager owns under `.status`, from an object's
/// `managedFields`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OwnedStatus {
    /// Condition types.
    pub conditions: BTreeSet<String>,
    /// Top-level status fields other than `conditions` and
    /// `observedGeneration`.
    pub fields: BTreeSet<String>,
}

impl OwnedStatus {
    /// Reads what the host owns from `object`'s metadata.
    pub(crate) fn of(object: &Value) -> Self {
        let mut owned = OwnedStatus::default();
        let Some(entry) = host_entry(&object["metadata"]) else {
            return owned;
        };
        let Some(status) = entry["fieldsV1"]["f:status"].as_object() else {
            return owned;
        };
        for (key, value) in status {
            match key.strip_prefix("f:") {
                Some("conditions") => {
                    for k in value.as_object().into_iter().flat_map(Map::keys) {
                        let Some(item) = k.strip_prefix("k:") else {
                            continue;
                        };
                        if let Ok(item) = serde_json::from_str::<Value>(item)
                            && let Some(t) = item["type"].as_str()
                        {
                            owned.conditions.insert(t.to_owned());
                        }
                    }
                }
                Some("observedGeneration") | None => {}
                Some(field) => {
                    owned.fields.insert(field.to_owned());
                }
            }
        }
        owned
    }
}

/// The part of `status` the host owns on `parent` of kind `spec`: its
/// observedGeneration, the conditions of declared types and of types it
/// wrote before, and the status fields it wrote before. What the engine
/// derives from it, and so what the host applies, is exactly that plus
/// the fields the guest sets now.
pub(crate) fn owned_part(status: &Status, spec: &KindSpec, parent: &Value) -> Status {
    let owned = OwnedStatus::of(parent);
    let declared: BTreeSet<&str> = spec.condition_types().collect();
    Status {
        observed_generation: status.observed_generation,
        conditions: status
            .conditions
            .iter()
            .filter(|c| declared.contains(c.type_.as_str()) || owned.conditions.contains(&c.type_))
            .cloned()
            .collect(),
        fields: status
            .fields
            .iter()
            .filter(|(k, _)| owned.fields.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::marks::FIELD_MANAGER;
    use crate::operator::cluster::managed_fields::slim_managed_fields;

    fn object() -> Value {
        json!({"metadata": {"name": "a", "managedFields": [
            {"manager": "backup-controller", "operation": "Apply", "subresource": "status",
             "fieldsV1": {"f:status": {"f:lastBackupVerified": {}, "f:conditions": {"k:{\"type\":\"BackupVerified\"}": {".": {}, "f:status": {}}}}}},
            {"manager": FIELD_MANAGER, "operation": "Apply", "subresource": "status",
             "fieldsV1": {"f:status": {"f:observedGeneration": {}, "f:url": {},
                "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}}, "k:{\"type\":\"Dropped\"}": {}}}}},
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}
        ]}})
    }

    #[test]
    fn the_host_owns_what_its_manager_applied_on_the_status_subresource() {
        let owned = OwnedStatus::of(&object());
        assert_eq!(
            owned.conditions,
            BTreeSet::from(["Dropped".to_owned(), "Ready".to_owned()])
        );
        assert_eq!(owned.fields, BTreeSet::from(["url".to_owned()]));
    }

    #[test]
    fn the_cache_keeps_only_the_hosts_entry_and_it_still_reads_the_same() {
        let mut o = object();
        let before = OwnedStatus::of(&o);
        slim_managed_fields(o["metadata"].as_object_mut().unwrap());
        assert_eq!(o["metadata"]["managedFields"].as_array().unwrap().len(), 1);
        assert_eq!(OwnedStatus::of(&o), before);
        let mut none =
            json!({"metadata": {"managedFields": [{"manager": "kubectl", "operation": "Update"}]}});
        slim_managed_fields(none["metadata"].as_object_mut().unwrap());
        assert!(none["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn foreign_fields_and_conditions_are_not_part_of_what_the_host_applies() {
        let spec = KindSpec {
            group: "g".into(),
            version: "v1".into(),
            kind: "K".into(),
            plural: "ks".into(),
            namespaced: true,
            aspects: vec!["WorkloadReady".into()],
            ..KindSpec::default()
        };
        let status = Status::from_json(&json!({
            "observedGeneration": 3,
            "lastBackupVerified": "2026-12-01",
            "url": "https://a",
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "AsExpected", "lastTransitionTime": "2026-12-01T00:00:00Z"},
                {"type": "BackupVerified", "status": "True", "reason": "Verified", "lastTransitionTime": "2026-12-01T00:00:00Z"},
                {"type": "Dropped", "status": "True", "reason": "Old", "lastTransitionTime": "2026-12-01T00:00:00Z"}
            ]
        }))
        .unwrap();
        let owned = owned_part(&status, &spec, &object());
        let types: Vec<&str> = owned.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Dropped"]);
        assert_eq!(owned.fields.keys().collect::<Vec<_>>(), ["url"]);
        assert_eq!(owned.observed_generation, Some(3));
    }
}
