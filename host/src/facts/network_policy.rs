//! NetworkPolicy facts: a policy's ingress and egress sides, typed as written (pure, table-tested).

use serde_json::Value;

use super::meta::object_meta;
use crate::contract::facts::{
    EgressPolicyFact, EgressRuleFact, IngressRuleFact, IpBlockFact, LabelSelectorFact,
    NetworkPolicyFact, PeerFact, PortFact, SelectorRequirement,
};

/// A networking.k8s.io/v1 NetworkPolicy's ingress side. Ingress isolates
/// when `policyTypes` names it, or leaves the list out (or empty): then
/// Ingress is implied. A port's protocol defaults to TCP.
///
/// A field of the wrong type (which the API server would refuse) reads as
/// absent: `policyTypes` that is not a list implies Ingress, `ingress`,
/// `ports`, `from` or `except` that is not a list is empty, a selector that
/// is not an object selects as `{}` (and a peer's is left out), a label
/// value or requirement field that is not a string reads as "". A port is
/// kept as written (a number's JSON text, so `-1` or `1.5` pass through for
/// the guest to judge), and absent when neither a number nor a string; an
/// `endPort` outside i32 is absent.
pub(crate) fn network_policy_fact(policy: &Value) -> NetworkPolicyFact {
    let spec = &policy["spec"];
    let isolates_ingress = match spec["policyTypes"].as_array() {
        Some(types) if !types.is_empty() => types.iter().any(|t| t == "Ingress"),
        _ => true,
    };
    NetworkPolicyFact {
        meta: object_meta(policy),
        pod_selector: label_selector(&spec["podSelector"]),
        isolates_ingress,
        ingress: items(&spec["ingress"])
            .map(|rule| IngressRuleFact {
                ports: items(&rule["ports"]).map(port).collect(),
                from_peers: items(&rule["from"]).map(peer).collect(),
            })
            .collect(),
    }
}

