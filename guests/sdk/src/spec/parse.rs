//! `.spec` read into the guest's spec type by serde, with errors that name the field.

use serde::de::{self, DeserializeOwned, DeserializeSeed, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The parent's `.spec` as `T`, the type [`schema_of`](super::schema_of)
/// made the CRD's schema of: read by `T`'s `Deserialize` (serde's
/// attributes apply: `rename_all`, `default`, `try_from`...), with an error
/// that names the field, as ConfigurationValid's message says it.
///
/// The reading is the API server's: a null, or a string of only
/// whitespace, is an absent field (the API server prunes a null from a
/// field that is not nullable), so an `Option` is `None` and a `default`
/// applies; a missing `.spec` is `{}`. The errors, `spec.` and the field's
/// path first:
///
/// | when | message |
/// | --- | --- |
/// | a required field is absent | `spec.cluster.name is required` |
/// | a value of another type | `spec.image must be a string, not 3` (`a string`, `true or false`, `an integer`, `a number`, `a list`, `an object`, or a struct's `#[serde(expecting = "...")]`) |
/// | a string not among an enum's variants | `spec.exposure.type "nodePort" is not one of clusterIP, route, ingress, gateway` |
/// | the type's own error (`try_from`, `deserialize_with`) | the path, a space, then its text: write it to follow the field's name |
///
/// The first error found is the one reported. [`SpecError`] converts into
/// ConfigurationValid=False with ConfigurationInvalid, stalled
/// ([`NotValid`](crate::configuration::NotValid)), so `?` in a
/// configuration check says it:
///
/// ```
/// use reconciler_guest_sdk::configuration::NotValid;
/// use reconciler_guest_sdk::spec;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Debug, PartialEq, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// pub struct AgentSpec {
///     pub cluster: ClusterRef,
///     pub image: Option<String>,
/// }
///
/// #[derive(Debug, PartialEq, Deserialize)]
/// #[serde(expecting = "an object with a name")]
/// pub struct ClusterRef {
///     pub name: String,
/// }
///
/// fn check(parent: &serde_json::Value) -> Result<AgentSpec, NotValid> {
///     Ok(spec::parse(parent)?)
/// }
///
/// let spec = check(&json!({"spec": {"cluster": {"name": "pg"}, "image": " "}})).unwrap();
/// assert_eq!((spec.cluster.name.as_str(), spec.image), ("pg", None));
///
/// let error = spec::parse::<AgentSpec>(&json!({"spec": {"cluster": "pg"}})).unwrap_err();
/// assert_eq!(error.message(), r#"spec.cluster must be an object with a name, not "pg""#);
/// assert_eq!(
///     check(&json!({"spec": {"cluster": {}}})),
///     Err(NotValid::Stalled {
///         reason: "ConfigurationInvalid",
///         message: "spec.cluster.name is required".into()
///     })
/// );
/// ```
pub fn parse<T: DeserializeOwned>(parent: &Value) -> Result<T, SpecError> {
    let empty = Value::Object(Map::new());
    let spec = match parent.get("spec") {
        None | Some(Value::Null) => &empty,
        Some(spec) => spec,
    };
    T::deserialize(At {
        value: spec,
        path: "spec".into(),
    })
    .map_err(|e| e.at("spec"))
}

/// A spec the CRD's schema let through (or that no API server checked)
/// and the guest cannot use; the message names the field.
///
/// ```
/// let error = reconciler_guest_sdk::spec::parse::<bool>(&serde_json::json!({"spec": 1})).unwrap_err();
/// assert_eq!(error.to_string(), "spec must be true or false, not 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(Text);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Text {
    /// The whole message.
    Located(String),
    /// A field of the object being read is missing: its name.
    Missing(String),
    /// Text that follows the path of the value being read.
    Follows(String),
}

