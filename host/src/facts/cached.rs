//! One version of an object as a source holds it: its JSON text, what
//! identifies and selects it, the parsed object while anything uses it,
//! and the memo of what the host's own sampler derived from it.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use super::memo::Memo;
use super::packed::{Packed, Packer, Packers};

/// An object and what was derived from it.
///
/// The object is held as its JSON text: parsed, a `serde_json::Value`
/// takes several times the text (each JSON object is a B-tree node of
/// eleven slots however few keys it has, about 630 bytes), and a cache
/// holds every object of its kind. [`Cached::value`] parses the text when
/// asked and shares the parsed object with every reader until the last
/// lets go of it; what selects and identifies the object (namespace, name,
/// resourceVersion, labels, controller) is read without parsing. The
/// operator's caches hold the text packed against their kind's dictionary
/// ([`super::packed`]).
pub struct Cached {
    text: Text,
    identity: Identity,
    parsed: Mutex<Weak<Value>>,
    /// The object itself when its text could not be parsed back: nested
    /// deeper than serde_json parses ([`PARSED_DEPTH`]), which only an
    /// object made by hand can be.
    pinned: Option<Arc<Value>>,
    /// Why the host could not read the whole object, if it could not.
    undecodable: Option<Box<str>>,
    /// The `fieldsV1` of the host's own apply entry (its JSON text, packed
    /// in the operator's caches against the kind's first one: the host
    /// applies the same fields to each child of a kind), kept beside the
    /// object rather than in it: no guest reads it, and only whether a
    /// change settles asks for it ([`Cached::with_applied`]).
    applied: Option<Text>,
    /// The epoch of its cache's projection it was held under
    /// (`crate::operator::cluster::projected`): an object of an earlier
    /// one lacks what a wider projection keeps.
    epoch: u32,
    memo: Memo,
}

/// What identifies and selects an object, in one string: its namespace,
/// name, resourceVersion, controller's UID ("" for none) and labels
/// (sorted by key, each key then its value), where each held its own
/// allocation (a dozen for an object with four labels).
struct Identity {
    strings: Box<str>,
    /// Where each part of `strings` ends.
    ends: Box<[u32]>,
}

/// The parts of an [`Identity`] before its labels.
const NAMESPACE: usize = 0;
const NAME: usize = 1;
const RESOURCE_VERSION: usize = 2;
const CONTROLLER: usize = 3;
const LABELS: usize = 4;

impl Identity {
    fn new<'a>(parts: impl IntoIterator<Item = &'a str>) -> Identity {
        let mut strings = String::new();
        let mut ends = Vec::new();
        for part in parts {
            strings.push_str(part);
            ends.push(u32::try_from(strings.len()).expect("an object's identity is under 4 GiB"));
        }
        Identity {
            strings: strings.into(),
            ends: ends.into(),
        }
    }

    fn part(&self, at: usize) -> &str {
        let start = at.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.strings[start as usize..self.ends[at] as usize]
    }

    /// The labels, by key.
    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (LABELS..self.ends.len())
            .step_by(2)
            .map(|at| (self.part(at), self.part(at + 1)))
    }
}

/// An object's JSON text, as is or packed.
enum Text {
    Plain(Box<str>),
    Packed(Packed),
}

impl Text {
    /// `text` packed by the packer `packer` gives for it, or as is where
    /// it could not be packed.
    fn packed(text: String, packer: impl FnOnce(&str) -> Arc<Packer>) -> Text {
        match packer(&text).pack(&text) {
            Some(packed) => Text::Packed(packed),
            None => Text::Plain(text.into()),
        }
    }

    fn as_str(&self) -> Cow<'_, str> {
        match self {
            Text::Plain(text) => Cow::Borrowed(text),
            Text::Packed(packed) => Cow::Owned(packed.unpack()),
        }
    }

    fn held_len(&self) -> usize {
        match self {
            Text::Plain(text) => text.len(),
            Text::Packed(packed) => packed.packed_len(),
        }
    }
}

fn text_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The nesting serde_json's parser accepts (it refuses 128 levels), with
/// a margin.
const PARSED_DEPTH: usize = 100;

