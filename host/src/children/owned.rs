//! Whether the host's own server-side apply entry still owns every field of a body it asks for: what the API server made of the host's last apply, told apart from another writer's change.
//!
//! Measured against kube-apiserver v1.37.2 (issue 51): an apply of a
//! ConfigMap with `data: {}` and `metadata.labels: {}` is stored with
//! neither key, yet the applier's entry in `managedFields` lists
//! `f:data: {}` and `f:metadata.f:labels: {}`; another manager's update
//! of a field moves it out of the applier's entry, and a removal drops it
//! (an entry left empty disappears). So a body the API server stores
//! normalised (empty maps dropped, defaults filled in, quantities
//! rewritten) is still owned, path by path, and a body another writer
//! changed is not.

use serde_json::Value;

/// The first path of `desired` that the host's Apply entry, whose
/// `fieldsV1` is `fields`, does not own; `None` when it owns them all.
/// The object's identity (`apiVersion`, `kind`, `metadata.name` and
/// `metadata.namespace`) is never listed in an entry and is not asked.
/// A list is owned item by item where the entry keys its items (`k:` by
/// their key fields, `v:` by value), else whole.
pub fn unowned(desired: &Value, fields: &Value) -> Option<String> {
    let Value::Object(top) = desired else {
        return None;
    };
    top.iter()
        .filter(|(key, _)| !matches!(key.as_str(), "apiVersion" | "kind"))
        .find_map(|(key, value)| {
            let path = format!(".{key}");
            let Some(owned) = fields.get(format!("f:{key}")) else {
                return (!asks_nothing(value)).then_some(path);
            };
            if key == "metadata" {
                let mut metadata = value.clone();
                if let Some(m) = metadata.as_object_mut() {
                    m.remove("name");
                    m.remove("namespace");
                }
                return walk(&metadata, owned, path);
            }
            walk(value, owned, path)
        })
}

