//! When a `NetworkPolicyPeer` (JSON) admits (nearly) every namespace, Pod or address.

use std::fmt;
use std::net::IpAddr;

use serde_json::Value;

use crate::broad::{Broadness, ip_block_broadness};
use crate::cidr::Cidr;

/// Label key prefixes that many namespaces carry with the same values:
/// pinning only these pins no particular namespace.
const SHARED_LABEL_PREFIXES: [&str; 1] = ["pod-security.kubernetes.io/"];

/// Why a peer admits (nearly) everyone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerBroadness {
    /// A `namespaceSelector` that pins no label value, or only shared labels.
    NamespacesUnpinned,
    /// A `podSelector` alone that pins no label value: every Pod of the
    /// policy's namespace.
    EveryPodOfNamespace,
    /// An `ipBlock` that is broad for this reason.
    IpBlock(Broadness),
    /// The peer could not be read; read as broad, failing closed.
    Unreadable(String),
}

impl fmt::Display for PeerBroadness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerBroadness::NamespacesUnpinned => {
                f.write_str("a namespaceSelector that pins no namespace")
            }
            PeerBroadness::EveryPodOfNamespace => {
                f.write_str("a podSelector alone that selects every Pod of the namespace")
            }
            PeerBroadness::IpBlock(why) => write!(f, "an ipBlock: {why}"),
            PeerBroadness::Unreadable(why) => write!(f, "an unreadable peer ({why})"),
        }
    }
}

