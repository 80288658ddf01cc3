//! Label selectors (`metav1.LabelSelector` as JSON): whether one selects a
//! set of labels, and whether one selects no more than another.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

/// One requirement of a selector; a `matchLabels` entry `k: v` is `In(k, {v})`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Requirement {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    /// Whether labels satisfy the requirement, as Kubernetes reads it:
    /// `NotIn` and `DoesNotExist` hold when the key is absent.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::In(k, values) => labels.get(k).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(k, values) => labels.get(k).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }

    /// Whether every label set that satisfies `self` satisfies `other`
    /// (sufficient, not necessary: `false` may still mean "implies").
    fn implies(&self, other: &Requirement) -> bool {
        use Requirement::*;
        match (self, other) {
            (In(k, w), In(l, v)) => k == l && w.is_subset(v),
            (In(k, _), Exists(l)) | (Exists(k), Exists(l)) => k == l,
            (In(k, w), NotIn(l, v)) => k == l && w.is_disjoint(v),
            (NotIn(k, w), NotIn(l, v)) => k == l && v.is_subset(w),
            (DoesNotExist(k), NotIn(l, _)) | (DoesNotExist(k), DoesNotExist(l)) => k == l,
            _ => false,
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |values: &BTreeSet<String>| {
            values
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Requirement::In(k, values) if values.len() == 1 => write!(f, "{k}={}", list(values)),
            Requirement::In(k, values) => write!(f, "{k} in ({})", list(values)),
            Requirement::NotIn(k, values) => write!(f, "{k} notin ({})", list(values)),
            Requirement::Exists(k) => f.write_str(k),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
        }
    }
}

/// A selector that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectorError(pub String);

impl fmt::Display for SelectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectorError {}

/// A label selector: every requirement must hold. No requirement selects
/// everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: BTreeSet<Requirement>,
}

/// A field of an object, `null` read as absent.
fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

fn err(text: &str) -> SelectorError {
    SelectorError(text.to_owned())
}

