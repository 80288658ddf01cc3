//! The guest's status fields: merging a verdict's `status_fields` into the
//! fields the previous status carried.

use serde_json::{Map, Value};

/// Top-level `.status` keys the host owns; a verdict may not set them.
pub const RESERVED_STATUS_FIELDS: &[&str] = &[
    "conditions",
    "observedGeneration",
    super::plans::CURRENT_PLAN_REF,
    super::plans::CHANGE_SUMMARY,
];

/// A shallow merge at the top level: each key of `patch` replaces the
/// previous value whole (objects are not merged recursively), and a `null`
/// deletes the key. Keys the patch does not name are kept, so a guest only
/// sends the fields it decides; it clears one with `null`.
pub(super) fn merge(
    previous: &Map<String, Value>,
    patch: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = previous.clone();
    for (key, value) in patch {
        if value.is_null() {
            merged.remove(key);
        } else {
            merged.insert(key.clone(), value.clone());
        }
    }
    merged
}