fn is_shared(key: &str) -> bool {
    SHARED_LABEL_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// A field of an object, `null` read as absent.
fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

/// Whether a `LabelSelector` pins a label value other than a shared one:
/// a `matchLabels` entry, or an `In` expression with at least one value.
/// `NotIn`, `Exists` and `DoesNotExist` pin no value.
fn pins_a_value(selector: &Value) -> Result<bool, String> {
    if !selector.is_object() {
        return Err("a selector is not an object".to_owned());
    }
    if let Some(labels) = field(selector, "matchLabels") {
        let labels = labels.as_object().ok_or("matchLabels is not an object")?;
        if labels.keys().any(|k| !is_shared(k)) {
            return Ok(true);
        }
    }
    if let Some(expressions) = field(selector, "matchExpressions") {
        let expressions = expressions
            .as_array()
            .ok_or("matchExpressions is not a list")?;
        for e in expressions {
            let key = field(e, "key")
                .and_then(Value::as_str)
                .ok_or("a matchExpressions entry has no key")?;
            let operator = field(e, "operator")
                .and_then(Value::as_str)
                .ok_or("a matchExpressions entry has no operator")?;
            let has_values = field(e, "values")
                .and_then(Value::as_array)
                .is_some_and(|v| !v.is_empty());
            if operator == "In" && has_values && !is_shared(key) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn parse_cidr(value: &Value) -> Result<Cidr, String> {
    value
        .as_str()
        .ok_or_else(|| "an ipBlock CIDR is not a string".to_owned())?
        .parse()
        .map_err(|e| format!("ipBlock: {e}"))
}

fn ip_block(
    block: &Value,
    pod_ips: &[IpAddr],
    node_pod_cidrs: &[Cidr],
) -> Result<Option<Broadness>, String> {
    let cidr = parse_cidr(field(block, "cidr").ok_or("an ipBlock has no cidr")?)?;
    let except = match field(block, "except") {
        Some(list) => list
            .as_array()
            .ok_or("ipBlock.except is not a list")?
            .iter()
            .map(parse_cidr)
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    Ok(ip_block_broadness(&cidr, &except, pod_ips, node_pod_cidrs))
}

fn classify(
    peer: &Value,
    pod_ips: &[IpAddr],
    node_pod_cidrs: &[Cidr],
) -> Result<Option<PeerBroadness>, String> {
    if !peer.is_object() {
        return Err("the peer is not an object".to_owned());
    }
    let namespaces = field(peer, "namespaceSelector");
    let pods = field(peer, "podSelector");
    if let Some(block) = field(peer, "ipBlock") {
        if namespaces.is_some() || pods.is_some() {
            return Err("an ipBlock peer also has a selector".to_owned());
        }
        return Ok(ip_block(block, pod_ips, node_pod_cidrs)?.map(PeerBroadness::IpBlock));
    }
    match (namespaces, pods) {
        (Some(ns), _) if !pins_a_value(ns)? => Ok(Some(PeerBroadness::NamespacesUnpinned)),
        (Some(_), pods) => {
            // The namespaces are pinned; the podSelector must still read.
            pods.map(pins_a_value).transpose()?;
            Ok(None)
        }
        (None, Some(pods)) if !pins_a_value(pods)? => Ok(Some(PeerBroadness::EveryPodOfNamespace)),
        (None, Some(_)) => Ok(None),
        (None, None) => Err("the peer has no podSelector, namespaceSelector or ipBlock".to_owned()),
    }
}

/// Why the `NetworkPolicyPeer` `peer` (its JSON) admits (nearly) everyone,
/// or `None` when it does not. `pod_ips` and `node_pod_cidrs` are what
/// [`ip_block_broadness`] checks an `ipBlock` against. A peer that cannot
/// be read is [`PeerBroadness::Unreadable`]: broad, never trusted.
pub fn peer_broadness(
    peer: &Value,
    pod_ips: &[IpAddr],
    node_pod_cidrs: &[Cidr],
) -> Option<PeerBroadness> {
    classify(peer, pod_ips, node_pod_cidrs)
        .unwrap_or_else(|why| Some(PeerBroadness::Unreadable(why)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(peer: Value, want: Option<PeerBroadness>) {
        let pod_ips: Vec<IpAddr> = vec!["10.244.1.7".parse().unwrap()];
        let node_pod_cidrs: Vec<Cidr> = vec!["10.244.1.0/24".parse().unwrap()];
        assert_eq!(
            peer_broadness(&peer, &pod_ips, &node_pod_cidrs),
            want,
            "{peer}"
        );
    }

    #[test]
    fn namespace_selectors() {
        use PeerBroadness::*;
        check(json!({"namespaceSelector": {}}), Some(NamespacesUnpinned));
        check(
            json!({"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "router"}}}),
            Some(NamespacesUnpinned),
        );
        check(
            json!({"namespaceSelector": {"matchLabels": {"pod-security.kubernetes.io/enforce": "restricted"}}}),
            Some(NamespacesUnpinned),
        );
        check(
            json!({"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "Exists"},
                {"key": "team", "operator": "NotIn", "values": ["a"]},
                {"key": "pod-security.kubernetes.io/enforce", "operator": "In", "values": ["baseline"]}
            ]}}),
            Some(NamespacesUnpinned),
        );
        check(
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-ingress"}}}),
            None,
        );
        check(
            json!({"namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ingress-nginx"]}
            ]}, "podSelector": {}}),
            None,
        );
    }

    #[test]
    fn pod_selectors() {
        use PeerBroadness::*;
        check(json!({"podSelector": {}}), Some(EveryPodOfNamespace));
        check(
            json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}),
            Some(EveryPodOfNamespace),
        );
        check(
            json!({"podSelector": {"matchLabels": {"app": "gateway"}}}),
            None,
        );
    }

    #[test]
    fn ip_blocks() {
        use PeerBroadness::*;
        check(
            json!({"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}),
            Some(IpBlock(Broadness::Ipv4WiderThan8)),
        );
        check(
            json!({"ipBlock": {"cidr": "10.244.0.0/16"}}),
            Some(IpBlock(Broadness::HoldsConsolePod(
                "10.244.1.7".parse().unwrap(),
            ))),
        );
        check(json!({"ipBlock": {"cidr": "203.0.113.0/24"}}), None);
        check(json!({"ipBlock": {"cidr": "2001:db8::/64"}}), None);
    }

    #[test]
    fn unreadable_peers_fail_closed() {
        let unreadable = |peer: Value| {
            let got = peer_broadness(&peer, &[], &[]);
            assert!(
                matches!(got, Some(PeerBroadness::Unreadable(_))),
                "{peer}: {got:?}"
            );
        };
        unreadable(json!({}));
        unreadable(json!("10.0.0.0/8"));
        unreadable(json!({"ipBlock": {"cidr": "10.0.0.0"}}));
        unreadable(json!({"ipBlock": {"cidr": "203.0.113.0/24", "except": "x"}}));
        unreadable(json!({"ipBlock": {"cidr": "203.0.113.0/24"}, "podSelector": {}}));
        unreadable(json!({"namespaceSelector": {"matchLabels": []}}));
        unreadable(json!({"namespaceSelector": {"matchLabels": {"a": "b"}}, "podSelector": 3}));
        unreadable(json!({"podSelector": {"matchExpressions": [{"operator": "In"}]}}));
    }

    #[test]
    fn reasons_read_clearly() {
        assert_eq!(
            PeerBroadness::IpBlock(Broadness::Ipv6WiderThan32).to_string(),
            "an ipBlock: an IPv6 block wider than /32"
        );
    }
}