impl SpecError {
    /// The message, naming the field.
    ///
    /// ```
    /// # use serde_json::json;
    /// #[derive(Debug, serde::Deserialize)]
    /// pub struct Spec { pub replicas: u8 }
    /// let error = reconciler_guest_sdk::spec::parse::<Spec>(&json!({"spec": {}})).unwrap_err();
    /// assert_eq!(error.message(), "spec.replicas is required");
    /// ```
    pub fn message(&self) -> &str {
        match &self.0 {
            Text::Located(m) | Text::Missing(m) | Text::Follows(m) => m,
        }
    }

    /// The error at `path`, when it does not name its field yet.
    fn at(self, path: &str) -> SpecError {
        SpecError(match self.0 {
            Text::Located(m) => Text::Located(m),
            Text::Missing(field) => Text::Located(format!("{path}.{field} is required")),
            Text::Follows(text) => Text::Located(format!("{path} {text}")),
        })
    }

    fn located(message: String) -> SpecError {
        SpecError(Text::Located(message))
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for SpecError {}

impl de::Error for SpecError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SpecError(Text::Follows(msg.to_string()))
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        SpecError(Text::Follows(format!(
            "must be {expected}, not {unexpected}"
        )))
    }

    fn invalid_value(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        SpecError(Text::Follows(format!(
            "must be {expected}, not {unexpected}"
        )))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        SpecError(Text::Follows(format!(
            "{variant:?} is not one of {}",
            expected.join(", ")
        )))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        SpecError(Text::Follows(format!(
            "has no field {field:?} (its fields: {})",
            expected.join(", ")
        )))
    }

    fn missing_field(field: &'static str) -> Self {
        SpecError(Text::Missing(field.to_owned()))
    }
}

/// The value at `path` (`spec.exposure.type`, `spec.items[2]`).
struct At<'a> {
    value: &'a Value,
    path: String,
}

impl<'a> At<'a> {
    /// `{path} must be {what}, not {value}`.
    fn wrong(&self, what: &str) -> SpecError {
        SpecError::located(format!("{} must be {what}, not {}", self.path, self.value))
    }
}

/// Whether a struct's field is read as absent: null, or only whitespace.
fn absent(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

/// What a visitor expects, as its `expecting` says it.
struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

macro_rules! integer {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
            let path = self.path.clone();
            match self.value {
                Value::Number(n) if n.is_u64() => visitor.visit_u64(n.as_u64().unwrap_or_default()),
                Value::Number(n) if n.is_i64() => visitor.visit_i64(n.as_i64().unwrap_or_default()),
                _ => Err(self.wrong("an integer")),
            }
            .map_err(|e| e.at(&path))
        }
    )*};
}

macro_rules! float {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
            let path = self.path.clone();
            match self.value {
                Value::Number(n) => visitor.visit_f64(n.as_f64().unwrap_or_default()),
                _ => Err(self.wrong("a number")),
            }
            .map_err(|e| e.at(&path))
        }
    )*};
}

