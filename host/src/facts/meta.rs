//! An object's metadata as the contract types it.

use serde_json::Value;

use crate::bindings::v0_2::reconciler::guest0_2_0::types::{ControllerRef, ObjectMeta, Timestamp};

/// Reads `metadata` from an object's JSON. Missing fields are empty.
pub fn object_meta(object: &Value) -> ObjectMeta {
    let md = &object["metadata"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    ObjectMeta {
        name: text(&md["name"]),
        namespace: text(&md["namespace"]),
        uid: text(&md["uid"]),
        generation: md["generation"].as_i64().unwrap_or(0),
        labels: pairs(&md["labels"]),
        annotations: pairs(&md["annotations"]),
        controller: md["ownerReferences"].as_array().and_then(|owners| {
            owners
                .iter()
                .find(|o| o["controller"].as_bool() == Some(true))
                .map(|o| ControllerRef {
                    api_version: text(&o["apiVersion"]),
                    kind: text(&o["kind"]),
                    name: text(&o["name"]),
                    uid: text(&o["uid"]),
                })
        }),
        creation: timestamp(&md["creationTimestamp"]),
        deletion: timestamp(&md["deletionTimestamp"]),
    }
}

fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// An RFC 3339 time as the contract's timestamp.
pub fn timestamp(value: &Value) -> Option<Timestamp> {
    let t: jiff::Timestamp = value.as_str()?.parse().ok()?;
    Some(from_jiff(t))
}

pub fn from_jiff(t: jiff::Timestamp) -> Timestamp {
    Timestamp {
        seconds: t.as_second(),
        nanos: t.subsec_nanosecond().unsigned_abs(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn controller_is_the_owner_marked_controller() {
        let m = object_meta(&json!({"metadata": {
            "name": "a", "namespace": "ns", "uid": "u1", "generation": 3,
            "labels": {"app": "x"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u0"},
                {"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent", "name": "p", "uid": "u2", "controller": true}
            ],
            "deletionTimestamp": "2026-11-29T12:00:00Z"
        }}));
        assert_eq!(m.generation, 3);
        assert_eq!(m.labels, vec![("app".to_owned(), "x".to_owned())]);
        assert_eq!(m.controller.unwrap().uid, "u2");
        assert_eq!(m.deletion.unwrap().seconds, 1_795_953_600);
    }

    #[test]
    fn missing_metadata_reads_as_empty() {
        let m = object_meta(&json!({}));
        assert_eq!(m.name, "");
        assert!(m.controller.is_none() && m.creation.is_none());
    }
}
