//! The dependency index: which parents read which objects, so a watch event
//! re-queues exactly the parents whose last pass read the changed object,
//! and a kind that stops or starts being served re-queues every parent
//! that read anything of it there.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hash;
use std::sync::Arc;

use reconciler_conventions::kind::KindRef;

use crate::facts::{Dependency, Selector};
use crate::operator::schedule::filed::filed;
use crate::operator::schedule::parents::Parents;
use crate::operator::schedule::selections::Selections;

/// Parents by what they read, and each parent's reads.
///
/// A parent is held once, behind a pointer every entry of its reads
/// shares (a key's strings copied into each of a pass's dozen entries cost
/// more than the entries), and its reads as a slice (a B-tree set's first
/// node holds eleven reads however few there are), each naming its kind,
/// namespace, name and selector by the pointers their buckets are filed
/// under ([`Held`]): a string or selector is held once however many
/// parents read it.
///
/// Object reads are indexed by kind, namespace and name; list and
/// availability reads by kind and namespace, the empty namespace being the
/// all-namespaces bucket. An object event looks up one object bucket and at
/// most two list buckets, and tries only the selectors in those that can
/// match its labels ([`Selections`]); a flip
/// of a kind's served state takes every read of the kind in its namespace
/// buckets.
#[derive(Debug)]
pub(crate) struct DependencyIndex<P> {
    reads: HashMap<Arc<P>, Box<[Held]>>,
    by_kind: HashMap<Arc<KindRef>, KindIndex<Arc<P>>>,
}

/// A read as the index keeps it: a [`Dependency`] whose kind, strings
/// and selector are the keys of the buckets it is filed in, shared.
#[derive(Debug)]
struct Held {
    kind: Arc<KindRef>,
    read: Read,
}

/// What a [`Held`] read names of its kind.
#[derive(Debug)]
enum Read {
    Object {
        namespace: Arc<str>,
        name: Arc<str>,
    },
    List {
        namespace: Arc<str>,
        selector: Arc<Selector>,
    },
    Children {
        controller: Arc<str>,
    },
    Availability {
        namespace: Arc<str>,
    },
}

impl Held {
    /// Whether it is the read `dependency`.
    fn is(&self, dependency: &Dependency) -> bool {
        *self.kind == *kind_of(dependency)
            && match (&self.read, dependency) {
                (
                    Read::Object { namespace, name },
                    Dependency::Object {
                        namespace: n,
                        name: m,
                        ..
                    },
                ) => **namespace == **n && **name == **m,
                (
                    Read::List {
                        namespace,
                        selector,
                    },
                    Dependency::List {
                        namespace: n,
                        selector: s,
                        ..
                    },
                ) => **namespace == **n && **selector == *s,
                (Read::Children { controller }, Dependency::Children { controller: c, .. }) => {
                    **controller == **c
                }
                (
                    Read::Availability { namespace },
                    Dependency::Availability { namespace: n, .. },
                ) => **namespace == **n,
                _ => false,
            }
    }

    /// The read as a [`Dependency`].
    #[cfg(test)]
    fn dependency(&self) -> Dependency {
        let kind = KindRef::clone(&self.kind);
        match &self.read {
            Read::Object { namespace, name } => Dependency::Object {
                kind,
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            Read::List {
                namespace,
                selector,
            } => Dependency::List {
                kind,
                namespace: namespace.to_string(),
                selector: Selector::clone(selector),
            },
            Read::Children { controller } => Dependency::Children {
                kind,
                controller: controller.to_string(),
            },
            Read::Availability { namespace } => Dependency::Availability {
                kind,
                namespace: namespace.to_string(),
            },
        }
    }
}

/// The kind a read is of.
fn kind_of(read: &Dependency) -> &KindRef {
    let (Dependency::Object { kind, .. }
    | Dependency::List { kind, .. }
    | Dependency::Availability { kind, .. }
    | Dependency::Children { kind, .. }) = read;
    kind
}

/// One kind's reads.
#[derive(Debug)]
struct KindIndex<P> {
    /// namespace → name → parents that read that object.
    objects: HashMap<Arc<str>, HashMap<Arc<str>, Parents<P>>>,
    /// namespace ("" = all) → selectors and the parents that listed with
    /// them.
    lists: HashMap<Arc<str>, Selections<P>>,
    /// namespace → parents that asked whether the kind can be read there.
    availability: HashMap<Arc<str>, Parents<P>>,
    /// controller UID → parents that read their children of the kind.
    children: HashMap<Arc<str>, Parents<P>>,
}

impl<P> Default for KindIndex<P> {
    fn default() -> Self {
        KindIndex {
            objects: HashMap::new(),
            lists: HashMap::new(),
            availability: HashMap::new(),
            children: HashMap::new(),
        }
    }
}

impl<P> KindIndex<P> {
    fn is_empty(&self) -> bool {
        self.objects.is_empty()
            && self.lists.is_empty()
            && self.availability.is_empty()
            && self.children.is_empty()
    }
}

/// The buckets of `map` a watch of `namespace` covers: every bucket for
/// an all-namespaces watch (""), else the namespace's own and the
/// all-namespaces one.
fn covered<'a, V>(
    map: &'a HashMap<Arc<str>, V>,
    namespace: &'a str,
) -> Box<dyn Iterator<Item = &'a V> + 'a> {
    if namespace.is_empty() {
        Box::new(map.values())
    } else {
        Box::new([namespace, ""].into_iter().filter_map(|ns| map.get(ns)))
    }
}