impl Selector {
    /// The selector that selects everything (`{}`).
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Reads a `LabelSelector` from its JSON (`null` members read as
    /// absent). An unknown operator, a value that is not a string, `In` or
    /// `NotIn` without values, or values on `Exists` / `DoesNotExist` are
    /// errors, as the API server refuses them.
    pub fn parse(json: &Value) -> Result<Self, SelectorError> {
        if !json.is_object() {
            return Err(err("a selector is not an object"));
        }
        let mut requirements = BTreeSet::new();
        if let Some(labels) = field(json, "matchLabels") {
            let labels = labels
                .as_object()
                .ok_or_else(|| err("matchLabels is not an object"))?;
            for (k, v) in labels {
                let v = v
                    .as_str()
                    .ok_or_else(|| SelectorError(format!("matchLabels {k} is not a string")))?;
                requirements.insert(Requirement::In(k.clone(), BTreeSet::from([v.to_owned()])));
            }
        }
        if let Some(expressions) = field(json, "matchExpressions") {
            let expressions = expressions
                .as_array()
                .ok_or_else(|| err("matchExpressions is not a list"))?;
            for e in expressions {
                requirements.insert(requirement(e)?);
            }
        }
        Ok(Selector { requirements })
    }

    /// A selector of `matchLabels` pairs only.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Selector {
            requirements: pairs
                .into_iter()
                .map(|(k, v)| Requirement::In(k.to_owned(), BTreeSet::from([v.to_owned()])))
                .collect(),
        }
    }

    /// Its requirements, sorted.
    pub fn requirements(&self) -> impl Iterator<Item = &Requirement> {
        self.requirements.iter()
    }

    /// Whether it has no requirement (selects everything).
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the labels (as pairs; a later duplicate key wins) satisfy
    /// every requirement.
    pub fn matches_pairs<'a>(
        &self,
        labels: impl IntoIterator<Item = &'a (String, String)>,
    ) -> bool {
        let labels: BTreeMap<String, String> = labels.into_iter().cloned().collect();
        self.matches(&labels)
    }

    /// Whether every label set this selector selects, `wider` selects too.
    /// Sufficient, not necessary: each requirement of `wider` must follow
    /// from one requirement of this selector (`a=x` implies `a in (x,y)`,
    /// `a exists` and `a notin (z)`; `a notin (x,y)` implies `a notin (x)`;
    /// `!a` implies `a notin (..)`). A `false` answer is the careful one.
    pub fn is_within(&self, wider: &Selector) -> bool {
        wider
            .requirements
            .iter()
            .all(|w| self.requirements.iter().any(|r| r.implies(w)))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.requirements.is_empty() {
            return f.write_str("(every label)");
        }
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

fn requirement(e: &Value) -> Result<Requirement, SelectorError> {
    let key = field(e, "key")
        .and_then(Value::as_str)
        .ok_or_else(|| err("a matchExpressions entry has no key"))?
        .to_owned();
    let operator = field(e, "operator")
        .and_then(Value::as_str)
        .ok_or_else(|| err("a matchExpressions entry has no operator"))?;
    let values = match field(e, "values") {
        None => BTreeSet::new(),
        Some(v) => v
            .as_array()
            .ok_or_else(|| err("matchExpressions values is not a list"))?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| err("a matchExpressions value is not a string"))
            })
            .collect::<Result<_, _>>()?,
    };
    let needs_values = |r: Requirement| {
        if values.is_empty() {
            Err(SelectorError(format!("{operator} on {key} without values")))
        } else {
            Ok(r)
        }
    };
    let no_values = |r: Requirement| {
        if values.is_empty() {
            Ok(r)
        } else {
            Err(SelectorError(format!("{operator} on {key} with values")))
        }
    };
    match operator {
        "In" => needs_values(Requirement::In(key.clone(), values.clone())),
        "NotIn" => needs_values(Requirement::NotIn(key.clone(), values.clone())),
        "Exists" => no_values(Requirement::Exists(key.clone())),
        "DoesNotExist" => no_values(Requirement::DoesNotExist(key.clone())),
        other => Err(SelectorError(format!("unknown operator {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn sel(json: Value) -> Selector {
        Selector::parse(&json).unwrap()
    }

    #[test]
    fn matches_as_kubernetes_does() {
        let console = labels(&[
            ("app.kubernetes.io/name", "pgtoolbox-console"),
            ("app.kubernetes.io/instance", "orders"),
        ]);
        assert!(sel(json!({})).matches(&console));
        assert!(sel(json!({"matchLabels": null, "matchExpressions": null})).matches(&console));
        assert!(
            sel(json!({"matchLabels": {"app.kubernetes.io/name": "pgtoolbox-console"}}))
                .matches(&console)
        );
        assert!(
            !sel(json!({"matchLabels": {"app.kubernetes.io/name": "pgadmin"}})).matches(&console)
        );
        assert!(sel(json!({"matchExpressions": [
            {"key": "app.kubernetes.io/instance", "operator": "In", "values": ["orders", "billing"]},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "app.kubernetes.io/name", "operator": "Exists"},
            {"key": "debug", "operator": "DoesNotExist"}
        ]}))
        .matches(&console));
        assert!(
            !sel(json!({"matchExpressions": [
                {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["orders"]}
            ]}))
            .matches(&console)
        );
        assert!(
            !sel(json!({"matchExpressions": [
                {"key": "app.kubernetes.io/instance", "operator": "DoesNotExist"}
            ]}))
            .matches(&console)
        );
        assert!(
            !sel(json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}))
                .matches(&console)
        );
        assert!(
            !sel(json!({"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["web"]}
            ]}))
            .matches(&console)
        );
    }

    #[test]
    fn unreadable_selectors_are_errors() {
        for bad in [
            json!([]),
            json!({"matchLabels": []}),
            json!({"matchLabels": {"a": 1}}),
            json!({"matchExpressions": {}}),
            json!({"matchExpressions": [{"operator": "Exists"}]}),
            json!({"matchExpressions": [{"key": "a"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}),
        ] {
            assert!(Selector::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn within_examples() {
        let router = sel(json!({"matchLabels": {"network.openshift.io/policy-group": "ingress"}}));
        let narrower = sel(json!({"matchLabels": {
            "network.openshift.io/policy-group": "ingress",
            "kubernetes.io/metadata.name": "openshift-ingress"
        }}));
        assert!(narrower.is_within(&router));
        assert!(!router.is_within(&narrower));
        assert!(router.is_within(&Selector::everything()));
        assert!(!Selector::everything().is_within(&router));
        let in_two = sel(json!({"matchExpressions": [
            {"key": "network.openshift.io/policy-group", "operator": "In", "values": ["ingress", "monitoring"]}
        ]}));
        assert!(router.is_within(&in_two));
        assert!(!in_two.is_within(&router));
        let not_x =
            sel(json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}));
        let not_xy = sel(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x", "y"]}]}),
        );
        let absent = sel(json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}));
        assert!(not_xy.is_within(&not_x));
        assert!(!not_x.is_within(&not_xy));
        assert!(absent.is_within(&not_x));
        assert!(!not_x.is_within(&absent));
    }

    #[test]
    fn displays_briefly() {
        assert_eq!(Selector::everything().to_string(), "(every label)");
        assert_eq!(
            sel(json!({"matchLabels": {"a": "x"}, "matchExpressions": [
                {"key": "b", "operator": "NotIn", "values": ["y", "z"]},
                {"key": "c", "operator": "DoesNotExist"}
            ]}))
            .to_string(),
            "a=x,b notin (y,z),!c"
        );
    }

    const KEYS: [&str; 2] = ["a", "b"];
    const VALUES: [&str; 3] = ["x", "y", "z"];

    /// Every label set over the small universe: each key absent or one value.
    fn universe() -> Vec<BTreeMap<String, String>> {
        let choices: Vec<Option<&str>> = std::iter::once(None)
            .chain(VALUES.iter().copied().map(Some))
            .collect();
        let mut all = Vec::new();
        for a in &choices {
            for b in &choices {
                let mut l = BTreeMap::new();
                for (k, v) in KEYS.iter().zip([a, b]) {
                    if let Some(v) = v {
                        l.insert((*k).to_owned(), (*v).to_owned());
                    }
                }
                all.push(l);
            }
        }
        all
    }

    fn any_requirement() -> impl Strategy<Value = Requirement> {
        let key = prop::sample::select(KEYS.to_vec()).prop_map(str::to_owned);
        let values = prop::sample::subsequence(VALUES.to_vec(), 1..=3)
            .prop_map(|v| v.into_iter().map(str::to_owned).collect::<BTreeSet<_>>());
        prop_oneof![
            (key.clone(), values.clone()).prop_map(|(k, v)| Requirement::In(k, v)),
            (key.clone(), values).prop_map(|(k, v)| Requirement::NotIn(k, v)),
            key.clone().prop_map(Requirement::Exists),
            key.prop_map(Requirement::DoesNotExist),
        ]
    }

    fn any_selector() -> impl Strategy<Value = Selector> {
        prop::collection::btree_set(any_requirement(), 0..4)
            .prop_map(|requirements| Selector { requirements })
    }

    fn to_json(s: &Selector) -> Value {
        let expressions: Vec<Value> = s
            .requirements()
            .map(|r| match r {
                Requirement::In(k, v) => json!({"key": k, "operator": "In", "values": v}),
                Requirement::NotIn(k, v) => json!({"key": k, "operator": "NotIn", "values": v}),
                Requirement::Exists(k) => json!({"key": k, "operator": "Exists"}),
                Requirement::DoesNotExist(k) => json!({"key": k, "operator": "DoesNotExist"}),
            })
            .collect();
        json!({"matchExpressions": expressions})
    }

    proptest! {
        /// `is_within` is sound: whatever the narrower selects, the wider does.
        #[test]
        fn within_is_sound(a in any_selector(), b in any_selector()) {
            if a.is_within(&b) {
                for l in universe() {
                    prop_assert!(!a.matches(&l) || b.matches(&l), "{a} within {b} but {l:?}");
                }
            }
        }

        #[test]
        fn within_is_reflexive_and_everything_is_widest(a in any_selector()) {
            prop_assert!(a.is_within(&a));
            prop_assert!(a.is_within(&Selector::everything()));
        }

        /// Adding a requirement narrows: never selects a label set it did not.
        #[test]
        fn more_requirements_select_less(a in any_selector(), r in any_requirement()) {
            let mut narrower = a.clone();
            narrower.requirements.insert(r);
            prop_assert!(narrower.is_within(&a));
            for l in universe() {
                prop_assert!(!narrower.matches(&l) || a.matches(&l));
            }
        }

        /// Parsing the JSON form gives the same selector back.
        #[test]
        fn parses_its_json_form(a in any_selector()) {
            prop_assert_eq!(Selector::parse(&to_json(&a)).unwrap(), a);
        }

        /// A selector of a label set's own pairs selects it.
        #[test]
        fn own_pairs_select_the_labels(i in 0usize..16) {
            let l = &universe()[i];
            let s = Selector::from_pairs(l.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            prop_assert!(s.matches(l));
        }
    }
}
