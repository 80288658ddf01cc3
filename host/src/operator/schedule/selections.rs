//! The selectors parents listed a kind with in one namespace, found by the
//! labels of a changed object: only selectors that can match it are tried.

use std::collections::HashMap;
use std::sync::Arc;

use crate::facts::Selector;
use crate::facts::selector::Requirement;
use crate::operator::schedule::filed::filed;
use crate::operator::schedule::parents::Parents;

/// A label, key and value.
type Label = (String, String);

/// Selectors and the parents that listed with them. A selector requiring
/// a label (its first `matchLabels` pair, or an `In` of one value) is
/// filed under it; any other is tried on every change. Each selector is
/// held once, shared with the reads that name it.
#[derive(Debug)]
pub(crate) struct Selections<P> {
    anchored: HashMap<Label, HashMap<Arc<Selector>, Parents<P>>>,
    unanchored: HashMap<Arc<Selector>, Parents<P>>,
}

impl<P> Default for Selections<P> {
    fn default() -> Self {
        Selections {
            anchored: HashMap::new(),
            unanchored: HashMap::new(),
        }
    }
}

/// The label an object must carry for `selector` to match it, if any.
fn anchor(selector: &Selector) -> Option<Label> {
    if let Some((k, v)) = selector.match_labels.first() {
        return Some((k.clone(), v.clone()));
    }
    selector.match_expressions.iter().find_map(|r| match r {
        Requirement::In(k, values) if values.len() == 1 => Some((k.clone(), values[0].clone())),
        _ => None,
    })
}

impl<P: Ord> Selections<P> {
    /// Files `parent` under `selector`; the selector as held.
    pub(crate) fn insert(&mut self, selector: &Selector, parent: P) -> Arc<Selector> {
        let bucket = match anchor(selector) {
            Some(label) => self.anchored.entry(label).or_default(),
            None => &mut self.unanchored,
        };
        let (held, parents) = filed(bucket, selector, |s| Arc::new(s.clone()));
        parents.insert(parent);
        held
    }

    /// Removes one entry, and every bucket it leaves empty.
    pub(crate) fn remove(&mut self, selector: &Selector, parent: &P) {
        let label = anchor(selector);
        let bucket = match &label {
            Some(label) => match self.anchored.get_mut(label) {
                Some(bucket) => bucket,
                None => return,
            },
            None => &mut self.unanchored,
        };
        if let Some(parents) = bucket.get_mut(selector) {
            parents.remove(parent);
            if parents.is_empty() {
                bucket.remove(selector);
            }
        }
        if let Some(label) = label
            && self.anchored.get(&label).is_some_and(HashMap::is_empty)
        {
            self.anchored.remove(&label);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.anchored.is_empty() && self.unanchored.is_empty()
    }

    /// Every selector with its parents.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Selector, &Parents<P>)> {
        self.anchored
            .values()
            .flatten()
            .chain(self.unanchored.iter())
            .map(|(selector, parents)| (&**selector, parents))
    }

    /// The parents whose selector matches `labels`.
    pub(crate) fn matching<'a>(
        &'a self,
        labels: &'a std::collections::BTreeMap<String, String>,
    ) -> impl Iterator<Item = &'a Parents<P>> + 'a {
        let anchored = labels
            .iter()
            .filter_map(|(k, v)| self.anchored.get(&(k.clone(), v.clone())))
            .flatten();
        anchored
            .chain(self.unanchored.iter())
            .filter(|(selector, _)| selector.matches(labels))
            .map(|(_, parents)| parents)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn finds_every_matching_selector_and_only_those() {
        let selectors: Vec<Selector> = [
            json!({}),
            json!({"matchLabels": {"app": "db"}}),
            json!({"matchLabels": {"app": "db", "tier": "x"}}),
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}),
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]}),
            json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
        ]
        .iter()
        .map(Selector::from_json)
        .collect();
        let mut selections = Selections::default();
        for (i, s) in selectors.iter().enumerate() {
            selections.insert(s, i);
        }
        for object in [
            labels(&[]),
            labels(&[("app", "db")]),
            labels(&[("app", "db"), ("tier", "x")]),
            labels(&[("app", "web"), ("tier", "y")]),
        ] {
            let mut found: Vec<usize> = selections.matching(&object).flatten().copied().collect();
            found.sort();
            let scanned: Vec<usize> = (0..selectors.len())
                .filter(|i| selectors[*i].matches(&object))
                .collect();
            assert_eq!(found, scanned, "{object:?}");
        }
        for (i, s) in selectors.iter().enumerate() {
            selections.remove(s, &i);
        }
        assert!(selections.is_empty(), "every bucket is pruned");
    }
}