impl<P: Clone + Eq + Hash + Ord> Default for DependencyIndex<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Clone + Eq + Hash + Ord> DependencyIndex<P> {
    pub(crate) fn new() -> Self {
        DependencyIndex {
            reads: HashMap::new(),
            by_kind: HashMap::new(),
        }
    }

    /// Records what the parent's latest pass read, replacing what its
    /// previous pass read. A parent that read nothing is dropped.
    pub(crate) fn replace(&mut self, parent: &P, reads: BTreeSet<Dependency>) {
        let (shared, old) = self.take(parent);
        let mut old: Vec<Option<Held>> = old.into_iter().map(Some).collect();
        let mut held = Vec::with_capacity(reads.len());
        for read in &reads {
            let kept = old
                .iter_mut()
                .find(|h| h.as_ref().is_some_and(|h| h.is(read)))
                .and_then(Option::take);
            held.push(kept.unwrap_or_else(|| self.index(&shared, read)));
        }
        for gone in old.into_iter().flatten() {
            self.unindex(&shared, &gone);
        }
        self.keep(shared, held);
    }

    /// Adds to what the parent's latest pass read (a second evaluation of
    /// that pass).
    pub(crate) fn extend(&mut self, parent: &P, reads: BTreeSet<Dependency>) {
        let (shared, old) = self.take(parent);
        let mut held = old.into_vec();
        for read in &reads {
            if !held.iter().any(|h| h.is(read)) {
                let added = self.index(&shared, read);
                held.push(added);
            }
        }
        self.keep(shared, held);
    }

    /// The parent's reads, taken out, and the parent as they share it.
    fn take(&mut self, parent: &P) -> (Arc<P>, Box<[Held]>) {
        self.reads
            .remove_entry(parent)
            .unwrap_or_else(|| (Arc::new(parent.clone()), Box::default()))
    }

    /// Holds the parent's reads, if any.
    fn keep(&mut self, parent: Arc<P>, held: Vec<Held>) {
        if !held.is_empty() {
            self.reads.insert(parent, held.into_boxed_slice());
        }
    }

    /// The parent was deleted: drops all its entries.
    pub(crate) fn remove(&mut self, parent: &P) {
        self.replace(parent, BTreeSet::new());
    }

    /// Parents that read this object: by key, or through a list whose
    /// namespace and selector match the object's labels before OR after the
    /// change (a label change can leave or join a selection). `None` labels
    /// mean the object did not exist on that side of the change.
    pub(crate) fn affected(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        old_labels: Option<&BTreeMap<String, String>>,
        new_labels: Option<&BTreeMap<String, String>>,
    ) -> BTreeSet<P> {
        let mut found = BTreeSet::new();
        let Some(index) = self.by_kind.get(kind) else {
            return found;
        };
        if let Some(parents) = index.objects.get(namespace).and_then(|n| n.get(name)) {
            found.extend(owned(parents));
        }
        let all_namespaces = (!namespace.is_empty()).then_some("");
        for bucket in std::iter::once(namespace).chain(all_namespaces) {
            let Some(selections) = index.lists.get(bucket) else {
                continue;
            };
            for labels in [old_labels, new_labels].into_iter().flatten() {
                for parents in selections.matching(labels) {
                    found.extend(owned(parents));
                }
            }
        }
        found
    }

