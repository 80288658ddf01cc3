//! Whether an egress rule confines traffic to named destinations: a `to` list whose every peer pins its destinations.

use std::fmt;
use std::net::IpAddr;

use serde_json::Value;

use crate::cidr::Cidr;
use crate::peers::{PeerBroadness, peer_broadness};

/// Why an egress rule does not confine egress to named destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressOpen {
    /// The rule has no `to`: it admits every destination.
    EveryDestination,
    /// `to[index]` admits (nearly) every destination, for this reason.
    BroadPeer { index: usize, why: PeerBroadness },
}

impl fmt::Display for EgressOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EgressOpen::EveryDestination => f.write_str("no to: every destination"),
            EgressOpen::BroadPeer { index, why } => write!(f, "to[{index}] is {why}"),
        }
    }
}

/// Whether the egress rule whose `to` peers are `to` (their JSON) confines
/// egress to named destinations: `Ok` when every peer pins its
/// destinations, else the first reason it does not. The peers are judged
/// as ingress peers are ([`peer_broadness`]): a namespaceSelector that
/// pins no namespace, a podSelector alone that selects every Pod of the
/// namespace, an ipBlock holding the Pod network or every address.
pub fn rule_confines(
    to: &[Value],
    pod_ips: &[IpAddr],
    node_pod_cidrs: &[Cidr],
) -> Result<(), EgressOpen> {
    if to.is_empty() {
        return Err(EgressOpen::EveryDestination);
    }
    for (index, peer) in to.iter().enumerate() {
        if let Some(why) = peer_broadness(peer, pod_ips, node_pod_cidrs) {
            return Err(EgressOpen::BroadPeer { index, why });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn confines(to: Vec<Value>) -> Result<(), EgressOpen> {
        rule_confines(&to, &[], &[])
    }

    #[test]
    fn a_rule_without_to_admits_every_destination() {
        assert_eq!(confines(vec![]), Err(EgressOpen::EveryDestination));
        assert_eq!(
            EgressOpen::EveryDestination.to_string(),
            "no to: every destination"
        );
    }

    #[test]
    fn named_destinations_confine_and_a_broad_peer_is_named_by_index() {
        let cluster = json!({"podSelector": {"matchLabels": {"cnpg.io/cluster": "orders"}}});
        let dns = json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}});
        assert_eq!(confines(vec![cluster.clone(), dns]), Ok(()));
        let every_namespace = json!({"namespaceSelector": {}});
        assert_eq!(
            confines(vec![cluster, every_namespace]),
            Err(EgressOpen::BroadPeer {
                index: 1,
                why: PeerBroadness::NamespacesUnpinned
            })
        );
        let everywhere = json!({"ipBlock": {"cidr": "0.0.0.0/0"}});
        let open = confines(vec![everywhere]).unwrap_err();
        assert!(
            open.to_string().starts_with("to[0] is an ipBlock"),
            "{open}"
        );
    }
}
