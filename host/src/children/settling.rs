//! The loop breaker: the memory of an apply the API server stored
//! otherwise than it asked, and when the same change is not made again.
//!
//! Ownership ([`crate::children::pending::unsettled`]) tells the server's
//! normalisation from another writer's change; what it cannot see (a field
//! the server drops from every body, such as a status sent to the main
//! resource, or a writer fighting the host) would make the same change
//! pass after pass. So an apply whose stored answer still does not hold
//! its body is remembered; the same body made [`NOT_MADE_AFTER`] times
//! (once, where a reviewer approves each change), the object unchanged
//! since the host's last write of it, is not made (nor planned) again
//! until the body asked for or the object changes.

use serde_json::Value;

use crate::children::pending::unsettled;
use crate::marks::APPLIED;

/// Made this many times without settling, nothing changed in between: the
/// change is not made again.
pub const NOT_MADE_AFTER: u32 = 2;

/// An apply whose stored object did not hold the body asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsettled {
    /// The digest of the body asked for (its stamp).
    pub digest: String,
    /// The object's resourceVersion after the host's last write of it.
    pub resource_version: String,
    /// How often in a row that body was made and did not settle.
    pub times: u32,
    /// The first path of the body the stored object does not hold.
    pub path: String,
}

fn stamp(object: &Value) -> &str {
    object["metadata"]["annotations"][APPLIED]
        .as_str()
        .unwrap_or_default()
}

fn resource_version(object: &Value) -> &str {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
}

/// What is remembered after an apply of `desired` to the object `cached`
/// was stored as `stored`, `before` being what was remembered: nothing
/// once it settled; else one more time in a row when the same body was
/// made last time and the object had not changed since, or a first time.
pub fn after_apply(
    before: Option<&Unsettled>,
    desired: &Value,
    cached: Option<&Value>,
    stored: &Value,
) -> Option<Unsettled> {
    let path = unsettled(desired, stored)?;
    let again = before.is_some_and(|b| {
        b.digest == stamp(desired)
            && cached.is_some_and(|c| resource_version(c) == b.resource_version)
    });
    Some(Unsettled {
        digest: stamp(desired).to_owned(),
        resource_version: resource_version(stored).to_owned(),
        times: if again {
            before.map_or(1, |b| b.times + 1)
        } else {
            1
        },
        path,
    })
}

/// What `remembered` says of the body `desired` to the object `cached`:
/// the same body made without settling, the object unchanged since the
/// host's last write of it. Held back once made [`NOT_MADE_AFTER`] times
/// (once, where a reviewer approves each change).
pub fn remembered_for<'a>(
    remembered: Option<&'a Unsettled>,
    desired: &Value,
    cached: Option<&Value>,
) -> Option<&'a Unsettled> {
    remembered.filter(|r| {
        r.digest == stamp(desired)
            && cached.is_some_and(|c| resource_version(c) == r.resource_version)
    })
}

/// The stall's message for the object `object` (`ConfigMap ns/name`).
pub fn message(object: &str, unsettled: &Unsettled) -> String {
    let times = match unsettled.times {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
    };
    format!(
        "{object} does not settle at {}: the API server stored the same body otherwise, made {times} in a row; \
         it is not made again until the parent, what the guest asks for or the object changes",
        unsettled.path
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(rv: &str, stamp: &str, status: Option<Value>) -> Value {
        let mut o = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "resourceVersion": rv,
                         "annotations": {APPLIED: stamp}},
            "spec": {"replicas": 1}});
        if rv.is_empty() {
            o["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
        }
        if let Some(s) = status {
            o["status"] = s;
        }
        o
    }

    #[test]
    fn the_same_body_made_twice_over_an_unchanged_object_is_held_back() {
        // A body sending a status the main resource drops.
        let desired = object("", "d1", Some(json!({"replicas": 9})));
        let stored = object("10", "d1", None);
        let first = after_apply(None, &desired, None, &stored).expect("not settled");
        assert_eq!((first.times, first.path.as_str()), (1, ".status"));
        assert!(
            remembered_for(Some(&first), &desired, Some(&stored))
                .is_some_and(|r| r.times < NOT_MADE_AFTER)
        );
        let second =
            after_apply(Some(&first), &desired, Some(&stored), &stored).expect("not settled");
        assert_eq!(second.times, 2);
        assert!(
            remembered_for(Some(&second), &desired, Some(&stored))
                .is_some_and(|r| r.times >= NOT_MADE_AFTER)
        );
        assert!(message("Deployment ns/web", &second).contains(".status"));
        // The object changed since: made again, counted afresh.
        let touched = object("11", "d1", None);
        assert!(remembered_for(Some(&second), &desired, Some(&touched)).is_none());
        let third =
            after_apply(Some(&second), &desired, Some(&touched), &stored).expect("not settled");
        assert_eq!(third.times, 1);
        // Another body asked for: made.
        let other = object("", "d2", Some(json!({"replicas": 9})));
        assert!(remembered_for(Some(&second), &other, Some(&stored)).is_none());
        // A body that settles is forgotten.
        let settled = object("12", "d1", None);
        let plain = object("", "d1", None);
        assert_eq!(
            after_apply(Some(&second), &plain, Some(&stored), &settled),
            None
        );
    }
}
