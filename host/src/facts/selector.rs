//! Label selectors: `matchLabels` and `matchExpressions`, as Kubernetes
//! matches them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A label selector. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Selector {
    /// Sorted by key, each key once, as the map `matchLabels` is: a
    /// vector rather than a B-tree map, whose first node holds eleven
    /// pairs however few a selector has (the dependency index holds a
    /// selector per parent).
    pub match_labels: Vec<(String, String)>,
    pub match_expressions: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Selector {
    /// Every pair must match (of pairs with one key, the last).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let by_key: BTreeMap<&str, &str> = pairs.into_iter().collect();
        Selector {
            match_labels: by_key
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            match_expressions: Vec::new(),
        }
    }

    /// A `metav1.LabelSelector` as JSON. An unknown operator matches
    /// nothing, as the API server would refuse it.
    pub fn from_json(value: &serde_json::Value) -> Self {
        let match_labels: Vec<(String, String)> = value["matchLabels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let match_expressions = value["matchExpressions"]
            .as_array()
            .map(|exprs| {
                exprs
                    .iter()
                    .map(|e| {
                        let key = e["key"].as_str().unwrap_or_default().to_owned();
                        let values: Vec<String> = e["values"]
                            .as_array()
                            .map(|v| {
                                v.iter()
                                    .filter_map(|s| s.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default();
                        match e["operator"].as_str() {
                            Some("In") => Requirement::In(key, values),
                            Some("NotIn") => Requirement::NotIn(key, values),
                            Some("Exists") => Requirement::Exists(key),
                            Some("DoesNotExist") => Requirement::DoesNotExist(key),
                            _ => Requirement::In(key, Vec::new()),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Selector {
            match_labels,
            match_expressions,
        }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_by(|k| labels.get(k).map(String::as_str))
    }

    /// Whether the labels `label` looks up (a key's value, if set) match.
    pub(crate) fn matches_by<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| label(k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| match r {
                Requirement::In(k, vs) => label(k).is_some_and(|v| vs.iter().any(|x| x == v)),
                Requirement::NotIn(k, vs) => label(k).is_none_or(|v| !vs.iter().any(|x| x == v)),
                Requirement::Exists(k) => label(k).is_some(),
                Requirement::DoesNotExist(k) => label(k).is_none(),
            })
    }

    /// The labels of an object's JSON.
    pub(crate) fn labels_of(object: &serde_json::Value) -> BTreeMap<String, String> {
        object["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = self
            .match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.extend(self.match_expressions.iter().map(|r| match r {
            Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
            Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
            Requirement::Exists(k) => k.clone(),
            Requirement::DoesNotExist(k) => format!("!{k}"),
        }));
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(Selector::default().matches(&labels(&[])));
    }

    #[test]
    fn match_labels_and_expressions_all_hold() {
        let s = Selector::from_json(&json!({
            "matchLabels": {"app": "agent"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}
            ]
        }));
        assert!(s.matches(&labels(&[("app", "agent"), ("tier", "a")])));
        assert!(!s.matches(&labels(&[("app", "agent"), ("tier", "c")])));
        assert!(!s.matches(&labels(&[("app", "agent"), ("tier", "a"), ("canary", "1")])));
        assert!(!s.matches(&labels(&[("tier", "a")])));
    }

    #[test]
    fn match_labels_are_held_by_key_once_each() {
        let s = Selector::from_pairs([("b", "1"), ("a", "2"), ("b", "3")]);
        assert_eq!(
            s.match_labels,
            [("a".into(), "2".into()), ("b".into(), "3".into())]
        );
        assert_eq!(
            Selector::from_json(&json!({"matchLabels": {"b": "3", "a": "2"}})),
            s
        );
    }

    #[test]
    fn unknown_operator_matches_nothing() {
        let s = Selector::from_json(&json!({
            "matchExpressions": [{"key": "x", "operator": "Near"}]
        }));
        assert!(!s.matches(&labels(&[("x", "1")])));
    }

    #[test]
    fn matching_an_object_is_matching_its_labels() {
        let selectors = [
            Selector::default(),
            Selector::from_json(&json!({
                "matchLabels": {"app": "agent"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["a", "b"]},
                    {"key": "zone", "operator": "NotIn", "values": ["x"]},
                    {"key": "team", "operator": "Exists"},
                    {"key": "canary", "operator": "DoesNotExist"}
                ]
            })),
        ];
        let objects = [
            json!({}),
            json!({"metadata": {"labels": {"app": "agent", "tier": "a", "team": "t"}}}),
            json!({"metadata": {"labels": {"app": "agent", "tier": "a", "team": "t", "zone": "x"}}}),
            json!({"metadata": {"labels": {"app": "agent", "tier": "b", "team": 1}}}),
            json!({"metadata": {"labels": {"app": "agent", "tier": "a", "team": "t", "canary": ""}}}),
        ];
        for s in &selectors {
            for o in &objects {
                let cached = crate::facts::Cached::new(std::sync::Arc::new(o.clone()));
                assert_eq!(
                    s.matches_by(|k| cached.label(k)),
                    s.matches(&Selector::labels_of(o)),
                    "{s} {o}"
                );
            }
        }
    }
}
