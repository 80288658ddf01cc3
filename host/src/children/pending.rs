//! Whether a change the guest asks for would change anything, from what
//! the cluster holds of its object: what a plan holds and its digest
//! hashes. The operator's planner, the fixture runner and `capture` follow
//! the same rule; only whether a certificate is still good is the caller's
//! (the operator asks its CA; offline, one that is there counts as good).

use serde_json::Value;

use crate::children::bodies::{Owner, bundle, missing, stamped, with_owner};
use crate::children::owned;
use crate::contract::model::Change;
use crate::facts::{ObjectSource, applied};
use crate::marks::APPLIED;

/// The body the host would send for `change` of the parent `owner`
/// (applies and bundles; `None` for the other changes), stamped with its
/// digest. A bundle reads its Secrets from `source`.
pub fn desired(change: &Change, source: &dyn ObjectSource, owner: &Owner<'_>) -> Option<Value> {
    match change {
        Change::Apply { body, .. } => Some(stamped(with_owner(body, owner))),
        Change::Bundle {
            name,
            key,
            sources,
            labels,
        } => Some(stamped(with_owner(
            &bundle(source, owner.namespace, name, key, sources, labels),
            owner,
        ))),
        _ => None,
    }
}

/// Where the child `cached` does not hold the body `desired` (stamped) as
/// the API server stores it: the first such path, `None` once it does.
/// It does when it has every field of the body with its value, or when it
/// was last applied with this very body (its digest annotation) and the
/// host's own apply entry in `managedFields` still owns every field of the
/// body: what the server made of the host's apply (an empty map dropped, a
/// default filled in, a quantity rewritten) is settled, a field another
/// writer changed or removed is not (issue 51; docs/design.md "Every
/// change settles").
pub fn unsettled(desired: &Value, cached: &Value) -> Option<String> {
    let missing = missing(desired, cached)?;
    let stamp = |o: &Value| {
        o["metadata"]["annotations"][APPLIED]
            .as_str()
            .map(str::to_owned)
    };
    match applied::applied_fields(cached) {
        Some(fields) if stamp(cached).is_some() && stamp(cached) == stamp(desired) => {
            owned::unowned(desired, fields)
        }
        _ => Some(missing),
    }
}

/// Whether `change` would change something: an apply (or bundle) whose
/// object does not hold `desired` as the server stores it
/// ([`unsettled`]), a generated Secret or a certificate missing (or,
/// `still_good` says, due for renewal), a deletion of an object that is
/// there.
pub fn pending(
    change: &Change,
    cached: Option<&Value>,
    desired: Option<&Value>,
    still_good: impl FnOnce(&Value) -> bool,
) -> bool {
    match change {
        Change::Apply { .. } | Change::Bundle { .. } => cached
            .zip(desired)
            .is_none_or(|(c, d)| unsettled(d, c).is_some()),
        Change::Generate { .. } => cached.is_none(),
        Change::Certificate { .. } => !cached.is_some_and(still_good),
        Change::Delete { .. } => cached.is_some(),
    }
}