/// Whether `value` nests arrays and objects deeper than `limit`.
fn deeper_than(value: &Value, limit: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(fields) => Box::new(fields.values()),
        _ => return false,
    };
    limit == 0 || children.into_iter().any(|c| deeper_than(c, limit - 1))
}

impl Cached {
    pub fn new(value: Arc<Value>) -> Arc<Self> {
        Cached::applied(value, None)
    }

    /// The object `value` with the `fieldsV1` of the host's apply entry
    /// on it, taken out of it beforehand ([`crate::facts::applied`]).
    pub fn applied(value: Arc<Value>, applied: Option<&Value>) -> Arc<Self> {
        let text = Text::Plain(value.to_string().into());
        let applied = applied.map(|fields| Text::Plain(fields.to_string().into()));
        Cached::holding(value, text, applied, 0)
    }

    /// [`Cached::applied`], its text and its apply entry each packed with
    /// its kind's packer of `packers` (made from this very text when the
    /// kind has none yet); held under its cache's projection of epoch
    /// `epoch`.
    pub fn packed(
        value: Arc<Value>,
        applied: Option<&Value>,
        epoch: u32,
        packers: &Packers,
    ) -> Arc<Self> {
        let text = Text::packed(value.to_string(), |t| packers.objects(t));
        let applied = applied.map(|f| Text::packed(f.to_string(), |t| packers.applied(t)));
        Cached::holding(value, text, applied, epoch)
    }

    fn holding(value: Arc<Value>, text: Text, applied: Option<Text>, epoch: u32) -> Arc<Self> {
        let md = &value["metadata"];
        let mut labels: Vec<(&str, &str)> = md["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), text_of(v)))
            .collect();
        labels.sort();
        let identity = Identity::new(
            [
                text_of(&md["namespace"]),
                text_of(&md["name"]),
                text_of(&md["resourceVersion"]),
                super::meta::controller_uid(&value).unwrap_or_default(),
            ]
            .into_iter()
            .chain(labels.into_iter().flat_map(|(k, v)| [k, v])),
        );
        Arc::new(Cached {
            text,
            identity,
            parsed: Mutex::new(Arc::downgrade(&value)),
            pinned: deeper_than(&value, PARSED_DEPTH).then(|| value.clone()),
            undecodable: value
                .get(crate::marks::UNDECODABLE)
                .and_then(Value::as_str)
                .map(Into::into),
            applied,
            epoch,
            memo: Memo::default(),
        })
    }

    /// The object, parsed from its text unless a reader holds it already.
    pub fn value(&self) -> Arc<Value> {
        if let Some(pinned) = &self.pinned {
            return pinned.clone();
        }
        let mut parsed = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = parsed.upgrade() {
            return value;
        }
        let value: Arc<Value> = Arc::new(
            serde_json::from_str(&self.text()).expect("a cached object's text is the JSON it was"),
        );
        *parsed = Arc::downgrade(&value);
        value
    }

    /// The object with the host's apply entry back in its
    /// `metadata.managedFields`, where it has one: what tells whether a
    /// change settles (`children/pending.rs`) and what a
    /// captured fixture keeps.
    pub fn with_applied(&self) -> Value {
        let mut object = Value::clone(&self.value());
        if let Some(fields) = self
            .applied
            .as_ref()
            .and_then(|text| serde_json::from_str::<Value>(&text.as_str()).ok())
        {
            crate::facts::applied::put_applied(&mut object, fields);
        }
        object
    }

    /// The bytes held for its text: the packed frame, or the text.
    pub fn held_len(&self) -> usize {
        self.text.held_len()
    }

    /// The object's JSON text (unpacked, where it is held packed).
    pub fn text(&self) -> Cow<'_, str> {
        self.text.as_str()
    }

    /// The epoch of its cache's projection it was held under.
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Why the host could not read the whole object (nested too deep), if
    /// it could not: no reader is given it.
    pub fn undecodable(&self) -> Option<&str> {
        self.undecodable.as_deref()
    }

    /// `metadata.namespace` ("" for a cluster-scoped object).
    pub fn namespace(&self) -> &str {
        self.identity.part(NAMESPACE)
    }

