//! A cache's objects by namespace and name, indexed by label and by
//! controller, so a list by selector or of a parent's children reads only
//! the objects that can match rather than every one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::facts::selector::Requirement;
use crate::facts::{Cached, Selector};

/// An object's namespace ("" when cluster-scoped) and name.
pub type Key = (String, String);

/// A label, key and value.
type Label = (String, String);

/// The objects, in namespace and name order, the keys of the objects
/// carrying each label, and those of the objects each controller (by UID)
/// controls.
#[derive(Default)]
pub struct Objects {
    by_key: BTreeMap<Key, Arc<Cached>>,
    by_label: HashMap<Label, BTreeSet<Key>>,
    by_controller: HashMap<String, BTreeSet<Key>>,
}

fn labels(object: &Cached) -> impl Iterator<Item = Label> + '_ {
    object.labels().map(|(k, v)| (k.to_owned(), v.to_owned()))
}

impl Objects {
    pub fn get(&self, key: &Key) -> Option<&Arc<Cached>> {
        self.by_key.get(key)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The keys in `namespace` (every namespace when empty).
    pub fn keys_in<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Key> + 'a {
        self.in_namespace(namespace).map(|(k, _)| k)
    }

    fn in_namespace<'a>(
        &'a self,
        namespace: &'a str,
    ) -> Box<dyn Iterator<Item = (&'a Key, &'a Arc<Cached>)> + 'a> {
        if namespace.is_empty() {
            return Box::new(self.by_key.iter());
        }
        let start = (namespace.to_owned(), String::new());
        Box::new(
            self.by_key
                .range(start..)
                .take_while(move |((ns, _), _)| ns == namespace),
        )
    }

    /// Stores an object under its key; returns the one it replaced.
    pub fn insert(&mut self, key: Key, object: Arc<Cached>) -> Option<Arc<Cached>> {
        for label in labels(&object) {
            self.by_label.entry(label).or_default().insert(key.clone());
        }
        if let Some(uid) = object.controller_uid() {
            self.by_controller
                .entry(uid.to_owned())
                .or_default()
                .insert(key.clone());
        }
        let old = self.by_key.insert(key.clone(), object.clone());
        if let Some(old) = &old {
            self.unlabel(&key, old, Some(&object));
            self.uncontrol(&key, old, Some(&object));
        }
        old
    }

    /// Removes an object; returns it.
    pub fn remove(&mut self, key: &Key) -> Option<Arc<Cached>> {
        let old = self.by_key.remove(key)?;
        self.unlabel(key, &old, None);
        self.uncontrol(key, &old, None);
        Some(old)
    }

    /// Drops `key` from the controller `old` had, unless `new` (the object
    /// now under the key, if any) has the same.
    fn uncontrol(&mut self, key: &Key, old: &Cached, new: Option<&Cached>) {
        let Some(uid) = old.controller_uid() else {
            return;
        };
        if new.and_then(Cached::controller_uid) == Some(uid) {
            return;
        }
        if let Some(keys) = self.by_controller.get_mut(uid) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_controller.remove(uid);
            }
        }
    }

    /// The objects in `namespace` (every namespace when empty) whose
    /// controller has `uid`, in namespace and name order.
    pub fn controlled(&self, namespace: &str, uid: &str) -> Vec<Arc<Cached>> {
        self.by_controller
            .get(uid)
            .into_iter()
            .flatten()
            .filter(|(ns, _)| namespace.is_empty() || ns == namespace)
            .filter_map(|k| self.by_key.get(k))
            .cloned()
            .collect()
    }

    /// Drops `key` from the labels `old` carried and `new` (the object now
    /// under the key, if any) does not.
    fn unlabel(&mut self, key: &Key, old: &Cached, new: Option<&Cached>) {
        for label in labels(old) {
            let kept = new.is_some_and(|n| n.label(&label.0) == Some(label.1.as_str()));
            if kept {
                continue;
            }
            if let Some(keys) = self.by_label.get_mut(&label) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_label.remove(&label);
                }
            }
        }
    }

    /// The objects in `namespace` (every namespace when empty) that
    /// `selector` matches, in namespace and name order. A selector that
    /// requires a label (`matchLabels`, or `In`) reads only the objects
    /// carrying one of its values, the fewest it can; any other scans the
    /// namespace.
    pub fn select(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Cached>> {
        let in_scope = |(ns, _): &Key| namespace.is_empty() || ns == namespace;
        match self.candidates(selector) {
            Some(keys) => keys
                .into_iter()
                .filter(|k| in_scope(k))
                .filter_map(|k| self.by_key.get(k))
                .filter(|o| selector.matches_by(|k| o.label(k)))
                .cloned()
                .collect(),
            None => self
                .in_namespace(namespace)
                .map(|(_, o)| o)
                .filter(|o| selector.matches_by(|k| o.label(k)))
                .cloned()
                .collect(),
        }
    }

    /// The keys of the objects that can match `selector`, in order: for
    /// the required label carried by the fewest objects. `None`: the
    /// selector requires no label.
    fn candidates(&self, selector: &Selector) -> Option<BTreeSet<&Key>> {
        let carrying = |k: &String, v: &String| {
            self.by_label
                .get(&(k.clone(), v.clone()))
                .into_iter()
                .flatten()
        };
        let required = selector
            .match_labels
            .iter()
            .map(|(k, v)| carrying(k, v).collect::<BTreeSet<_>>());
        let any_of = selector.match_expressions.iter().filter_map(|r| match r {
            Requirement::In(k, values) => {
                Some(values.iter().flat_map(|v| carrying(k, v)).collect())
            }
            _ => None,
        });
        required.chain(any_of).min_by_key(BTreeSet::len)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn object(ns: &str, name: &str, labels: Value) -> Arc<Cached> {
        Cached::new(Arc::new(json!({
            "metadata": {"namespace": ns, "name": name, "labels": labels}
        })))
    }

    fn key(ns: &str, name: &str) -> Key {
        (ns.to_owned(), name.to_owned())
    }

    fn names(found: Vec<Arc<Cached>>) -> Vec<String> {
        found.iter().map(|o| o.name().to_owned()).collect()
    }

    fn filled() -> Objects {
        let mut objects = Objects::default();
        for (ns, name, labels) in [
            ("a", "p-2", json!({"app": "db", "tier": "x"})),
            ("a", "p-1", json!({"app": "db"})),
            ("a", "p-3", json!({"app": "web"})),
            ("b", "p-1", json!({"app": "db"})),
            ("ab", "p-1", json!({"app": "db"})),
            ("a", "bare", json!(null)),
        ] {
            objects.insert(key(ns, name), object(ns, name, labels));
        }
        objects
    }

    /// What every selector must answer: a scan of every object.
    fn scanned(objects: &Objects, namespace: &str, selector: &Selector) -> Vec<String> {
        names(
            objects
                .by_key
                .iter()
                .filter(|((ns, _), _)| namespace.is_empty() || ns == namespace)
                .filter(|(_, o)| selector.matches_object(&o.value()))
                .map(|(_, o)| o.clone())
                .collect(),
        )
    }

    #[test]
    fn every_kind_of_selector_answers_as_a_scan_in_name_order() {
        let objects = filled();
        let selectors = [
            json!({}),
            json!({"matchLabels": {"app": "db"}}),
            json!({"matchLabels": {"app": "db", "tier": "x"}}),
            json!({"matchLabels": {"app": "none"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}),
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}),
            json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        ];
        for selector in selectors.iter().map(Selector::from_json) {
            for ns in ["", "a", "b", "ab", "c"] {
                assert_eq!(
                    names(objects.select(ns, &selector)),
                    scanned(&objects, ns, &selector),
                    "{selector} in {ns:?}"
                );
            }
        }
        assert_eq!(
            names(objects.select("a", &Selector::from_pairs([("app", "db")]))),
            ["p-1", "p-2"]
        );
    }

    fn owned(name: &str, controller: &str) -> Arc<Cached> {
        Cached::new(Arc::new(
            json!({"metadata": {"namespace": "a", "name": name,
            "ownerReferences": [
                {"uid": "other", "controller": false},
                {"uid": controller, "controller": true}]}}),
        ))
    }

    #[test]
    fn the_children_of_a_controller_follow_its_owner_references() {
        let mut objects = filled();
        for (name, controller) in [("c-2", "u1"), ("c-1", "u1"), ("c-3", "u2")] {
            objects.insert(key("a", name), owned(name, controller));
        }
        assert_eq!(names(objects.controlled("a", "u1")), ["c-1", "c-2"]);
        assert_eq!(names(objects.controlled("", "u1")), ["c-1", "c-2"]);
        assert!(objects.controlled("b", "u1").is_empty());
        assert!(
            objects.controlled("a", "other").is_empty(),
            "not a controller"
        );
        objects.insert(key("a", "c-1"), owned("c-1", "u2"));
        objects.remove(&key("a", "c-2"));
        assert!(objects.controlled("a", "u1").is_empty());
        assert_eq!(names(objects.controlled("a", "u2")), ["c-1", "c-3"]);
        assert!(!objects.by_controller.contains_key("u1"), "pruned");
    }

    #[test]
    fn a_relabelled_or_removed_object_leaves_the_index() {
        let mut objects = filled();
        let db = Selector::from_pairs([("app", "db")]);
        objects.insert(key("a", "p-1"), object("a", "p-1", json!({"app": "web"})));
        assert_eq!(names(objects.select("a", &db)), ["p-2"]);
        objects.remove(&key("a", "p-2"));
        assert!(objects.select("a", &db).is_empty());
        objects.remove(&key("b", "p-1"));
        objects.remove(&key("ab", "p-1"));
        assert!(
            !objects
                .by_label
                .contains_key(&("app".to_owned(), "db".to_owned())),
            "a label no object carries is dropped"
        );
        let carried: Vec<&Label> = objects.by_label.keys().collect();
        assert_eq!(carried, [&("app".to_owned(), "web".to_owned())]);
    }
}
