//! Node facts: the Nodes' pod CIDRs, or why they cannot be known (pure, table-tested).

use std::sync::Arc;

use serde_json::Value;

use crate::contract::facts::{NodeCidrs, NodePodCidrsFact};

/// The most Nodes the host checks; above, it answers `too-many`.
pub(crate) const MAX_NODES: usize = 10_000;

/// The pod CIDRs of every Node, sorted by name: `spec.podCIDRs`, or the
/// singular `spec.podCIDR` when the list is absent. Any Node with neither
/// makes the answer `incomplete` (its CNI allocates Pod addresses
/// elsewhere); more than [`MAX_NODES`] makes it `too-many`. A
/// `spec.podCIDRs` that is not a list reads as absent (the singular field
/// is read instead); entries that are not strings are left out, so a list
/// of none counts as no CIDR.
pub fn node_pod_cidrs(nodes: &[Arc<Value>]) -> NodePodCidrsFact {
    if nodes.len() > MAX_NODES {
        return too_many(nodes.len());
    }
    from_nodes(nodes.iter().map(|n| node_cidrs(n)).collect())
}

/// The answer when there are `count` Nodes, more than [`MAX_NODES`].
pub fn too_many(count: usize) -> NodePodCidrsFact {
    NodePodCidrsFact::TooMany(u32::try_from(count).unwrap_or(u32::MAX))
}

/// One Node's name and pod CIDRs.
pub fn node_cidrs(node: &Value) -> NodeCidrs {
    NodeCidrs {
        node: node["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        pod_cidrs: pod_cidrs(&node["spec"]),
    }
}

/// The answer from every Node's CIDRs (at most [`MAX_NODES`]).
pub(crate) fn from_nodes(mut known: Vec<NodeCidrs>) -> NodePodCidrsFact {
    known.sort_by(|a, b| a.node.cmp(&b.node));
    let missing: Vec<String> = known
        .iter()
        .filter(|n| n.pod_cidrs.is_empty())
        .map(|n| n.node.clone())
        .collect();
    if missing.is_empty() {
        NodePodCidrsFact::Known(known)
    } else {
        NodePodCidrsFact::Incomplete(missing)
    }
}

fn pod_cidrs(spec: &Value) -> Vec<String> {
    match spec["podCIDRs"].as_array() {
        Some(list) => list
            .iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect(),
        None => spec["podCIDR"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(|c| vec![c.to_owned()])
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, spec: Value) -> Arc<Value> {
        Arc::new(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec}),
        )
    }

    fn describe(f: &NodePodCidrsFact) -> String {
        match f {
            NodePodCidrsFact::Known(nodes) => nodes
                .iter()
                .map(|n| format!("{}={}", n.node, n.pod_cidrs.join("+")))
                .collect::<Vec<_>>()
                .join(" "),
            NodePodCidrsFact::Incomplete(names) => format!("incomplete {}", names.join(" ")),
            NodePodCidrsFact::TooMany(n) => format!("too-many {n}"),
            NodePodCidrsFact::Forbidden(t) => format!("forbidden {t}"),
        }
    }

    #[test]
    fn pod_cidrs_table() {
        let dual = json!({"podCIDRs": ["10.0.1.0/24", "fd00:1::/64"], "podCIDR": "10.0.1.0/24"});
        for (name, nodes, want) in [
            ("no nodes", vec![], ""),
            (
                "sorted by name, both families",
                vec![
                    node("b", json!({"podCIDRs": ["10.0.2.0/24"]})),
                    node("a", dual.clone()),
                ],
                "a=10.0.1.0/24+fd00:1::/64 b=10.0.2.0/24",
            ),
            (
                "the singular podCIDR when the list is absent",
                vec![node("a", json!({"podCIDR": "10.0.3.0/24"}))],
                "a=10.0.3.0/24",
            ),
            (
                "nodes without any, sorted",
                vec![
                    node("z", json!({})),
                    node("a", dual),
                    node("m", json!({"podCIDRs": []})),
                ],
                "incomplete m z",
            ),
        ] {
            assert_eq!(describe(&node_pod_cidrs(&nodes)), want, "{name}");
        }
    }

    #[test]
    fn more_than_ten_thousand_nodes_are_too_many() {
        let one = node("n", json!({"podCIDR": "10.0.0.0/24"}));
        let nodes = vec![one; MAX_NODES];
        assert!(matches!(node_pod_cidrs(&nodes), NodePodCidrsFact::Known(_)));
        let mut nodes = nodes;
        nodes.push(node("x", json!({})));
        assert_eq!(describe(&node_pod_cidrs(&nodes)), "too-many 10001");
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        for (name, nodes, want) in [
            (
                "podCIDRs as a string: the singular field",
                vec![node(
                    "a",
                    json!({"podCIDRs": "10.0.0.0/8", "podCIDR": "10.0.1.0/24"}),
                )],
                "a=10.0.1.0/24",
            ),
            (
                "podCIDRs of nulls and numbers",
                vec![
                    node("a", json!({"podCIDRs": [null, 10, "10.0.2.0/24"]})),
                    node("b", json!({"podCIDRs": [null]})),
                ],
                "incomplete b",
            ),
            (
                "spec as a string",
                vec![node("a", json!("podCIDR"))],
                "incomplete a",
            ),
            (
                "a name that is not a string",
                vec![Arc::new(json!({"metadata": {"name": 3}, "spec": {}}))],
                "incomplete ",
            ),
            (
                "not an object at all",
                vec![Arc::new(json!(null))],
                "incomplete ",
            ),
        ] {
            assert_eq!(describe(&node_pod_cidrs(&nodes)), want, "{name}");
        }
    }
}
