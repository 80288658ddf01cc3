//! The host's own server-side apply entry in an object's `managedFields`
//! (its field manager, operation Apply, the main resource): found, taken
//! out of an object and put back. What it owns tells whether a change
//! settles (`children/pending.rs`); the cache keeps it
//! beside the object's text ([`crate::facts::cached::Cached::with_applied`]).

use serde_json::Value;

use crate::marks::FIELD_MANAGER;

/// The `fieldsV1` of the host's own server-side apply entry on `object`
/// (its field manager, operation Apply, the main resource), if it has one.
pub fn applied_fields(object: &Value) -> Option<&Value> {
    applied_in(&object["metadata"]["managedFields"])
}

/// The `fieldsV1` of the host's own apply entry among `managed_fields` (a
/// `metadata.managedFields` list).
pub fn applied_in(managed_fields: &Value) -> Option<&Value> {
    managed_fields
        .as_array()?
        .iter()
        .find(|e| is_applied(e))
        .map(|e| &e["fieldsV1"])
}

/// Takes the host's own apply entry out of `object`'s
/// `metadata.managedFields` (the list goes when it is left empty): its
/// `fieldsV1`, if it had one.
pub fn take_applied(object: &mut Value) -> Option<Value> {
    let entries = object
        .get_mut("metadata")?
        .get_mut("managedFields")?
        .as_array_mut()?;
    let at = entries.iter().position(is_applied)?;
    let entry = entries.remove(at);
    if entries.is_empty()
        && let Some(md) = object["metadata"].as_object_mut()
    {
        md.remove("managedFields");
    }
    match entry {
        Value::Object(mut entry) => entry.remove("fieldsV1"),
        _ => None,
    }
}

/// Puts the host's apply entry with `fields` back into `object`'s
/// `metadata.managedFields`.
pub fn put_applied(object: &mut Value, fields: Value) {
    let entry = serde_json::json!({
        "manager": FIELD_MANAGER,
        "operation": "Apply",
        "fieldsV1": fields,
    });
    match object["metadata"]["managedFields"].as_array_mut() {
        Some(entries) => entries.push(entry),
        None => object["metadata"]["managedFields"] = Value::Array(vec![entry]),
    }
}

/// Whether a `managedFields` entry is the host's apply entry on the main
/// resource.
fn is_applied(entry: &Value) -> bool {
    entry["manager"] == FIELD_MANAGER
        && entry["operation"] == "Apply"
        && entry["subresource"].as_str().unwrap_or_default().is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_hosts_apply_entry_is_taken_out_and_put_back() {
        let fields = json!({"f:data": {"f:a": {}}});
        let mut object = json!({"metadata": {"name": "c", "managedFields": [
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {}},
            {"manager": "reconciler-host", "operation": "Apply", "fieldsV1": fields}]}});
        assert_eq!(applied_fields(&object), Some(&fields));
        assert_eq!(take_applied(&mut object), Some(fields.clone()));
        assert_eq!(
            object["metadata"]["managedFields"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(applied_fields(&object), None);
        put_applied(&mut object, fields.clone());
        assert_eq!(applied_fields(&object), Some(&fields));
        let mut alone = json!({"metadata": {"managedFields": [
            {"manager": "reconciler-host", "operation": "Apply", "fieldsV1": {}}]}});
        assert_eq!(take_applied(&mut alone), Some(json!({})));
        assert!(alone["metadata"].get("managedFields").is_none());
    }
}
