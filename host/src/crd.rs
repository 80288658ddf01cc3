//! The CustomResourceDefinition of a kind, rendered from its guest's spec.

use reconciler_conventions::kind::KindSpec;
use serde_json::{Value, json};

/// The CRD serving `spec`: status subresource, Ready/Reason/Age printer
/// columns, the guest's spec schema (open when it gives none).
pub fn render(spec: &KindSpec) -> Value {
    let spec_schema = spec
        .spec_schema
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .map(known_formats_only)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let singular = spec.kind.to_lowercase();
    let ready = |field: &str| format!(".status.conditions[?(@.type==\"Ready\")].{field}");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", spec.plural, spec.group)},
        "spec": {
            "group": spec.group,
            "names": {
                "kind": spec.kind,
                "listKind": format!("{}List", spec.kind),
                "plural": spec.plural,
                "singular": singular,
            },
            "scope": if spec.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": spec.version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns(spec, &ready),
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": spec_schema,
                        "status": status_schema(),
                    },
                }},
            }],
        },
    })
}

/// The string formats the API server validates (apiextensions-apiserver's
/// `supportedVersionedFormats`, `-` removed as it compares them), and the
/// OpenAPI number formats it stores as they are.
const KNOWN_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
    "int32",
    "int64",
    "float",
    "double",
];

/// `schema` without the formats the API server does not know (a Rust
/// `u16`'s `uint16`, say): it ignores them when it validates, and warns
/// `unrecognized format` on every apply of the CRD.
fn known_formats_only(mut schema: Value) -> Value {
    strip_unknown_formats(&mut schema);
    schema
}

/// Walks schemas only (not `default`, `enum` or `example`, whose values
/// may hold a key named `format`).
fn strip_unknown_formats(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let unknown = map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| !KNOWN_FORMATS.contains(&f.replace('-', "").as_str()));
    if unknown {
        map.remove("format");
    }
    for (keyword, value) in map.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties" | "patternProperties" | "definitions", Value::Object(schemas)) => {
                schemas.values_mut().for_each(strip_unknown_formats);
            }
            ("allOf" | "anyOf" | "oneOf" | "items", Value::Array(schemas)) => {
                schemas.iter_mut().for_each(strip_unknown_formats);
            }
            ("items" | "additionalProperties" | "not", nested) => strip_unknown_formats(nested),
            _ => {}
        }
    }
}

/// Ready, Reason, the guest's own columns (those marked wide only with
/// `-o wide`), Age.
fn columns(spec: &KindSpec, ready: &dyn Fn(&str) -> String) -> Value {
    let mut columns = vec![
        json!({"name": "Ready", "type": "string", "jsonPath": ready("status")}),
        json!({"name": "Reason", "type": "string", "jsonPath": ready("reason")}),
    ];
    for c in &spec.printer_columns {
        let mut column = json!({"name": c.name, "type": c.type_, "jsonPath": c.json_path});
        if c.wide {
            column["priority"] = json!(1);
        }
        if let Some(d) = &c.description {
            column["description"] = json!(d);
        }
        columns.push(column);
    }
    columns.push(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}));
    Value::Array(columns)
}

/// `.status`: conditions as `metav1.Condition`, the guest's fields open.
fn status_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"},
            "conditions": {
                "type": "array",
                "maxItems": reconciler_conventions::kind::MAX_CONDITIONS,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {
                    "type": "object",
                    "required": ["type", "status", "reason", "lastTransitionTime"],
                    "properties": {
                        "type": {"type": "string", "maxLength": 316},
                        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "reason": {"type": "string", "maxLength": 1024},
                        "message": {"type": "string", "maxLength": 32768},
                        "lastTransitionTime": {"type": "string", "format": "date-time"},
                        "observedGeneration": {"type": "integer", "format": "int64"},
                    },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(schema: Option<&str>) -> KindSpec {
        KindSpec {
            group: "pgtoolbox.fyannk.dev".into(),
            version: "v1alpha1".into(),
            kind: "EvidenceAgent".into(),
            plural: "evidenceagents".into(),
            namespaced: true,
            aspects: vec!["WorkloadReady".into()],
            spec_schema: schema.map(str::to_owned),
            ..KindSpec::default()
        }
    }

    #[test]
    fn crd_has_status_subresource_and_ready_columns() {
        let crd = render(&spec(None));
        assert_eq!(
            crd["metadata"]["name"],
            "evidenceagents.pgtoolbox.fyannk.dev"
        );
        let v = &crd["spec"]["versions"][0];
        assert_eq!(v["subresources"]["status"], json!({}));
        let columns: Vec<&str> = v["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Ready", "Reason", "Age"]);
        assert_eq!(
            v["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
    }

    #[test]
    fn formats_the_api_server_does_not_know_are_left_out() {
        let schema = json!({"type": "object", "properties": {
            "port": {"type": "integer", "format": "uint16", "minimum": 0},
            "replicas": {"type": "integer", "format": "int32"},
            "since": {"type": "string", "format": "date-time"},
            "peers": {"type": "array", "items": {"type": "integer", "format": "uint8"}},
            "tag": {"type": "string", "format": "semver"},
            "output": {"type": "object", "default": {"format": "yaml"}},
        }});
        let crd = render(&spec(Some(&schema.to_string())));
        let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"];
        assert_eq!(props["port"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(props["replicas"]["format"], "int32");
        assert_eq!(props["since"]["format"], "date-time");
        assert_eq!(props["peers"]["items"], json!({"type": "integer"}));
        assert_eq!(props["tag"], json!({"type": "string"}));
        assert_eq!(
            props["output"]["default"],
            json!({"format": "yaml"}),
            "a value is not a schema"
        );
    }

    #[test]
    fn crd_uses_the_guests_schema() {
        let crd = render(&spec(Some(r#"{"type":"object","required":["cluster"]}"#)));
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(schema["required"], json!(["cluster"]));
    }

    #[test]
    fn the_guests_columns_sit_between_reason_and_age_wide_ones_at_priority_1() {
        let mut spec = spec(None);
        spec.printer_columns = vec![
            reconciler_conventions::kind::PrinterColumn {
                name: "URL".into(),
                type_: "string".into(),
                json_path: ".status.url".into(),
                wide: false,
                description: None,
            },
            reconciler_conventions::kind::PrinterColumn {
                name: "Expiry".into(),
                type_: "date".into(),
                json_path: ".status.expiry".into(),
                wide: true,
                description: Some("when it expires".into()),
            },
        ];
        let crd = render(&spec);
        let columns = &crd["spec"]["versions"][0]["additionalPrinterColumns"];
        let names: Vec<&str> = columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Ready", "Reason", "URL", "Expiry", "Age"]);
        assert_eq!(columns[2].get("priority"), None);
        assert_eq!(columns[3]["priority"], 1);
        assert_eq!(columns[3]["description"], "when it expires");
    }
}