/// A networking.k8s.io/v1 NetworkPolicy's egress side. Egress isolates
/// when `policyTypes` names it or, with `policyTypes` left out (or empty),
/// when the policy has egress rules, as the API server defaults it. Fields
/// of the wrong type read as for the ingress side.
pub(crate) fn egress_policy_fact(policy: &Value) -> EgressPolicyFact {
    let spec = &policy["spec"];
    let egress: Vec<EgressRuleFact> = items(&spec["egress"])
        .map(|rule| EgressRuleFact {
            ports: items(&rule["ports"]).map(port).collect(),
            to_peers: items(&rule["to"]).map(peer).collect(),
        })
        .collect();
    let isolates_egress = match spec["policyTypes"].as_array() {
        Some(types) if !types.is_empty() => types.iter().any(|t| t == "Egress"),
        _ => !egress.is_empty(),
    };
    EgressPolicyFact {
        meta: object_meta(policy),
        pod_selector: label_selector(&spec["podSelector"]),
        isolates_egress,
        egress,
    }
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

fn strings(list: &Value) -> Vec<String> {
    items(list)
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// A `LabelSelector` as written; absent reads as empty (everything).
fn label_selector(selector: &Value) -> LabelSelectorFact {
    let mut match_labels: Vec<(String, String)> = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect();
    match_labels.sort();
    LabelSelectorFact {
        match_labels,
        match_expressions: items(&selector["matchExpressions"])
            .map(|e| SelectorRequirement {
                key: e["key"].as_str().unwrap_or_default().to_owned(),
                operator: e["operator"].as_str().unwrap_or_default().to_owned(),
                values: strings(&e["values"]),
            })
            .collect(),
    }
}

fn peer(peer: &Value) -> PeerFact {
    let selector = |field: &str| {
        let s = &peer[field];
        s.is_object().then(|| label_selector(s))
    };
    PeerFact {
        pod_selector: selector("podSelector"),
        namespace_selector: selector("namespaceSelector"),
        ip_block: peer["ipBlock"].as_object().map(|b| IpBlockFact {
            cidr: b
                .get("cidr")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            except: b.get("except").map(strings).unwrap_or_default(),
        }),
    }
}

fn port(port: &Value) -> PortFact {
    PortFact {
        protocol: port["protocol"].as_str().unwrap_or("TCP").to_owned(),
        port: match &port["port"] {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) => Some(s.clone()),
            _ => None,
        },
        end_port: port["endPort"].as_i64().and_then(|p| i32::try_from(p).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(spec: Value) -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn isolation_table() {
        for (spec, isolates) in [
            (json!({"podSelector": {}}), true),
            (json!({"podSelector": {}, "policyTypes": []}), true),
            (json!({"podSelector": {}, "policyTypes": ["Ingress"]}), true),
            (json!({"podSelector": {}, "policyTypes": ["Egress"]}), false),
            (
                json!({"podSelector": {}, "policyTypes": ["Egress", "Ingress"]}),
                true,
            ),
        ] {
            let got = network_policy_fact(&policy(spec.clone()));
            assert_eq!(got.isolates_ingress, isolates, "{spec}");
        }
    }

    #[test]
    fn rules_are_typed_as_written() {
        let got = network_policy_fact(&policy(json!({
            "podSelector": {"matchLabels": {"b": "2", "a": "1"},
                            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
            "ingress": [
                {},
                {"ports": [{"port": 8080}, {"protocol": "UDP", "port": "dns"}, {"port": 3000, "endPort": 3100}, {}],
                 "from": [
                    {"podSelector": {}},
                    {"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {"matchLabels": {"app": "x"}}},
                    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}
                 ]}
            ]
        })));
        assert_eq!(got.meta.name, "p");
        assert_eq!(
            got.pod_selector.match_labels,
            [("a".into(), "1".into()), ("b".into(), "2".into())]
        );
        assert_eq!(got.pod_selector.match_expressions[0].operator, "In");
        assert_eq!(got.pod_selector.match_expressions[0].values, ["web"]);
        assert_eq!(got.ingress.len(), 2);
        assert!(
            got.ingress[0].ports.is_empty() && got.ingress[0].from_peers.is_empty(),
            "an empty rule: every port from every source"
        );
        let ports: Vec<(String, Option<String>, Option<i32>)> = got.ingress[1]
            .ports
            .iter()
            .map(|p| (p.protocol.clone(), p.port.clone(), p.end_port))
            .collect();
        assert_eq!(
            ports,
            [
                ("TCP".into(), Some("8080".into()), None),
                ("UDP".into(), Some("dns".into()), None),
                ("TCP".into(), Some("3000".into()), Some(3100)),
                ("TCP".into(), None, None),
            ]
        );
        let peers = &got.ingress[1].from_peers;
        let everything = peers[0].pod_selector.as_ref().unwrap();
        assert!(everything.match_labels.is_empty() && peers[0].namespace_selector.is_none());
        assert_eq!(
            peers[1].namespace_selector.as_ref().unwrap().match_labels,
            [("team".into(), "a".into())]
        );
        assert!(peers[1].pod_selector.is_some() && peers[1].ip_block.is_none());
        let block = peers[2].ip_block.as_ref().unwrap();
        assert_eq!(
            (block.cidr.as_str(), block.except.clone()),
            ("10.0.0.0/8", vec!["10.1.0.0/16".to_owned()])
        );
    }

    #[test]
    fn the_egress_side_is_typed_and_isolates_as_the_api_server_defaults_it() {
        for (spec, isolates) in [
            (json!({"podSelector": {}}), false),
            (json!({"podSelector": {}, "egress": [{}]}), true),
            (
                json!({"podSelector": {}, "policyTypes": ["Ingress"], "egress": [{}]}),
                false,
            ),
            (
                json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
                true,
            ),
        ] {
            assert_eq!(
                egress_policy_fact(&policy(spec.clone())).isolates_egress,
                isolates,
                "{spec}"
            );
        }
        let fact = egress_policy_fact(&policy(json!({
        "podSelector": {"matchLabels": {"app": "pgadmin"}},
        "policyTypes": ["Egress"],
        "egress": [
            {"to": [{"podSelector": {"matchLabels": {"cnpg.io/cluster": "orders"}}},
                    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
             "ports": [{"port": 5432}]},
            {"ports": [{"protocol": "UDP", "port": 53}]}
        ]})));
        assert_eq!(
            fact.pod_selector.match_labels,
            [("app".to_owned(), "pgadmin".to_owned())]
        );
        assert_eq!(fact.egress.len(), 2);
        assert_eq!(fact.egress[0].to_peers.len(), 2);
        assert_eq!(fact.egress[0].ports[0].port.as_deref(), Some("5432"));
        assert_eq!(
            fact.egress[0].to_peers[1].ip_block.as_ref().unwrap().except,
            ["10.1.0.0/16"]
        );
        assert!(fact.egress[1].to_peers.is_empty(), "every destination");
        assert_eq!(fact.egress[1].ports[0].protocol, "UDP");
    }

    #[test]
    fn no_spec_selects_every_pod_and_isolates() {
        let got = network_policy_fact(&json!({"metadata": {"name": "bare"}}));
        assert!(got.isolates_ingress && got.ingress.is_empty());
        assert!(got.pod_selector.match_labels.is_empty());
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let got = network_policy_fact(&policy(json!({
            "podSelector": "app=x",
            "policyTypes": "Egress",
            "ingress": [
                null,
                {"ports": {"port": 80}, "from": "everyone"},
                {"ports": [{"port": -1, "endPort": 1u64 << 63, "protocol": 6}, {"port": 1.5, "endPort": -2},
                           {"port": true, "endPort": "90"}, null],
                 "from": [null, {"podSelector": [], "namespaceSelector": "x", "ipBlock": {"cidr": 10, "except": "y"}},
                          {"podSelector": {"matchLabels": {"a": 1}, "matchExpressions": [null, {"key": 2, "values": [3, "v"]}]}}]}
            ]
        })));
        assert!(
            got.isolates_ingress,
            "policyTypes not a list: Ingress implied"
        );
        assert!(
            got.pod_selector.match_labels.is_empty()
                && got.pod_selector.match_expressions.is_empty()
        );
        assert_eq!(got.ingress.len(), 3);
        assert!(got.ingress[0].ports.is_empty() && got.ingress[0].from_peers.is_empty());
        assert!(got.ingress[1].ports.is_empty() && got.ingress[1].from_peers.is_empty());
        let ports: Vec<(String, Option<String>, Option<i32>)> = got.ingress[2]
            .ports
            .iter()
            .map(|p| (p.protocol.clone(), p.port.clone(), p.end_port))
            .collect();
        assert_eq!(
            ports,
            [
                ("TCP".into(), Some("-1".into()), None),
                ("TCP".into(), Some("1.5".into()), Some(-2)),
                ("TCP".into(), None, None),
                ("TCP".into(), None, None),
            ]
        );
        let peers = &got.ingress[2].from_peers;
        assert!(peers[0].pod_selector.is_none() && peers[0].ip_block.is_none());
        assert!(peers[1].pod_selector.is_none() && peers[1].namespace_selector.is_none());
        let block = peers[1].ip_block.as_ref().unwrap();
        assert!(block.cidr.is_empty() && block.except.is_empty());
        let s = peers[2].pod_selector.as_ref().unwrap();
        assert_eq!(s.match_labels, [("a".into(), "".into())]);
        assert_eq!(s.match_expressions.len(), 2);
        assert_eq!(
            (
                s.match_expressions[1].key.as_str(),
                s.match_expressions[1].values.clone()
            ),
            ("", vec!["v".to_owned()])
        );
        let bare = network_policy_fact(&json!(["not", "an", "object"]));
        assert!(bare.isolates_ingress && bare.ingress.is_empty());
    }
}
