//! What a captured fixture keeps of an object the operator's cache holds: the cache's slimming as it is, and of a Secret its key names and its certificates' SHA-256 and PEM size, never a value.
//!
//! The cache ([`crate::operator::cluster::cache::slim`]) already drops
//! managedFields, the last-applied annotation, a Pod's environment
//! values, and every Secret value (keys kept, values blank), and keeps a
//! ConfigMap's values as digests. A Secret's certificates stay there as a
//! summary holding their PEM text too, for the CA bundles the host
//! mirrors; no fact serves that text to a guest
//! ([`certificates::bundle`] reads the hash and size), so a fixture
//! leaves it out.

use serde_json::Value;

use crate::facts::certificates;

/// `object` as a fixture holds it: a Secret's values blanked (again: the
/// cache blanked them already) and its certificates' PEM text dropped
/// from the summary; any other object as it is.
pub(crate) fn for_fixture(mut object: Value) -> Value {
    if !(object["apiVersion"] == "v1" && object["kind"] == "Secret") {
        return object;
    }
    for field in ["data", "binaryData", "stringData"] {
        if let Some(m) = object.get_mut(field).and_then(Value::as_object_mut) {
            for v in m.values_mut() {
                *v = Value::String(String::new());
            }
        }
    }
    if let Some(summary) = object
        .get_mut(certificates::SUMMARY_FIELD)
        .and_then(Value::as_object_mut)
    {
        let blocks = summary
            .values_mut()
            .filter_map(Value::as_array_mut)
            .flatten()
            .filter_map(Value::as_object_mut);
        for block in blocks {
            block.retain(|field, _| field == "sha256" || field == "pemBytes");
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use serde_json::json;

    use super::*;
    use crate::operator::cluster::cache::slim;

    /// A CA certificate (not a real one: the host counts blocks whose
    /// base64 decodes) and a private key.
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nAQIDBAU=\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0IGtleQ==\n-----END PRIVATE KEY-----\n";

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn a_captured_secret_holds_its_keys_and_certificate_hashes_and_no_value() {
        let full = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "alpha-ca", "namespace": "team-a"},
            "data": {"ca.crt": b64(CERT), "ca.key": b64(KEY), "password": b64("hunter2")},
        });
        let cached = slim(full.clone());
        let captured = for_fixture(cached.clone());
        let text = captured.to_string();
        for value in [CERT, KEY, "hunter2", "AQIDBAU=", "c2VjcmV0IGtleQ=="] {
            assert!(!text.contains(value), "{value:?} in {text}");
        }
        for (key, value) in full["data"].as_object().unwrap() {
            assert!(!text.contains(value.as_str().unwrap()), "{key}'s value");
        }
        assert_eq!(
            captured["data"],
            json!({"ca.crt": "", "ca.key": "", "password": ""}),
            "the keys, blank"
        );
        // The certificate fact is served the same from the capture as from
        // the cache and from the full Secret.
        for secret in [&full, &cached] {
            let (want, got) = (
                certificates::bundle(secret, "ca.crt"),
                certificates::bundle(&captured, "ca.crt"),
            );
            assert_eq!(got.has_key, want.has_key);
            assert_eq!(got.certificates.len(), 1);
            assert_eq!(got.certificates[0].sha256, want.certificates[0].sha256);
            assert_eq!(
                got.certificates[0].pem_bytes,
                want.certificates[0].pem_bytes
            );
        }
        // The cache kept the PEM text (for the bundles the host mirrors);
        // the capture does not.
        assert!(cached.to_string().contains("AQIDBAU="));
        assert!(certificates::pem_blocks(&captured, "ca.crt").is_empty());
        assert_eq!(for_fixture(captured.clone()), captured, "idempotent");
    }

    #[test]
    fn other_objects_are_kept_as_the_cache_holds_them() {
        let config_map = slim(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
            "data": {"setting": "on"},
        }));
        assert_eq!(for_fixture(config_map.clone()), config_map);
        let pod = slim(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "env": [{"name": "TOKEN", "value": "t0ken"}]}]},
        }));
        assert_eq!(for_fixture(pod.clone()), pod);
        assert!(!pod.to_string().contains("t0ken"));
        // Only a core Secret is a Secret.
        let custom = json!({"apiVersion": "example.com/v1", "kind": "Secret",
                            "metadata": {"name": "s"}, "data": {"k": "v"}});
        assert_eq!(for_fixture(custom.clone()), custom);
    }
}
