//! The Nodes' pod CIDRs the `ipBlock` peers are checked against, and the
//! note a message carries when they could not be checked or the check is
//! not meaningful.

use std::net::IpAddr;

use reconciler_guest_sdk::{NodeCidrs, NodePodCidrsFact, PodFact};
use reconciler_netpol::cidr::Cidr;

use super::text;

/// What the Nodes give the check.
pub struct NodeCheck {
    /// Every Node's pod CIDRs (empty when they could not be read).
    pub pod_cidrs: Vec<Cidr>,
    /// Why the check is incomplete or not meaningful, as a sentence.
    pub note: Option<String>,
}

/// The Nodes' pod CIDRs and the note for `fact`; `pods` are the console
/// Pods with their addresses, whose Nodes say whether the check means
/// anything.
pub fn check(fact: &NodePodCidrsFact, pods: &[(&PodFact, IpAddr)]) -> NodeCheck {
    let unchecked = |why: String| NodeCheck {
        pod_cidrs: Vec::new(),
        note: Some(format!("The Nodes' podCIDRs could not be checked: {why}")),
    };
    match fact {
        NodePodCidrsFact::Forbidden(why) => unchecked(format!(
            "no grant to list them ({})",
            text::truncate(why, text::ITEM_CAP)
        )),
        NodePodCidrsFact::TooMany(n) => {
            unchecked(format!("the cluster has more than 10,000 Nodes ({n} seen)"))
        }
        NodePodCidrsFact::Incomplete(names) => unchecked(match names.as_slice() {
            [one] => format!(
                "Node {} has no spec.podCIDRs",
                text::truncate(one, text::LIST_ITEM_CAP)
            ),
            _ => format!("Nodes {} have no spec.podCIDRs", text::list(names)),
        }),
        NodePodCidrsFact::Known(nodes) => NodeCheck {
            pod_cidrs: nodes
                .iter()
                .flat_map(|n| n.pod_cidrs.iter())
                .filter_map(|c| c.parse().ok())
                .collect(),
            note: not_meaningful(nodes, pods),
        },
    }
}

/// A console Pod whose address is outside its own Node's podCIDRs: the
/// CNI allocates Pod addresses elsewhere, and the podCIDR rule checks
/// nothing real.
fn not_meaningful(nodes: &[NodeCidrs], pods: &[(&PodFact, IpAddr)]) -> Option<String> {
    let outside: Vec<String> = pods
        .iter()
        .filter_map(|(pod, ip)| {
            let node_name = pod.node_name.as_deref()?;
            let node = nodes.iter().find(|n| n.node == node_name)?;
            let inside = node
                .pod_cidrs
                .iter()
                .filter_map(|c| c.parse::<Cidr>().ok())
                .any(|c| c.contains_addr(*ip));
            (!inside).then(|| format!("{} ({ip}, Node {node_name})", pod.meta.name))
        })
        .collect();
    let (subject, verb) = match outside.len() {
        0 => return None,
        1 => ("the address of console Pod", "is"),
        _ => ("the addresses of console Pods", "are"),
    };
    Some(format!(
        "The podCIDR check is not meaningful: {subject} {} {verb} outside its own Node's spec.podCIDRs (the CNI allocates Pod addresses elsewhere)",
        text::list_capped(&outside, text::POD_ITEM_CAP)
    ))
}
