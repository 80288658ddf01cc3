//! A cache's objects by namespace and name, indexed by label and by
//! controller, so a list by selector or of a parent's children reads only
//! the objects that can match rather than every one.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::facts::selector::Requirement;
use crate::facts::{Cached, Selector};

/// The objects, in namespace and name order; the objects carrying each
/// label (by key, then value), and those each controller (by UID)
/// controls, each a [`Set`].
#[derive(Default)]
pub struct Objects {
    by_key: BTreeSet<ByKey>,
    by_label: HashMap<Box<str>, HashMap<Box<str>, Set>>,
    by_controller: HashMap<Box<str>, Set>,
}

/// An object filed by its namespace ("" when cluster-scoped) and name,
/// read from the object: a key of two strings of its own would cost more
/// than the entry.
struct ByKey(Arc<Cached>);

/// A namespace and name: an object's, or one looked up.
trait Keyed {
    fn key(&self) -> (&str, &str);
}

impl Keyed for ByKey {
    fn key(&self) -> (&str, &str) {
        order(&self.0)
    }
}

impl Keyed for (&str, &str) {
    fn key(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn Keyed + 'a> for ByKey {
    fn borrow(&self) -> &(dyn Keyed + 'a) {
        self
    }
}

impl Ord for dyn Keyed + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for dyn Keyed + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for dyn Keyed + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for dyn Keyed + '_ {}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ByKey {}

/// Objects in namespace and name order: pointers to what `by_key` holds,
/// so an index costs a pointer an entry (a label most objects carry, such
/// as an app name, is one long vector; one only its object carries, such
/// as a Pod's template hash or its controller, a pointer held in place).
#[derive(Default)]
struct Set(SmallVec<[Arc<Cached>; 1]>);

fn order(object: &Cached) -> (&str, &str) {
    (object.namespace(), object.name())
}

impl Set {
    fn insert(&mut self, object: &Arc<Cached>) {
        match self.0.binary_search_by(|o| order(o).cmp(&order(object))) {
            Ok(at) => self.0[at] = object.clone(),
            Err(at) => self.0.insert(at, object.clone()),
        }
    }

    /// Removes the object under `object`'s key; whether the set is empty.
    fn remove(&mut self, object: &Cached) -> bool {
        if let Ok(at) = self.0.binary_search_by(|o| order(o).cmp(&order(object))) {
            self.0.remove(at);
        }
        self.0.is_empty()
    }
}

impl Objects {
    pub fn get(&self, namespace: &str, name: &str) -> Option<&Arc<Cached>> {
        let key: &dyn Keyed = &(namespace, name);
        self.by_key.get(key).map(|o| &o.0)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The keys (namespace and name) in `namespace` (every namespace
    /// when empty).
    pub(crate) fn keys_in<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.in_namespace(namespace).map(|o| order(o))
    }

    fn in_namespace<'a>(
        &'a self,
        namespace: &'a str,
    ) -> Box<dyn Iterator<Item = &'a Arc<Cached>> + 'a> {
        let all = self.by_key.iter().map(|o| &o.0);
        if namespace.is_empty() {
            return Box::new(all);
        }
        let start: &dyn Keyed = &(namespace, "");
        Box::new(
            self.by_key
                .range::<dyn Keyed, _>((Bound::Included(start), Bound::Unbounded))
                .map(|o| &o.0)
                .take_while(move |o| o.namespace() == namespace),
        )
    }

    /// Stores an object under its namespace and name; returns the one it
    /// replaced.
    pub fn insert(&mut self, object: Arc<Cached>) -> Option<Arc<Cached>> {
        let old = self.by_key.replace(ByKey(object.clone())).map(|o| o.0);
        if let Some(old) = &old {
            self.unindex(old);
        }
        for (k, v) in object.labels() {
            // Looked up before a key is made: the key and most values are
            // filed already.
            if !self.by_label.contains_key(k) {
                self.by_label.insert(k.into(), HashMap::new());
            }
            let values = self.by_label.get_mut(k).expect("filed above");
            if !values.contains_key(v) {
                values.insert(v.into(), Set::default());
            }
            values.get_mut(v).expect("filed above").insert(&object);
        }
        if let Some(uid) = object.controller_uid() {
            self.by_controller
                .entry(uid.into())
                .or_default()
                .insert(&object);
        }
        old
    }

    /// Removes an object; returns it.
    pub fn remove(&mut self, namespace: &str, name: &str) -> Option<Arc<Cached>> {
        let key: &dyn Keyed = &(namespace, name);
        let old = self.by_key.take(key)?.0;
        self.unindex(&old);
        Some(old)
    }

    /// Drops an object from the sets of its labels and controller, and
    /// every set it leaves empty.
    fn unindex(&mut self, old: &Cached) {
        for (k, v) in old.labels() {
            let Some(values) = self.by_label.get_mut(k) else {
                continue;
            };
            if values.get_mut(v).is_some_and(|s| s.remove(old)) {
                values.remove(v);
                if values.is_empty() {
                    self.by_label.remove(k);
                }
            }
        }
        if let Some(uid) = old.controller_uid()
            && self
                .by_controller
                .get_mut(uid)
                .is_some_and(|s| s.remove(old))
        {
            self.by_controller.remove(uid);
        }
    }

