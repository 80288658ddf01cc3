//! Decoding what the API server sends, one object at a time and bounded:
//! every list, watch and write answer the host reads goes through
//! [`Decoded`], so an object nested deeper than [`MAX_DEPTH`] or larger
//! than [`MAX_OBJECT_BYTES`] is one bad object (read with what the host
//! could read of it, and marked), never a failed list, a restarted watch,
//! a failed start or a write taken for failed.
//!
//! kube decodes a list or a watch event whole, with serde_json's recursion
//! limit (128 levels): one object past it failed the whole list of its
//! kind in its namespace, for ever (issue 31), and a typed metadata list
//! stopped the host's start and the ring's coordinator (issue 49). Its
//! client also logs the whole body it could not decode, which the host's
//! log filter silences (`telemetry`). [`Decoded`] takes each object's text
//! as it is (serde_json skips a value without recursing), scans its
//! nesting without recursing, replaces what lies deeper than the bound by
//! `null` and records where, then decodes the shape asked for ([`Shape`]).

use std::borrow::Cow;
use std::ops::Deref;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta};
use kube::core::Resource;
use kube::{Api, Client};
use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _};
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::marks::UNDECODABLE;

/// How deeply an object may nest arrays and objects (the object itself is
/// level 1): deeper than any real object (a CustomResourceDefinition's
/// schema nests a few dozen), and below serde_json's own limit of 128 by
/// enough for the facts around an object a guest decodes.
pub(crate) const MAX_DEPTH: usize = 100;

/// The largest object the host reads whole: twice what etcd stores by
/// default (1.5 MiB a request). Past it only `apiVersion`, `kind` and the
/// metadata (without managedFields) are read, and the object is marked.
pub(crate) const MAX_OBJECT_BYTES: usize = 3 << 20;

/// At most this many field names of a path are shown (the first and the
/// last ones), so that a message naming a path stays short.
const SHOWN_SEGMENTS: usize = 8;

/// What an answer is decoded into, and whether the host reads its
/// `metadata.managedFields`: where it does not, they are dropped from the
/// text before decoding (they mirror every field set, one level deeper).
pub trait Shape: DeserializeOwned {
    /// Whether the host reads the object's managedFields (the cache keeps
    /// the host's own status entry: `managed_fields`).
    const MANAGED_FIELDS: bool;
}

impl Shape for DynamicObject {
    const MANAGED_FIELDS: bool = true;
}

impl Shape for PartialObjectMeta<DynamicObject> {
    const MANAGED_FIELDS: bool = false;
}

/// The ring reads who set a member Lease's label (`ring::members`).
impl Shape for Lease {
    const MANAGED_FIELDS: bool = true;
}

/// An object as the host decoded it: whole, or with what lies deeper than
/// [`MAX_DEPTH`] (or past [`MAX_OBJECT_BYTES`]) cut off and the reason kept.
#[derive(Clone, Debug)]
pub struct Decoded<K = DynamicObject> {
    object: K,
    undecodable: Option<String>,
}

impl<K: Shape> Decoded<K> {
    /// Decodes one object's JSON text.
    pub(crate) fn from_text(text: &str) -> Result<Self, serde_json::Error> {
        let (text, undecodable) = prune(text, K::MANAGED_FIELDS);
        let object = serde_json::from_str::<K>(&text)?;
        Ok(Decoded {
            object,
            undecodable,
        })
    }
}

impl<K> Decoded<K> {
    /// An object the host sends (a create's body): nothing cut.
    pub fn new(object: K) -> Self {
        Decoded {
            object,
            undecodable: None,
        }
    }

    /// Why the host could not read the whole object, if it could not.
    pub fn undecodable(&self) -> Option<&str> {
        self.undecodable.as_deref()
    }

    /// The object as decoded (what could be read of it).
    pub fn into_inner(self) -> K {
        self.object
    }
}

impl<K> Deref for Decoded<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.object
    }
}

impl Decoded<DynamicObject> {
    /// The object as JSON; an object not read whole carries the reason
    /// under the host's mark ([`undecodable`] reads it back).
    pub fn into_value(self) -> Value {
        let mut value = serde_json::to_value(self.object).unwrap_or(Value::Null);
        if let (Some(why), Some(o)) = (self.undecodable, value.as_object_mut()) {
            o.insert(UNDECODABLE.to_owned(), Value::String(why));
        }
        value
    }
}

/// The API of `resource` in `namespace` (every namespace when empty),
/// decoding its answers as [`Decoded`]. With [`metadata_api`] and
/// [`leases`], the only place the host makes an `Api` of a kind whose
/// objects a user shapes (`host/tests/layout.rs` checks it).
pub fn api(client: &Client, resource: &ApiResource, namespace: &str) -> Api<Decoded> {
    if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    }
}

