//! What of an object a read declares it uses (contract 0.6.0's
//! `read-decl.fields`): its field paths, their union, and the object with
//! only those fields.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// The fields every projection keeps: what names an object and what
/// selects, owns and identifies it.
pub const ALWAYS_KEPT: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Why a declared field path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    #[error("the path is empty")]
    Empty,
    #[error("a field name in it is empty (two `.` in a row, or one at an end)")]
    EmptyName,
    #[error("`\\` escapes only `.` or `\\`, not {0:?}")]
    BadEscape(String),
}

/// A path of field names into an object, `spec.template.spec`, a `.`
/// inside a name escaped as `\.` (`data.tls\.crt`), as kubectl's JSONPath
/// writes it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldPath(Vec<String>);

impl FieldPath {
    pub fn parse(path: &str) -> Result<FieldPath, FieldPathError> {
        if path.is_empty() {
            return Err(FieldPathError::Empty);
        }
        let mut names = vec![String::new()];
        let mut chars = path.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(e @ ('.' | '\\')) => names.last_mut().expect("one name").push(e),
                    other => {
                        return Err(FieldPathError::BadEscape(
                            other.map(String::from).unwrap_or_default(),
                        ));
                    }
                },
                '.' => names.push(String::new()),
                c => names.last_mut().expect("one name").push(c),
            }
        }
        if names.iter().any(String::is_empty) {
            return Err(FieldPathError::EmptyName);
        }
        Ok(FieldPath(names))
    }

    /// The path of `names`, one field name each.
    pub fn of(names: impl IntoIterator<Item = impl Into<String>>) -> FieldPath {
        FieldPath(names.into_iter().map(Into::into).collect())
    }

    pub fn names(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(&name.replace('\\', "\\\\").replace('.', "\\."))?;
        }
        Ok(())
    }
}

/// The fields kept of an object: all of them, or those under the paths
/// declared (and [`ALWAYS_KEPT`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projection {
    Whole,
    Fields(BTreeMap<String, Projection>),
}

impl Projection {
    /// The projection of `paths`, each parsed; the first refused, with
    /// its text, otherwise.
    pub fn of_paths<'a>(
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Result<Projection, (String, FieldPathError)> {
        let kept = ALWAYS_KEPT.map(|name| (name.to_owned(), Projection::Whole));
        let mut projection = Projection::Fields(BTreeMap::from(kept));
        for path in paths {
            let parsed = FieldPath::parse(path).map_err(|e| (path.to_owned(), e))?;
            projection.add(&parsed);
        }
        Ok(projection)
    }

    /// Keeps `path` too.
    pub fn add(&mut self, path: &FieldPath) {
        let mut node = self;
        for name in path.names() {
            let Projection::Fields(fields) = node else {
                return;
            };
            node = fields
                .entry(name.clone())
                .or_insert_with(|| Projection::Fields(BTreeMap::new()));
        }
        *node = Projection::Whole;
    }

    /// What either keeps.
    pub fn union(&self, other: &Projection) -> Projection {
        match (self, other) {
            (Projection::Fields(a), Projection::Fields(b)) => {
                let mut fields = a.clone();
                for (name, theirs) in b {
                    let merged = match fields.get(name) {
                        Some(ours) => ours.union(theirs),
                        None => theirs.clone(),
                    };
                    fields.insert(name.clone(), merged);
                }
                Projection::Fields(fields)
            }
            _ => Projection::Whole,
        }
    }

    pub fn is_whole(&self) -> bool {
        matches!(self, Projection::Whole)
    }

    /// `value` with only the fields kept: a path goes through every item
    /// of a list on its way, and a path into a value that is not an
    /// object keeps the value.
    pub fn apply(&self, value: &Value) -> Value {
        match (self, value) {
            (Projection::Whole, _) => value.clone(),
            (Projection::Fields(fields), Value::Object(object)) => {
                let kept: Map<String, Value> = fields
                    .iter()
                    .filter_map(|(name, sub)| {
                        object.get(name).map(|v| (name.clone(), sub.apply(v)))
                    })
                    .collect();
                Value::Object(kept)
            }
            (Projection::Fields(_), Value::Array(items)) => {
                Value::Array(items.iter().map(|item| self.apply(item)).collect())
            }
            (Projection::Fields(_), scalar) => scalar.clone(),
        }
    }

    /// The fields of `value` this projection leaves out, each by the
    /// shortest path that names it, in order.
    pub fn left_out(&self, value: &Value) -> Vec<FieldPath> {
        let mut out = Vec::new();
        self.collect_left_out(value, &mut Vec::new(), &mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_left_out(&self, value: &Value, at: &mut Vec<String>, out: &mut Vec<FieldPath>) {
        let Projection::Fields(fields) = self else {
            return;
        };
        match value {
            Value::Object(object) => {
                for (name, v) in object {
                    at.push(name.clone());
                    match fields.get(name) {
                        Some(sub) => sub.collect_left_out(v, at, out),
                        None => out.push(FieldPath(at.clone())),
                    }
                    at.pop();
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.collect_left_out(item, at, out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn projection(paths: &[&str]) -> Projection {
        Projection::of_paths(paths.iter().copied()).expect("valid paths")
    }

    #[test]
    fn a_path_is_parsed_with_its_escapes_and_written_back_alike() {
        let path = FieldPath::parse(r"data.tls\.crt").unwrap();
        assert_eq!(path.names(), ["data", "tls.crt"]);
        assert_eq!(path.to_string(), r"data.tls\.crt");
        assert_eq!(FieldPath::parse(r"a\\b").unwrap().names(), [r"a\b"]);
        assert_eq!(FieldPath::parse(""), Err(FieldPathError::Empty));
        assert_eq!(FieldPath::parse("spec..x"), Err(FieldPathError::EmptyName));
        assert_eq!(FieldPath::parse("spec."), Err(FieldPathError::EmptyName));
        assert_eq!(
            FieldPath::parse(r"spec\x"),
            Err(FieldPathError::BadEscape("x".to_owned()))
        );
    }

    #[test]
    fn a_projection_keeps_what_names_the_object_and_the_paths_through_lists() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "a"}},
            "spec": {"nodeName": "n", "containers": [
                {"name": "c", "image": "i", "args": ["x"]},
                {"name": "d", "image": "j"}
            ]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        });
        let kept = projection(&["spec.containers.image", "status.phase"]).apply(&pod);
        assert_eq!(
            kept,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"app": "a"}},
                "spec": {"containers": [{"image": "i"}, {"image": "j"}]},
                "status": {"phase": "Running"}
            })
        );
        let left_out: Vec<String> = projection(&["spec.containers.image", "status.phase"])
            .left_out(&pod)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            left_out,
            [
                "spec.containers.args",
                "spec.containers.name",
                "spec.nodeName",
                "status.podIP"
            ]
        );
    }

    #[test]
    fn a_union_keeps_what_either_keeps_and_whole_wins() {
        let a = projection(&["spec.replicas"]);
        let b = projection(&["spec", "status.conditions"]);
        assert_eq!(a.union(&b), projection(&["spec", "status.conditions"]));
        assert!(a.union(&Projection::Whole).is_whole());
        let mut c = projection(&["spec.replicas"]);
        c.add(&FieldPath::of(["status"]));
        assert_eq!(c, projection(&["spec.replicas", "status"]));
    }
}
