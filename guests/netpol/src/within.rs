//! Whether one `NetworkPolicyPeer` admits no source another does not:
//! how a policy's peers compare with the peers an exposure lists.

use serde_json::Value;

use crate::cidr::Cidr;
use crate::selector::Selector;

/// A field of an object, `null` read as absent.
fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

/// An `ipBlock` read from its JSON: its block and `except` entries.
fn ip_block(block: &Value) -> Option<(Cidr, Vec<Cidr>)> {
    let cidr = field(block, "cidr")?.as_str()?.parse().ok()?;
    let except = match field(block, "except") {
        None => Vec::new(),
        Some(list) => list
            .as_array()?
            .iter()
            .map(|c| c.as_str()?.parse().ok())
            .collect::<Option<Vec<Cidr>>>()?,
    };
    Some((cidr, except))
}

/// Whether every address `block` less `except` admits, `wider` less
/// `wider_except` admits too. Exact (not only sufficient): the blocks are
/// split into halves only where a boundary lies inside them.
pub fn ip_block_within(block: &Cidr, except: &[Cidr], wider: &Cidr, wider_except: &[Cidr]) -> bool {
    if block.is_covered_by(except) {
        // Admits nothing.
        return true;
    }
    if !block.overlaps(wider) || wider_except.iter().any(|e| e.contains(block)) {
        // Some address of the block is admitted and none of the block is.
        return false;
    }
    let boundary_inside = (!wider.contains(block))
        || wider_except.iter().any(|e| e.overlaps(block))
        || except.iter().any(|e| block.contains(e));
    if !boundary_inside {
        // The whole block is in `wider` and clear of its holes.
        return true;
    }
    match block.halves() {
        Some((low, high)) => {
            ip_block_within(&low, except, wider, wider_except)
                && ip_block_within(&high, except, wider, wider_except)
        }
        // A single address, not excepted, inside `wider` and no hole holds it.
        None => true,
    }
}

/// A selector peer: its namespace selector (`None`: the policy's own
/// namespace) and Pod selector (`None`: every Pod).
struct SelectorPeer {
    namespaces: Option<Selector>,
    pods: Selector,
}

enum Peer {
    Selectors(SelectorPeer),
    IpBlock(Cidr, Vec<Cidr>),
}

fn peer(json: &Value) -> Option<Peer> {
    if !json.is_object() {
        return None;
    }
    let namespaces = field(json, "namespaceSelector");
    let pods = field(json, "podSelector");
    if let Some(block) = field(json, "ipBlock") {
        if namespaces.is_some() || pods.is_some() {
            return None;
        }
        let (cidr, except) = ip_block(block)?;
        return Some(Peer::IpBlock(cidr, except));
    }
    if namespaces.is_none() && pods.is_none() {
        return None;
    }
    Some(Peer::Selectors(SelectorPeer {
        namespaces: namespaces.map(Selector::parse).transpose().ok()?,
        pods: pods
            .map(Selector::parse)
            .transpose()
            .ok()?
            .unwrap_or_default(),
    }))
}

/// Whether every source the `NetworkPolicyPeer` `peer` admits, `listed`
/// admits too, both peers of policies of the same namespace. Careful: a
/// `false` answer may still mean "within", never the other way round.
///
/// - Two `ipBlock`s: [`ip_block_within`].
/// - Two selector peers: the namespaces and the Pods of `peer` must each
///   be within `listed`'s ([`Selector::is_within`]). No `namespaceSelector`
///   (the policy's own namespace) is within no `namespaceSelector` and
///   within an empty one (every namespace); a `namespaceSelector` is never
///   within the own namespace, nor within a selector it does not imply
///   (namespace labels are not known here). No `podSelector` is every Pod.
/// - A selector peer and an `ipBlock` never compare: Pod addresses are not
///   known here.
/// - A peer that cannot be read is within nothing.
pub fn peer_within(peer_json: &Value, listed_json: &Value) -> bool {
    let (Some(p), Some(l)) = (peer(peer_json), peer(listed_json)) else {
        return false;
    };
    match (p, l) {
        (Peer::IpBlock(c, e), Peer::IpBlock(lc, le)) => ip_block_within(&c, &e, &lc, &le),
        (Peer::Selectors(p), Peer::Selectors(l)) => {
            let namespaces = match (&p.namespaces, &l.namespaces) {
                (None, None) => true,
                (Some(p), Some(l)) => p.is_within(l),
                (None, Some(l)) => l.is_everything(),
                (Some(_), None) => false,
            };
            namespaces && p.pods.is_within(&l.pods)
        }
        _ => false,
    }
}

