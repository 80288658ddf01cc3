//! Children: the objects a guest wants applied, and deleted, made so.
//!
//! The changes of a pass are checked as a whole against the cache before
//! anything is written: an apply of an object controlled by another owner,
//! or a deletion of something the parent does not control (or of another
//! object than the one the guest saw), refuses them all, naming the guest
//! and the change. Then each apply carries the parent's namespace, the
//! parent as its controller and the host's managed-by label, and is sent by
//! server-side apply under the host's field manager, forced on the fields
//! it sets (a hand edit of those is put back; every other field stays its
//! writer's), unless the cached child already has every field the guest
//! asks for: a converged parent costs no request. Deletions carry the UID
//! the guest saw as a precondition. A generated Secret (random values the
//! guest never sees) is created when missing and never overwritten. What
//! each apply came to is recorded for `facts.last-apply`.

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::ApiResource;
use kube::{Api, Client};
use reconciler_conventions::engine::ErrorClass;
use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use crate::contract::model::Change;
use crate::facts::ApplyOutcome;
use crate::operator::cluster::cache::{ClusterSource, DIGEST_PREFIX, value_digest};
use crate::operator::metrics::{ChildLabels, ChildRefusalLabels, Metrics};
use crate::operator::write::FIELD_MANAGER;
use crate::operator::write::api_error::{self, ApiErrorClass};

/// The label the host sets on every child it applies.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", FIELD_MANAGER);

/// Why the changes of a pass were not all made. Only `Api` with a
/// conflict is retried at once; the rest end the pass.
#[derive(Debug, thiserror::Error)]
pub enum ChildrenError {
    /// The guest asked for a change it may not make: nothing was written
    /// (the guest's fault).
    #[error("the {change} is refused: {why}")]
    Refused { change: String, why: String },
    /// The API server refused a change (recorded for `facts.last-apply`).
    #[error("the {change} failed: {text}")]
    Api {
        change: String,
        class: ApiErrorClass,
        text: String,
    },
    /// A kind the guest writes is not watched (not served by the cluster).
    #[error("the {change} is not possible: {kind} is not served by this cluster")]
    NotServed { change: String, kind: KindRef },
}

impl ChildrenError {
    /// The class the pass reports (ReconcileError), or `None` for a
    /// conflict, retried quietly.
    pub fn class(&self) -> Option<ErrorClass> {
        match self {
            ChildrenError::Refused { .. } => Some(ErrorClass::GuestFailed),
            ChildrenError::Api {
                class: ApiErrorClass::Reported(class),
                ..
            } => Some(*class),
            ChildrenError::Api { .. } => None,
            ChildrenError::NotServed { .. } => Some(ErrorClass::ReconciliationFailed),
        }
    }
}

/// What the host did with a pass's changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Made {
    pub applied: usize,
    /// Applies not sent: the cached child already had every field.
    pub unchanged: usize,
    pub deleted: usize,
}

/// The parent's identity, as its children's controller.
struct Parent<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    namespace: &'a str,
    uid: &'a str,
}

/// The UID of `child`'s controller, if it has one.
fn controller_uid(child: &Value) -> Option<&str> {
    child["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}

/// Whether `actual` already has every field of `desired`: objects by key
/// (fields `actual` has beyond them do not matter), lists element by
/// element, the rest equal (a value the cache keeps as its digest, by its
/// digest).
pub fn has_all(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::String(d), Value::String(a)) if a.starts_with(DIGEST_PREFIX) => {
            value_digest(d) == *a
        }
        (Value::Object(d), Value::Object(a)) => d
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| has_all(v, av))),
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(dv, av)| has_all(dv, av))
        }
        (d, a) => d == a,
    }
}

