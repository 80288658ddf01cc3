//! The change digest: what an approval of a plan approves (issue 14, seed
//! 003 "Approval identity: the change digest").
//!
//! A pure function of the checked changes of a pass
//! ([`crate::contract::model::changes`]), the mode and the target: the
//! SHA-256 of their canonical form, prefixed by the tag naming that form
//! ([`TAG`]), so a later form can coexist and a digest under another tag is
//! never compared, only superseded. Planning records it on the plan;
//! execution recomputes it and runs only on a match.
//!
//! What it binds, and what it leaves out because it legitimately differs
//! between planning and execution:
//!
//! - **The guest's bodies, not the host's.** An apply is hashed as the guest
//!   asked for it, before the host adds the parent's namespace, the parent
//!   as controller, its managed-by label, a ring member's label (which
//!   changes when the parent moves to another replica) and its
//!   `reconciler.dev/applied` stamp. Those are functions of the parent (bound by its UID) and of the
//!   host's version, not effects anyone reviews: hashing them would tie an
//!   approval to the host's implementation (a host adding a label would
//!   void every pending approval) and to the stamp, a hash of the body
//!   already hashed. The same fields are also dropped from the guest's body
//!   should it carry them (the host overwrites them), with the fields the
//!   server sets (`status`, `metadata.resourceVersion`, `uid`,
//!   `generation`, `creationTimestamp`, `managedFields`, ...), which a guest
//!   copying what it read would otherwise carry into the digest, changing
//!   it at every write by anyone.
//! - **Generated material by what it is, never by its value.** A generated
//!   Secret is (name, `generate`, each key and its length); a serving
//!   certificate (name, `certificate`, its DNS names in order: the first is
//!   the subject, and a reorder is re-issued); a CA bundle is what the guest
//!   asked for (name, key, sources in order, labels), not the certificates
//!   the host gathers at execution. The values are not inputs here at all.
//! - **No order but the canonical one.** Maps are written with their keys
//!   sorted (a guest's JSON and a generated Secret's or a bundle's label
//!   list alike, the last of a repeated key winning as it does on the
//!   object); changes are sorted by kind, then name (every change of a pass
//!   is in its parent's namespace, which `model::changes` enforces and the
//!   parent's UID binds, so a body's `metadata.namespace` — absent or the
//!   parent's — is left out). Lists keep their order: it is meaningful.
//!
//! The canonical form (version 1, [`TAG`] `rhd1-sha256`): SHA-256 over
//! `rhd1-sha256\n` followed by the JSON document
//! `{"changes":[..],"mode":"observe"|"apply","target":{"cluster":..,"parent":..}}`
//! written without whitespace, object keys sorted by their UTF-8 bytes,
//! strings escaped as `serde_json` escapes them and numbers as it prints
//! them. Each change is an object with `op` (`apply`, `delete`, `generate`,
//! `certificate`, `bundle`), `kind` (`{group, version, kind}`), `name`, and
//! `body` (apply), `uid` (delete), `keys` (`{key: length}`), `dnsNames`, or
//! `key`, `sources` (`[[secret, key], ..]`) and `labels` (bundle). Any change
//! to this form is a new tag; the golden vectors in the tests hold it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use reconciler_conventions::kind::KindRef;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::contract::model::Change;
use crate::marks::{APPLIED, MANAGED_BY, RING_MEMBER, RING_SLOT};

/// The tag of the canonical form this module computes.
pub(crate) const TAG: &str = "rhd1-sha256";

/// Fields of `metadata` the API server sets, or the host sets in place of
/// the guest: not part of what the guest asks for.
const METADATA_NOT_HASHED: &[&str] = &[
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "generation",
    "managedFields",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// Whether the host makes the changes of a pass or only plans them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Observe,
    Apply,
}

impl Mode {
    /// The mode as the canonical form (and a parent's `mode` field) spell
    /// it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Observe => "observe",
            Mode::Apply => "apply",
        }
    }
}

/// Which cluster and which object the changes are for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The UID of the cluster's `kube-system` namespace.
    pub cluster: String,
    /// The UID of the parent whose pass made the changes.
    pub parent: String,
}

/// A change digest: the tag of its canonical form and the SHA-256 in
/// lowercase hex. Displayed as `tag:hex`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Digest {
    pub tag: &'static str,
    pub hex: String,
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.tag, self.hex)
    }
}

