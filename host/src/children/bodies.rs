//! The body of each child the host sends: owned by its parent and
//! labelled as the host's, stamped with the digest of itself (so a body
//! that drops a field is sent), a generated Secret's random values, a
//! bundle of certificates from the Secrets a source holds; and whether a
//! cached child already has every field of a body.

use serde_json::{Value, json};

use crate::contract::model::secret_kind;
use crate::facts::ObjectSource;
use crate::facts::certificates;
use crate::marks::{APPLIED, MANAGED_BY, RING_MEMBER, RING_SLOT};

/// What marks a ConfigMap value the cache keeps as its digest.
pub(crate) const DIGEST_PREFIX: &str = "\u{0}sha256:";

/// A ConfigMap value as the cache keeps it: [`DIGEST_PREFIX`] and the
/// SHA-256 of the value, lowercase hex.
pub(crate) fn value_digest(value: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(value.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{DIGEST_PREFIX}{hex}")
}

/// The parent's identity, as its children's controller.
pub struct Owner<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    /// The ring member the parent is assigned to (its
    /// [`RING_MEMBER`] label), which its children are labelled with too.
    pub member: Option<&'a str>,
    /// Where a ring's API server selects, the slot of the parent's uid
    /// (its children's [`RING_SLOT`] label).
    pub slot: Option<u16>,
}

/// The first path of `desired` that `actual` does not have (`.` for the
/// whole), `None` when it has every field: objects by key (fields `actual`
/// has beyond them do not matter), lists element by element, the rest
/// equal (a value the cache keeps as its digest, by its digest).
pub(crate) fn missing(desired: &Value, actual: &Value) -> Option<String> {
    missing_below(desired, actual).map(|path| {
        if path.is_empty() {
            ".".to_owned()
        } else {
            path
        }
    })
}

/// [`missing`]'s path below `desired` (empty for `desired` itself), built
/// only where something is missing: a converged child costs no string.
fn missing_below(desired: &Value, actual: &Value) -> Option<String> {
    match (desired, actual) {
        (Value::String(d), Value::String(a)) if a.starts_with(DIGEST_PREFIX) => {
            (value_digest(d) != *a).then(String::new)
        }
        (Value::Object(d), Value::Object(a)) => d.iter().find_map(|(k, v)| match a.get(k) {
            Some(av) => missing_below(v, av).map(|below| format!(".{k}{below}")),
            None => Some(format!(".{k}")),
        }),
        (Value::Array(d), Value::Array(a)) if d.len() == a.len() => {
            d.iter().zip(a).enumerate().find_map(|(i, (dv, av))| {
                missing_below(dv, av).map(|below| format!("[{i}]{below}"))
            })
        }
        (d, a) => (d != a).then(String::new),
    }
}

/// A JSON merge patch setting every list of `desired` (objects kept by
/// path, lists whole), `None` when it has none: a merge patch replaces a
/// list, where server-side apply merges one by its keys.
pub(crate) fn lists_of(desired: &Value) -> Option<Value> {
    match desired {
        Value::Array(_) => Some(desired.clone()),
        Value::Object(fields) => {
            let lists: serde_json::Map<String, Value> = fields
                .iter()
                .filter(|(k, _)| *k != "metadata")
                .filter_map(|(k, v)| Some((k.clone(), lists_of(v)?)))
                .collect();
            (!lists.is_empty()).then_some(Value::Object(lists))
        }
        _ => None,
    }
}

/// `desired` annotated with the digest of itself ([`APPLIED`]): a child
/// holding every field of a body, annotated with that body's digest, is
/// the one the host last applied, so a body that only drops a field (which
/// the child still holds) differs from it and is sent, and server-side
/// apply removes what the host no longer asks for.
pub fn stamped(mut desired: Value) -> Value {
    let digest = value_digest(&desired.to_string());
    let digest = digest.trim_start_matches(DIGEST_PREFIX).to_owned();
    let md = &mut desired["metadata"];
    if !md["annotations"].is_object() {
        md["annotations"] = json!({});
    }
    md["annotations"][APPLIED] = json!(digest);
    desired
}

/// The ConfigMap `name` whose `key` holds the certificates under each
/// (Secret, key) of `sources` in the cache, in order, each once. A Secret
/// the cache does not hold adds nothing (the guest, which reads the same
/// facts, says what is missing).
pub fn bundle(
    source: &dyn ObjectSource,
    namespace: &str,
    name: &str,
    key: &str,
    sources: &[(String, String)],
    labels: &[(String, String)],
) -> Value {
    let mut seen = std::collections::BTreeSet::new();
    let mut text = String::new();
    for (secret, secret_key) in sources {
        let Ok(Some(secret)) = source.get(&secret_kind(), namespace, secret) else {
            continue;
        };
        for (sha256, pem) in certificates::pem_blocks(&secret.value(), secret_key) {
            if seen.insert(sha256) {
                text.push_str(pem.trim_end());
                text.push('\n');
            }
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": labels
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect::<serde_json::Map<_, _>>(),
        },
        "data": {key: text},
    })
}

/// A Secret of `keys` (name, bytes), each random from the operating
/// system's generator, owned by the parent. Its values exist only in this
/// request: the cache keeps no Secret value, and no guest ever reads one.
pub(crate) fn generated_secret(
    name: &str,
    keys: &[(String, u32)],
) -> Result<Value, getrandom::Error> {
    use base64::Engine as _;
    let mut data = serde_json::Map::new();
    for (key, length) in keys {
        let mut bytes = vec![0u8; usize::try_from(*length).unwrap_or(0)];
        getrandom::fill(&mut bytes)?;
        data.insert(
            key.clone(),
            json!(base64::engine::general_purpose::STANDARD.encode(&bytes)),
        );
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "Opaque",
        "data": data,
    }))
}