    pub fn name(&self) -> &str {
        self.identity.part(NAME)
    }

    /// `metadata.resourceVersion` ("" when it has none).
    pub fn resource_version(&self) -> &str {
        self.identity.part(RESOURCE_VERSION)
    }

    /// The value of the label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The labels, by key.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.identity.labels()
    }

    /// The UID of the object's controller (its owner reference marked
    /// `controller`).
    pub fn controller_uid(&self) -> Option<&str> {
        Some(self.identity.part(CONTROLLER)).filter(|uid| !uid.is_empty())
    }

    /// The memo of what was derived from this version of the object.
    pub fn memo(&self) -> &Memo {
        &self.memo
    }

    /// How many derivations the memo holds (for tests and the bench).
    #[cfg(test)]
    pub(crate) fn memoised(&self) -> usize {
        self.memo.len()
    }
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "42",
            "labels": {"b": "2", "a": "1"},
            "ownerReferences": [{"uid": "u0"}, {"uid": "u1", "controller": true}]},
            "spec": {"containers": [{"name": "c", "image": "i"}]}})
    }

    #[test]
    fn what_selects_and_identifies_the_object_is_read_without_parsing() {
        let cached = Cached::new(Arc::new(pod()));
        assert_eq!(
            (cached.namespace(), cached.name(), cached.resource_version()),
            ("ns", "p", "42")
        );
        assert_eq!(
            cached.labels().collect::<Vec<_>>(),
            [("a", "1"), ("b", "2")]
        );
        assert_eq!((cached.label("b"), cached.label("c")), (Some("2"), None));
        assert_eq!(cached.controller_uid(), Some("u1"));
        assert_eq!(cached.text(), pod().to_string());
    }

    #[test]
    fn an_object_without_labels_or_controller_reads_as_having_none() {
        let cached = Cached::new(Arc::new(json!({"metadata": {"name": "bare",
            "ownerReferences": [{"uid": "u0"}]}})));
        assert_eq!(
            (cached.namespace(), cached.name(), cached.resource_version()),
            ("", "bare", "")
        );
        assert_eq!(cached.labels().count(), 0);
        assert_eq!((cached.label("a"), cached.controller_uid()), (None, None));
    }

    #[test]
    fn the_parsed_object_is_shared_while_held_and_parsed_again_after() {
        let held = Arc::new(pod());
        let cached = Cached::new(held.clone());
        assert!(Arc::ptr_eq(&cached.value(), &held), "shared with its maker");
        drop(held);
        let first = cached.value();
        assert_eq!(*first, pod(), "parsed again from the text");
        assert!(Arc::ptr_eq(&cached.value(), &first), "shared while held");
    }

    #[test]
    fn the_apply_entry_is_packed_against_its_kinds_first_and_put_back_whole() {
        let packers = Packers::default();
        let entry = |name: &str| {
            json!({"f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    format!("k:{{\"name\":\"{name}\"}}"): {".": {}, "f:image": {}}}}}}})
        };
        let first = Cached::packed(Arc::new(pod()), Some(&entry("a")), 0, &packers);
        let second = Cached::packed(Arc::new(pod()), Some(&entry("b")), 0, &packers);
        for (cached, name) in [(&first, "a"), (&second, "b")] {
            let object = cached.with_applied();
            assert_eq!(
                crate::facts::applied::applied_fields(&object),
                Some(&entry(name)),
                "{object}"
            );
        }
        let Some(Text::Packed(packed)) = &second.applied else {
            panic!("the second entry is held packed");
        };
        assert!(packed.packed_len() < entry("b").to_string().len() / 2);
    }

    #[test]
    fn an_object_nested_past_the_parser_is_kept_parsed() {
        let mut deep = json!(1);
        for _ in 0..200 {
            deep = json!({ "a": [deep] });
        }
        let object = json!({"metadata": {"name": "deep"}, "spec": deep});
        assert!(serde_json::from_str::<Value>(&object.to_string()).is_err());
        let cached = Cached::new(Arc::new(object.clone()));
        assert_eq!(*cached.value(), object);
        assert!(!deeper_than(&pod(), PARSED_DEPTH));
    }
}