/// The digest of `changes` made in `mode` for `target`.
pub fn digest(changes: &[Change], mode: Mode, target: &Target) -> Digest {
    let hash = Sha256::digest(canonical(changes, mode, target).as_bytes());
    let mut hex = String::with_capacity(64);
    for b in hash {
        let _ = write!(hex, "{b:02x}");
    }
    Digest { tag: TAG, hex }
}

/// The bytes hashed: the tag, a newline, and the canonical document.
fn canonical(changes: &[Change], mode: Mode, target: &Target) -> String {
    let mut effects: Vec<(KindRef, &str, String)> = changes
        .iter()
        .map(|c| {
            let mut text = String::new();
            write_canonical(&effect(c), &mut text);
            (c.kind(), c.name(), text)
        })
        .collect();
    // Kind, then name; the encoding breaks a tie (two changes of one
    // object, which a checked pass never holds) so the order still cannot
    // matter.
    effects.sort();
    let mut out = format!("{TAG}\n{{\"changes\":[");
    for (i, (_, _, text)) in effects.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(text);
    }
    out.push_str("],\"mode\":");
    write_canonical(&json!(mode.as_str()), &mut out);
    out.push_str(",\"target\":");
    write_canonical(
        &json!({"cluster": target.cluster, "parent": target.parent}),
        &mut out,
    );
    out.push('}');
    out
}

/// One change as the canonical form has it (see the module's doc): also
/// what the review artifact shows of it.
pub fn effect(change: &Change) -> Value {
    let kind = change.kind();
    let mut e = json!({
        "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
        "name": change.name(),
    });
    match change {
        Change::Apply { body, .. } => {
            e["op"] = json!("apply");
            e["body"] = guest_fields(body);
        }
        Change::Delete { uid, .. } => {
            e["op"] = json!("delete");
            e["uid"] = json!(uid);
        }
        Change::Generate { keys, .. } => {
            e["op"] = json!("generate");
            e["keys"] = map(keys.iter().map(|(k, n)| (k, json!(n))));
        }
        Change::Certificate { dns_names, .. } => {
            e["op"] = json!("certificate");
            e["dnsNames"] = json!(dns_names);
        }
        Change::Bundle {
            key,
            sources,
            labels,
            ..
        } => {
            e["op"] = json!("bundle");
            e["key"] = json!(key);
            e["sources"] = json!(sources);
            e["labels"] = map(labels.iter().map(|(k, v)| (k, json!(v))));
        }
    }
    e
}

/// A map of `entries`, the last of a repeated key winning.
fn map<'a>(entries: impl Iterator<Item = (&'a String, Value)>) -> Value {
    Value::Object(entries.map(|(k, v)| (k.clone(), v)).collect::<Map<_, _>>())
}

/// `body` without the fields the server sets or the host sets in its place
/// (an emptied `labels` or `annotations` goes too: the host always sends
/// both).
fn guest_fields(body: &Value) -> Value {
    let mut body = body.clone();
    let Some(fields) = body.as_object_mut() else {
        return body;
    };
    fields.remove("status");
    if let Some(Value::Object(md)) = fields.get_mut("metadata") {
        for f in METADATA_NOT_HASHED {
            md.remove(*f);
        }
        for (field, host_key) in [
            ("labels", MANAGED_BY.0),
            ("labels", RING_MEMBER),
            ("labels", RING_SLOT),
            ("annotations", APPLIED),
        ] {
            if let Some(Value::Object(m)) = md.get_mut(field) {
                m.remove(host_key);
                if m.is_empty() {
                    md.remove(field);
                }
            }
        }
    }
    body
}

