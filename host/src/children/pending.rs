//! Whether a change the guest asks for would change anything, from what
//! the cluster holds of its object: what a plan holds and its digest
//! hashes. The operator's planner, the fixture runner and `capture` follow
//! the same rule; only whether a certificate is still good is the caller's
//! (the operator asks its CA; offline, one that is there counts as good).

use serde_json::Value;

use crate::children::bodies::{Owner, bundle, has_all, stamped, with_owner};
use crate::contract::model::Change;
use crate::facts::ObjectSource;

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

/// Whether `change` would change something: an apply (or bundle) whose
/// object lacks a field of `desired` or was last applied with another
/// body, a generated Secret or a certificate missing (or, `still_good`
/// says, due for renewal), a deletion of an object that is there.
pub fn pending(
    change: &Change,
    cached: Option<&Value>,
    desired: Option<&Value>,
    still_good: impl FnOnce(&Value) -> bool,
) -> bool {
    match change {
        Change::Apply { .. } | Change::Bundle { .. } => {
            !cached.zip(desired).is_some_and(|(c, d)| has_all(d, c))
        }
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
                .map(|o| o.value());
            let desired = desired(change, source, &owner);
            pending(change, cached.as_deref(), desired.as_ref(), |_| true)
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