impl<'a> de::Deserializer<'a> for At<'a> {
    type Error = SpecError;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        let path = self.path.clone();
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) if n.is_u64() => visitor.visit_u64(n.as_u64().unwrap_or_default()),
            Value::Number(n) if n.is_i64() => visitor.visit_i64(n.as_i64().unwrap_or_default()),
            Value::Number(n) => visitor.visit_f64(n.as_f64().unwrap_or_default()),
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Items::new(items, &self.path)),
            Value::Object(entries) => visitor.visit_map(Entries::map(entries, &self.path)),
        }
        .map_err(|e| e.at(&path))
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Bool(b) => visitor
                .visit_bool(*b)
                .map_err(|e: SpecError| e.at(&self.path)),
            _ => Err(self.wrong("true or false")),
        }
    }

    integer!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
             deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128);
    float!(deserialize_f32 deserialize_f64);

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::String(s) => visitor
                .visit_borrowed_str(s)
                .map_err(|e: SpecError| e.at(&self.path)),
            _ => Err(self.wrong("a string")),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            _ => Err(self.wrong("null")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        let path = self.path.clone();
        visitor.visit_newtype_struct(self).map_err(|e| e.at(&path))
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Array(items) => visitor
                .visit_seq(Items::new(items, &self.path))
                .map_err(|e| e.at(&self.path)),
            _ => Err(self.wrong("a list")),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Object(entries) => visitor
                .visit_map(Entries::map(entries, &self.path))
                .map_err(|e| e.at(&self.path)),
            _ => Err(self.wrong("an object")),
        }
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        match self.value {
            Value::Object(entries) => visitor
                .visit_map(Entries::fields(entries, &self.path))
                .map_err(|e| e.at(&self.path)),
            _ => {
                // serde's derive says "struct Name" unless the type sets
                // `#[serde(expecting = "...")]`.
                let expecting = Expecting(&visitor).to_string();
                let what = if expecting.starts_with("struct ") {
                    "an object"
                } else {
                    &expecting
                };
                Err(self.wrong(what))
            }
        }
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, SpecError> {
        match self.value {
            Value::String(s) => {
                let variant = de::value::BorrowedStrDeserializer::<SpecError>::new(s);
                visitor.visit_enum(variant).map_err(|e| e.at(&self.path))
            }
            _ => Err(self.wrong("a string")),
        }
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, SpecError> {
        visitor.visit_unit()
    }
}

/// A list's items, each at `path[i]`.
struct Items<'a, 'p> {
    items: std::slice::Iter<'a, Value>,
    index: usize,
    path: &'p str,
}

impl<'a, 'p> Items<'a, 'p> {
    fn new(items: &'a [Value], path: &'p str) -> Self {
        Items {
            items: items.iter(),
            index: 0,
            path,
        }
    }
}