/// `value` as canonical JSON: no whitespace, object keys in byte order
/// (whatever order the map keeps them in).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            let sorted: BTreeMap<&str, &Value> =
                fields.iter().map(|(k, v)| (k.as_str(), v)).collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).expect("a string serializes"));
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;
    use crate::contract::model::secret_kind;

    fn target() -> Target {
        Target {
            cluster: "0b7d1f6e-kube-system".into(),
            parent: "5c2a9e40-parent".into(),
        }
    }

    fn config_map(name: &str, data: Value) -> Change {
        Change::Apply {
            kind: crate::contract::model::config_map_kind(),
            name: name.into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": data}),
        }
    }

    fn deployment_kind() -> KindRef {
        KindRef {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        }
    }

    /// A pass with one change of every sort.
    fn mixed() -> Vec<Change> {
        vec![
            Change::Apply {
                kind: deployment_kind(),
                name: "web".into(),
                body: json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "labels": {"app": "web"}},
                    "spec": {"replicas": 2, "template": {"spec": {"containers": [
                        {"name": "web", "image": "registry.example/web:1.2"}]}}}}),
            },
            Change::Delete {
                kind: crate::contract::model::config_map_kind(),
                name: "old".into(),
                uid: "9d6a3c1e-old".into(),
            },
            Change::Generate {
                name: "web-credentials".into(),
                keys: vec![("password".into(), 32), ("api-key".into(), 16)],
            },
            Change::Certificate {
                name: "web-tls".into(),
                dns_names: vec!["web.ns.svc".into(), "web.ns.svc.cluster.local".into()],
            },
            Change::Bundle {
                name: "web-ca".into(),
                key: "ca.crt".into(),
                sources: vec![("web-tls".into(), "ca.crt".into())],
                labels: vec![("app".into(), "web".into())],
            },
            config_map("settings", json!({"b": "2", "a": "1"})),
        ]
    }

    /// Golden vectors: fixed inputs and their digests. A failure here means
    /// the canonical form changed: that is a new tag (a new encoding the
    /// plan records), never an edit of these values.
    #[test]
    fn golden_vectors_hold_the_canonical_form() {
        let empty = digest(&[], Mode::Observe, &target());
        assert_eq!(
            empty.to_string(),
            "rhd1-sha256:941fd9236f03ecb02d9be9dca97617f8c6b6c261c99ff54f879ceb48bdfe50bb"
        );
        let mixed_apply = digest(&mixed(), Mode::Apply, &target());
        assert_eq!(
            mixed_apply.to_string(),
            "rhd1-sha256:b3f3b081b8ff66357b49d6d58f7a55551d94317f6bc84080e1b74df255937d2d"
        );
        let deletion = digest(
            &[Change::Delete {
                kind: deployment_kind(),
                name: "web".into(),
                uid: "1".into(),
            }],
            Mode::Apply,
            &Target {
                cluster: String::new(),
                parent: String::new(),
            },
        );
        assert_eq!(
            deletion.to_string(),
            "rhd1-sha256:174096ed5217e1cd7f915d73d9e65585d1b86d57d5198fa168147f799c09ac8b"
        );
    }

    /// The document behind the mixed golden vector, spelled out: what the
    /// form is, readable in review.
    #[test]
    fn the_canonical_document_is_sorted_and_compact() {
        let expected = concat!(
            "rhd1-sha256\n",
            r#"{"changes":["#,
            r#"{"kind":{"group":"","kind":"ConfigMap","version":"v1"},"name":"old","op":"delete","uid":"9d6a3c1e-old"},"#,
            r#"{"body":{"apiVersion":"v1","data":{"a":"1","b":"2"},"kind":"ConfigMap","metadata":{"name":"settings"}},"kind":{"group":"","kind":"ConfigMap","version":"v1"},"name":"settings","op":"apply"},"#,
            r#"{"key":"ca.crt","kind":{"group":"","kind":"ConfigMap","version":"v1"},"labels":{"app":"web"},"name":"web-ca","op":"bundle","sources":[["web-tls","ca.crt"]]},"#,
            r#"{"keys":{"api-key":16,"password":32},"kind":{"group":"","kind":"Secret","version":"v1"},"name":"web-credentials","op":"generate"},"#,
            r#"{"dnsNames":["web.ns.svc","web.ns.svc.cluster.local"],"kind":{"group":"","kind":"Secret","version":"v1"},"name":"web-tls","op":"certificate"},"#,
            r#"{"body":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"},"name":"web"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"image":"registry.example/web:1.2","name":"web"}]}}}},"kind":{"group":"apps","kind":"Deployment","version":"v1"},"name":"web","op":"apply"}"#,
            r#"],"mode":"apply","target":{"cluster":"0b7d1f6e-kube-system","parent":"5c2a9e40-parent"}}"#,
        );
        assert_eq!(canonical(&mixed(), Mode::Apply, &target()), expected);
        let hash = Sha256::digest(expected.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest(&mixed(), Mode::Apply, &target()).hex, hex);
    }

    #[test]
    fn the_digest_displays_as_tag_and_hex() {
        let d = digest(&[], Mode::Apply, &target());
        assert_eq!(d.tag, TAG);
        assert_eq!(d.hex.len(), 64);
        assert!(d.hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
        assert_eq!(d.to_string(), format!("{TAG}:{}", d.hex));
    }

    #[test]
    fn what_the_host_and_the_server_add_to_a_body_is_not_hashed() {
        let guest = config_map("c", json!({"k": "v"}));
        let Change::Apply { kind, name, body } = guest.clone() else {
            unreachable!()
        };
        let mut sent = body.clone();
        // As `children::with_owner` and `stamped` make it, and as the
        // server returns it.
        sent["metadata"]["namespace"] = json!("ns");
        sent["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.dev/v1",
            "kind": "Widget", "name": "w", "uid": "u", "controller": true}]);
        sent["metadata"]["labels"] = json!({MANAGED_BY.0: MANAGED_BY.1, RING_MEMBER: "replica-a"});
        sent["metadata"]["annotations"] = json!({APPLIED: "0123abcd"});
        sent["metadata"]["resourceVersion"] = json!("4711");
        sent["metadata"]["uid"] = json!("c-uid");
        sent["metadata"]["generation"] = json!(3);
        sent["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
        sent["metadata"]["managedFields"] = json!([{"manager": "reconciler-host"}]);
        sent["status"] = json!({"observedGeneration": 3});
        let served = Change::Apply {
            kind,
            name,
            body: sent,
        };
        assert_eq!(
            digest(&[guest], Mode::Apply, &target()),
            digest(&[served], Mode::Apply, &target())
        );
        // A label or annotation of the guest's own is an effect.
        let labelled = config_map("c", json!({"k": "v"}));
        let Change::Apply {
            kind,
            name,
            mut body,
        } = labelled.clone()
        else {
            unreachable!()
        };
        body["metadata"]["labels"] = json!({"team": "a", MANAGED_BY.0: MANAGED_BY.1});
        assert_ne!(
            digest(&[labelled], Mode::Apply, &target()),
            digest(
                &[Change::Apply { kind, name, body }],
                Mode::Apply,
                &target()
            )
        );
    }

    #[test]
    fn a_generated_secret_and_a_certificate_are_what_they_are_not_their_material() {
        // Nothing of the material is an input: the same request digests the
        // same on every call, as at planning and at execution.
        let generate = Change::Generate {
            name: "s".into(),
            keys: vec![("password".into(), 32)],
        };
        let certificate = Change::Certificate {
            name: "tls".into(),
            dns_names: vec!["a.ns.svc".into()],
        };
        let once = digest(
            &[generate.clone(), certificate.clone()],
            Mode::Apply,
            &target(),
        );
        assert_eq!(
            once,
            digest(&[certificate, generate], Mode::Apply, &target())
        );
        // A Secret the guest applies itself is its body, values included.
        let applied = |value: &str| Change::Apply {
            kind: secret_kind(),
            name: "s".into(),
            body: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "stringData": {"password": value}}),
        };
        assert_ne!(
            digest(&[applied("a")], Mode::Apply, &target()),
            digest(&[applied("b")], Mode::Apply, &target())
        );
    }

    #[test]
    fn the_order_of_dns_names_and_of_bundle_sources_is_an_effect() {
        let certificate = |names: &[&str]| Change::Certificate {
            name: "tls".into(),
            dns_names: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        assert_ne!(
            digest(&[certificate(&["a.x", "b.x"])], Mode::Apply, &target()),
            digest(&[certificate(&["b.x", "a.x"])], Mode::Apply, &target())
        );
        let bundle = |sources: &[&str]| Change::Bundle {
            name: "ca".into(),
            key: "ca.crt".into(),
            sources: sources
                .iter()
                .map(|s| ((*s).to_owned(), "ca.crt".to_owned()))
                .collect(),
            labels: vec![],
        };
        assert_ne!(
            digest(&[bundle(&["a", "b"])], Mode::Apply, &target()),
            digest(&[bundle(&["b", "a"])], Mode::Apply, &target())
        );
    }

    #[test]
    fn a_repeated_key_counts_once_the_last_winning_as_on_the_object() {
        let generate = |keys: &[(&str, u32)]| Change::Generate {
            name: "s".into(),
            keys: keys.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
        };
        assert_eq!(
            digest(&[generate(&[("a", 8), ("a", 16)])], Mode::Apply, &target()),
            digest(&[generate(&[("a", 16)])], Mode::Apply, &target())
        );
        assert_ne!(
            digest(&[generate(&[("a", 8), ("a", 16)])], Mode::Apply, &target()),
            digest(&[generate(&[("a", 16), ("a", 8)])], Mode::Apply, &target())
        );
    }

    // Properties.

    fn token() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9-]{0,8}"
    }

    fn kind() -> impl Strategy<Value = KindRef> {
        prop_oneof![
            Just(crate::contract::model::config_map_kind()),
            Just(secret_kind()),
            Just(deployment_kind()),
            Just(KindRef {
                group: "example.dev".into(),
                version: "v1".into(),
                kind: "Widget".into(),
            }),
        ]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[ -~]{0,12}".prop_map(Value::from),
        ]
    }

    fn json_tree() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(token(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn apply() -> impl Strategy<Value = Change> {
        (kind(), token(), json_tree()).prop_map(|(kind, name, spec)| Change::Apply {
            body: json!({"apiVersion": kind.api_version(), "kind": kind.kind,
                "metadata": {"name": name}, "spec": spec}),
            kind,
            name,
        })
    }

    fn keys() -> impl Strategy<Value = Vec<(String, u32)>> {
        prop::collection::btree_map(token(), 1..=4096u32, 1..4)
            .prop_map(|m| m.into_iter().collect())
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            apply(),
            (kind(), token(), token()).prop_map(|(kind, name, uid)| Change::Delete {
                kind,
                name,
                uid
            }),
            (token(), keys()).prop_map(|(name, keys)| Change::Generate { name, keys }),
            (token(), prop::collection::vec(token(), 1..4))
                .prop_map(|(name, dns_names)| Change::Certificate { name, dns_names }),
            (
                token(),
                token(),
                prop::collection::vec((token(), token()), 0..3),
                prop::collection::btree_map(token(), token(), 0..3)
            )
                .prop_map(|(name, key, sources, labels)| Change::Bundle {
                    name,
                    key,
                    sources,
                    labels: labels.into_iter().collect(),
                }),
        ]
    }

    fn changes() -> impl Strategy<Value = Vec<Change>> {
        prop::collection::vec(change(), 0..6)
    }

    fn mode() -> impl Strategy<Value = Mode> {
        prop_oneof![Just(Mode::Observe), Just(Mode::Apply)]
    }

    fn any_target() -> impl Strategy<Value = Target> {
        (token(), token()).prop_map(|(cluster, parent)| Target { cluster, parent })
    }

    /// The paths (keys and indices) to every leaf under `value`, an empty
    /// list or object counting as one.
    fn leaves(value: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        match value {
            Value::Array(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    path.push(json!(i));
                    leaves(item, path, out);
                    path.pop();
                }
            }
            Value::Object(fields) if !fields.is_empty() => {
                for (k, v) in fields {
                    path.push(json!(k));
                    leaves(v, path, out);
                    path.pop();
                }
            }
            _ => out.push(path.clone()),
        }
    }

    fn at<'v>(value: &'v mut Value, path: &[Value]) -> &'v mut Value {
        path.iter().fold(value, |v, step| match step {
            Value::String(k) => &mut v[k.as_str()],
            Value::Number(i) => &mut v[usize::try_from(i.as_u64().unwrap()).unwrap()],
            _ => unreachable!(),
        })
    }

    /// The same value with every object's keys inserted in reverse.
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            Value::Object(fields) => {
                let mut m = Map::new();
                for (k, v) in fields.iter().rev() {
                    m.insert(k.clone(), reversed(v));
                }
                Value::Object(m)
            }
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn the_order_of_changes_does_not_matter(
            (changes, other) in changes()
                .prop_flat_map(|c| (Just(c.clone()), Just(c).prop_shuffle())),
            mode in mode(),
            target in any_target(),
        ) {
            prop_assert_eq!(digest(&changes, mode, &target), digest(&other, mode, &target));
        }

        #[test]
        fn the_order_of_maps_does_not_matter(changes in changes(), target in any_target()) {
            let reordered: Vec<Change> = changes
                .iter()
                .map(|c| match c.clone() {
                    Change::Apply { kind, name, body } => Change::Apply {
                        kind,
                        name,
                        body: reversed(&body),
                    },
                    Change::Generate { name, mut keys } => {
                        keys.reverse();
                        Change::Generate { name, keys }
                    }
                    Change::Bundle { name, key, sources, mut labels } => {
                        labels.reverse();
                        Change::Bundle { name, key, sources, labels }
                    }
                    other => other,
                })
                .collect();
            prop_assert_eq!(
                digest(&changes, Mode::Apply, &target),
                digest(&reordered, Mode::Apply, &target)
            );
        }

        #[test]
        fn any_applied_field_value_changes_the_digest(
            change in apply(),
            which in any::<Index>(),
            replacement in leaf(),
            target in any_target(),
        ) {
            let Change::Apply { kind, name, body } = change.clone() else { unreachable!() };
            let mut paths = Vec::new();
            leaves(&body["spec"], &mut vec![json!("spec")], &mut paths);
            let path = which.get(&paths);
            let mut changed = body.clone();
            let leaf = at(&mut changed, path);
            prop_assume!(*leaf != replacement);
            *leaf = replacement;
            let changed = Change::Apply { kind, name, body: changed };
            prop_assert_ne!(
                digest(&[change], Mode::Apply, &target),
                digest(&[changed], Mode::Apply, &target)
            );
        }

        #[test]
        fn the_mode_and_either_identity_change_the_digest(
            changes in changes(),
            target in any_target(),
            other in token(),
        ) {
            let d = digest(&changes, Mode::Apply, &target);
            prop_assert_ne!(&d, &digest(&changes, Mode::Observe, &target));
            prop_assume!(other != target.cluster && other != target.parent);
            let cluster = Target { cluster: other.clone(), ..target.clone() };
            prop_assert_ne!(&d, &digest(&changes, Mode::Apply, &cluster));
            let parent = Target { parent: other, ..target.clone() };
            prop_assert_ne!(&d, &digest(&changes, Mode::Apply, &parent));
        }

        #[test]
        fn a_deletion_uid_a_key_a_length_and_a_dns_name_change_the_digest(
            kind in kind(),
            name in token(),
            uid in token(),
            other_uid in token(),
            keys in keys(),
            which in any::<Index>(),
            other_key in token(),
            other_length in 1..=4096u32,
            names in prop::collection::vec(token(), 1..4),
            other_name in token(),
        ) {
            let d = |c: Change| digest(&[c], Mode::Apply, &target());
            prop_assume!(uid != other_uid);
            prop_assert_ne!(
                d(Change::Delete { kind: kind.clone(), name: name.clone(), uid }),
                d(Change::Delete { kind, name: name.clone(), uid: other_uid })
            );

            let generate = |keys: Vec<(String, u32)>| Change::Generate { name: name.clone(), keys };
            let i = which.index(keys.len());
            if !keys.iter().any(|(k, _)| *k == other_key) {
                let mut renamed = keys.clone();
                renamed[i].0 = other_key;
                prop_assert_ne!(d(generate(keys.clone())), d(generate(renamed)));
            }
            if keys[i].1 != other_length {
                let mut resized = keys.clone();
                resized[i].1 = other_length;
                prop_assert_ne!(d(generate(keys.clone())), d(generate(resized)));
            }

            let certificate = |dns_names: Vec<String>| Change::Certificate { name: name.clone(), dns_names };
            let j = which.index(names.len());
            if names[j] != other_name {
                let mut renamed = names.clone();
                renamed[j] = other_name;
                prop_assert_ne!(d(certificate(names)), d(certificate(renamed)));
            }
        }

        #[test]
        fn server_set_fields_do_not_change_the_digest(
            change in apply(),
            noise in json_tree(),
            target in any_target(),
        ) {
            let Change::Apply { kind, name, body } = change.clone() else { unreachable!() };
            let mut served = body;
            for f in METADATA_NOT_HASHED {
                served["metadata"][*f] = noise.clone();
            }
            served["metadata"]["labels"] = json!({MANAGED_BY.0: noise.clone()});
            served["metadata"]["annotations"] = json!({APPLIED: noise.clone()});
            served["status"] = noise;
            let served = Change::Apply { kind, name, body: served };
            prop_assert_eq!(
                digest(&[change], Mode::Apply, &target),
                digest(&[served], Mode::Apply, &target)
            );
        }
    }
}
