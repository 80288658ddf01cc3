//! What a captured pass read, as a fixture's `objects` and `unavailable` entries: exactly the objects each recorded read answered, and the APIs it found refused or not served.

use std::collections::BTreeMap;

use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use super::redact;
use crate::facts::{Availability, Dependency, ObjectSource, SourceError};

/// The objects and unavailable APIs a fixture needs to serve the same
/// answers to the same reads.
#[derive(Debug, Default)]
pub struct SelectedReads {
    /// Sorted by kind, namespace and name; each once.
    pub objects: Vec<Value>,
    /// `unavailable` entries, as the fixture format writes them.
    pub unavailable: Vec<Value>,
}

/// The key an object is kept under: its kind, namespace and name.
type Key = (KindRef, String, String);

/// An API not usable where a read asked: its kind and namespace.
#[derive(Default)]
struct Refusal {
    availability: Option<Availability>,
    /// A read past the cache answered (found or absent): `directGet`.
    direct_get: bool,
}

/// Selects, for every read of `reads`, what `source` answers it (the
/// source the pass's last evaluation read, its reads past the cache
/// included), each object as a fixture keeps it ([`redact::for_fixture`]).
/// `namespace` is the parent's: where its children are.
pub fn select(reads: &[Dependency], source: &dyn ObjectSource, namespace: &str) -> SelectedReads {
    let mut objects: BTreeMap<Key, Value> = BTreeMap::new();
    let mut refused: BTreeMap<(KindRef, String), Refusal> = BTreeMap::new();
    let mut keep = |found: &Value| {
        let key = (
            crate::facts::source::kind_of(found),
            found["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            found["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        objects
            .entry(key)
            .or_insert_with(|| redact::for_fixture(found.clone()));
    };
    for read in reads {
        match read {
            Dependency::Object {
                kind,
                namespace,
                name,
            } => match source.get(kind, namespace, name) {
                Ok(found) => found.iter().for_each(|o| keep(&o.with_applied())),
                Err(e) => {
                    let refusal = entry(&mut refused, kind, namespace);
                    refusal.availability = Some(unavailable(&e));
                    // Read past the cache: its answer is the fixture's.
                    if let Some(Ok(found)) = source.past_cache(kind, namespace, name) {
                        found.iter().for_each(|o| keep(&o.with_applied()));
                        refusal.direct_get = true;
                    }
                }
            },
            Dependency::List {
                kind,
                namespace,
                selector,
            } => match source.list(kind, namespace, selector) {
                Ok(found) => found.iter().for_each(|o| keep(&o.with_applied())),
                Err(e) => entry(&mut refused, kind, namespace).availability = Some(unavailable(&e)),
            },
            Dependency::Children { kind, controller } => {
                match source.controlled(kind, namespace, controller) {
                    Ok(found) => found.iter().for_each(|o| keep(&o.with_applied())),
                    Err(e) => {
                        entry(&mut refused, kind, namespace).availability = Some(unavailable(&e))
                    }
                }
            }
            Dependency::Availability { kind, namespace } => {
                match source.availability(kind, namespace) {
                    Availability::Available => {}
                    other => entry(&mut refused, kind, namespace).availability = Some(other),
                }
            }
        }
    }
    let unavailable: Vec<Value> = refused
        .into_iter()
        .filter_map(|((kind, namespace), r)| {
            let availability = r.availability?;
            // Not served is the cluster's answer everywhere.
            let namespace = match availability {
                Availability::NotServed => String::new(),
                _ => namespace,
            };
            let mut entry = json!({
                "group": kind.group, "version": kind.version, "kind": kind.kind,
                "namespace": namespace, "availability": availability,
            });
            if r.direct_get {
                entry["directGet"] = Value::Bool(true);
            }
            Some(entry)
        })
        .collect();
    let mut deduped: Vec<Value> = Vec::new();
    for entry in unavailable {
        if !deduped.contains(&entry) {
            deduped.push(entry);
        }
    }
    SelectedReads {
        objects: objects.into_values().collect(),
        unavailable: deduped,
    }
}

/// The refusal of `kind` in `namespace`, recorded.
fn entry<'a>(
    refused: &'a mut BTreeMap<(KindRef, String), Refusal>,
    kind: &KindRef,
    namespace: &str,
) -> &'a mut Refusal {
    refused
        .entry((kind.clone(), namespace.to_owned()))
        .or_default()
}