/// Whether `peer` is within one of `listed` (see [`peer_within`]).
pub fn peer_within_any(peer: &Value, listed: &[Value]) -> bool {
    listed.iter().any(|l| peer_within(peer, l))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|s| cidr(s)).collect()
    }

    fn within(block: &str, except: &[&str], wider: &str, wider_except: &[&str]) -> bool {
        ip_block_within(
            &cidr(block),
            &cidrs(except),
            &cidr(wider),
            &cidrs(wider_except),
        )
    }

    #[test]
    fn ip_blocks() {
        assert!(within("203.0.113.0/25", &[], "203.0.113.0/24", &[]));
        assert!(within("203.0.113.0/24", &[], "203.0.113.0/24", &[]));
        assert!(!within("203.0.113.0/24", &[], "203.0.113.0/25", &[]));
        // The part outside is excepted.
        assert!(within(
            "203.0.113.0/24",
            &["203.0.113.128/25"],
            "203.0.113.0/25",
            &[]
        ));
        // The wider block's hole is admitted by the narrower one.
        assert!(!within(
            "203.0.113.0/24",
            &[],
            "203.0.0.0/16",
            &["203.0.113.8/29"]
        ));
        assert!(within(
            "203.0.113.0/24",
            &["203.0.113.0/28"],
            "203.0.0.0/16",
            &["203.0.113.8/29"]
        ));
        assert!(!within("203.0.113.0/24", &[], "198.51.100.0/24", &[]));
        assert!(within(
            "198.51.100.0/24",
            &["198.51.100.0/24"],
            "203.0.113.0/24",
            &[]
        ));
        assert!(!within("2001:db8::/64", &[], "203.0.113.0/24", &[]));
        assert!(within("2001:db8::/64", &[], "2001:db8::/48", &[]));
        assert!(!within("2001:db8::/48", &[], "2001:db8::/64", &[]));
    }

    #[test]
    fn selector_peers() {
        let router = json!({"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}});
        assert!(peer_within(&router, &router));
        assert!(peer_within(
            &json!({"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}},
                    "podSelector": {"matchLabels": {"ingresscontroller.operator.openshift.io/deployment-ingresscontroller": "default"}}}),
            &router
        ));
        assert!(!peer_within(&json!({"namespaceSelector": {}}), &router));
        assert!(!peer_within(&json!({"podSelector": {}}), &router));
        assert!(!peer_within(&router, &json!({"podSelector": {}})));
        assert!(peer_within(
            &json!({"podSelector": {"matchLabels": {"app": "gw"}}}),
            &json!({"podSelector": {}})
        ));
        assert!(peer_within(
            &json!({"podSelector": {"matchLabels": {"app": "gw"}}}),
            &json!({"namespaceSelector": {}})
        ));
        assert!(!peer_within(
            &json!({"podSelector": {}}),
            &json!({"podSelector": {"matchLabels": {"app": "gw"}}})
        ));
        // Null fields read as absent.
        assert!(peer_within(
            &json!({"podSelector": {"matchLabels": {"app": "gw"}}, "namespaceSelector": null, "ipBlock": null}),
            &json!({"podSelector": {"matchLabels": {"app": "gw"}}})
        ));
    }

    #[test]
    fn mixed_and_unreadable_peers() {
        let block = json!({"ipBlock": {"cidr": "203.0.113.0/24"}});
        let selector = json!({"podSelector": {}});
        assert!(!peer_within(&block, &selector));
        assert!(!peer_within(&selector, &block));
        for bad in [
            json!({}),
            json!("x"),
            json!({"ipBlock": {"cidr": "203.0.113.0"}}),
            json!({"ipBlock": {"cidr": "203.0.113.0/24"}, "podSelector": {}}),
            json!({"podSelector": {"matchLabels": []}}),
        ] {
            assert!(!peer_within(&bad, &bad), "{bad}");
            assert!(!peer_within(&bad, &selector), "{bad}");
            assert!(!peer_within(&bad, &block), "{bad}");
        }
        assert!(peer_within_any(&block, &[selector.clone(), block.clone()]));
        assert!(!peer_within_any(&block, &[selector]));
        assert!(!peer_within_any(&block, &[]));
    }

    /// Blocks of few prefix lengths around few addresses, so that random
    /// blocks often nest (IPv4 within 10.0.0.0/8; IPv6 within fd00::/8).
    fn clustered() -> impl Strategy<Value = Cidr> {
        prop_oneof![
            (0u32..16, 4u8..=12).prop_map(|(a, p)| {
                Cidr::new(
                    IpAddr::V4(Ipv4Addr::from_bits(0x0a00_0000 | (a << 20))),
                    8 + p,
                )
                .unwrap()
            }),
            (0u128..16, 4u8..=12).prop_map(|(a, p)| {
                Cidr::new(
                    IpAddr::V6(Ipv6Addr::from_bits((0xfd << 120) | (a << 116))),
                    8 + p,
                )
                .unwrap()
            }),
        ]
    }

    /// The addresses where admission can change: every block's first and
    /// last address and their neighbours.
    fn probes(blocks: &[Cidr]) -> Vec<IpAddr> {
        let mut out = Vec::new();
        for b in blocks {
            for addr in [b.network(), b.last()] {
                out.push(addr);
                match addr {
                    IpAddr::V4(a) => {
                        out.push(IpAddr::V4(Ipv4Addr::from_bits(a.to_bits().wrapping_add(1))));
                        out.push(IpAddr::V4(Ipv4Addr::from_bits(a.to_bits().wrapping_sub(1))));
                    }
                    IpAddr::V6(a) => {
                        out.push(IpAddr::V6(Ipv6Addr::from_bits(a.to_bits().wrapping_add(1))));
                        out.push(IpAddr::V6(Ipv6Addr::from_bits(a.to_bits().wrapping_sub(1))));
                    }
                }
            }
        }
        out
    }

    fn admits(block: &Cidr, except: &[Cidr], addr: IpAddr) -> bool {
        block.contains_addr(addr) && !except.iter().any(|e| e.contains_addr(addr))
    }

    proptest! {
        /// Within is exact on the addresses where admission changes.
        #[test]
        fn ip_block_within_is_exact(
            b in clustered(), e in prop::collection::vec(clustered(), 0..3),
            w in clustered(), we in prop::collection::vec(clustered(), 0..3),
        ) {
            let all: Vec<Cidr> = [b, w].into_iter().chain(e.iter().copied()).chain(we.iter().copied()).collect();
            let escaped = probes(&all)
                .into_iter()
                .any(|a| admits(&b, &e, a) && !admits(&w, &we, a));
            prop_assert_eq!(ip_block_within(&b, &e, &w, &we), !escaped);
        }

        #[test]
        fn ip_block_within_is_reflexive(b in clustered(), e in prop::collection::vec(clustered(), 0..3)) {
            prop_assert!(ip_block_within(&b, &e, &b, &e));
            prop_assert!(ip_block_within(&b, &e, &b, &[]));
        }

        #[test]
        fn peers_within_themselves(b in clustered(), e in prop::collection::vec(clustered(), 0..3)) {
            let except: Vec<String> = e.iter().map(ToString::to_string).collect();
            let peer = json!({"ipBlock": {"cidr": b.to_string(), "except": except}});
            prop_assert!(peer_within(&peer, &peer));
        }
    }
}
