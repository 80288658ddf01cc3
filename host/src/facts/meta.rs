//! An object's metadata as the contract types it.

use serde_json::Value;

use crate::contract::types::{ControllerRef, ObjectMeta, Timestamp};

/// Reads `metadata` from an object's JSON. Missing fields are empty, and
/// so are fields of the wrong type (metadata the API server would refuse):
/// a name that is not a string reads as "", a generation that is not an
/// i64 (a string, 2^63) as 0, labels or annotations that are not an object
/// as none and a label value that is not a string as "", owner references
/// that are not a list as no controller, a time that is not RFC 3339 as
/// none.
pub fn object_meta(object: &Value) -> ObjectMeta {
    of_metadata(&object["metadata"])
}

/// [`object_meta`] of an object's `metadata` itself.
fn of_metadata(md: &Value) -> ObjectMeta {
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

/// [`object_meta`] of an object's JSON text, parsing its `metadata` alone
/// (the rest is skipped, not built): what `facts.get`, `facts.list` and
/// `facts.children` serve beside the text, derived per read rather than
/// memoised, as it repeats what the text holds.
pub fn object_meta_of(text: &str) -> ObjectMeta {
    #[derive(serde::Deserialize)]
    struct Metadata {
        #[serde(default)]
        metadata: Value,
    }
    match serde_json::from_str::<Metadata>(text) {
        Ok(Metadata { metadata }) => of_metadata(&metadata),
        // Not an object: no metadata (only a source fed by hand holds such
        // text).
        Err(_) => object_meta(&Value::Null),
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

/// A jiff timestamp as the contract's: whole seconds since the epoch
/// rounded down and the nanoseconds after them, so `nanos` is always in
/// `0..1_000_000_000` and a time before the epoch keeps its sign
/// (1969-12-31T23:59:59.25Z is -1 s + 250 000 000 ns, not 0 s + 750 000 000
/// ns: jiff counts both parts towards zero).
pub(crate) fn from_jiff(t: jiff::Timestamp) -> Timestamp {
    let (seconds, nanos) = (t.as_second(), t.subsec_nanosecond());
    if nanos < 0 {
        // jiff's earliest second is far from i64::MIN: no overflow.
        Timestamp {
            seconds: seconds - 1,
            nanos: (nanos + 1_000_000_000).unsigned_abs(),
        }
    } else {
        Timestamp {
            seconds,
            nanos: nanos.unsigned_abs(),
        }
    }
}

/// The UID of `object`'s controller (the owner reference with
/// `controller: true`), if it has one: what makes an object a parent's
/// child.
pub fn controller_uid(object: &Value) -> Option<&str> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_metadata_of_a_text_is_the_objects() {
        let object = json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1",
            "generation": 3, "labels": {"app": "x"}, "annotations": {"k": "v"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u0",
                "controller": true}], "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"deep": [[[{"a": 1}]]]}});
        assert_eq!(
            format!("{:?}", object_meta_of(&object.to_string())),
            format!("{:?}", object_meta(&object))
        );
        for text in [r#"{"kind": "Pod"}"#, "[1]", "\"x\""] {
            assert_eq!(
                format!("{:?}", object_meta_of(text)),
                format!("{:?}", object_meta(&Value::Null)),
                "{text}"
            );
        }
    }

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

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let m = object_meta(&json!({"metadata": {
            "name": 7, "namespace": ["ns"], "generation": 1u64 << 63,
            "labels": ["app", "x"], "annotations": {"a": 1, "b": null, "c": "d"},
            "ownerReferences": {"controller": true, "uid": "u"},
            "creationTimestamp": 1_795_953_600, "deletionTimestamp": "yesterday"
        }}));
        assert_eq!(
            (m.name.as_str(), m.namespace.as_str(), m.generation),
            ("", "", 0)
        );
        assert!(m.labels.is_empty());
        assert_eq!(
            m.annotations,
            [
                ("a".into(), "".into()),
                ("b".into(), "".into()),
                ("c".into(), "d".into())
            ]
        );
        assert!(m.controller.is_none() && m.creation.is_none() && m.deletion.is_none());
        for metadata in [json!("x"), json!([null]), json!(null), json!(1.5)] {
            let m = object_meta(&json!({ "metadata": metadata }));
            assert!(m.name.is_empty() && m.labels.is_empty(), "{metadata}");
        }
        let m = object_meta(
            &json!({"metadata": {"ownerReferences": [null, 3, {"controller": "true"}]}}),
        );
        assert!(
            m.controller.is_none(),
            "controller must be the boolean true"
        );
    }

    #[test]
    fn a_time_before_the_epoch_rounds_its_seconds_down() {
        for (text, seconds, nanos) in [
            ("1970-01-01T00:00:00Z", 0, 0),
            ("1970-01-01T00:00:00.25Z", 0, 250_000_000),
            ("1969-12-31T23:59:59.25Z", -1, 250_000_000),
            ("1969-12-31T23:59:59Z", -1, 0),
            ("0001-01-01T00:00:00.5Z", -62_135_596_800, 500_000_000),
        ] {
            let t = timestamp(&json!(text)).unwrap();
            assert_eq!((t.seconds, t.nanos), (seconds, nanos), "{text}");
        }
        for text in ["-009999-01-01T00:00:00Z", "", "2026-13-01T00:00:00Z", "é🦀"] {
            assert!(timestamp(&json!(text)).is_none(), "{text}");
        }
    }
}
