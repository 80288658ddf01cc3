//! Decoding what the API server sends, one object at a time and bounded:
//! an object nested deeper than [`MAX_DEPTH`] is one bad object (cached
//! with what the host could read of it and marked), never a failed list,
//! a restarted watch or a write taken for failed.
//!
//! kube decodes a list or a watch event whole, with serde_json's recursion
//! limit (128 levels): one object past it failed the whole list of its
//! kind in its namespace, for ever (issue 31). [`Decoded`] is the type the
//! host's watches and writes decode into instead: it takes each object's
//! text as it is (serde_json skips a value without recursing), scans its
//! nesting without recursing, replaces what lies deeper than the bound by
//! `null` and records where.

use std::borrow::Cow;

use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::core::{DynamicResourceScope, Resource};
use kube::{Api, Client};
use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::marks::UNDECODABLE;

/// How deeply an object may nest arrays and objects (the object itself is
/// level 1): deeper than any real object (a CustomResourceDefinition's
/// schema nests a few dozen), and below serde_json's own limit of 128 by
/// enough for the facts around an object a guest decodes.
pub(crate) const MAX_DEPTH: usize = 100;

/// At most this many field names of a path are shown (the first and the
/// last ones), so that a message naming a path stays short.
const SHOWN_SEGMENTS: usize = 8;

/// An object as the host decoded it: whole, or with what lies deeper than
/// [`MAX_DEPTH`] cut off and the reason kept.
#[derive(Clone, Debug)]
pub struct Decoded {
    object: DynamicObject,
    undecodable: Option<String>,
}

impl Decoded {
    /// Decodes one object's JSON text.
    pub(crate) fn from_text(text: &str) -> Result<Self, serde_json::Error> {
        let (text, too_deep) = prune(text);
        let object = serde_json::from_str::<DynamicObject>(&text)?;
        Ok(Decoded {
            object,
            undecodable: too_deep
                .map(|path| format!("{path} nests deeper than {MAX_DEPTH} levels")),
        })
    }

    /// Why the host could not read the whole object, if it could not.
    pub fn undecodable(&self) -> Option<&str> {
        self.undecodable.as_deref()
    }

    /// The object as JSON; an object not read whole carries the reason
    /// under the host's mark ([`undecodable`] reads it back).
    pub(crate) fn into_value(self) -> Value {
        let mut value = serde_json::to_value(self.object).unwrap_or(Value::Null);
        if let (Some(why), Some(o)) = (self.undecodable, value.as_object_mut()) {
            o.insert(UNDECODABLE.to_owned(), Value::String(why));
        }
        value
    }
}

/// The API of `resource` in `namespace` (every namespace when empty),
/// decoding its answers as [`Decoded`].
pub fn api(client: &Client, resource: &ApiResource, namespace: &str) -> Api<Decoded> {
    if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    }
}

/// Why the host could not read the whole of a cached object, if it could
/// not (see [`Decoded::into_value`]).
pub fn undecodable(object: &Value) -> Option<&str> {
    object.get(UNDECODABLE).and_then(Value::as_str)
}

impl<'de> Deserialize<'de> for Decoded {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Decoded::from_text(raw.get()).map_err(D::Error::custom)
    }
}

impl Resource for Decoded {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::kind(dt)
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::group(dt)
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::version(dt)
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::api_version(dt)
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        DynamicObject::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.object.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.object.metadata
    }
}

/// One open array or object while scanning.
enum Frame {
    Object { key: String, expects_key: bool },
    Array { index: usize },
}

/// `text` with every array or object nested deeper than [`MAX_DEPTH`]
/// replaced by `null`, and the path of the first one so replaced outside
/// `metadata.managedFields` (the record of who set which field, whose
/// entries mirror the object's fields a few levels deeper). Scans
/// without recursing; `text` is JSON as the API server wrote it (a
/// malformed text stays malformed, for the parser to name).
fn prune(text: &str) -> (Cow<'_, str>, Option<String>) {
    let bytes = text.as_bytes();
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
    if !cut {
        return (Cow::Borrowed(text), None);
    }
    pruned.push_str(&text[copied..]);
    (Cow::Owned(pruned), first)
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
        let decoded = Decoded::from_text(&text).expect("decodes");
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
        let decoded = Decoded::from_text(&text).expect("decodes");
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
        let why = Decoded::from_text(&text)
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
        let decoded = Decoded::from_text(&text).expect("decodes");
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
}