/// The metadata-only API of `resource` in `namespace` (every namespace
/// when empty): lists and watches ask the server for metadata alone, each
/// object decoded bounded and without its managedFields.
pub fn metadata_api(
    client: &Client,
    resource: &ApiResource,
    namespace: &str,
) -> Api<Decoded<PartialObjectMeta<DynamicObject>>> {
    if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    }
}

/// The Leases of `namespace`, decoded bounded.
pub fn leases(client: &Client, namespace: &str) -> Api<Decoded<Lease>> {
    Api::namespaced(client.clone(), namespace)
}

/// Why the host could not read the whole of a cached object, if it could
/// not (see [`Decoded::into_value`]).
pub fn undecodable(object: &Value) -> Option<&str> {
    object.get(UNDECODABLE).and_then(Value::as_str)
}

impl<'de, K: Shape> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Decoded::from_text(raw.get()).map_err(D::Error::custom)
    }
}

impl<K: Serialize> Serialize for Decoded<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.object.serialize(serializer)
    }
}

impl<K: Resource> Resource for Decoded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &K::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &K::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &K::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn api_version(dt: &K::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }

    fn plural(dt: &K::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn metadata_api() -> bool {
        K::metadata_api()
    }

    fn meta(&self) -> &ObjectMeta {
        self.object.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.object.meta_mut()
    }
}

/// One open array or object while scanning.
enum Frame {
    Object { key: String, expects_key: bool },
    Array { index: usize },
}

/// `text` with every array or object nested deeper than [`MAX_DEPTH`]
/// replaced by `null`, and why the object is not read whole: the path of
/// the first value so replaced outside `metadata.managedFields` (the
/// record of who set which field, whose entries mirror the object's fields
/// a few levels deeper), or its size past [`MAX_OBJECT_BYTES`], when all
/// but `apiVersion`, `kind` and the metadata is replaced. The
/// managedFields are replaced whole unless `managed_fields` (the shape
/// reads them) and the object is within its size. Scans without
/// recursing; `text` is JSON as the API server wrote it (a malformed text
/// stays malformed, for the parser to name).
fn prune(text: &str, managed_fields: bool) -> (Cow<'_, str>, Option<String>) {
    let bytes = text.as_bytes();
    let oversize = text.len() > MAX_OBJECT_BYTES;
    let mut frames: Vec<Frame> = Vec::new();
    let mut pruned = String::new();
    let mut copied = 0;
    let mut first = None;
    let mut cut = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i);
                if let Some(Frame::Object { key, expects_key }) = frames.last_mut()
                    && *expects_key
                {
                    *key = serde_json::from_str(&text[i..end]).unwrap_or_default();
                    *expects_key = false;
                }
                i = end;
                continue;
            }
            b':' if dropped(&frames, oversize, managed_fields) => {
                let start = value_start(bytes, i + 1);
                let end = any_value_end(bytes, start);
                cut = true;
                pruned.push_str(&text[copied..start]);
                pruned.push_str("null");
                copied = end;
                i = end;
                continue;
            }
            b'{' | b'[' if frames.len() == MAX_DEPTH => {
                let end = value_end(bytes, i);
                // managedFields mirror the fields a few levels deeper: cut
                // there alone, nothing of the object itself is missing.
                if !in_managed_fields(&frames) {
                    first.get_or_insert_with(|| path(&frames));
                }
                cut = true;
                pruned.push_str(&text[copied..i]);
                pruned.push_str("null");
                copied = end;
                i = end;
                continue;
            }
            b'{' => frames.push(Frame::Object {
                key: String::new(),
                expects_key: true,
            }),
            b'[' => frames.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                frames.pop();
            }
            b',' => match frames.last_mut() {
                Some(Frame::Object { expects_key, .. }) => *expects_key = true,
                Some(Frame::Array { index }) => *index += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let why = if oversize {
        Some(format!(
            "the object is {} bytes, more than the {} bytes the host reads whole (only its metadata was read)",
            text.len(),
            MAX_OBJECT_BYTES
        ))
    } else {
        first.map(|path| format!("{path} nests deeper than {MAX_DEPTH} levels"))
    };
    if !cut {
        return (Cow::Borrowed(text), why);
    }
    pruned.push_str(&text[copied..]);
    (Cow::Owned(pruned), why)
}

/// Whether the value after the `:` the scan is at is replaced whole: the
/// managedFields where the shape does not read them, and, of an object
/// past its size, everything but its `apiVersion`, `kind` and metadata.
fn dropped(frames: &[Frame], oversize: bool, managed_fields: bool) -> bool {
    fn key(f: &Frame) -> Option<&str> {
        match f {
            Frame::Object { key, .. } => Some(key.as_str()),
            Frame::Array { .. } => None,
        }
    }
    match frames {
        [top] => oversize && !matches!(key(top), Some("apiVersion" | "kind" | "metadata")),
        [top, md] => {
            key(top) == Some("metadata")
                && key(md) == Some("managedFields")
                && (oversize || !managed_fields)
        }
        _ => false,
    }
}