    /// The objects in `namespace` (every namespace when empty) whose
    /// controller has `uid`, in namespace and name order.
    pub fn controlled(&self, namespace: &str, uid: &str) -> Vec<Arc<Cached>> {
        self.by_controller
            .get(uid)
            .into_iter()
            .flat_map(|s| &s.0)
            .filter(|o| namespace.is_empty() || o.namespace() == namespace)
            .cloned()
            .collect()
    }

    /// The objects in `namespace` (every namespace when empty) that
    /// `selector` matches, in namespace and name order. A selector that
    /// requires a label (`matchLabels`, or `In`) reads only the objects
    /// carrying one of its values, the fewest it can; any other scans the
    /// namespace.
    pub fn select(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Cached>> {
        let in_scope = |o: &Cached| namespace.is_empty() || o.namespace() == namespace;
        match self.candidates(selector) {
            Some(objects) => objects
                .into_iter()
                .filter(|o| in_scope(o))
                .filter(|o| selector.matches_by(|k| o.label(k)))
                .cloned()
                .collect(),
            None => self
                .in_namespace(namespace)
                .filter(|o| selector.matches_by(|k| o.label(k)))
                .cloned()
                .collect(),
        }
    }

    /// The objects that can match `selector`, in order: those carrying
    /// the required label the fewest objects carry (for an `In`, any of
    /// its values). `None`: the selector requires no label.
    fn candidates(&self, selector: &Selector) -> Option<Vec<&Arc<Cached>>> {
        let carrying = |k: &str, v: &str| -> &[Arc<Cached>] {
            self.by_label
                .get(k)
                .and_then(|values| values.get(v))
                .map_or(&[], |s| &s.0[..])
        };
        // Only the smallest set is copied: a label most objects carry (an
        // app name) would be thousands of pointers a pass.
        let required = selector
            .match_labels
            .iter()
            .map(|(k, v)| vec![carrying(k, v)]);
        let any_of = selector.match_expressions.iter().filter_map(|r| match r {
            Requirement::In(k, values) => Some(values.iter().map(|v| carrying(k, v)).collect()),
            _ => None,
        });
        let fewest: Vec<&[Arc<Cached>]> = required
            .chain(any_of)
            .min_by_key(|sets: &Vec<&[Arc<Cached>]>| sets.iter().map(|s| s.len()).sum::<usize>())?;
        let mut found: Vec<&Arc<Cached>> = fewest.into_iter().flatten().collect();
        found.sort_by(|a, b| order(a).cmp(&order(b)));
        found.dedup_by(|a, b| Arc::ptr_eq(a, b));
        Some(found)
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
            objects.insert(object(ns, name, labels));
        }
        objects
    }

    /// What every selector must answer: a scan of every object.
    fn scanned(objects: &Objects, namespace: &str, selector: &Selector) -> Vec<String> {
        names(
            objects
                .by_key
                .iter()
                .map(|o| &o.0)
                .filter(|o| namespace.is_empty() || o.namespace() == namespace)
                .filter(|o| selector.matches(&Selector::labels_of(&o.value())))
                .cloned()
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
            objects.insert(owned(name, controller));
        }
        assert_eq!(names(objects.controlled("a", "u1")), ["c-1", "c-2"]);
        assert_eq!(names(objects.controlled("", "u1")), ["c-1", "c-2"]);
        assert!(objects.controlled("b", "u1").is_empty());
        assert!(
            objects.controlled("a", "other").is_empty(),
            "not a controller"
        );
        objects.insert(owned("c-1", "u2"));
        objects.remove("a", "c-2");
        assert!(objects.controlled("a", "u1").is_empty());
        assert_eq!(names(objects.controlled("a", "u2")), ["c-1", "c-3"]);
        assert!(!objects.by_controller.contains_key("u1"), "pruned");
    }

    #[test]
    fn a_relabelled_or_removed_object_leaves_the_index() {
        let mut objects = filled();
        let db = Selector::from_pairs([("app", "db")]);
        objects.insert(object("a", "p-1", json!({"app": "web"})));
        assert_eq!(names(objects.select("a", &db)), ["p-2"]);
        objects.remove("a", "p-2");
        assert!(objects.select("a", &db).is_empty());
        objects.remove("b", "p-1");
        objects.remove("ab", "p-1");
        let carried: Vec<(&str, &str)> = objects
            .by_label
            .iter()
            .flat_map(|(k, values)| values.keys().map(|v| (&**k, &**v)))
            .collect();
        assert_eq!(
            carried,
            [("app", "web")],
            "a label no object carries is dropped"
        );
        let keys: Vec<&str> = objects.by_label.keys().map(|k| &**k).collect();
        assert_eq!(keys, ["app"], "and a key none carries (tier)");
        assert_eq!(
            names(objects.select("a", &Selector::from_pairs([("app", "web")]))),
            ["p-1", "p-3"]
        );
    }
}
