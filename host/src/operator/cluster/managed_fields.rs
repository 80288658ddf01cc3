//! The host's own `managedFields` entries: which is its status entry, and
//! the slim copies the cache keeps when it drops every other entry.

use serde_json::{Map, Value, json};

use crate::marks::FIELD_MANAGER;

/// The entry of the host's field manager on the status subresource.
pub(crate) fn host_entry(md: &Value) -> Option<&Value> {
    md["managedFields"].as_array()?.iter().find(|e| {
        e["manager"] == FIELD_MANAGER && e["subresource"] == "status" && e["operation"] == "Apply"
    })
}

/// Keeps, of `md.managedFields`, only the host's own entries: on the status
/// subresource, reduced to the names
/// [`crate::operator::write::owned::OwnedStatus::of`] reads; on the main
/// resource (its applies of a child), whole, for
/// [`crate::children::pending::unsettled`]. The cache drops the rest.
pub(crate) fn slim_managed_fields(md: &mut Map<String, Value>) {
    let Some(all) = md.remove("managedFields") else {
        return;
    };
    let all = json!({ "managedFields": all });
    let mut kept = Vec::new();
    if let Some(fields) = crate::facts::applied::applied_in(&all["managedFields"]) {
        kept.push(json!({
            "manager": FIELD_MANAGER,
            "operation": "Apply",
            "fieldsV1": fields,
        }));
    }
    if let Some(entry) = host_entry(&all) {
        kept.push(slim_status_entry(entry));
    }
    if !kept.is_empty() {
        md.insert("managedFields".into(), Value::Array(kept));
    }
}

/// The host's status entry, reduced to the names of the status fields and
/// conditions it owns.
fn slim_status_entry(entry: &Value) -> Value {
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
    json!({
        "manager": FIELD_MANAGER,
        "operation": "Apply",
        "subresource": "status",
        "fieldsV1": {"f:status": status},
    })
}
