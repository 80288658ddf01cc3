//! The ingress NetworkPolicy: which peers the exposure lists, the
//! NetworkPolicy facts as the JSON `reconciler-netpol` reads, and what a
//! policy admits to the console port.

use reconciler_guest_sdk::{
    ExposureKind, LabelSelectorFact, NetworkPolicyFact, PeerFact, PortFact,
};
use reconciler_netpol::cidr::Cidr;
use reconciler_netpol::ports::{ServedPort, ports_admit};
use reconciler_netpol::selector::Selector;
use serde_json::{Map, Value, json};

use super::text;

/// The console's port: container port 8080, named `http`.
pub const CONSOLE_PORT: ServedPort<'static> = ServedPort {
    protocol: "TCP",
    number: 8080,
    name: "http",
};

/// The namespace label of OpenShift's router namespaces: the peer a
/// Route's policy admits when `from` is empty.
pub const ROUTER_NAMESPACE_LABEL: (&str, &str) = ("network.openshift.io/policy-group", "ingress");

/// The peer a Route's policy admits when `from` is empty: the OpenShift router.
pub fn router_peer() -> Value {
    let (k, v) = ROUTER_NAMESPACE_LABEL;
    json!({"namespaceSelector": {"matchLabels": {k: v}}})
}

pub use reconciler_guest_sdk::exposure::kind_name;

/// Why no ingress NetworkPolicy is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRendered {
    /// The exposure is clusterIP (or absent).
    ExposureOff,
    /// `spec.exposure.networkPolicy.enabled: false`.
    Disabled,
    /// An Ingress or a Gateway (HTTPRoute) without `from`: no default peer.
    NoFrom(ExposureKind),
}

impl NotRendered {
    pub fn describe(self) -> String {
        match self {
            NotRendered::ExposureOff => "the exposure is clusterIP".to_owned(),
            NotRendered::Disabled => "spec.exposure.networkPolicy.enabled is false".to_owned(),
            NotRendered::NoFrom(ExposureKind::HttpRoute) => {
                "a Gateway exposure (HTTPRoute) without spec.exposure.networkPolicy.from".to_owned()
            }
            NotRendered::NoFrom(kind) => format!(
                "an {} exposure without spec.exposure.networkPolicy.from",
                kind_name(kind)
            ),
        }
    }
}

/// The ingress NetworkPolicy the spec asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Desired {
    /// Rendered with these peers; `default_router` when they are the
    /// Route's default (no `from` written).
    Rendered {
        from: Vec<Value>,
        default_router: bool,
    },
    NotRendered(NotRendered),
}

/// The policy `spec.exposure.networkPolicy` renders for the `requested`
/// exposure: `enabled` defaults to true; an empty or absent `from` is the
/// OpenShift router for a Route and no policy for an Ingress or a Gateway.
/// A `from` that is not a list renders its value as one peer, which the
/// peer check reads as unreadable (broad): never silently trusted.
pub fn desired(requested: Option<ExposureKind>, network_policy: &Value) -> Desired {
    let Some(kind) = requested else {
        return Desired::NotRendered(NotRendered::ExposureOff);
    };
    if network_policy.get("enabled").and_then(Value::as_bool) == Some(false) {
        return Desired::NotRendered(NotRendered::Disabled);
    }
    let from = match network_policy.get("from") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(peers)) => peers.clone(),
        Some(other) => vec![other.clone()],
    };
    match (from.is_empty(), kind) {
        (false, _) => Desired::Rendered {
            from,
            default_router: false,
        },
        (true, ExposureKind::Route) => Desired::Rendered {
            from: vec![router_peer()],
            default_router: true,
        },
        (true, kind) => Desired::NotRendered(NotRendered::NoFrom(kind)),
    }
}

