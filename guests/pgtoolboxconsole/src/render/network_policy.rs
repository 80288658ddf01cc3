//! The ingress NetworkPolicy `<name>-ingress`: only the listed peers reach the console port, in the form the API server stores.

use serde_json::{Map, Value, json};

use super::{head, labels, object};
use crate::children::CONSOLE_PORT;

/// The policy admitting `from` (the confinement plan's peers) to the
/// console port of the console's Pods.
pub fn network_policy(console: &str, name: &str, from: &[Value]) -> Value {
    let from: Vec<Value> = from.iter().map(canonical).collect();
    object(
        head("networking.k8s.io/v1", "NetworkPolicy", name, console),
        json!({"spec": {
            "podSelector": {"matchLabels": labels(console)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": from, "ports": [{"protocol": "TCP", "port": CONSOLE_PORT}]}],
        }}),
    )
}

/// A peer as the API server stores it: nulls, empty lists and empty maps
/// are left out (the server omits them), except an empty `podSelector` or
/// `namespaceSelector`, which selects everything and is kept.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(members) => {
            let kept: Map<String, Value> = members
                .iter()
                .filter_map(|(k, v)| {
                    let v = canonical(v);
                    let selector = k == "podSelector" || k == "namespaceSelector";
                    let empty = match &v {
                        Value::Null => true,
                        Value::Array(a) => a.is_empty(),
                        Value::Object(o) => o.is_empty() && !selector,
                        _ => false,
                    };
                    (!empty).then(|| (k.clone(), v))
                })
                .collect();
            Value::Object(kept)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_admits_the_peers_to_the_console_port() {
        let router = json!({"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}});
        let p = network_policy("orders", "orders-ingress", std::slice::from_ref(&router));
        assert_eq!(p["metadata"]["name"], "orders-ingress");
        assert_eq!(p["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(
            p["spec"]["ingress"],
            json!([{"from": [router], "ports": [{"protocol": "TCP", "port": 8080}]}])
        );
    }

    #[test]
    fn peers_are_written_as_stored() {
        assert_eq!(
            canonical(&json!({
                "podSelector": {},
                "namespaceSelector": {"matchLabels": {}, "matchExpressions": [
                    {"key": "team", "operator": "Exists", "values": []}]},
                "ipBlock": null,
            })),
            json!({"podSelector": {}, "namespaceSelector": {"matchExpressions": [
                {"key": "team", "operator": "Exists"}]}})
        );
        assert_eq!(
            canonical(&json!({"ipBlock": {"cidr": "203.0.113.0/24", "except": []}})),
            json!({"ipBlock": {"cidr": "203.0.113.0/24"}})
        );
    }
}