    /// Parents that read their children of `kind` and control the changed
    /// object before or after the change (`controllers`: its controllers'
    /// UIDs on either side).
    pub(crate) fn controlling<'a>(
        &self,
        kind: &KindRef,
        controllers: impl IntoIterator<Item = &'a str>,
    ) -> BTreeSet<P> {
        let Some(index) = self.by_kind.get(kind) else {
            return BTreeSet::new();
        };
        controllers
            .into_iter()
            .filter_map(|uid| index.children.get(uid))
            .flat_map(owned)
            .collect()
    }

    /// Parents whose latest pass read anything of `kind` where a watch of
    /// `namespace` ("" for all namespaces, or a cluster-scoped kind's
    /// watch) looks: an object, a list or the kind's availability, in that
    /// namespace or across every namespace. What a flip of the kind's
    /// served state there concerns: every such read now answers otherwise
    /// (`not-served`, or served again), though no object may have changed.
    pub(crate) fn reading_kind(&self, kind: &KindRef, namespace: &str) -> BTreeSet<P> {
        let mut found = BTreeSet::new();
        let Some(index) = self.by_kind.get(kind) else {
            return found;
        };
        for by_name in covered(&index.objects, namespace) {
            found.extend(by_name.values().flat_map(owned));
        }
        for selections in covered(&index.lists, namespace) {
            found.extend(selections.iter().flat_map(|(_, p)| owned(p)));
        }
        for parents in covered(&index.availability, namespace) {
            found.extend(owned(parents));
        }
        found.extend(index.children.values().flat_map(owned));
        found
    }

    /// Parents with at least one read.
    #[cfg(test)]
    pub(crate) fn parents(&self) -> usize {
        self.reads.len()
    }

    /// (read, parent) pairs in the index.
    pub(crate) fn entries(&self) -> usize {
        self.by_kind
            .values()
            .map(|index| {
                let objects: usize = index
                    .objects
                    .values()
                    .flat_map(|n| n.values())
                    .map(Parents::len)
                    .sum();
                let lists: usize = index
                    .lists
                    .values()
                    .flat_map(Selections::iter)
                    .map(|(_, parents)| parents.len())
                    .sum();
                let availability: usize = index.availability.values().map(Parents::len).sum();
                let children: usize = index.children.values().map(Parents::len).sum();
                objects + lists + availability + children
            })
            .sum()
    }

    /// What the parent's latest pass read.
    #[cfg(test)]
    pub(crate) fn reads_of(&self, parent: &P) -> Option<BTreeSet<Dependency>> {
        self.reads
            .get(parent)
            .map(|reads| reads.iter().map(Held::dependency).collect())
    }

    /// Files `parent` under `read`; the read as held.
    fn index(&mut self, parent: &Arc<P>, read: &Dependency) -> Held {
        let (kind, index) = filed(&mut self.by_kind, kind_of(read), |k| Arc::new(k.clone()));
        let read = match read {
            Dependency::Object {
                namespace, name, ..
            } => {
                let (namespace, by_name) = filed(&mut index.objects, namespace, shared);
                let (name, parents) = filed(by_name, name, shared);
                parents.insert(parent.clone());
                Read::Object { namespace, name }
            }
            Dependency::List {
                namespace,
                selector,
                ..
            } => {
                let (namespace, selections) = filed(&mut index.lists, namespace, shared);
                let selector = selections.insert(selector, parent.clone());
                Read::List {
                    namespace,
                    selector,
                }
            }
            Dependency::Availability { namespace, .. } => {
                let (namespace, parents) = filed(&mut index.availability, namespace, shared);
                parents.insert(parent.clone());
                Read::Availability { namespace }
            }
            Dependency::Children { controller, .. } => {
                let (controller, parents) = filed(&mut index.children, controller, shared);
                parents.insert(parent.clone());
                Read::Children { controller }
            }
        };
        Held { kind, read }
    }

    /// Removes one entry, and every bucket it leaves empty.
    fn unindex(&mut self, parent: &Arc<P>, held: &Held) {
        let Some(index) = self.by_kind.get_mut(&held.kind) else {
            return;
        };
        match &held.read {
            Read::Object { namespace, name } => {
                remove_nested(&mut index.objects, namespace, name, parent);
            }
            Read::List {
                namespace,
                selector,
            } => {
                if let Some(selections) = index.lists.get_mut(namespace) {
                    selections.remove(selector, parent);
                    if selections.is_empty() {
                        index.lists.remove(namespace);
                    }
                }
            }
            Read::Availability { namespace } => remove(&mut index.availability, namespace, parent),
            Read::Children { controller } => remove(&mut index.children, controller, parent),
        }
        if index.is_empty() {
            self.by_kind.remove(&held.kind);
        }
    }
}