/// Makes `changes` for `parent` (of `parent_resource`). `metrics` counts
/// them per parent kind.
pub async fn make(
    client: &Client,
    source: &ClusterSource,
    metrics: &Metrics,
    parent_resource: &ApiResource,
    parent: &Value,
    changes: &[Change],
) -> Result<Made, ChildrenError> {
    let md = &parent["metadata"];
    let owner = Parent {
        api_version: &parent_resource.api_version,
        kind: &parent_resource.kind,
        name: md["name"].as_str().unwrap_or_default(),
        namespace: md["namespace"].as_str().unwrap_or_default(),
        uid: md["uid"].as_str().unwrap_or_default(),
    };
    // Checked as a whole first: nothing is written if one is refused.
    let mut planned = Vec::with_capacity(changes.len());
    for change in changes {
        let kind = &change.kind();
        let Some(resource) = source.resource(kind) else {
            return Err(ChildrenError::NotServed {
                change: change.to_string(),
                kind: kind.clone(),
            });
        };
        let cached = source
            .cache(kind)
            .and_then(|c| c.get(owner.namespace, change.name()));
        let refused = |why: String| ChildrenError::Refused {
            change: change.to_string(),
            why,
        };
        match change {
            Change::Apply { .. } | Change::Generate { .. } => {
                if let Some(child) = &cached
                    && let Some(other) = controller_uid(child)
                    && other != owner.uid
                {
                    return Err(refused(format!(
                        "the object is controlled by another owner (uid {other})"
                    )));
                }
            }
            Change::Delete { uid, .. } => match &cached {
                Some(child) if child["metadata"]["uid"] != uid.as_str() => {
                    return Err(refused(format!(
                        "the object is another one now (uid {})",
                        child["metadata"]["uid"]
                    )));
                }
                Some(child) if controller_uid(child) != Some(owner.uid) => {
                    return Err(refused("the parent does not control it".to_owned()));
                }
                _ => {}
            },
        }
        planned.push((change, resource, cached));
    }

    let mut made = Made::default();
    for (change, resource, cached) in planned {
        let labels = ChildLabels {
            kind: owner.kind.to_owned(),
            child: change.kind().kind.clone(),
        };
        match change {
            Change::Apply { kind, name, body } => {
                let desired = with_owner(body, &owner);
                if cached.as_ref().is_some_and(|c| has_all(&desired, c)) {
                    made.unchanged += 1;
                    metrics.child_applies_unchanged.get_or_create(&labels).inc();
                    continue;
                }
                let api = api(client, &resource, owner.namespace);
                let params = PatchParams::apply(FIELD_MANAGER).force();
                match api.patch(name, &params, &Patch::Apply(&desired)).await {
                    Ok(stored) => {
                        made.applied += 1;
                        metrics.child_applies.get_or_create(&labels).inc();
                        source.record_apply(
                            kind.clone(),
                            owner.namespace,
                            name,
                            ApplyOutcome::Applied,
                        );
                        if let (Some(cache), Ok(stored)) =
                            (source.cache(kind), serde_json::to_value(stored))
                        {
                            cache.apply_if_newer(stored);
                        }
                    }
                    Err(e) => {
                        let class = api_error::classify(&e);
                        if let kube::Error::Api(status) = &e {
                            source.record_apply(
                                kind.clone(),
                                owner.namespace,
                                name,
                                ApplyOutcome::Refused {
                                    code: status.code,
                                    reason: status.reason.clone(),
                                    message: status.message.clone(),
                                },
                            );
                        }
                        metrics
                            .child_refusals
                            .get_or_create(&ChildRefusalLabels {
                                kind: owner.kind.to_owned(),
                                child: kind.kind.clone(),
                                class: class_label(class).to_owned(),
                            })
                            .inc();
                        return Err(ChildrenError::Api {
                            change: change.to_string(),
                            class,
                            text: api_error::text(&e),
                        });
                    }
                }
            }
            Change::Generate { name, keys } => {
                // Never overwritten: one that exists (the parent's, or no
                // one's) is adopted as it is.
                if cached.is_some() {
                    made.unchanged += 1;
                    metrics.child_applies_unchanged.get_or_create(&labels).inc();
                    continue;
                }
                let secret = generated_secret(name, keys, &owner);
                let api = api(client, &resource, owner.namespace);
                let created: Result<DynamicObject, kube::Error> =
                    match serde_json::from_value(secret) {
                        Ok(secret) => api.create(&PostParams::default(), &secret).await,
                        Err(e) => Err(kube::Error::SerdeError(e)),
                    };
                match created {
                    Ok(_) => {
                        made.applied += 1;
                        metrics.child_applies.get_or_create(&labels).inc();
                        source.record_apply(
                            change.kind(),
                            owner.namespace,
                            name,
                            ApplyOutcome::Applied,
                        );
                    }
                    // Made meanwhile (a second replica): adopted as it is.
                    Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {}
                    Err(e) => {
                        return Err(ChildrenError::Api {
                            change: change.to_string(),
                            class: api_error::classify(&e),
                            text: api_error::text(&e),
                        });
                    }
                }
            }
            Change::Delete { name, uid, .. } => {
                if cached.is_none() {
                    continue;
                }
                let api = api(client, &resource, owner.namespace);
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                match api.delete(name, &params).await {
                    Ok(_) => {
                        made.deleted += 1;
                        metrics.child_deletes.get_or_create(&labels).inc();
                    }
                    // Gone already, or another object by that name now.
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                    Err(e) => {
                        return Err(ChildrenError::Api {
                            change: change.to_string(),
                            class: api_error::classify(&e),
                            text: api_error::text(&e),
                        });
                    }
                }
            }
        }
    }
    Ok(made)
}

