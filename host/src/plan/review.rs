//! What a plan's effects would change in the live objects, as a reviewer reads it (`plan show`): the body the host
//! would send for each effect, and the difference between a live object and what applying that body makes of it.
//!
//! The CLI asks the API server what an apply would make (a server-side apply dry run, as the host's field manager);
//! where the reviewer may not ask, [`overlay`] estimates it, saying so: fields the host would stop setting are not
//! shown then.

use kube::core::GroupVersionKind;
use serde_json::Value;

use crate::children::bodies::{Owner, stamped, with_owner};
use crate::marks::{RING_MEMBER, RING_SLOT};

/// The effects of a plan, from their review text (a YAML list, `artifact::text`).
pub fn effects(text: &str) -> Result<Vec<Value>, serde_yaml::Error> {
    let effects: Option<Vec<Value>> = serde_yaml::from_str(text)?;
    Ok(effects.unwrap_or_default())
}

/// `<Kind> <name>` of an effect.
pub fn title(effect: &Value) -> String {
    format!(
        "{} {}",
        effect["kind"]["kind"].as_str().unwrap_or("?"),
        effect["name"].as_str().unwrap_or("?")
    )
}

/// An effect's kind.
pub fn gvk(effect: &Value) -> GroupVersionKind {
    let kind = &effect["kind"];
    let text = |field: &str| kind[field].as_str().unwrap_or_default();
    GroupVersionKind::gvk(text("group"), text("version"), text("kind"))
}

/// The object an `apply` effect asks for, as the host sends it for the parent `owner`: its namespace, the parent
/// as controller, the host's label and the stamp of its body; a ring's label as the live object carries it (the
/// host keeps it). `None` for the other operations.
pub fn body(effect: &Value, owner: &Owner<'_>, live: Option<&Value>) -> Option<Value> {
    if effect["op"] != "apply" {
        return None;
    }
    let mut body = effect["body"].clone();
    if !body.is_object() {
        return None;
    }
    body["apiVersion"] = Value::String(gvk(effect).api_version());
    body["kind"] = effect["kind"]["kind"].clone();
    if !body["metadata"].is_object() {
        body["metadata"] = Value::Object(Default::default());
    }
    body["metadata"]["name"] = effect["name"].clone();
    let label = |key: &str| live.and_then(|l| l["metadata"]["labels"][key].as_str());
    let owner = Owner {
        member: label(RING_MEMBER),
        slot: label(RING_SLOT).and_then(|s| s.parse().ok()),
        ..*owner
    };
    Some(stamped(with_owner(&body, &owner)))
}

/// What the server sets on its own or keeps apart, left out of a comparison: the status, and the metadata of
/// bookkeeping (uid, resourceVersion, generation, creationTimestamp, managedFields).
pub fn comparable(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
        if let Some(Value::Object(md)) = fields.get_mut("metadata") {
            for f in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields",
            ] {
                md.remove(f);
            }
        }
    }
    object
}

/// An estimate of applying `body` to `live`, where the server may not be asked: objects merged key by key, any
/// other value (a list too) replaced. Fields the host set before and no longer sets stay, where an apply would
/// remove them.
pub fn overlay(live: &Value, body: &Value) -> Value {
    match (live, body) {
        (Value::Object(l), Value::Object(b)) => {
            let mut merged = l.clone();
            for (k, v) in b {
                let next = match l.get(k) {
                    Some(lv) => overlay(lv, v),
                    None => v.clone(),
                };
                merged.insert(k.clone(), next);
            }
            Value::Object(merged)
        }
        (_, b) => b.clone(),
    }
}

/// A Secret's values as `kubectl diff` shows them: `***` where both sides hold the same value, `*** (before)` and
/// `*** (after)` where it changes; a key added or removed shows, its value never.
fn masked(before: &mut Value, after: &mut Value) {
    for field in ["data", "stringData"] {
        let theirs = after[field].clone();
        if let Some(values) = before[field].as_object_mut() {
            for (key, value) in values.iter_mut() {
                let same = theirs.get(key.as_str()) == Some(&*value);
                *value = Value::from(if same { "***" } else { "*** (before)" });
            }
        }
        let ours = before[field].clone();
        if let Some(values) = after[field].as_object_mut() {
            for (key, value) in values.iter_mut() {
                let same = ours.get(key.as_str()) == Some(&Value::from("***"));
                *value = Value::from(if same { "***" } else { "*** (after)" });
            }
        }
    }
}