/// The index of the first byte of the value at or after `from` (past
/// whitespace).
fn value_start(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The index just past the value (of any type) starting at `start`.
fn any_value_end(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(b'"') => string_end(bytes, start),
        Some(b'{' | b'[') => value_end(bytes, start),
        _ => {
            let mut i = start;
            while i < bytes.len() && !matches!(bytes[i], b',' | b'}' | b']') {
                i += 1;
            }
            i
        }
    }
}

/// Whether the innermost frame lies in `metadata.managedFields`.
fn in_managed_fields(frames: &[Frame]) -> bool {
    let key =
        |f: Option<&Frame>, want: &str| matches!(f, Some(Frame::Object { key, .. }) if key == want);
    key(frames.first(), "metadata") && key(frames.get(1), "managedFields")
}

/// The index just past the string starting at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index just past the array or object starting at `start`.
fn value_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The field path of the value the innermost frame is at, as kubectl
/// writes one (`status.a[2].b`), its middle elided when long.
fn path(frames: &[Frame]) -> String {
    let segment = |f: &Frame| match f {
        Frame::Object { key, .. } if is_plain(key) => format!(".{key}"),
        Frame::Object { key, .. } => {
            format!("[{}]", serde_json::to_string(key).unwrap_or_default())
        }
        Frame::Array { index } => format!("[{index}]"),
    };
    let segments: Vec<String> = frames.iter().map(segment).collect();
    let joined = if segments.len() <= SHOWN_SEGMENTS {
        segments.concat()
    } else {
        let head = SHOWN_SEGMENTS / 2;
        let tail = SHOWN_SEGMENTS - head;
        format!(
            "{}…({} levels)…{}",
            segments[..head].concat(),
            segments.len() - SHOWN_SEGMENTS,
            segments[segments.len() - tail..].concat()
        )
    };
    joined.trim_start_matches('.').to_owned()
}