fn class_label(class: ApiErrorClass) -> &'static str {
    match class {
        ApiErrorClass::Conflict => "conflict",
        ApiErrorClass::Reported(class) => class.as_str(),
    }
}

fn api(client: &Client, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
    if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    }
}

/// A Secret of `keys` (name, bytes), each random from the operating
/// system's generator, owned by the parent. Its values exist only in this
/// request: the cache keeps no Secret value, and no guest ever reads one.
fn generated_secret(name: &str, keys: &[(String, u32)], owner: &Parent<'_>) -> Value {
    use base64::Engine as _;
    let mut data = serde_json::Map::new();
    for (key, length) in keys {
        let mut bytes = vec![0u8; usize::try_from(*length).unwrap_or(0)];
        getrandom::fill(&mut bytes).expect("the operating system's random generator");
        data.insert(
            key.clone(),
            json!(base64::engine::general_purpose::STANDARD.encode(&bytes)),
        );
    }
    with_owner(
        &json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name},
            "type": "Opaque",
            "data": data,
        }),
        owner,
    )
}

/// The body with the parent's namespace, the parent as controller owner,
/// and the host's managed-by label.
fn with_owner(body: &Value, owner: &Parent<'_>) -> Value {
    let mut desired = body.clone();
    let md = &mut desired["metadata"];
    if !owner.namespace.is_empty() {
        md["namespace"] = json!(owner.namespace);
    }
    md["ownerReferences"] = json!([{
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
    }]);
    if !md["labels"].is_object() {
        md["labels"] = json!({});
    }
    md["labels"][MANAGED_BY.0] = json!(MANAGED_BY.1);
    desired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_has_all_of_a_desired_one_when_every_field_it_names_matches() {
        let actual = json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1", "y": "2"}},
                            "data": {"k": "v"}, "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}});
        assert!(has_all(
            &json!({"metadata": {"labels": {"x": "1"}}, "data": {"k": "v"}}),
            &actual
        ));
        assert!(has_all(
            &json!({"spec": {"ports": [{"port": 80}]}}),
            &actual
        ));
        assert!(!has_all(&json!({"data": {"k": "w"}}), &actual));
        assert!(!has_all(&json!({"data": {"other": "v"}}), &actual));
        assert!(!has_all(&json!({"spec": {"ports": []}}), &actual));
    }

    #[test]
    fn a_child_is_owned_by_its_parent_and_labelled() {
        let owner = Parent {
            api_version: "example.dev/v1",
            kind: "Widget",
            name: "w",
            namespace: "ns",
            uid: "u-1",
        };
        let desired = with_owner(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            &owner,
        );
        assert_eq!(desired["metadata"]["namespace"], "ns");
        assert_eq!(desired["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(
            desired["metadata"]["ownerReferences"][0]["controller"],
            true
        );
        assert_eq!(
            desired["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "reconciler-host"
        );
        assert_eq!(controller_uid(&desired), Some("u-1"));
    }
}
