//! PgAdminEgressConfined: whether the NetworkPolicies of the namespace confine the egress of pgAdmin's Pods to named destinations (advisory).

use std::net::IpAddr;

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Condition, EgressPolicyFact, Facts, LabelSelectorFact, NodePodCidrsFact, PeerFact, PodFact,
    message, read,
};
use reconciler_netpol::cidr::Cidr;
use reconciler_netpol::egress::rule_confines;
use reconciler_netpol::selector::Selector;
use serde_json::{Map, Value, json};

use crate::registry::*;

/// A label selector fact as `metav1.LabelSelector` JSON.
fn selector_json(s: &LabelSelectorFact) -> Value {
    let mut out = Map::new();
    if !s.match_labels.is_empty() {
        let labels: Map<String, Value> = s
            .match_labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        out.insert("matchLabels".into(), Value::Object(labels));
    }
    if !s.match_expressions.is_empty() {
        let expressions = s
            .match_expressions
            .iter()
            .map(|r| {
                let mut e = json!({"key": r.key, "operator": r.operator});
                if !r.values.is_empty() {
                    e["values"] = json!(r.values);
                }
                e
            })
            .collect();
        out.insert("matchExpressions".into(), Value::Array(expressions));
    }
    Value::Object(out)
}

/// A peer fact as `NetworkPolicyPeer` JSON.
fn peer_json(p: &PeerFact) -> Value {
    let mut out = Map::new();
    if let Some(s) = &p.pod_selector {
        out.insert("podSelector".into(), selector_json(s));
    }
    if let Some(s) = &p.namespace_selector {
        out.insert("namespaceSelector".into(), selector_json(s));
    }
    if let Some(b) = &p.ip_block {
        let mut block = json!({"cidr": b.cidr});
        if !b.except.is_empty() {
            block["except"] = json!(b.except);
        }
        out.insert("ipBlock".into(), block);
    }
    Value::Object(out)
}

/// Whether `policy` applies to the Pod: its selector matches the Pod's
/// labels (an unreadable selector applies, failing closed).
fn selects(policy: &EgressPolicyFact, pod: &PodFact) -> bool {
    Selector::parse(&selector_json(&policy.pod_selector))
        .map_or(true, |s| s.matches_pairs(&pod.meta.labels))
}