/// The body with the parent's namespace, the parent as controller owner,
/// the host's managed-by label, and the ring member's (or slot's) label in
/// a ring.
pub(crate) fn with_owner(body: &Value, owner: &Owner<'_>) -> Value {
    let mut desired = body.clone();
    let md = &mut desired["metadata"];
    if !owner.namespace.is_empty() {
        md["namespace"] = json!(owner.namespace);
    }
    md["ownerReferences"] = json!([{
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
    }]);
    if !md["labels"].is_object() {
        md["labels"] = json!({});
    }
    md["labels"][MANAGED_BY.0] = json!(MANAGED_BY.1);
    if let Some(member) = owner.member {
        md["labels"][RING_MEMBER] = json!(member);
    }
    if let Some(slot) = owner.slot {
        md["labels"][RING_SLOT] = json!(slot.to_string());
    }
    desired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::meta::controller_uid;

    fn no_missing(desired: &Value, actual: &Value) -> bool {
        missing(desired, actual).is_none()
    }

    #[test]
    fn an_object_misses_nothing_of_a_desired_one_when_every_field_it_names_matches() {
        let actual = json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1", "y": "2"}},
                            "data": {"k": "v"}, "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}});
        assert!(no_missing(
            &json!({"metadata": {"labels": {"x": "1"}}, "data": {"k": "v"}}),
            &actual
        ));
        assert!(no_missing(
            &json!({"spec": {"ports": [{"port": 80}]}}),
            &actual
        ));
        assert_eq!(
            missing(&json!({"data": {"k": "w"}}), &actual),
            Some(".data.k".into())
        );
        assert_eq!(
            missing(&json!({"data": {"other": "v"}}), &actual),
            Some(".data.other".into())
        );
        assert_eq!(
            missing(&json!({"spec": {"ports": []}}), &actual),
            Some(".spec.ports".into())
        );
    }

    #[test]
    fn a_body_that_drops_a_field_the_child_still_holds_is_sent() {
        let applied = stamped(json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}}));
        let mut child = applied.clone();
        child["metadata"]["uid"] = json!("u");
        assert!(
            no_missing(&applied, &child),
            "the same body again: not sent"
        );
        let fewer = stamped(json!({"metadata": {"name": "c", "labels": {"a": "1"}}}));
        assert!(no_missing(
            &json!({"metadata": {"labels": {"a": "1"}}}),
            &child
        ));
        assert_eq!(
            missing(&fewer, &child),
            Some(format!(".metadata.annotations.{APPLIED}")),
            "label b is to go: sent"
        );
    }

    #[test]
    fn the_lists_of_a_body_are_what_a_merge_patch_takes_back() {
        let desired = json!({"metadata": {"name": "s", "labels": {"a": "1"}},
            "spec": {"type": "ClusterIP", "ports": [{"port": 8080}],
                     "selector": {"app": "x"}}});
        assert_eq!(
            lists_of(&desired),
            Some(json!({"spec": {"ports": [{"port": 8080}]}}))
        );
        assert_eq!(lists_of(&json!({"data": {"k": "v"}})), None);
    }

    #[test]
    fn a_generated_secret_holds_random_bytes_of_each_length() {
        use base64::Engine as _;
        let keys = [("password".to_owned(), 32), ("pin".to_owned(), 4)];
        let one = generated_secret("s", &keys).expect("random bytes");
        let two = generated_secret("s", &keys).expect("random bytes");
        let decoded = |s: &Value, k: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(s["data"][k].as_str().expect(k))
                .expect("base64")
        };
        assert_eq!(decoded(&one, "password").len(), 32);
        assert_eq!(decoded(&one, "pin").len(), 4);
        assert_ne!(one["data"]["password"], two["data"]["password"]);
        assert_eq!(one["type"], "Opaque");
    }

    #[test]
    fn a_child_is_owned_by_its_parent_and_labelled() {
        let owner = Owner {
            api_version: "example.dev/v1",
            kind: "Widget",
            name: "w",
            namespace: "ns",
            uid: "u-1",
            member: None,
            slot: None,
        };
        let desired = with_owner(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            &owner,
        );
        assert_eq!(desired["metadata"]["namespace"], "ns");
        assert_eq!(desired["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(
            desired["metadata"]["ownerReferences"][0]["controller"],
            true
        );
        assert_eq!(
            desired["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "reconciler-host"
        );
        assert_eq!(controller_uid(&desired), Some("u-1"));
        assert!(desired["metadata"]["labels"].get(RING_MEMBER).is_none());
        // In a ring, labelled with the parent's member.
        let in_ring = Owner {
            member: Some("replica-a"),
            ..owner
        };
        let desired = with_owner(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            &in_ring,
        );
        assert_eq!(desired["metadata"]["labels"][RING_MEMBER], "replica-a");
        // Where the ring's API server selects, with its parent's slot.
        let slotted = Owner {
            slot: Some(7),
            ..owner
        };
        let desired = with_owner(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            &slotted,
        );
        assert_eq!(desired["metadata"]["labels"][RING_SLOT], "7");
    }
}