/// The difference from `before` to `after` (either absent: created or deleted) as a unified diff of their YAML,
/// compared as [`comparable`], a Secret's values [`masked`]; `None` when they are the same.
pub fn diff(before: Option<&Value>, after: Option<&Value>) -> Option<String> {
    let (mut before, mut after) = (
        before.map(comparable).unwrap_or(Value::Null),
        after.map(comparable).unwrap_or(Value::Null),
    );
    if before["kind"] == "Secret" || after["kind"] == "Secret" {
        masked(&mut before, &mut after);
    }
    let yaml = |v: &Value| {
        if v.is_null() {
            String::new()
        } else {
            serde_yaml::to_string(v).unwrap_or_default()
        }
    };
    let (before, after) = (yaml(&before), yaml(&after));
    if before == after {
        return None;
    }
    Some(
        similar::TextDiff::from_lines(&before, &after)
            .unified_diff()
            .context_radius(3)
            .header("live", "after the plan")
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> Owner<'static> {
        Owner {
            api_version: "testing.reconciler.dev/v1",
            kind: "Widget",
            name: "w",
            namespace: "team-a",
            uid: "u1",
            member: None,
            slot: None,
        }
    }

    fn effect() -> Value {
        json!({"kind": {"group": "", "version": "v1", "kind": "ConfigMap"}, "name": "w-config",
               "op": "apply", "body": {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "w-config"}, "data": {"a": "2"}}})
    }

    #[test]
    fn an_apply_is_sent_owned_labelled_and_stamped_with_the_ring_label_kept() {
        let live = json!({"metadata": {"labels": {RING_SLOT: "17"}}});
        let body = body(&effect(), &owner(), Some(&live)).expect("an apply has a body");
        let md = &body["metadata"];
        assert_eq!(md["namespace"], "team-a");
        assert_eq!(md["ownerReferences"][0]["uid"], "u1");
        assert_eq!(
            md["labels"]["app.kubernetes.io/managed-by"],
            "reconciler-host"
        );
        assert_eq!(md["labels"][RING_SLOT], "17");
        assert!(md["annotations"]["reconciler.dev/applied"].is_string());
        let delete = json!({"kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                            "name": "x", "op": "delete", "uid": "u2"});
        assert_eq!(super::body(&delete, &owner(), None), None);
    }

    #[test]
    fn a_diff_shows_what_changes_and_nothing_the_server_keeps() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "w-config", "uid": "9", "resourceVersion": "12",
                         "managedFields": [{"manager": "reconciler-host"}]},
            "data": {"a": "1", "kept": "yes"}});
        let after = overlay(&live, &json!({"data": {"a": "2", "b": "3"}}));
        assert_eq!(after["data"], json!({"a": "2", "b": "3", "kept": "yes"}));
        let shown = diff(Some(&live), Some(&after)).expect("a change");
        assert!(
            shown.contains("-  a: '1'\n+  a: '2'\n+  b: '3'\n"),
            "{shown}"
        );
        assert!(!shown.contains("resourceVersion") && !shown.contains("managedFields"));
        assert_eq!(diff(Some(&live), Some(&live)), None);
        let created = diff(None, Some(&after)).expect("a creation");
        assert!(created.contains("+kind: ConfigMap"), "{created}");
        let deleted = diff(Some(&live), None).expect("a deletion");
        assert!(deleted.contains("-kind: ConfigMap"), "{deleted}");
    }

    #[test]
    fn a_secrets_values_are_never_shown_only_whether_they_change() {
        let secret = |data: Value| {
            json!({"apiVersion": "v1", "kind": "Secret",
                                          "metadata": {"name": "s"}, "data": data})
        };
        let shown = diff(
            Some(&secret(
                json!({"kept": "c2FtZQ==", "changed": "b2xk", "gone": "eA=="}),
            )),
            Some(&secret(
                json!({"kept": "c2FtZQ==", "changed": "bmV3", "added": "eQ=="}),
            )),
        )
        .expect("a change");
        for value in ["c2FtZQ==", "b2xk", "bmV3", "eA==", "eQ=="] {
            assert!(!shown.contains(value), "{value} shown: {shown}");
        }
        assert!(shown.contains("   kept: '***'"), "{shown}");
        assert!(shown.contains("-  changed: '*** (before)'\n"), "{shown}");
        assert!(shown.contains("+  changed: '*** (after)'\n"), "{shown}");
        assert!(shown.contains("-  gone: '*** (before)'\n"), "{shown}");
        assert!(shown.contains("+  added: '*** (after)'\n"), "{shown}");
        let created = diff(None, Some(&secret(json!({"k": "dg=="})))).expect("a creation");
        assert!(created.contains("+  k: '*** (after)'"), "{created}");
    }
}