impl<'a> de::SeqAccess<'a> for Items<'a, '_> {
    type Error = SpecError;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, SpecError> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}[{}]", self.path, self.index);
        self.index += 1;
        seed.deserialize(At {
            value,
            path: path.clone(),
        })
        .map(Some)
        .map_err(|e| e.at(&path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// An object's entries, each value at `path.key`: as a struct's fields
/// (an absent value skipped) or as a map's entries (every one read).
struct Entries<'a, 'p> {
    entries: serde_json::map::Iter<'a>,
    fields: bool,
    value: Option<(&'a str, &'a Value)>,
    path: &'p str,
}

impl<'a, 'p> Entries<'a, 'p> {
    fn fields(entries: &'a Map<String, Value>, path: &'p str) -> Self {
        Entries {
            entries: entries.iter(),
            fields: true,
            value: None,
            path,
        }
    }

    fn map(entries: &'a Map<String, Value>, path: &'p str) -> Self {
        Entries {
            fields: false,
            ..Entries::fields(entries, path)
        }
    }
}

impl<'a> de::MapAccess<'a> for Entries<'a, '_> {
    type Error = SpecError;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, SpecError> {
        for (key, value) in self.entries.by_ref() {
            if self.fields && absent(value) {
                continue;
            }
            self.value = Some((key, value));
            let key = de::value::BorrowedStrDeserializer::<SpecError>::new(key);
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, SpecError> {
        let (key, value) = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("has a value without its key"))?;
        let path = format!("{}.{key}", self.path);
        seed.deserialize(At {
            value,
            path: path.clone(),
        })
        .map_err(|e| e.at(&path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        #[serde(default)]
        name: String,
        image: Option<String>,
        #[serde(default = "yes")]
        on: bool,
        mode: Option<Mode>,
        labels: Option<BTreeMap<String, String>>,
        items: Option<Vec<Item>>,
        replicas: Option<u8>,
        object: Option<Value>,
        checked: Option<Checked>,
    }

    fn yes() -> bool {
        true
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Mode {
        #[serde(rename = "clusterIP")]
        ClusterIp,
        #[serde(rename = "route")]
        Route,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Item {
        key: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(try_from = "String")]
    struct Checked(String);

    impl TryFrom<String> for Checked {
        type Error = String;
        fn try_from(s: String) -> Result<Self, String> {
            if s.chars().all(|c| c.is_ascii_lowercase()) {
                Ok(Checked(s))
            } else {
                Err(format!("{s:?} is not lowercase"))
            }
        }
    }

    fn error(spec: Value) -> String {
        parse::<Spec>(&json!({ "spec": spec }))
            .unwrap_err()
            .message()
            .to_owned()
    }

    #[test]
    fn nulls_and_blank_strings_are_absent_fields_and_no_spec_is_empty() {
        let spec: Spec = parse(&json!({"spec": {"image": "  ", "on": null, "mode": null,
                                                "labels": {"a": ""}}}))
        .unwrap();
        assert_eq!(spec.image, None);
        assert!(spec.on);
        assert_eq!(spec.mode, None);
        assert_eq!(
            spec.labels.unwrap()["a"],
            "",
            "a map's value is read as it is"
        );
        let spec: Spec = parse(&json!({"metadata": {}})).unwrap();
        assert_eq!(spec.name, "");
    }

    #[test]
    fn a_full_spec_parses() {
        let spec: Spec = parse(&json!({"spec": {
            "name": "n", "image": "i", "on": false, "mode": "route", "labels": {"a": "b"},
            "items": [{"key": "k"}], "replicas": 3, "object": {"any": [1]}, "checked": "abc"}}))
        .unwrap();
        assert_eq!(spec.mode, Some(Mode::Route));
        assert_eq!(spec.items, Some(vec![Item { key: "k".into() }]));
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.object, Some(json!({"any": [1]})));
        assert_eq!(spec.checked, Some(Checked("abc".into())));
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!(3), "spec must be an object, not 3"),
            (json!({"image": 1}), "spec.image must be a string, not 1"),
            (
                json!({"on": "yes"}),
                "spec.on must be true or false, not \"yes\"",
            ),
            (
                json!({"mode": "nodePort"}),
                "spec.mode \"nodePort\" is not one of clusterIP, route",
            ),
            (json!({"mode": 1}), "spec.mode must be a string, not 1"),
            (
                json!({"labels": {"a": 1}}),
                "spec.labels.a must be a string, not 1",
            ),
            (
                json!({"labels": []}),
                "spec.labels must be an object, not []",
            ),
            (json!({"items": {}}), "spec.items must be a list, not {}"),
            (json!({"items": [{}]}), "spec.items[0].key is required"),
            (
                json!({"items": [{"key": "a"}, {"key": false}]}),
                "spec.items[1].key must be a string, not false",
            ),
            (
                json!({"replicas": "3"}),
                "spec.replicas must be an integer, not \"3\"",
            ),
            (
                json!({"replicas": 1.5}),
                "spec.replicas must be an integer, not 1.5",
            ),
            (
                json!({"replicas": 300}),
                "spec.replicas must be u8, not integer `300`",
            ),
            (
                json!({"checked": "aBc"}),
                "spec.checked \"aBc\" is not lowercase",
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(error(spec.clone()), expected, "{spec}");
        }
    }

    #[test]
    fn a_struct_says_what_it_expects() {
        #[derive(Debug, Deserialize)]
        #[serde(expecting = "an object with a name")]
        #[allow(dead_code)]
        struct Named {
            name: String,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Spec {
            named: Named,
        }
        let e = parse::<Spec>(&json!({"spec": {"named": "x"}})).unwrap_err();
        assert_eq!(
            e.message(),
            "spec.named must be an object with a name, not \"x\""
        );
        let e = parse::<Spec>(&json!({"spec": {"named": {"name": " "}}})).unwrap_err();
        assert_eq!(e.message(), "spec.named.name is required");
        let e = parse::<Spec>(&json!({"spec": {}})).unwrap_err();
        assert_eq!(e.message(), "spec.named is required");
    }
}