/// How a fixture says a read was refused: forbidden, or not served (a
/// kind gone counts as not served).
fn unavailable(e: &SourceError) -> Availability {
    match e {
        SourceError::Forbidden { .. } => Availability::Forbidden,
        _ => Availability::NotServed,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::facts::known_kinds::{pod_kind, secret_kind};
    use crate::facts::{MemorySource, Selector};

    fn pod(name: &str, ns: &str, labels: Value, controller: Option<&str>) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": name, "namespace": ns, "labels": labels}});
        if let Some(uid) = controller {
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "x/v1", "kind": "X", "name": "p", "uid": uid, "controller": true}]);
        }
        p
    }

    fn names(selection: &SelectedReads) -> Vec<String> {
        selection
            .objects
            .iter()
            .map(|o| {
                format!(
                    "{} {}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str().unwrap_or_default(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn exactly_what_each_read_answered_is_selected_once() {
        let mut source = MemorySource::new();
        source.insert(pod("web-1", "a", json!({"app": "web"}), None));
        source.insert(pod("web-2", "a", json!({"app": "web"}), Some("uid-1")));
        source.insert(pod("db-1", "a", json!({"app": "db"}), Some("uid-1")));
        source.insert(pod("db-2", "a", json!({"app": "db"}), Some("uid-2")));
        source.insert(pod("web-3", "b", json!({"app": "web"}), None));
        source.insert(json!({"apiVersion": "v1", "kind": "Secret",
                             "metadata": {"name": "s", "namespace": "a"},
                             "data": {"password": "aHVudGVyMg=="}}));
        let selector = Selector::from_pairs([("app", "web")]);
        let reads = [
            Dependency::List {
                kind: pod_kind(),
                namespace: "a".into(),
                selector,
            },
            Dependency::Children {
                kind: pod_kind(),
                controller: "uid-1".into(),
            },
            Dependency::Object {
                kind: secret_kind(),
                namespace: "a".into(),
                name: "s".into(),
            },
            Dependency::Object {
                kind: secret_kind(),
                namespace: "a".into(),
                name: "absent".into(),
            },
        ];
        let selection = select(&reads, &source, "a");
        assert_eq!(
            names(&selection),
            ["Pod a/db-1", "Pod a/web-1", "Pod a/web-2", "Secret a/s"],
            "the web Pods of a, the children of uid-1, the Secret read; nothing else"
        );
        assert_eq!(
            selection.objects[3]["data"],
            json!({"password": ""}),
            "no Secret value"
        );
        assert!(selection.unavailable.is_empty());
    }

    #[test]
    fn refused_and_unserved_apis_are_unavailable_entries() {
        let route = KindRef {
            group: "route.openshift.io".into(),
            version: "v1".into(),
            kind: "Route".into(),
        };
        let object_store = KindRef {
            group: "barmancloud.cnpg.io".into(),
            version: "v1".into(),
            kind: "ObjectStore".into(),
        };
        let mut source = MemorySource::new();
        source.set_availability(route.clone(), "a", Availability::Forbidden);
        source.allow_direct_get(route.clone(), "a");
        source.insert(
            json!({"apiVersion": "route.openshift.io/v1", "kind": "Route",
                             "metadata": {"name": "r", "namespace": "a"}}),
        );
        source.set_availability(object_store.clone(), "", Availability::NotServed);
        let reads = [
            Dependency::Object {
                kind: route.clone(),
                namespace: "a".into(),
                name: "r".into(),
            },
            Dependency::Availability {
                kind: object_store.clone(),
                namespace: "a".into(),
            },
            Dependency::List {
                kind: object_store,
                namespace: "a".into(),
                selector: Selector::default(),
            },
        ];
        let selection = select(&reads, &source, "a");
        assert_eq!(names(&selection), ["Route a/r"], "read past the cache");
        assert_eq!(
            selection.unavailable,
            [
                json!({"group": "barmancloud.cnpg.io", "version": "v1", "kind": "ObjectStore",
                       "namespace": "", "availability": "not-served"}),
                json!({"group": "route.openshift.io", "version": "v1", "kind": "Route",
                       "namespace": "a", "availability": "forbidden", "directGet": true}),
            ]
        );
    }
}