/// A field name shown as is in a path: short, of letters, digits, `-` and `_`.
fn is_plain(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 63
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `{"field": {"field": ... {"leaf": 1}}}`, `levels` objects deep.
    fn nested(field: &str, levels: usize) -> String {
        let mut text = String::from(r#"{"leaf":1}"#);
        for _ in 1..levels {
            text = format!(r#"{{"{field}":{text}}}"#);
        }
        text
    }

    fn object(status: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","namespace":"n","resourceVersion":"7"}},"status":{status}}}"#
        )
    }

    #[test]
    fn an_object_within_the_bound_is_decoded_whole_and_unmarked() {
        // 2 levels for the object and status, the rest nested: MAX_DEPTH in all.
        let text = object(&nested("deep", MAX_DEPTH - 1));
        let decoded = Decoded::<DynamicObject>::from_text(&text).expect("decodes");
        assert_eq!(decoded.undecodable(), None);
        let value = decoded.into_value();
        assert_eq!(undecodable(&value), None);
        assert_eq!(value, serde_json::from_str::<Value>(&text).unwrap());
    }

    #[test]
    fn what_lies_deeper_is_cut_and_its_path_named() {
        let text = object(&format!(
            r#"{{"ok":[1,{{"s":"a \"}}]{{"}}],"deep":{}}}"#,
            nested("x", 200)
        ));
        let decoded = Decoded::<DynamicObject>::from_text(&text).expect("decodes");
        assert_eq!(
            decoded.undecodable(),
            Some("status.deep.x.x…(92 levels)….x.x.x.x nests deeper than 100 levels")
        );
        let value = decoded.into_value();
        assert_eq!(value["metadata"]["resourceVersion"], json!("7"));
        assert_eq!(value["status"]["ok"], json!([1, {"s": "a \"}]{"}]));
        assert!(undecodable(&value).is_some());
        let mut at = &value["status"]["deep"];
        // `deep` is level 3; the first value cut is level MAX_DEPTH + 1.
        let mut level = 3;
        while at.is_object() {
            at = &at["x"];
            level += 1;
        }
        assert_eq!((level, at), (MAX_DEPTH + 1, &Value::Null));
    }

    #[test]
    fn a_path_names_indices_and_quotes_unusual_keys() {
        let deep = nested("x", MAX_DEPTH);
        let text = object(&format!(r#"{{"list":[0,{{"a.b":{deep}}}]}}"#));
        let why = Decoded::<DynamicObject>::from_text(&text)
            .unwrap()
            .undecodable()
            .map(str::to_owned);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.starts_with(r#"status.list[1]["a.b"]…"#)),
            "{why:?}"
        );
    }

    #[test]
    fn managed_fields_too_deep_are_cut_and_the_object_read_whole() {
        // The record of a field 98 levels deep nests deeper than the field.
        let record = format!(
            r#"{{"manager":"m","fieldsV1":{{"f:status":{}}}}}"#,
            nested("f:x", 98)
        );
        let text = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","managedFields":[{record}]}},"status":{}}}"#,
            nested("x", 97)
        );
        let decoded = Decoded::<DynamicObject>::from_text(&text).expect("decodes");
        assert_eq!(decoded.undecodable(), None);
        let value = decoded.into_value();
        assert_eq!(undecodable(&value), None);
        assert_eq!(value["metadata"]["managedFields"][0]["manager"], json!("m"));
    }

    #[test]
    fn a_list_holding_one_object_too_deep_decodes_every_object() {
        let good = object("{}");
        let bad = object(&nested("x", 300));
        let list =
            format!(r#"{{"metadata":{{"resourceVersion":"9"}},"items":[{good},{bad},{good}]}}"#);
        let items: kube::core::ObjectList<Decoded> =
            serde_json::from_str(&list).expect("the list decodes");
        let marked: Vec<bool> = items
            .items
            .iter()
            .map(|o| o.undecodable().is_some())
            .collect();
        assert_eq!(marked, vec![false, true, false]);
    }

    #[test]
    fn a_watch_event_of_an_object_too_deep_decodes() {
        let event = format!(
            r#"{{"type":"MODIFIED","object":{}}}"#,
            object(&nested("x", 300))
        );
        let decoded: kube::core::WatchEvent<Decoded> =
            serde_json::from_str(&event).expect("the event decodes");
        let kube::core::WatchEvent::Modified(o) = decoded else {
            panic!("a modification")
        };
        assert_eq!(o.meta().resource_version.as_deref(), Some("7"));
        assert!(o.undecodable().is_some());
    }

    #[test]
    fn metadata_decodes_without_managed_fields_whatever_their_depth() {
        // A merge patch of a status 200 deep: its managedFields are as deep.
        let record = format!(
            r#"{{"manager":"m","fieldsV1":{{"f:status":{}}}}}"#,
            nested("f:x", 200)
        );
        let item = format!(
            r#"{{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{"name":"a","namespace":"n","labels":{{"l":"v"}},"managedFields":[{record}]}}}}"#
        );
        let good = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}"#;
        let list = format!(
            r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"9"}},"items":[{item},{good}]}}"#
        );
        let items: kube::core::ObjectList<Decoded<PartialObjectMeta<DynamicObject>>> =
            serde_json::from_str(&list).expect("the list decodes");
        let a = &items.items[0];
        assert_eq!(a.metadata.labels.as_ref().unwrap()["l"], "v");
        assert_eq!(a.metadata.managed_fields, None);
        assert_eq!(a.undecodable(), None);
        assert_eq!(items.items[1].metadata.name.as_deref(), Some("b"));
    }

    #[test]
    fn a_status_too_deep_is_read_as_metadata_and_said() {
        let text = object(&nested("x", 300));
        let decoded =
            Decoded::<PartialObjectMeta<DynamicObject>>::from_text(&text).expect("decodes");
        assert_eq!(decoded.metadata.resource_version.as_deref(), Some("7"));
        assert!(
            decoded
                .undecodable()
                .is_some_and(|w| w.starts_with("status.x"))
        );
    }

    #[test]
    fn an_object_past_its_size_is_read_as_its_metadata() {
        let big = "a".repeat(MAX_OBJECT_BYTES);
        let text = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","namespace":"n","managedFields":[{{"manager":"m"}}]}},"data":{{"k":"{big}"}},"note":"x","n":12}}"#
        );
        let decoded = Decoded::<DynamicObject>::from_text(&text).expect("decodes");
        let why = decoded.undecodable().expect("said").to_owned();
        assert!(
            why.starts_with(&format!("the object is {} bytes", text.len())),
            "{why}"
        );
        let value = decoded.into_value();
        assert_eq!(value["metadata"]["name"], json!("a"));
        assert_eq!(value["metadata"].get("managedFields"), None);
        assert_eq!(value["data"], Value::Null);
        assert_eq!(value["note"], Value::Null);
        assert_eq!(value["n"], Value::Null);
        assert_eq!(value["kind"], json!("ConfigMap"));
    }

    #[test]
    fn a_lease_decodes_with_its_managed_fields() {
        let text = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]},"spec":{"holderIdentity":"h"}}"#;
        let lease = Decoded::<Lease>::from_text(text).expect("decodes");
        assert_eq!(
            lease.metadata.managed_fields.as_ref().map(Vec::len),
            Some(1)
        );
        assert_eq!(
            lease.into_inner().spec.and_then(|s| s.holder_identity),
            Some("h".to_owned())
        );
    }
}