/// An empty list or map asks for no field: the API server records none
/// for an empty keyed list (`env: []`, measured on v1.37.2), and there is
/// nothing of it another writer could take.
fn asks_nothing(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

/// The first path under `path` of `desired` that `owned` (the entry's
/// set at that path) does not own.
fn walk(desired: &Value, owned: &Value, path: String) -> Option<String> {
    match desired {
        // An atomic struct (an owner reference): owned whole, its entry
        // lists none of its fields.
        Value::Object(_) if owned.as_object().is_some_and(serde_json::Map::is_empty) => None,
        Value::Object(fields) => fields.iter().find_map(|(key, value)| {
            let here = format!("{path}.{key}");
            match owned.get(format!("f:{key}")) {
                Some(sub) => walk(value, sub, here),
                None => (!asks_nothing(value)).then_some(here),
            }
        }),
        Value::Array(items) => {
            let entries = owned.as_object()?;
            let by_item = entries
                .keys()
                .any(|k| k.starts_with("k:") || k.starts_with("v:"));
            if !by_item {
                // An atomic list: owned whole with its field.
                return None;
            }
            items.iter().enumerate().find_map(|(i, item)| match item {
                Value::Object(fields) => {
                    let found = entries.iter().find_map(|(k, sub)| {
                        let key: Value = serde_json::from_str(k.strip_prefix("k:")?).ok()?;
                        let Value::Object(key) = key else {
                            return None;
                        };
                        // A key field the body leaves out is the
                        // server's default (a port's `protocol: TCP`).
                        key.iter()
                            .all(|(f, v)| fields.get(f).is_none_or(|mine| mine == v))
                            .then_some((key, sub))
                    });
                    match found {
                        Some((key, sub)) => {
                            let named: Vec<String> =
                                key.iter().map(|(f, v)| format!("{f}={v}")).collect();
                            walk(item, sub, format!("{path}[{}]", named.join(",")))
                        }
                        None => Some(format!("{path}[{i}]")),
                    }
                }
                scalar => {
                    let value = format!("v:{scalar}");
                    (!entries.contains_key(&value)).then(|| format!("{path}[{scalar}]"))
                }
            })
        }
        // A leaf: its field listed is its ownership, whatever value the
        // API server stored for it.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "w-config", "namespace": "team-w", "labels": {}},
               "data": data})
    }

    #[test]
    fn empty_maps_the_server_dropped_are_still_owned() {
        // As kube-apiserver v1.37.2 stored an apply of this body: no
        // `data` or `labels` key, both listed in the applier's entry.
        let fields = json!({"f:data": {}, "f:metadata": {"f:labels": {}}});
        assert_eq!(unowned(&config_map(json!({})), &fields), None);
    }

    #[test]
    fn a_field_another_writer_updated_or_removed_is_not() {
        // After another manager's update of `data.a`: `f:a` moved to it.
        let fields = json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {}}});
        let desired = config_map(json!({"a": "1", "b": "2"}));
        assert_eq!(unowned(&desired, &fields), Some(".data.a".into()));
        // The whole entry gone (every field taken or removed): the first
        // path, in the body's key order, is named.
        assert_eq!(unowned(&desired, &json!({})), Some(".data".into()));
    }

    #[test]
    fn keyed_items_are_owned_item_by_item_and_atomic_lists_whole() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "team-w",
                         "ownerReferences": [{"uid": "u-1", "kind": "Widget", "name": "w"}]},
            "spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1", "args": ["-g", "daemon off;"],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}});
        let container = json!({".": {}, "f:name": {}, "f:image": {}, "f:args": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":
                {".": {}, "f:containerPort": {}, "f:protocol": {}}}});
        let fields = |container: Value| {
            json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u-1\"}":
                      {".": {}, "f:uid": {}, "f:kind": {}, "f:name": {}}}},
                   "f:spec": {"f:template": {"f:spec": {"f:containers":
                      {"k:{\"name\":\"web\"}": container}}}}})
        };
        assert_eq!(unowned(&desired, &fields(container.clone())), None);
        // The image taken over by another writer.
        let mut taken = container.clone();
        taken.as_object_mut().unwrap().remove("f:image");
        assert_eq!(
            unowned(&desired, &fields(taken)),
            Some(".spec.template.spec.containers[name=\"web\"].image".into())
        );
        // The port no longer the host's.
        let mut port = container;
        port["f:ports"] = json!({"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {}});
        assert_eq!(
            unowned(&desired, &fields(port)),
            Some(".spec.template.spec.containers[name=\"web\"].ports[0]".into())
        );
    }

    #[test]
    fn an_empty_keyed_list_the_server_did_not_record_asks_nothing() {
        // As kube-apiserver v1.37.2 lists a container applied with `env: []`.
        let desired = json!({"spec": {"containers": [{"name": "main", "image": "i", "env": []}]}});
        let fields = json!({"f:spec": {"f:containers": {"k:{\"name\":\"main\"}":
            {".": {}, "f:image": {}, "f:name": {}}}}});
        assert_eq!(unowned(&desired, &fields), None);
        let env = json!({"spec": {"containers": [{"name": "main", "env": [{"name": "A"}]}]}});
        assert_eq!(
            unowned(&env, &fields),
            Some(".spec.containers[name=\"main\"].env".into())
        );
    }

    #[test]
    fn an_atomic_struct_is_owned_whole() {
        // As kube-apiserver v1.37.2 lists an applied owner reference.
        let desired = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "testing.reconciler.dev/v1", "kind": "Widget", "name": "w",
             "uid": "u-1", "controller": true}]}});
        let fields = json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u-1\"}": {}}}});
        assert_eq!(unowned(&desired, &fields), None);
    }

    #[test]
    fn a_key_field_the_body_leaves_out_is_the_servers_default() {
        let desired = json!({"spec": {"ports": [{"port": 80, "targetPort": "http"}]}});
        let fields = json!({"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}":
            {".": {}, "f:port": {}, "f:targetPort": {}}}}});
        assert_eq!(unowned(&desired, &fields), None);
        let other = json!({"spec": {"ports": [{"port": 80, "protocol": "UDP"}]}});
        assert_eq!(unowned(&other, &fields), Some(".spec.ports[0]".into()));
    }

    #[test]
    fn set_items_are_owned_by_value() {
        let desired = json!({"metadata": {"finalizers": ["a.example/x", "b.example/y"]}});
        let fields = json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a.example/x\"": {}}}});
        assert_eq!(
            unowned(&desired, &fields),
            Some(".metadata.finalizers[\"b.example/y\"]".into())
        );
    }
}