/// The changes of `parent` that would change something, compared with
/// what `source` holds, where there is no CA to ask: a certificate's Secret
/// that is there counts as good.
pub fn offline(changes: &[Change], parent: &Value, source: &dyn ObjectSource) -> Vec<Change> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let md = &parent["metadata"];
    let (api_version, kind) = (text(&parent["apiVersion"]), text(&parent["kind"]));
    let (name, namespace, uid) = (text(&md["name"]), text(&md["namespace"]), text(&md["uid"]));
    let owner = Owner {
        api_version: &api_version,
        kind: &kind,
        name: &name,
        namespace: &namespace,
        uid: &uid,
        member: md["labels"][crate::marks::RING_MEMBER].as_str(),
        slot: None,
    };
    changes
        .iter()
        .filter(|change| {
            let cached = source
                .get(&change.kind(), &namespace, change.name())
                .ok()
                .flatten()
                .map(|o| o.with_applied());
            let desired = desired(change, source, &owner);
            pending(change, cached.as_ref(), desired.as_ref(), |_| true)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::model::config_map_kind;
    use crate::facts::MemorySource;

    fn owner() -> Owner<'static> {
        Owner {
            api_version: "testing.reconciler.dev/v1",
            kind: "Widget",
            name: "w",
            namespace: "team-w",
            uid: "u-1",
            member: None,
            slot: None,
        }
    }

    fn apply(data: &str) -> Change {
        Change::Apply {
            kind: config_map_kind(),
            name: "w-config".into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "w-config"}, "data": {"a": data}}),
        }
    }

    #[test]
    fn an_apply_is_pending_until_its_child_holds_the_very_body_last_applied() {
        let source = MemorySource::new();
        let change = apply("1");
        let desired = desired(&change, &source, &owner()).expect("an apply's body");
        assert!(
            pending(&change, None, Some(&desired), |_| true),
            "no child yet"
        );
        // The child as the host applied it (the server may add fields).
        let mut child = desired.clone();
        child["metadata"]["resourceVersion"] = json!("7");
        assert!(!pending(&change, Some(&child), Some(&desired), |_| true));
        let changed = apply("2");
        let desired = desired_of(&changed, &source);
        assert!(pending(&changed, Some(&child), Some(&desired), |_| true));
    }

    #[test]
    fn a_body_the_server_stored_normalised_is_settled_and_another_writers_change_is_not() {
        let source = MemorySource::new();
        let change = Change::Apply {
            kind: config_map_kind(),
            name: "w-config".into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "w-config"}, "data": {}}),
        };
        let desired = desired_of(&change, &source);
        // As the API server stores it: no `data`, yet the host's entry
        // lists it (kube-apiserver v1.37.2).
        let mut stored = desired.clone();
        stored.as_object_mut().unwrap().remove("data");
        let entry = |fields: Value| {
            json!([{"manager": "reconciler-host", "operation": "Apply", "fieldsV1": fields},
                   {"manager": "reconciler-host", "operation": "Apply",
                    "subresource": "status", "fieldsV1": {}}])
        };
        let owned = json!({"f:data": {}, "f:metadata": {
            "f:annotations": {"f:reconciler.dev/applied": {}},
            "f:labels": {"f:app.kubernetes.io/managed-by": {}},
            "f:ownerReferences": {"k:{\"uid\":\"u-1\"}": {}}}});
        stored["metadata"]["managedFields"] = entry(owned.clone());
        assert_eq!(unsettled(&desired, &stored), None);
        assert!(!pending(&change, Some(&stored), Some(&desired), |_| true));
        // Without the host's entry (a fixture's object, an older cache):
        // compared field by field.
        stored["metadata"]["managedFields"] = json!([]);
        assert_eq!(unsettled(&desired, &stored), Some(".data".into()));
        // Another body asked for: the stamp differs, compared field by field.
        let other = desired_of(&apply("1"), &source);
        assert!(unsettled(&other, &stored).is_some());
        // Another writer changed a value the host applied: the field moved
        // to it, not settled.
        let mut changed = other.clone();
        changed["data"]["a"] = json!("2");
        // (A field set lists a path as `{}` only when the path itself is
        // owned: with its one field gone, `data` leaves the entry.)
        let mut taken = owned;
        taken.as_object_mut().unwrap().remove("f:data");
        changed["metadata"]["managedFields"] = entry(taken.clone());
        assert_eq!(unsettled(&other, &changed), Some(".data".into()));
        taken["f:data"] = json!({"f:a": {}});
        changed["metadata"]["managedFields"] = entry(taken);
        assert_eq!(unsettled(&other, &changed), None, "the server's own value");
    }

    fn desired_of(change: &Change, source: &MemorySource) -> Value {
        desired(change, source, &owner()).expect("a body")
    }

    #[test]
    fn a_secret_is_generated_once_a_deletion_needs_its_object_and_a_certificate_its_ca() {
        let secret = json!({"metadata": {"name": "w-secret"}});
        let generate = Change::Generate {
            name: "w-secret".into(),
            keys: vec![("password".into(), 32)],
        };
        assert!(pending(&generate, None, None, |_| true));
        assert!(!pending(&generate, Some(&secret), None, |_| true));
        let delete = Change::Delete {
            kind: config_map_kind(),
            name: "w-extra".into(),
            uid: "u-2".into(),
        };
        assert!(!pending(&delete, None, None, |_| true));
        assert!(pending(&delete, Some(&secret), None, |_| true));
        let certificate = Change::Certificate {
            name: "w-tls".into(),
            dns_names: vec!["w.team-w.svc".into()],
        };
        assert!(pending(&certificate, None, None, |_| true));
        assert!(!pending(&certificate, Some(&secret), None, |_| true));
        assert!(
            pending(&certificate, Some(&secret), None, |_| false),
            "due for renewal"
        );
    }
}
