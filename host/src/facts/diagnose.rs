//! Malformed-object diagnosis: an object read as its built-in type, or an
//! error naming the object and the field that is wrong.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::facts::meta::object_meta;

/// An object read as its built-in type `T` (a Deployment, a Pod), or why
/// it is malformed: the object, the field and what is
/// wrong with it, e.g. `Pod ns/p is malformed at status.containerStatuses:
/// invalid type: string "x", expected a sequence`. The API server validates
/// these kinds, so only a fixture can hold a malformed one; a guest reading
/// it gets `read-error.failed` with this text, never a guess at what the
/// object meant.
pub fn typed<T: DeserializeOwned>(kind: &str, object: &Value) -> Result<T, String> {
    T::deserialize(object).map_err(|e| {
        let meta = object_meta(object);
        let at = culprit(object, |v| T::deserialize(v).is_ok())
            .map(|field| format!(" at {field}"))
            .unwrap_or_default();
        format!(
            "{kind} {}/{} is malformed{at}: {e}",
            meta.namespace, meta.name
        )
    })
}

/// The most trials [`culprit`] makes: each copies and reads the object.
const CULPRIT_TRIALS: usize = 256;

/// Where in `object` a typed read fails, as a path
/// (`spec.template.spec.containers[0].ports`): the deepest field whose
/// removal lets `reads` accept the object, found by descending into the one
/// child whose removal does. None when no single field is to blame (two
/// are malformed, or the object itself is not one); the path stops where
/// no child alone is, or after [`CULPRIT_TRIALS`] trials.
pub(crate) fn culprit(object: &Value, reads: impl Fn(&Value) -> bool) -> Option<String> {
    let mut path: Vec<(String, Option<usize>)> = Vec::new();
    let mut at = object;
    let mut trials = 0;
    loop {
        let children: Vec<(String, Option<usize>)> = match at {
            Value::Object(m) => m.keys().map(|k| (k.clone(), None)).collect(),
            Value::Array(a) => (0..a.len()).map(|i| (String::new(), Some(i))).collect(),
            _ => break,
        };
        let mut found = None;
        for child in children {
            if trials == CULPRIT_TRIALS {
                break;
            }
            trials += 1;
            let mut trial = object.clone();
            let parent = path.iter().try_fold(&mut trial, |v, step| match step {
                (_, Some(i)) => v.get_mut(*i),
                (key, None) => v.get_mut(key.as_str()),
            });
            match (&child, parent) {
                ((_, Some(i)), Some(Value::Array(a))) if *i < a.len() => drop(a.remove(*i)),
                ((key, None), Some(Value::Object(m))) => drop(m.remove(key)),
                _ => continue,
            }
            if reads(&trial) {
                found = Some(child);
                break;
            }
        }
        let Some(child) = found else { break };
        at = match &child {
            (_, Some(i)) => &at[*i],
            (key, None) => &at[key.as_str()],
        };
        path.push(child);
    }
    if path.is_empty() {
        return None;
    }
    let mut text = String::new();
    for (key, index) in path {
        match index {
            Some(i) => text.push_str(&format!("[{i}]")),
            None if text.is_empty() => text.push_str(&key),
            None => {
                text.push('.');
                text.push_str(&key);
            }
        }
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_culprit_is_the_deepest_field_whose_removal_lets_the_object_read() {
        let reads = |v: &Value| serde_json::from_value::<Pod>(v.clone()).is_ok();
        for (object, want) in [
            (json!({"status": {"phase": 3}}), Some("status.phase")),
            (
                json!({"spec": {"containers": [{"name": "a"}, {"name": 1}]}}),
                Some("spec.containers[1].name"),
            ),
            (json!("a string"), None),
            (json!({"status": {"phase": 3, "podIP": 4}}), Some("status")),
        ] {
            assert_eq!(culprit(&object, reads).as_deref(), want, "{object}");
        }
        let mut wide = json!({"spec": {"containers": []}});
        for i in 0..1000 {
            wide["spec"]["containers"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": format!("c{i}")}));
        }
        wide["spec"]["containers"][999]["name"] = json!(1);
        assert_eq!(
            culprit(&wide, reads).as_deref(),
            Some("spec.containers"),
            "the search stops after {CULPRIT_TRIALS} trials"
        );
    }
}