/// A label selector fact as `metav1.LabelSelector` JSON.
pub fn selector_json(s: &LabelSelectorFact) -> Value {
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
pub fn peer_json(p: &PeerFact) -> Value {
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

/// A port fact as `NetworkPolicyPort` JSON (a number written as digits
/// is a number).
pub fn port_json(p: &PortFact) -> Value {
    let mut out = json!({"protocol": p.protocol});
    if let Some(port) = &p.port {
        out["port"] = match port.parse::<u32>() {
            Ok(n) => json!(n),
            Err(_) => json!(port),
        };
    }
    if let Some(end) = p.end_port {
        out["endPort"] = json!(end);
    }
    out
}

/// A field of an object, `null` read as absent.
fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

/// A peer as a message names it: "Pods app=gw of namespaces team=edge",
/// "every Pod of this namespace", "ipBlock 203.0.113.0/24 except
/// 203.0.113.8/29". Bounded.
pub fn describe_peer(peer: &Value) -> String {
    text::truncate(&describe_unbounded(peer), text::ITEM_CAP)
}

fn describe_unbounded(peer: &Value) -> String {
    if let Some(block) = field(peer, "ipBlock") {
        let cidr = field(block, "cidr")
            .and_then(Value::as_str)
            .unwrap_or("(no cidr)");
        let except: Vec<&str> = field(block, "except")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        return if except.is_empty() {
            format!("ipBlock {cidr}")
        } else {
            format!("ipBlock {cidr} except {}", except.join(", "))
        };
    }
    if !peer.is_object()
        || (field(peer, "namespaceSelector").is_none() && field(peer, "podSelector").is_none())
    {
        return "an unreadable peer".to_owned();
    }
    let selector = |v: Option<&Value>| v.map(|s| Selector::parse(s).ok());
    let namespaces = match selector(field(peer, "namespaceSelector")) {
        None => "this namespace".to_owned(),
        Some(Some(s)) if s.is_everything() => "every namespace".to_owned(),
        Some(Some(s)) => format!("namespaces {s}"),
        Some(None) => return "an unreadable peer".to_owned(),
    };
    let pods = match selector(field(peer, "podSelector")) {
        None => "every Pod".to_owned(),
        Some(Some(s)) if s.is_everything() => "every Pod".to_owned(),
        Some(Some(s)) => format!("Pods {s}"),
        Some(None) => return "an unreadable peer".to_owned(),
    };
    if pods == "every Pod" && namespaces != "this namespace" {
        format!("every Pod of {namespaces}")
    } else {
        format!("{pods} of {namespaces}")
    }
}

/// The canonical form of an `ipBlock` peer's block ("203.0.113.0/24",
/// "203.0.113.0/24 except 203.0.113.8/29"), as the status records which
/// blocks were verified; `None` for a peer that is not an `ipBlock`.
/// Blocks that do not parse keep their text (the peer check calls them
/// broad anyway).
pub fn ip_block_key(peer: &Value) -> Option<String> {
    let block = field(peer, "ipBlock")?;
    let canonical = |v: &Value| -> String {
        let s = v.as_str().unwrap_or_default();
        s.parse::<Cidr>()
            .map_or_else(|_| s.to_owned(), |c| c.to_string())
    };
    let cidr = field(block, "cidr").map(canonical).unwrap_or_default();
    let mut except: Vec<String> = field(block, "except")
        .and_then(Value::as_array)
        .map(|l| l.iter().map(canonical).collect())
        .unwrap_or_default();
    except.sort();
    except.dedup();
    Some(if except.is_empty() {
        cidr
    } else {
        format!("{cidr} except {}", except.join(","))
    })
}

/// Whether the policy's `podSelector` selects a Pod with these labels. A
/// selector that cannot be read selects (failing closed: its rules are
/// looked at).
pub fn selects(policy: &NetworkPolicyFact, labels: &[(String, String)]) -> bool {
    Selector::parse(&selector_json(&policy.pod_selector)).map_or(true, |s| s.matches_pairs(labels))
}

/// What a policy admits to the console port.
#[derive(Debug, Clone, PartialEq)]
pub enum Admitted {
    /// A rule that admits the port names no peer: every source.
    Everyone,
    /// These peers (JSON), from every rule that admits the port.
    Peers(Vec<Value>),
}

/// What `policy`'s ingress rules admit to the console port (rules whose
/// `ports` do not admit it are left out).
pub fn admitted(policy: &NetworkPolicyFact) -> Admitted {
    let mut peers = Vec::new();
    for rule in &policy.ingress {
        let ports: Vec<Value> = rule.ports.iter().map(port_json).collect();
        if !ports_admit(&ports, &CONSOLE_PORT) {
            continue;
        }
        if rule.from_peers.is_empty() {
            return Admitted::Everyone;
        }
        peers.extend(rule.from_peers.iter().map(peer_json));
    }
    Admitted::Peers(peers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::{IpBlockFact, SelectorRequirement};

    #[test]
    fn desired_peers() {
        use ExposureKind::*;
        let nginx = json!({"podSelector": {"matchLabels": {"app": "nginx"}}});
        assert_eq!(
            desired(None, &json!({"from": [nginx.clone()]})),
            Desired::NotRendered(NotRendered::ExposureOff)
        );
        assert_eq!(
            desired(Some(Route), &Value::Null),
            Desired::Rendered {
                from: vec![router_peer()],
                default_router: true
            }
        );
        assert_eq!(
            desired(Some(Route), &json!({"enabled": true, "from": []})),
            Desired::Rendered {
                from: vec![router_peer()],
                default_router: true
            }
        );
        assert_eq!(
            desired(
                Some(Route),
                &json!({"enabled": false, "from": [nginx.clone()]})
            ),
            Desired::NotRendered(NotRendered::Disabled)
        );
        assert_eq!(
            desired(Some(Ingress), &json!({"from": null})),
            Desired::NotRendered(NotRendered::NoFrom(Ingress))
        );
        assert_eq!(
            desired(Some(HttpRoute), &json!({})),
            Desired::NotRendered(NotRendered::NoFrom(HttpRoute))
        );
        assert_eq!(
            desired(Some(Ingress), &json!({"from": [nginx.clone()]})),
            Desired::Rendered {
                from: vec![nginx.clone()],
                default_router: false
            }
        );
        // Not a list: kept as one (unreadable, hence broad) peer.
        assert_eq!(
            desired(Some(Ingress), &json!({"from": "everyone"})),
            Desired::Rendered {
                from: vec![json!("everyone")],
                default_router: false
            }
        );
    }

    #[test]
    fn peers_read_briefly() {
        let d = |v: Value| describe_peer(&v);
        assert_eq!(
            d(router_peer()),
            "every Pod of namespaces network.openshift.io/policy-group=ingress"
        );
        assert_eq!(d(json!({"podSelector": {}})), "every Pod of this namespace");
        assert_eq!(
            d(json!({"namespaceSelector": {}})),
            "every Pod of every namespace"
        );
        assert_eq!(
            d(
                json!({"podSelector": {"matchLabels": {"app": "gw"}}, "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}})
            ),
            "Pods app=gw of namespaces team"
        );
        assert_eq!(
            d(json!({"ipBlock": {"cidr": "203.0.113.0/24", "except": ["203.0.113.8/29"]}})),
            "ipBlock 203.0.113.0/24 except 203.0.113.8/29"
        );
        assert_eq!(d(json!({})), "an unreadable peer");
        assert_eq!(
            d(json!({"podSelector": {"matchLabels": []}})),
            "an unreadable peer"
        );
        assert!(
            d(json!({"podSelector": {"matchLabels": {"k": "v".repeat(500)}}})).len()
                <= text::ITEM_CAP
        );
    }

    #[test]
    fn ip_block_keys_are_canonical() {
        let key = |v: Value| ip_block_key(&v);
        assert_eq!(key(json!({"podSelector": {}})), None);
        assert_eq!(
            key(json!({"ipBlock": {"cidr": "203.0.113.7/24"}})),
            Some("203.0.113.0/24".into())
        );
        assert_eq!(
            key(
                json!({"ipBlock": {"cidr": "2001:db8::1/64", "except": ["2001:db8::8/125", "2001:db8::/125", "2001:db8::/125"]}})
            ),
            Some("2001:db8::/64 except 2001:db8::/125,2001:db8::8/125".into())
        );
        assert_eq!(
            key(json!({"ipBlock": {"cidr": "nonsense"}})),
            Some("nonsense".into())
        );
    }

    #[test]
    fn facts_become_the_json_netpol_reads() {
        let peer = PeerFact {
            pod_selector: Some(LabelSelectorFact {
                match_labels: vec![],
                match_expressions: vec![],
            }),
            namespace_selector: Some(LabelSelectorFact {
                match_labels: vec![("team".into(), "edge".into())],
                match_expressions: vec![SelectorRequirement {
                    key: "tier".into(),
                    operator: "Exists".into(),
                    values: vec![],
                }],
            }),
            ip_block: None,
        };
        assert_eq!(
            peer_json(&peer),
            json!({"podSelector": {}, "namespaceSelector": {"matchLabels": {"team": "edge"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}})
        );
        let block = PeerFact {
            pod_selector: None,
            namespace_selector: None,
            ip_block: Some(IpBlockFact {
                cidr: "203.0.113.0/24".into(),
                except: vec!["203.0.113.8/29".into()],
            }),
        };
        assert_eq!(
            peer_json(&block),
            json!({"ipBlock": {"cidr": "203.0.113.0/24", "except": ["203.0.113.8/29"]}})
        );
        let port = |p: Option<&str>, end: Option<i32>| {
            port_json(&PortFact {
                protocol: "TCP".into(),
                port: p.map(str::to_owned),
                end_port: end,
            })
        };
        assert_eq!(
            port(Some("8080"), None),
            json!({"protocol": "TCP", "port": 8080})
        );
        assert_eq!(
            port(Some("http"), None),
            json!({"protocol": "TCP", "port": "http"})
        );
        assert_eq!(
            port(Some("8000"), Some(8100)),
            json!({"protocol": "TCP", "port": 8000, "endPort": 8100})
        );
        assert_eq!(port(None, None), json!({"protocol": "TCP"}));
    }
}
