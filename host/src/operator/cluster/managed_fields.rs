//! The host's own `managedFields` entry on a status: which entry it is,
//! and the slim copy of it the cache keeps when it drops every other entry.

use serde_json::{Map, Value, json};

use crate::marks::FIELD_MANAGER;

/// The entry of the host's field manager on the status subresource.
pub(crate) fn host_entry(md: &Value) -> Option<&Value> {
    md["managedFields"].as_array()?.iter().find(|e| {
        e["manager"] == FIELD_MANAGER && e["subresource"] == "status" && e["operation"] == "Apply"
    })
}

/// Keeps, of `md.managedFields`, only the host's status entry, reduced to
/// the names [`crate::operator::write::owned::OwnedStatus::of`] reads (the cache drops the rest).
pub(crate) fn slim_managed_fields(md: &mut Map<String, Value>) {
    let Some(entry) = md
        .get("managedFields")
        .map(|m| json!({ "managedFields": m }))
        .and_then(|m| host_entry(&m).cloned())
    else {
        md.remove("managedFields");
        return;
    };
    let mut status = Map::new();
    for (key, value) in entry["fieldsV1"]["f:status"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let kept = if key == "f:conditions" {
            let items: Map<String, Value> = value
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.starts_with("k:"))
                .map(|(k, _)| (k.clone(), json!({})))
                .collect();
            Value::Object(items)
        } else {
            json!({})
        };
        status.insert(key.clone(), kept);
    }
    md.insert(
        "managedFields".into(),
        json!([{
            "manager": FIELD_MANAGER,
            "operation": "Apply",
            "subresource": "status",
            "fieldsV1": {"f:status": status},
        }]),
    );
}