/// The parents of `parents`, each its own copy.
fn owned<P: Clone + Ord>(parents: &Parents<Arc<P>>) -> impl Iterator<Item = P> + '_ {
    parents.iter().map(|p| P::clone(p))
}

/// A bucket's key, made once for every read to share.
fn shared(key: &str) -> Arc<str> {
    key.into()
}

/// Removes `parent` from `map[key]`, pruning it when emptied.
fn remove<P: Ord>(map: &mut HashMap<Arc<str>, Parents<P>>, key: &str, parent: &P) {
    if let Some(parents) = map.get_mut(key) {
        parents.remove(parent);
        if parents.is_empty() {
            map.remove(key);
        }
    }
}

/// Removes `parent` from `map[outer][inner]`, pruning emptied maps.
fn remove_nested<P: Ord>(
    map: &mut HashMap<Arc<str>, HashMap<Arc<str>, Parents<P>>>,
    outer: &str,
    inner: &str,
    parent: &P,
) {
    let Some(by_inner) = map.get_mut(outer) else {
        return;
    };
    remove(by_inner, inner, parent);
    if by_inner.is_empty() {
        map.remove(outer);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::facts::known_kinds::{config_map_kind, pod_kind};
    use crate::facts::selector::Requirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn object(kind: KindRef, namespace: &str, name: &str) -> Dependency {
        Dependency::Object {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    fn list(kind: KindRef, namespace: &str, pairs: &[(&str, &str)]) -> Dependency {
        Dependency::List {
            kind,
            namespace: namespace.to_owned(),
            selector: Selector::from_pairs(pairs.iter().copied()),
        }
    }

    fn availability(kind: KindRef, namespace: &str) -> Dependency {
        Dependency::Availability {
            kind,
            namespace: namespace.to_owned(),
        }
    }

    fn reads(deps: impl IntoIterator<Item = Dependency>) -> BTreeSet<Dependency> {
        deps.into_iter().collect()
    }

    fn set(parents: &[&'static str]) -> BTreeSet<&'static str> {
        parents.iter().copied().collect()
    }

    #[test]
    fn a_replaced_set_no_longer_matches_the_old_reads() {
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([object(config_map_kind(), "ns", "old")]));
        index.replace(&"a", reads([object(config_map_kind(), "ns", "new")]));

        let old = index.affected(&config_map_kind(), "ns", "old", None, None);
        let new = index.affected(&config_map_kind(), "ns", "new", None, None);

        assert_eq!(old, set(&[]));
        assert_eq!(new, set(&["a"]));
        assert_eq!(index.entries(), 1);
        assert_eq!(
            index.reads_of(&"a"),
            Some(reads([object(config_map_kind(), "ns", "new")]))
        );
    }

    #[test]
    fn removal_drops_every_entry() {
        let mut index = DependencyIndex::new();
        index.replace(
            &"a",
            reads([
                object(config_map_kind(), "ns", "cm"),
                list(pod_kind(), "ns", &[("app", "x")]),
                list(pod_kind(), "", &[]),
            ]),
        );
        index.replace(&"b", reads([object(config_map_kind(), "ns", "cm")]));
        assert_eq!((index.parents(), index.entries()), (2, 4));

        index.remove(&"a");
        index.remove(&"b");

        assert_eq!((index.parents(), index.entries()), (0, 0));
        assert!(index.by_kind.is_empty(), "empty buckets are pruned");
        assert_eq!(index.reads_of(&"a"), None);
    }

    #[test]
    fn a_list_read_matches_an_object_joining_or_leaving_the_selection() {
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([list(pod_kind(), "ns", &[("app", "x")])]));
        let selected = labels(&[("app", "x")]);
        let other = labels(&[("app", "y")]);

        let joined = index.affected(&pod_kind(), "ns", "p", Some(&other), Some(&selected));
        let left = index.affected(&pod_kind(), "ns", "p", Some(&selected), Some(&other));
        let created = index.affected(&pod_kind(), "ns", "p", None, Some(&selected));
        let deleted = index.affected(&pod_kind(), "ns", "p", Some(&selected), None);
        let never = index.affected(&pod_kind(), "ns", "p", Some(&other), Some(&other));

        assert_eq!(joined, set(&["a"]));
        assert_eq!(left, set(&["a"]));
        assert_eq!(created, set(&["a"]));
        assert_eq!(deleted, set(&["a"]));
        assert_eq!(never, set(&[]));
    }

    #[test]
    fn a_read_of_another_kind_or_namespace_does_not_match() {
        let mut index = DependencyIndex::new();
        index.replace(
            &"a",
            reads([
                object(config_map_kind(), "ns", "cm"),
                list(pod_kind(), "ns", &[]),
            ]),
        );
        let any = labels(&[]);

        let other_kind = index.affected(&pod_kind(), "ns", "cm", None, None);
        let other_namespace = index.affected(&config_map_kind(), "other", "cm", None, None);
        let other_list_namespace = index.affected(&pod_kind(), "other", "p", Some(&any), None);
        let other_list_kind = index.affected(&config_map_kind(), "ns", "p", Some(&any), None);

        assert_eq!(other_kind, set(&[]));
        assert_eq!(other_namespace, set(&[]));
        assert_eq!(other_list_namespace, set(&[]));
        assert_eq!(other_list_kind, set(&[]));
    }

    #[test]
    fn an_all_namespaces_list_matches_any_namespace() {
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([list(pod_kind(), "", &[("app", "x")])]));
        let selected = labels(&[("app", "x")]);

        for namespace in ["ns", "other", ""] {
            let found = index.affected(&pod_kind(), namespace, "p", None, Some(&selected));
            assert_eq!(found, set(&["a"]), "namespace {namespace:?}");
        }
    }

    #[test]
    fn two_parents_reading_one_object_are_both_returned() {
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([object(config_map_kind(), "ns", "cm")]));
        index.replace(&"b", reads([object(config_map_kind(), "ns", "cm")]));
        index.replace(&"c", reads([object(config_map_kind(), "ns", "other")]));

        let found = index.affected(&config_map_kind(), "ns", "cm", None, None);

        assert_eq!(found, set(&["a", "b"]));
    }

    #[test]
    fn children_are_what_a_parent_controls_before_or_after_a_change() {
        let children = |controller: &str| Dependency::Children {
            kind: config_map_kind(),
            controller: controller.to_owned(),
        };
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([children("uid-a")]));
        index.replace(&"b", reads([children("uid-b")]));
        let cm = config_map_kind();
        assert_eq!(index.controlling(&cm, ["uid-a"]), set(&["a"]));
        assert_eq!(
            index.controlling(&cm, ["uid-a", "uid-b"]),
            set(&["a", "b"]),
            "a child handed from a to b concerns both"
        );
        assert!(
            index.controlling(&cm, ["uid-c"]).is_empty(),
            "another owner's"
        );
        assert!(index.controlling(&pod_kind(), ["uid-a"]).is_empty());
        assert!(
            index
                .affected(&cm, "ns", "unrelated", None, Some(&labels(&[])))
                .is_empty(),
            "an object nobody controls concerns no parent"
        );
        assert_eq!(index.reading_kind(&cm, "ns"), set(&["a", "b"]));
        assert_eq!(index.entries(), 2);
        index.remove(&"a");
        assert!(index.controlling(&cm, ["uid-a"]).is_empty());
        assert_eq!(index.entries(), 1);
    }

    #[test]
    fn a_served_flip_takes_every_read_of_the_kind_in_its_namespace() {
        let store = object_store_kind();
        let mut index = DependencyIndex::new();
        // The agent that found its ObjectStore missing, the one told the
        // API is not served, one listing, one across every namespace.
        index.replace(&"missing", reads([object(store.clone(), "a", "backups")]));
        index.replace(&"not-served", reads([availability(store.clone(), "a")]));
        index.replace(&"listed", reads([list(store.clone(), "a", &[("x", "1")])]));
        index.replace(&"everywhere", reads([list(store.clone(), "", &[])]));
        index.replace(&"elsewhere", reads([object(store.clone(), "b", "backups")]));
        index.replace(&"other-kind", reads([object(pod_kind(), "a", "backups")]));

        let in_a = index.reading_kind(&store, "a");
        let in_b = index.reading_kind(&store, "b");
        let in_c = index.reading_kind(&store, "c");
        let all = index.reading_kind(&store, "");

        assert_eq!(
            in_a,
            set(&["missing", "not-served", "listed", "everywhere"])
        );
        assert_eq!(in_b, set(&["elsewhere", "everywhere"]));
        assert_eq!(in_c, set(&["everywhere"]));
        assert_eq!(
            all,
            set(&["missing", "not-served", "listed", "everywhere", "elsewhere"])
        );
        assert_eq!(index.reading_kind(&config_map_kind(), ""), set(&[]));
    }

    #[test]
    fn an_availability_read_is_no_object_read_and_is_dropped_with_the_parent() {
        let store = object_store_kind();
        let mut index = DependencyIndex::new();
        index.replace(&"a", reads([availability(store.clone(), "ns")]));
        let any = labels(&[]);

        assert_eq!(
            index.affected(&store, "ns", "backups", Some(&any), Some(&any)),
            set(&[]),
            "an object event does not change what availability answers"
        );
        assert_eq!((index.parents(), index.entries()), (1, 1));

        index.replace(&"a", reads([object(store.clone(), "ns", "backups")]));
        assert_eq!(index.reading_kind(&store, "ns"), set(&["a"]));
        assert_eq!(index.entries(), 1);
        index.remove(&"a");
        assert!(index.by_kind.is_empty(), "empty buckets are pruned");
    }

    fn object_store_kind() -> KindRef {
        KindRef {
            group: "barmancloud.cnpg.io".into(),
            version: "v1".into(),
            kind: "ObjectStore".into(),
        }
    }

    /// Whether one read covers the event, read literally.
    fn covers(
        read: &Dependency,
        kind: &KindRef,
        namespace: &str,
        name: &str,
        old: Option<&BTreeMap<String, String>>,
        new: Option<&BTreeMap<String, String>>,
    ) -> bool {
        match read {
            Dependency::Object {
                kind: k,
                namespace: n,
                name: nm,
            } => k == kind && n == namespace && nm == name,
            Dependency::List {
                kind: k,
                namespace: n,
                selector,
            } => {
                k == kind
                    && (n.is_empty() || n == namespace)
                    && (old.is_some_and(|l| selector.matches(l))
                        || new.is_some_and(|l| selector.matches(l)))
            }
            Dependency::Availability { .. } | Dependency::Children { .. } => false,
        }
    }

    /// Whether a flip of `kind`'s served state where the watch of
    /// `namespace` looks concerns one read, read literally.
    fn flip_covers(read: &Dependency, kind: &KindRef, namespace: &str) -> bool {
        if let Dependency::Children { kind: k, .. } = read {
            return k == kind;
        }
        let (Dependency::Object {
            kind: k,
            namespace: n,
            ..
        }
        | Dependency::List {
            kind: k,
            namespace: n,
            ..
        }
        | Dependency::Availability {
            kind: k,
            namespace: n,
        }) = read
        else {
            return false;
        };
        k == kind && (namespace.is_empty() || n.is_empty() || n == namespace)
    }

    fn kind_strategy() -> impl Strategy<Value = KindRef> {
        prop_oneof![Just(pod_kind()), Just(config_map_kind())]
    }

    fn namespace_strategy() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["", "a", "b"]).prop_map(str::to_owned)
    }

    fn name_strategy() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["x", "y", "z"]).prop_map(str::to_owned)
    }

    fn labels_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(
            prop::sample::select(vec!["app", "tier"]).prop_map(str::to_owned),
            prop::sample::select(vec!["1", "2"]).prop_map(str::to_owned),
            0..=2,
        )
    }

    fn requirement_strategy() -> impl Strategy<Value = Requirement> {
        let key = || prop::sample::select(vec!["app", "tier"]).prop_map(str::to_owned);
        let values = || {
            prop::collection::vec(
                prop::sample::select(vec!["1", "2"]).prop_map(str::to_owned),
                1..=2,
            )
        };
        prop_oneof![
            (key(), values()).prop_map(|(k, v)| Requirement::In(k, v)),
            (key(), values()).prop_map(|(k, v)| Requirement::NotIn(k, v)),
            key().prop_map(Requirement::Exists),
            key().prop_map(Requirement::DoesNotExist),
        ]
    }

    fn read_strategy() -> impl Strategy<Value = Dependency> {
        prop_oneof![
            (kind_strategy(), namespace_strategy(), name_strategy()).prop_map(
                |(kind, namespace, name)| Dependency::Object {
                    kind,
                    namespace,
                    name,
                }
            ),
            (
                kind_strategy(),
                namespace_strategy(),
                labels_strategy(),
                prop::collection::vec(requirement_strategy(), 0..=1)
            )
                .prop_map(|(kind, namespace, match_labels, match_expressions)| {
                    Dependency::List {
                        kind,
                        namespace,
                        selector: Selector {
                            match_labels: match_labels.into_iter().collect(),
                            match_expressions,
                        },
                    }
                }),
            (kind_strategy(), namespace_strategy())
                .prop_map(|(kind, namespace)| Dependency::Availability { kind, namespace }),
        ]
    }

    /// A parent's pass: `None` removes the parent.
    fn update_strategy() -> impl Strategy<Value = (u8, Option<BTreeSet<Dependency>>)> {
        (
            0u8..4,
            prop::option::weighted(0.8, prop::collection::btree_set(read_strategy(), 0..5)),
        )
    }

    proptest! {
        #[test]
        fn affected_equals_a_scan_of_every_parents_reads(
            updates in prop::collection::vec(update_strategy(), 0..12),
            kind in kind_strategy(),
            namespace in namespace_strategy(),
            name in name_strategy(),
            old in prop::option::of(labels_strategy()),
            new in prop::option::of(labels_strategy()),
        ) {
            let mut index = DependencyIndex::new();
            let mut model: BTreeMap<u8, BTreeSet<Dependency>> = BTreeMap::new();
            for (parent, update) in updates {
                match update {
                    Some(reads) => {
                        index.replace(&parent, reads.clone());
                        model.insert(parent, reads);
                    }
                    None => {
                        index.remove(&parent);
                        model.remove(&parent);
                    }
                }
            }
            model.retain(|_, reads| !reads.is_empty());

            let expected: BTreeSet<u8> = model
                .iter()
                .filter(|(_, reads)| {
                    reads
                        .iter()
                        .any(|r| covers(r, &kind, &namespace, &name, old.as_ref(), new.as_ref()))
                })
                .map(|(parent, _)| *parent)
                .collect();
            let found = index.affected(&kind, &namespace, &name, old.as_ref(), new.as_ref());

            prop_assert_eq!(found, expected);
            prop_assert_eq!(index.parents(), model.len());
            prop_assert_eq!(index.entries(), model.values().map(BTreeSet::len).sum::<usize>());
            for (parent, reads) in &model {
                prop_assert_eq!(index.reads_of(parent), Some(reads.clone()));
            }
        }

        #[test]
        fn reading_kind_equals_a_scan_of_every_parents_reads(
            updates in prop::collection::vec(update_strategy(), 0..12),
            kind in kind_strategy(),
            namespace in namespace_strategy(),
        ) {
            let mut index = DependencyIndex::new();
            let mut model: BTreeMap<u8, BTreeSet<Dependency>> = BTreeMap::new();
            for (parent, update) in updates {
                match update {
                    Some(reads) => {
                        index.replace(&parent, reads.clone());
                        model.insert(parent, reads);
                    }
                    None => {
                        index.remove(&parent);
                        model.remove(&parent);
                    }
                }
            }

            let expected: BTreeSet<u8> = model
                .iter()
                .filter(|(_, reads)| reads.iter().any(|r| flip_covers(r, &kind, &namespace)))
                .map(|(parent, _)| *parent)
                .collect();

            prop_assert_eq!(index.reading_kind(&kind, &namespace), expected);
        }
    }
}