/// Decides PgAdminEgressConfined from pgAdmin's Pods.
pub fn evaluate(facts: &dyn Facts, namespace: &str, pods: &[PodFact]) -> Condition {
    let Some(pod) = pods.iter().find(|p| p.ready && p.meta.deletion.is_none()) else {
        return unknown(
            EGRESS_CONFINED,
            PGADMIN_NOT_RUNNING,
            "pgAdmin has no Ready Pod yet: the egress statement waits",
        );
    };
    let policies = match facts.egress_policies(namespace) {
        Ok(p) => p,
        Err(e) => {
            return unknown(
                EGRESS_CONFINED,
                RECONCILING,
                read::failure(&format!("the NetworkPolicies of {namespace}"), &e),
            );
        }
    };
    let isolating: Vec<&EgressPolicyFact> = policies
        .iter()
        .filter(|p| p.isolates_egress && selects(p, pod))
        .collect();
    if isolating.is_empty() {
        return fails(
            EGRESS_CONFINED,
            PGADMIN_EGRESS_OPEN,
            format!(
                "no NetworkPolicy of {namespace} isolates the egress of pgAdmin's Pods (none selects them with Egress among its policyTypes): pgAdmin reaches every destination"
            ),
        );
    }
    let pod_ips: Vec<IpAddr> = pods
        .iter()
        .filter_map(|p| p.pod_ip.as_deref()?.parse().ok())
        .collect();
    let node_cidrs: Vec<Cidr> = match facts.node_pod_cidrs() {
        NodePodCidrsFact::Known(nodes) => nodes
            .iter()
            .flat_map(|n| n.pod_cidrs.iter().filter_map(|c| c.parse().ok()))
            .collect(),
        _ => Vec::new(),
    };
    let open: Vec<String> = isolating
        .iter()
        .flat_map(|p| {
            p.egress.iter().enumerate().filter_map(|(i, rule)| {
                let to: Vec<Value> = rule.to_peers.iter().map(peer_json).collect();
                rule_confines(&to, &pod_ips, &node_cidrs)
                    .err()
                    .map(|why| format!("NetworkPolicy {} egress[{i}] ({why})", p.meta.name))
            })
        })
        .collect();
    let names: Vec<&str> = isolating.iter().map(|p| p.meta.name.as_str()).collect();
    if open.is_empty() {
        ok(
            EGRESS_CONFINED,
            format!(
                "NetworkPolicy {} confines the egress of pgAdmin's Pods to named destinations",
                names.join(", ")
            ),
        )
    } else {
        fails(
            EGRESS_CONFINED,
            PGADMIN_EGRESS_OPEN,
            message::bound(&format!(
                "egress of pgAdmin's Pods is not confined to named destinations: {}",
                open.join("; ")
            )),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::mock::{MockFacts, meta};
    use reconciler_guest_sdk::{ConditionStatus, EgressRuleFact};

    fn pod(ready: bool) -> PodFact {
        let mut m = meta("ns", "orders-pgadmin-1");
        m.labels = vec![("app.kubernetes.io/instance".into(), "orders".into())];
        PodFact {
            meta: m,
            phase: "Running".into(),
            ready,
            waiting: None,
            unschedulable: None,
            restart_count: 0,
            pod_ip: Some("10.128.0.9".into()),
            node_name: None,
        }
    }

    fn policy(name: &str, rules: Vec<Vec<Value>>) -> EgressPolicyFact {
        EgressPolicyFact {
            meta: meta("ns", name),
            pod_selector: LabelSelectorFact {
                match_labels: vec![("app.kubernetes.io/instance".into(), "orders".into())],
                match_expressions: vec![],
            },
            isolates_egress: true,
            egress: rules
                .into_iter()
                .map(|to| EgressRuleFact {
                    ports: vec![],
                    to_peers: to
                        .iter()
                        .map(|p| PeerFact {
                            pod_selector: p.get("pod").map(|v| LabelSelectorFact {
                                match_labels: vec![(
                                    "cnpg.io/cluster".into(),
                                    v.as_str().unwrap().into(),
                                )],
                                match_expressions: vec![],
                            }),
                            namespace_selector: p.get("anyNamespace").map(|_| LabelSelectorFact {
                                match_labels: vec![],
                                match_expressions: vec![],
                            }),
                            ip_block: None,
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn no_ready_pod_waits_and_no_policy_is_open() {
        let c = evaluate(&MockFacts::at(0), "ns", &[pod(false)]);
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::Unknown, PGADMIN_NOT_RUNNING)
        );
        let c = evaluate(&MockFacts::at(0), "ns", &[pod(true)]);
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::False, PGADMIN_EGRESS_OPEN)
        );
    }

    #[test]
    fn every_open_rule_is_named() {
        let facts = MockFacts::at(0)
            .with_egress_policy(policy("a", vec![vec![json!({"pod": "orders"})], vec![]]))
            .with_egress_policy(policy("b", vec![vec![json!({"anyNamespace": true})]]));
        let c = evaluate(&facts, "ns", &[pod(true)]);
        assert_eq!(c.reason, PGADMIN_EGRESS_OPEN);
        assert!(
            c.message
                .contains("NetworkPolicy a egress[1] (no to: every destination)"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains(
                "NetworkPolicy b egress[0] (to[0] is a namespaceSelector that pins no namespace)"
            ),
            "{}",
            c.message
        );
        let facts =
            MockFacts::at(0).with_egress_policy(policy("a", vec![vec![json!({"pod": "orders"})]]));
        let c = evaluate(&facts, "ns", &[pod(true)]);
        assert_eq!(c.status, ConditionStatus::True);
    }
}
