//! ExposureConfined, natively against MockFacts: every reason and message
//! variant of `confinement::evaluate`.

use pgtoolboxconsole_guest::confinement::{
    self, Confinement, ConfinementContext, PolicyPlan, Published, pods::TRUST_ANNOTATION,
};
use reconciler_guest_sdk::mock::{MockFacts, meta};
use reconciler_guest_sdk::{
    ConditionStatus, ExposureKind, Facts, IngressRuleFact, IpBlockFact, LabelSelectorFact,
    NetworkPolicyFact, NodeCidrs, NodePodCidrsFact, PeerFact, PodFact, PortFact, ReadError,
    SelectorRequirement, Timestamp,
};
use serde_json::{Value, json};

const NS: &str = "team-a";
const NAME: &str = "orders";
/// 2026-11-29T12:00:00Z
const NOW: i64 = 1_795_953_600;

// ---- Pods ------------------------------------------------------------------

fn pod(name: &str) -> PodFact {
    let mut m = meta(NS, name);
    m.labels = confinement::console_labels(NAME);
    PodFact {
        meta: m,
        phase: "Running".to_owned(),
        ready: true,
        waiting: None,
        unschedulable: None,
        restart_count: 0,
        pod_ip: None,
        node_name: None,
    }
}

trait PodExt {
    fn at(self, ip: &str, node: &str) -> Self;
    fn trust(self, value: &str) -> Self;
    fn granted(self) -> Self;
    fn deleting_since(self, seconds: i64) -> Self;
}

impl PodExt for PodFact {
    fn at(mut self, ip: &str, node: &str) -> Self {
        self.pod_ip = Some(ip.to_owned());
        self.node_name = Some(node.to_owned());
        self
    }
    fn trust(mut self, value: &str) -> Self {
        self.meta
            .annotations
            .push((TRUST_ANNOTATION.to_owned(), value.to_owned()));
        self
    }
    fn granted(self) -> Self {
        self.trust("all-peers")
    }
    fn deleting_since(mut self, seconds: i64) -> Self {
        self.meta.deletion = Some(Timestamp { seconds, nanos: 0 });
        self
    }
}

fn running() -> Vec<PodFact> {
    vec![
        pod("orders-console-6d9f8-a1")
            .at("10.128.2.17", "worker-1")
            .granted(),
        pod("orders-console-6d9f8-b2")
            .at("10.128.3.9", "worker-2")
            .granted(),
    ]
}

/// The same Pods after the rollout without the grant.
fn ungranted() -> Vec<PodFact> {
    vec![
        pod("orders-console-6d9f8-a1")
            .at("10.128.2.17", "worker-1")
            .trust("none"),
        pod("orders-console-6d9f8-b2")
            .at("10.128.3.9", "worker-2")
            .trust("none"),
    ]
}

fn nodes() -> NodePodCidrsFact {
    NodePodCidrsFact::Known(vec![
        NodeCidrs {
            node: "worker-1".to_owned(),
            pod_cidrs: vec!["10.128.2.0/24".to_owned(), "fd01:0:0:2::/64".to_owned()],
        },
        NodeCidrs {
            node: "worker-2".to_owned(),
            pod_cidrs: vec!["10.128.3.0/24".to_owned()],
        },
        NodeCidrs {
            node: "worker-3".to_owned(),
            pod_cidrs: vec!["10.128.4.0/23".to_owned()],
        },
    ])
}

// ---- NetworkPolicies, from their Kubernetes JSON ----------------------------

fn selector(json: &Value) -> LabelSelectorFact {
    LabelSelectorFact {
        match_labels: json["matchLabels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        match_expressions: json["matchExpressions"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|e| SelectorRequirement {
                        key: e["key"].as_str().unwrap().to_owned(),
                        operator: e["operator"].as_str().unwrap().to_owned(),
                        values: e["values"]
                            .as_array()
                            .map(|v| v.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn peer(json: &Value) -> PeerFact {
    PeerFact {
        pod_selector: json.get("podSelector").map(selector),
        namespace_selector: json.get("namespaceSelector").map(selector),
        ip_block: json.get("ipBlock").map(|b| IpBlockFact {
            cidr: b["cidr"].as_str().unwrap().to_owned(),
            except: b["except"]
                .as_array()
                .map(|l| l.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default(),
        }),
    }
}

/// A NetworkPolicy fact from its `spec`, as the host derives it.
fn np(name: &str, spec: Value) -> NetworkPolicyFact {
    let isolates_ingress = spec["policyTypes"]
        .as_array()
        .is_none_or(|t| t.iter().any(|t| t == "Ingress"));
    NetworkPolicyFact {
        meta: meta(NS, name),
        pod_selector: selector(&spec["podSelector"]),
        isolates_ingress,
        ingress: spec["ingress"]
            .as_array()
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| IngressRuleFact {
                        ports: r["ports"]
                            .as_array()
                            .map(|ports| {
                                ports
                                    .iter()
                                    .map(|p| PortFact {
                                        protocol: p["protocol"]
                                            .as_str()
                                            .unwrap_or("TCP")
                                            .to_owned(),
                                        port: match &p["port"] {
                                            Value::Null => None,
                                            Value::String(s) => Some(s.clone()),
                                            n => Some(n.to_string()),
                                        },
                                        end_port: p["endPort"].as_i64().map(|e| e as i32),
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        from_peers: r["from"]
                            .as_array()
                            .map(|l| l.iter().map(peer).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn console_selector() -> Value {
    json!({"matchLabels": {
        "app.kubernetes.io/name": "pgtoolbox-console",
        "app.kubernetes.io/instance": NAME
    }})
}

/// `orders-ingress` as the operator renders it: the console Pods, port
/// `http`, from these peers.
fn own_policy(from: Value) -> NetworkPolicyFact {
    np(
        "orders-ingress",
        json!({
            "podSelector": console_selector(),
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"port": "http", "protocol": "TCP"}], "from": from}]
        }),
    )
}

fn router() -> Value {
    json!({"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}})
}

fn nginx() -> Value {
    json!({
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}}
    })
}

// ---- The pass --------------------------------------------------------------

struct Case {
    requested: Option<ExposureKind>,
    published: Published,
    network_policy: Value,
    hostname_refused: bool,
    pods: Vec<PodFact>,
    previous_status: Value,
}

impl Case {
    /// A Route published with the default router peer, two granted Pods.
    fn route() -> Self {
        Case {
            requested: Some(ExposureKind::Route),
            published: Published::Found(ExposureKind::Route),
            network_policy: Value::Null,
            hostname_refused: false,
            pods: running(),
            previous_status: Value::Null,
        }
    }

    /// An Ingress published with these peers.
    fn ingress(from: Value) -> Self {
        Case {
            requested: Some(ExposureKind::Ingress),
            published: Published::Found(ExposureKind::Ingress),
            network_policy: json!({"from": from}),
            ..Case::route()
        }
    }

    fn run(&self, facts: &dyn Facts) -> Confinement {
        confinement::evaluate(
            &ConfinementContext {
                namespace: NS,
                name: NAME,
                requested: self.requested,
                published: self.published,
                network_policy: &self.network_policy,
                hostname_refused: self.hostname_refused,
                pods: &self.pods,
                previous_status: &self.previous_status,
            },
            facts,
        )
    }
}

fn facts() -> MockFacts {
    MockFacts::at(NOW).with_node_pod_cidrs(nodes())
}

/// The condition's (status, reason, message).
fn verdict(c: &Confinement) -> (ConditionStatus, String, String) {
    let cond = c.condition.as_ref().expect("ExposureConfined is present");
    assert_eq!(cond.type_, "ExposureConfined");
    assert!(cond.message.len() <= 1024, "{}", cond.message);
    (cond.status, cond.reason.clone(), cond.message.clone())
}

fn expect(c: &Confinement, status: ConditionStatus, reason: &str, parts: &[&str]) -> String {
    let (s, r, m) = verdict(c);
    assert_eq!((s, r.as_str()), (status, reason), "{m}");
    for p in parts {
        assert!(m.contains(p), "message lacks {p:?}: {m}");
    }
    m
}

fn fails(c: &Confinement, reason: &str, parts: &[&str]) -> String {
    assert!(!c.trust_every_peer, "no trust while {reason}");
    expect(c, ConditionStatus::False, reason, parts)
}

const NO_TRUST: &str = "the console trusts no peer with X-Forwarded-For";

// ---- Presence ----------------------------------------------------------------

#[test]
fn absent_for_a_cluster_ip_console_and_nothing_read() {
    let facts = facts();
    let case = Case {
        requested: None,
        published: Published::Nothing,
        pods: vec![pod("orders-console-1").at("10.128.2.17", "worker-1")],
        ..Case::route()
    };
    let c = case.run(&facts);
    assert!(c.condition.is_none());
    assert_eq!(c.status_fields["exposureConfinement"], Value::Null);
    assert_eq!(c.policy, PolicyPlan::Remove);
    assert!(!c.trust_every_peer);
    assert!(facts.reads().is_empty(), "{:?}", facts.reads());
}

/// Seed: ExposureConfined True "(present only while a Route, Ingress or
/// HTTPRoute is published)"; the README: the grant is `all-peers` only
/// when ExposureConfined is True. Nothing published: the policy is
/// rendered, and no Pod trusts every peer.
#[test]
fn absent_while_nothing_is_published_yet_and_no_pod_is_granted() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        published: Published::Nothing,
        ..Case::route()
    };
    let c = case.run(&facts);
    assert!(c.condition.is_none());
    assert!(!c.trust_every_peer);
    assert_eq!(c.policy, PolicyPlan::Render(vec![router()]));
}

// ---- True ----------------------------------------------------------------------

#[test]
fn true_for_a_route_confined_to_the_router() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let c = Case::route().run(&facts);
    let m = expect(&c, ConditionStatus::True, "AsExpected", &[]);
    assert_eq!(
        m,
        "NetworkPolicy orders-ingress admits only the OpenShift router (every Pod of namespaces network.openshift.io/policy-group=ingress) to the console port 8080; the console trusts X-Forwarded-For from the OpenShift router."
    );
    assert!(c.trust_every_peer);
    assert_eq!(c.status_fields["exposureConfinement"], Value::Null);
}

#[test]
fn true_for_an_ingress_confined_to_its_controller() {
    let facts = facts().with_network_policy(own_policy(json!([nginx()])));
    let c = Case::ingress(json!([nginx()])).run(&facts);
    expect(
        &c,
        ConditionStatus::True,
        "AsExpected",
        &[
            "admits only from[0] (Pods app.kubernetes.io/name=ingress-nginx of namespaces kubernetes.io/metadata.name=ingress-nginx) to the console port 8080",
            "the console trusts X-Forwarded-For from these peers.",
        ],
    );
}

#[test]
fn true_says_when_the_pods_do_not_carry_the_grant_yet() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let none = Case {
        pods: vec![
            pod("orders-console-1")
                .at("10.128.2.17", "worker-1")
                .trust("none"),
        ],
        ..Case::route()
    };
    expect(
        &none.run(&facts),
        ConditionStatus::True,
        "AsExpected",
        &[
            "the console trusts no peer with X-Forwarded-For until its Pods carry the grant (pgtoolbox.fyannk.dev/xff-trust: all-peers); then it trusts the OpenShift router",
        ],
    );
    let some = Case {
        pods: vec![
            pod("orders-console-new")
                .at("10.128.2.17", "worker-1")
                .granted(),
            pod("orders-console-old").at("10.128.2.18", "worker-1"),
        ],
        ..Case::route()
    };
    expect(
        &some.run(&facts),
        ConditionStatus::True,
        "AsExpected",
        &[
            "console Pod orders-console-new trusts X-Forwarded-For from the OpenShift router; the others trust no peer until the rollout gives them the grant",
        ],
    );
}

#[test]
fn true_with_ip_blocks_verified_and_kept_in_the_status() {
    let from =
        json!([{"ipBlock": {"cidr": "203.0.113.0/24", "except": ["203.0.113.8/29"]}}, nginx()]);
    let facts = facts().with_network_policy(own_policy(from.clone()));
    let c = Case::ingress(from).run(&facts);
    expect(
        &c,
        ConditionStatus::True,
        "AsExpected",
        &["from[0] (ipBlock 203.0.113.0/24 except 203.0.113.8/29) and from[1]"],
    );
    assert_eq!(
        c.status_fields["exposureConfinement"],
        json!({"verifiedIpBlocks": ["203.0.113.0/24 except 203.0.113.8/29"]})
    );
}

#[test]
fn a_policy_narrower_than_from_is_confined() {
    // orders-ingress and another policy admit only part of what from lists.
    let from = json!([{"ipBlock": {"cidr": "203.0.113.0/24"}}, router()]);
    let narrower = json!([
        {"ipBlock": {"cidr": "203.0.113.0/25"}},
        {"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress", "kubernetes.io/metadata.name": "openshift-ingress"}},
         "podSelector": {"matchLabels": {"ingresscontroller.operator.openshift.io/deployment-ingresscontroller": "default"}}}
    ]);
    let facts = facts()
        .with_network_policy(own_policy(from.clone()))
        .with_network_policy(np(
            "router-only",
            json!({
                "podSelector": {},
                "ingress": [{"from": narrower}]
            }),
        ));
    let case = Case {
        network_policy: json!({"from": from}),
        ..Case::route()
    };
    expect(&case.run(&facts), ConditionStatus::True, "AsExpected", &[]);
}

#[test]
fn an_unreadable_route_behind_a_policy_in_force_is_confined() {
    // Decision: what may remain of a Route the operator may no longer read
    // reaches the console Pods only through orders-ingress, which holds.
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        published: Published::Unreadable(ExposureKind::Route),
        ..Case::route()
    };
    expect(&case.run(&facts), ConditionStatus::True, "AsExpected", &[]);
}

// ---- ExposureOpen ------------------------------------------------------------------

#[test]
fn open_for_an_ingress_or_gateway_without_from() {
    let facts = facts();
    let pods = vec![pod("orders-console-1").at("10.128.2.17", "worker-1")];
    let ingress = Case {
        network_policy: Value::Null,
        pods: pods.clone(),
        ..Case::ingress(Value::Null)
    };
    let c = ingress.run(&facts);
    let m = fails(&c, "ExposureOpen", &[]);
    assert_eq!(
        m,
        "an Ingress exposure without spec.exposure.networkPolicy.from, so no ingress NetworkPolicy is rendered: any Pod can reach the console port 8080 that the Ingress publishes; the console trusts no peer with X-Forwarded-For."
    );
    assert_eq!(c.policy, PolicyPlan::Remove);
    let gateway = Case {
        requested: Some(ExposureKind::HttpRoute),
        published: Published::Found(ExposureKind::HttpRoute),
        network_policy: json!({"from": []}),
        pods,
        ..Case::route()
    };
    fails(
        &gateway.run(&facts),
        "ExposureOpen",
        &[
            "a Gateway exposure (HTTPRoute) without spec.exposure.networkPolicy.from",
            "that the HTTPRoute publishes",
            NO_TRUST,
        ],
    );
}

#[test]
fn open_when_the_policy_is_disabled_and_no_pod_holds_the_grant() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        network_policy: json!({"enabled": false, "from": [router()]}),
        pods: vec![
            pod("orders-console-1")
                .at("10.128.2.17", "worker-1")
                .trust("none"),
        ],
        ..Case::route()
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposureOpen",
        &[
            "spec.exposure.networkPolicy.enabled is false, so no ingress NetworkPolicy is rendered (orders-ingress is removed)",
            NO_TRUST,
        ],
    );
    assert_eq!(c.policy, PolicyPlan::Remove);
}

#[test]
fn open_says_when_pods_still_trust_every_peer() {
    // Nobody kept the policy for the granted Pod (someone deleted it): the
    // message must say the console still believes the header.
    let facts = facts();
    let case = Case {
        network_policy: json!({"enabled": false}),
        pods: vec![
            pod("orders-console-1")
                .at("10.128.2.17", "worker-1")
                .granted(),
        ],
        ..Case::route()
    };
    fails(
        &case.run(&facts),
        "ExposureOpen",
        &[
            "the console still trusts X-Forwarded-For from every peer that reaches its port: its Pod orders-console-1 carries the grant",
        ],
    );
}

#[test]
fn open_when_the_rendered_policy_is_missing_or_does_not_confine() {
    let case = Case::route();
    fails(
        &case.run(&facts()),
        "ExposureOpen",
        &[
            "NetworkPolicy orders-ingress does not exist: any Pod can reach the console port 8080 that the Route publishes",
        ],
    );
    let egress_only = np(
        "orders-ingress",
        json!({"podSelector": console_selector(), "policyTypes": ["Egress"]}),
    );
    fails(
        &case.run(&facts().with_network_policy(egress_only)),
        "ExposureOpen",
        &["does not isolate ingress"],
    );
    let other_pods = np(
        "orders-ingress",
        json!({"podSelector": {"matchLabels": {"app": "else"}}, "ingress": [{"from": [router()]}]}),
    );
    fails(
        &case.run(&facts().with_network_policy(other_pods.clone())),
        "ExposureOpen",
        &["does not select console Pods orders-console-6d9f8-a1 and orders-console-6d9f8-b2"],
    );
    let no_pods = Case {
        pods: Vec::new(),
        ..Case::route()
    };
    fails(
        &no_pods.run(&facts().with_network_policy(other_pods)),
        "ExposureOpen",
        &["does not select the console's Pods"],
    );
}

#[test]
fn open_for_a_route_found_after_the_exposure_was_turned_off() {
    // The kind was refused, the Route read past the cache and its deletion
    // refused: it counts as published, and no policy is rendered for it.
    let case = Case {
        requested: None,
        pods: vec![pod("orders-console-1").at("10.128.2.17", "worker-1")],
        ..Case::route()
    };
    fails(
        &case.run(&facts()),
        "ExposureOpen",
        &[
            "the exposure is clusterIP, so no ingress NetworkPolicy is rendered: any Pod can reach the console port 8080 that the Route publishes",
        ],
    );
}

#[test]
fn unknown_open_for_an_exposure_it_may_not_read() {
    let case = Case {
        requested: None,
        published: Published::Unreadable(ExposureKind::Route),
        pods: vec![pod("orders-console-1").at("10.128.2.17", "worker-1")],
        ..Case::route()
    };
    let c = case.run(&facts());
    let m = expect(&c, ConditionStatus::Unknown, "ExposureOpen", &[]);
    assert_eq!(
        m,
        "a Route the console published before the operator was refused Routes in team-a may remain, and the exposure is clusterIP, so no ingress NetworkPolicy is rendered: it may be gone, or still serve the console unconfined on its port 8080; the console trusts no peer with X-Forwarded-For."
    );
    let gateway = Case {
        requested: Some(ExposureKind::HttpRoute),
        published: Published::Unreadable(ExposureKind::HttpRoute),
        network_policy: json!({"from": [nginx()]}),
        ..Case::route()
    };
    expect(
        &gateway.run(&facts()),
        ConditionStatus::Unknown,
        "ExposureOpen",
        &[
            "a HTTPRoute the console published before the operator was refused HTTPRoutes in team-a may remain, and NetworkPolicy orders-ingress does not exist",
        ],
    );
}

// ---- ExposurePeersBroad ----------------------------------------------------------------

fn broad(from: Value, why: &str) {
    let facts = facts().with_network_policy(own_policy(from.clone()));
    let case = Case {
        pods: ungranted(),
        ..Case::ingress(from.clone())
    };
    let c = case.run(&facts);
    fails(&c, "ExposurePeersBroad", &[why, NO_TRUST]);
    assert_eq!(
        c.status_fields["exposureConfinement"],
        Value::Null,
        "{from}"
    );
}

#[test]
fn peers_broad_selectors() {
    broad(
        json!([nginx(), {"namespaceSelector": {}}]),
        "from[1] (every Pod of every namespace) admits (nearly) everyone: a namespaceSelector that pins no namespace",
    );
    broad(
        json!([{"namespaceSelector": {"matchLabels": {"pod-security.kubernetes.io/enforce": "restricted"}}, "podSelector": {"matchLabels": {"app": "router"}}}]),
        "from[0] (Pods app=router of namespaces pod-security.kubernetes.io/enforce=restricted) admits (nearly) everyone: a namespaceSelector that pins no namespace",
    );
    broad(
        json!([{"podSelector": {}}]),
        "from[0] (every Pod of this namespace) admits (nearly) everyone: a podSelector alone that selects every Pod of the namespace",
    );
    broad(
        json!([{"podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}]),
        "a podSelector alone that selects every Pod of the namespace",
    );
    broad(json!([{"bogus": true}]), "an unreadable peer");
}

#[test]
fn peers_broad_ipv4() {
    broad(
        json!([{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]),
        "an IPv4 block wider than /8",
    );
    broad(
        json!([{"ipBlock": {"cidr": "10.0.0.0/8"}}]),
        "holds the whole private range 10.0.0.0/8",
    );
    broad(
        json!([{"ipBlock": {"cidr": "172.0.0.0/8"}}]),
        "holds the whole private range 172.16.0.0/12",
    );
    broad(
        json!([{"ipBlock": {"cidr": "192.168.0.0/16"}}]),
        "holds the whole private range 192.168.0.0/16",
    );
    broad(
        json!([{"ipBlock": {"cidr": "10.128.0.0/16"}}]),
        "holds the console Pod address 10.128.2.17",
    );
    broad(
        json!([{"ipBlock": {"cidr": "10.128.5.0/24"}}]),
        "overlaps the Node podCIDR 10.128.4.0/23",
    );
    broad(
        json!([{"ipBlock": {"cidr": "10.128.2.17"}}]),
        "an unreadable peer",
    );
}

#[test]
fn peers_broad_ipv6() {
    let v6_pods = vec![
        pod("orders-console-1")
            .at("fd01:0:0:2::17", "worker-1")
            .granted(),
    ];
    let broad6 = |from: Value, why: &str| {
        let facts = facts().with_network_policy(own_policy(from.clone()));
        let case = Case {
            pods: v6_pods.clone(),
            ..Case::ingress(from)
        };
        let m = fails(&case.run(&facts), "ExposurePeersBroad", &[why]);
        assert!(
            m.contains("the console still trusts X-Forwarded-For from every peer"),
            "{m}"
        );
    };
    broad6(
        json!([{"ipBlock": {"cidr": "::/0"}}]),
        "an IPv6 block wider than /32",
    );
    broad6(
        json!([{"ipBlock": {"cidr": "2001:db8::/31"}}]),
        "an IPv6 block wider than /32",
    );
    broad6(
        json!([{"ipBlock": {"cidr": "fd12:3456:789a::/48"}}]),
        "a unique-local IPv6 block wider than /64",
    );
    broad6(
        json!([{"ipBlock": {"cidr": "fd01:0:0:2::/120"}}]),
        "holds the console Pod address fd01:0:0:2::17",
    );
    broad6(
        json!([{"ipBlock": {"cidr": "fd01:0:0:2:8000::/65"}}]),
        "overlaps the Node podCIDR fd01:0:0:2::/64",
    );
    // A narrow global block is fine.
    let from = json!([{"ipBlock": {"cidr": "2001:db8:1::/64"}}]);
    let facts = facts().with_network_policy(own_policy(from.clone()));
    let case = Case {
        pods: v6_pods,
        ..Case::ingress(from)
    };
    expect(&case.run(&facts), ConditionStatus::True, "AsExpected", &[]);
}

#[test]
fn peers_broad_counts_the_other_broad_peers() {
    broad(
        json!([{"namespaceSelector": {}}, {"podSelector": {}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}]),
        "(2 more peers of from are broad too)",
    );
}

// ---- ExposurePolicyBypassed ------------------------------------------------------------

fn bypassed(other: NetworkPolicyFact, parts: &[&str]) {
    let facts = facts()
        .with_network_policy(own_policy(json!([router()])))
        .with_network_policy(other);
    let case = Case {
        pods: ungranted(),
        ..Case::route()
    };
    fails(&case.run(&facts), "ExposurePolicyBypassed", parts);
}

fn not_bypassed(other: NetworkPolicyFact) {
    let name = other.meta.name.clone();
    let facts = facts()
        .with_network_policy(own_policy(json!([router()])))
        .with_network_policy(other);
    let (status, reason, m) = verdict(&Case::route().run(&facts));
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, "AsExpected"),
        "{name}: {m}"
    );
}

#[test]
fn bypassed_by_a_rule_without_from() {
    bypassed(
        np("allow-all", json!({"podSelector": {}, "ingress": [{}]})),
        &[
            "NetworkPolicy allow-all admits every source (a rule without from) to the console port 8080, which spec.exposure.networkPolicy.from does not list; NetworkPolicies add up",
            NO_TRUST,
        ],
    );
}

#[test]
fn bypassed_by_peers_to_the_port_by_number_name_or_range() {
    let monitoring = json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]);
    for ports in [
        json!([{"port": 8080}]),
        json!([{"port": "http"}]),
        json!([{"port": 8000, "endPort": 8100}]),
        json!([{"protocol": "TCP"}]),
        json!([]),
    ] {
        bypassed(
            np(
                "scrape",
                json!({
                    "podSelector": {"matchExpressions": [
                        {"key": "app.kubernetes.io/name", "operator": "In", "values": ["pgtoolbox-console", "pgadmin"]}
                    ]},
                    "ingress": [{"ports": ports, "from": monitoring}]
                }),
            ),
            &[
                "NetworkPolicy scrape admits every Pod of namespaces kubernetes.io/metadata.name=monitoring to the console port 8080",
            ],
        );
    }
}

#[test]
fn not_bypassed_by_other_ports_pods_or_directions() {
    let everyone = json!([{"namespaceSelector": {}}]);
    not_bypassed(np(
        "metrics",
        json!({"podSelector": {}, "ingress": [{"ports": [{"port": 9090}], "from": everyone}]}),
    ));
    not_bypassed(np(
        "udp",
        json!({"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP", "port": 8080}], "from": everyone}]}),
    ));
    not_bypassed(np(
        "range-below",
        json!({"podSelector": {}, "ingress": [{"ports": [{"port": 7000, "endPort": 8079}], "from": everyone}]}),
    ));
    not_bypassed(np(
        "other-name",
        json!({"podSelector": {}, "ingress": [{"ports": [{"port": "metrics"}], "from": everyone}]}),
    ));
    not_bypassed(np(
        "pgadmin",
        json!({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "pgadmin"}}, "ingress": [{}]}),
    ));
    not_bypassed(np(
        "not-orders",
        json!({"podSelector": {"matchExpressions": [
        {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["orders"]}
    ]}, "ingress": [{}]}),
    ));
    not_bypassed(np(
        "egress",
        json!({"podSelector": {}, "policyTypes": ["Egress"], "ingress": [{}]}),
    ));
    not_bypassed(np("deny-all", json!({"podSelector": {}})));
}

#[test]
fn bypassed_by_its_own_policy_not_narrowed_yet() {
    let facts = facts().with_network_policy(own_policy(json!([router(), nginx()])));
    fails(
        &Case::route().run(&facts),
        "ExposurePolicyBypassed",
        &[
            "NetworkPolicy orders-ingress admits Pods app.kubernetes.io/name=ingress-nginx of namespaces kubernetes.io/metadata.name=ingress-nginx to the console port 8080, which spec.exposure.networkPolicy.from does not list (it is not narrowed to from yet)",
        ],
    );
}

#[test]
fn bypassed_names_the_first_policy_and_counts_the_others() {
    let facts = facts()
        .with_network_policy(own_policy(json!([router()])))
        .with_network_policy(np("b-allow", json!({"podSelector": {}, "ingress": [{}]})))
        .with_network_policy(np("a-allow", json!({"podSelector": {}, "ingress": [{}]})));
    fails(
        &Case::route().run(&facts),
        "ExposurePolicyBypassed",
        &[
            "NetworkPolicy a-allow admits",
            "; 1 more NetworkPolicies do too",
        ],
    );
}

#[test]
fn bypassed_when_there_are_too_many_policies_to_check() {
    let mut facts = facts().with_network_policy(own_policy(json!([router()])));
    for i in 0..250 {
        facts = facts.with_network_policy(np(
            &format!("p{i:03}"),
            json!({"podSelector": {"matchLabels": {"app": "x"}}}),
        ));
    }
    fails(
        &Case::route().run(&facts),
        "ExposurePolicyBypassed",
        &[
            "team-a has 251 NetworkPolicies, more than the 250 checked: another one may admit more to the console port",
        ],
    );
}

// ---- ExposureTrustUnverified ---------------------------------------------------------------

#[test]
fn unverified_ip_blocks_without_a_pod_address() {
    let from = json!([{"ipBlock": {"cidr": "203.0.113.0/24"}}]);
    let facts = facts().with_network_policy(own_policy(from.clone()));
    let pending = vec![pod("orders-console-1")];
    let case = Case {
        pods: pending.clone(),
        ..Case::ingress(from.clone())
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposureTrustUnverified",
        &[
            "no console Pod has an address yet, and no earlier check verified the ipBlock peers 203.0.113.0/24: they are checked once a Pod has one",
            NO_TRUST,
        ],
    );
    assert_eq!(c.status_fields["exposureConfinement"], Value::Null);

    // An earlier pass verified the same blocks: trusted without an address.
    let verified = Case {
        pods: pending.clone(),
        previous_status: json!({"exposureConfinement": {"verifiedIpBlocks": ["203.0.113.0/24"]}}),
        ..Case::ingress(from.clone())
    };
    let c = verified.run(&facts);
    expect(&c, ConditionStatus::True, "AsExpected", &[]);
    assert_eq!(
        c.status_fields["exposureConfinement"],
        json!({"verifiedIpBlocks": ["203.0.113.0/24"]})
    );

    // Other blocks were verified: not these.
    let other = Case {
        pods: pending,
        previous_status: json!({"exposureConfinement": {"verifiedIpBlocks": ["198.51.100.0/24"]}}),
        ..Case::ingress(from)
    };
    fails(
        &other.run(&facts),
        "ExposureTrustUnverified",
        &["no console Pod has an address yet"],
    );
}

#[test]
fn unverified_with_more_than_250_pods() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        pods: (0..251)
            .map(|i| pod(&format!("orders-console-{i}")))
            .collect(),
        ..Case::route()
    };
    fails(
        &case.run(&facts),
        "ExposureTrustUnverified",
        &["the console has 251 Pods, more than the 250 checked"],
    );
}

#[test]
fn a_wider_from_is_held_back_while_a_pod_trusts_every_peer() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        network_policy: json!({"from": [router(), nginx()]}),
        pods: vec![
            pod("orders-console-new")
                .at("10.128.2.17", "worker-1")
                .trust("none"),
            pod("orders-console-old")
                .at("10.128.2.18", "worker-1")
                .granted()
                .deleting_since(NOW - 3_600),
        ],
        ..Case::route()
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposureTrustUnverified",
        &[
            "spec.exposure.networkPolicy.from admits from[1] (Pods app.kubernetes.io/name=ingress-nginx of namespaces kubernetes.io/metadata.name=ingress-nginx) that NetworkPolicy orders-ingress does not: the wider from is held back until no console Pod trusts every peer",
            "console Pod orders-console-old (terminating: its deletion was asked at 2026-11-29T11:00:00Z) still trusts X-Forwarded-For",
        ],
    );
    assert_eq!(c.policy, PolicyPlan::HoldBack);
}

#[test]
fn a_wider_from_is_applied_before_any_pod_is_granted() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        network_policy: json!({"from": [router(), nginx()]}),
        pods: vec![pod("orders-console-1").at("10.128.2.17", "worker-1")],
        ..Case::route()
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposureTrustUnverified",
        &[
            "NetworkPolicy orders-ingress does not admit from[1]",
            "yet: the wider from is applied before any console Pod is granted trust",
            NO_TRUST,
        ],
    );
    assert!(matches!(c.policy, PolicyPlan::Render(ref f) if f.len() == 2));
}

/// NetworkPolicies that cannot be read (MockFacts always serves them).
struct PoliciesRefused(MockFacts);

impl Facts for PoliciesRefused {
    fn now(&self) -> Timestamp {
        self.0.now()
    }
    fn workload(
        &self,
        n: &str,
        m: &str,
    ) -> Result<Option<reconciler_guest_sdk::WorkloadFact>, ReadError> {
        self.0.workload(n, m)
    }
    fn secret(
        &self,
        n: &str,
        m: &str,
    ) -> Result<Option<reconciler_guest_sdk::SecretFact>, ReadError> {
        self.0.secret(n, m)
    }
    fn config_map(
        &self,
        n: &str,
        m: &str,
    ) -> Result<Option<reconciler_guest_sdk::ConfigMapFact>, ReadError> {
        self.0.config_map(n, m)
    }
    fn get(
        &self,
        k: &reconciler_guest_sdk::KindRef,
        n: &str,
        m: &str,
    ) -> Result<Option<reconciler_guest_sdk::Object>, ReadError> {
        self.0.get(k, n, m)
    }
    fn list(
        &self,
        k: &reconciler_guest_sdk::KindRef,
        n: &str,
        s: &[(String, String)],
    ) -> Result<Vec<reconciler_guest_sdk::Object>, ReadError> {
        self.0.list(k, n, s)
    }
    fn api_availability(
        &self,
        k: &reconciler_guest_sdk::KindRef,
        n: &str,
    ) -> reconciler_guest_sdk::Availability {
        self.0.api_availability(k, n)
    }
    fn network_policies(&self, _: &str) -> Result<Vec<NetworkPolicyFact>, ReadError> {
        Err(ReadError::Failed("the cache is not synced".to_owned()))
    }
    fn node_pod_cidrs(&self) -> NodePodCidrsFact {
        self.0.node_pod_cidrs()
    }
    fn exposure(
        &self,
        k: ExposureKind,
        n: &str,
        m: &str,
    ) -> Result<Option<reconciler_guest_sdk::ExposureFact>, ReadError> {
        self.0.exposure(k, n, m)
    }
    fn cluster_role(&self, n: &str) -> Result<Option<reconciler_guest_sdk::ObjectMeta>, ReadError> {
        self.0.cluster_role(n)
    }
    fn secret_certificates(
        &self,
        n: &str,
        m: &str,
        k: &str,
    ) -> Result<Option<reconciler_guest_sdk::CertificateBundleFact>, ReadError> {
        self.0.secret_certificates(n, m, k)
    }
    fn last_apply(
        &self,
        k: &reconciler_guest_sdk::KindRef,
        n: &str,
        m: &str,
    ) -> Option<reconciler_guest_sdk::ApplyOutcome> {
        self.0.last_apply(k, n, m)
    }
    fn children(
        &self,
        k: &reconciler_guest_sdk::KindRef,
    ) -> Result<Vec<reconciler_guest_sdk::Object>, ReadError> {
        self.0.children(k)
    }
    fn last_apply_time(
        &self,
        k: &reconciler_guest_sdk::KindRef,
        n: &str,
        m: &str,
    ) -> Option<Timestamp> {
        self.0.last_apply_time(k, n, m)
    }
}

#[test]
fn unverified_when_the_policies_cannot_be_read() {
    let facts = PoliciesRefused(facts());
    let from = json!([{"ipBlock": {"cidr": "203.0.113.0/24"}}]);
    let case = Case {
        previous_status: json!({"exposureConfinement": {"verifiedIpBlocks": ["203.0.113.0/24"]}}),
        pods: vec![pod("orders-console-1")],
        ..Case::ingress(from)
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposureTrustUnverified",
        &[
            "the NetworkPolicies of team-a could not be read (the cache is not synced): the peers are not checked",
        ],
    );
    // What was verified stays verified; the policy is left as it is.
    assert_eq!(
        c.status_fields["exposureConfinement"],
        json!({"verifiedIpBlocks": ["203.0.113.0/24"]})
    );
    assert_eq!(c.policy, PolicyPlan::HoldBack);
    assert!(c.unread);
    // Disabled with a granted Pod: whether the policy is kept is unknown.
    let kept = Case {
        network_policy: json!({"enabled": false}),
        ..Case::route()
    };
    let c = kept.run(&facts);
    fails(
        &c,
        "ExposureTrustUnverified",
        &["whether it is still in place could not be read"],
    );
    assert_eq!(c.policy, PolicyPlan::Keep);
}

// ---- ExposurePolicyKept ------------------------------------------------------------------

#[test]
fn kept_while_a_pod_stuck_terminating_holds_the_grant() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let pods = vec![
        pod("orders-console-new")
            .at("10.128.2.17", "worker-1")
            .trust("none"),
        pod("orders-console-old")
            .at("10.128.2.18", "worker-1")
            .granted()
            .deleting_since(NOW - 7_200),
    ];
    for (requested, published, network_policy, why) in [
        (
            Some(ExposureKind::Route),
            Published::Found(ExposureKind::Route),
            json!({"enabled": false}),
            "spec.exposure.networkPolicy.enabled is false",
        ),
        // Present with nothing published: the exposure was turned off.
        (
            None,
            Published::Nothing,
            Value::Null,
            "the exposure is clusterIP",
        ),
    ] {
        let case = Case {
            requested,
            published,
            network_policy,
            pods: pods.clone(),
            ..Case::route()
        };
        let c = case.run(&facts);
        let m = fails(
            &c,
            "ExposurePolicyKept",
            &[
                &format!(
                    "NetworkPolicy orders-ingress is no longer rendered ({why}) and is kept while a console Pod may still trust every peer it admits; console Pod"
                ),
                "console Pod orders-console-old (terminating: its deletion was asked at 2026-11-29T10:00:00Z) still trusts X-Forwarded-For from every peer that reaches the port",
            ],
        );
        assert_eq!(c.policy, PolicyPlan::Keep, "{m}");
        assert_eq!(c.status_fields["exposureConfinement"], Value::Null);
    }
}

#[test]
fn kept_while_the_hostname_is_refused() {
    let facts = facts().with_network_policy(own_policy(json!([router()])));
    let case = Case {
        published: Published::Nothing,
        hostname_refused: true,
        ..Case::route()
    };
    let c = case.run(&facts);
    fails(
        &c,
        "ExposurePolicyKept",
        &[
            "the console is stalled on HostnameNotAllowed: its exposure is withdrawn, and its workload and NetworkPolicy orders-ingress stay as they were;",
        ],
    );
    assert_eq!(c.policy, PolicyPlan::Keep);
    // The verified blocks are left as they were.
    assert!(!c.status_fields.contains_key("exposureConfinement"));

    // Seed: "ExposureConfined is present only while an exposure is
    // published, or while the console's ingress NetworkPolicy is kept
    // without one". No policy was in place and nothing is published:
    // absent, and the policy is not created.
    let ingress = Case {
        published: Published::Nothing,
        hostname_refused: true,
        ..Case::ingress(Value::Null)
    };
    let c = ingress.run(&self::facts());
    assert!(c.condition.is_none(), "{:?}", c.condition);
    assert_eq!(c.policy, PolicyPlan::Keep);
}

/// The NetworkPolicies cannot be read and nothing is published: whether the
/// policy is kept is not known, so a previous ExposurePolicyKept is given
/// again as it was, and no ExposureConfined is made up otherwise.
#[test]
fn unreadable_policies_with_nothing_published_keep_what_was_said() {
    let forbidden = || PoliciesRefused(facts());
    let kept = json!({"conditions": [{"type": "ExposureConfined", "status": "False",
        "reason": "ExposurePolicyKept", "message": "kept before"}]});
    let open = json!({"conditions": [{"type": "ExposureConfined", "status": "False",
        "reason": "ExposureOpen", "message": "open before"}]});
    for (hostname_refused, pods) in [
        (true, vec![]),
        (false, vec![pod("orders-console-1").granted()]),
    ] {
        let case = |previous_status: Value| Case {
            published: Published::Nothing,
            hostname_refused,
            pods: pods.clone(),
            previous_status,
            ..Case::ingress(Value::Null)
        };
        let c = case(kept.clone()).run(&forbidden());
        let (_, reason, message) = verdict(&c);
        assert_eq!(
            (reason.as_str(), message.as_str()),
            ("ExposurePolicyKept", "kept before")
        );
        assert!(!c.trust_every_peer);
        assert_eq!(c.policy, PolicyPlan::Keep);
        for previous in [Value::Null, open.clone()] {
            let c = case(previous).run(&forbidden());
            assert!(
                c.condition.is_none(),
                "{hostname_refused}: {:?}",
                c.condition
            );
            assert_eq!(c.policy, PolicyPlan::Keep);
            assert!(c.unread);
        }
    }
}

#[test]
fn open_while_the_hostname_is_refused_and_something_unconfined_is_still_published() {
    let case = Case {
        hostname_refused: true,
        ..Case::ingress(Value::Null)
    };
    fails(
        &case.run(&facts()),
        "ExposureOpen",
        &[
            "the console is stalled on HostnameNotAllowed and NetworkPolicy orders-ingress does not exist: any Pod can reach the console port 8080 that the Ingress publishes",
        ],
    );
}

// ---- Notes about the Nodes -------------------------------------------------------------------

#[test]
fn every_message_says_when_the_nodes_could_not_be_checked() {
    let policy = own_policy(json!([router()]));
    let route = Case::route();
    let forbidden = MockFacts::at(NOW)
        .with_network_policy(policy.clone())
        .with_node_pod_cidrs(NodePodCidrsFact::Forbidden(
            "list nodes is forbidden".into(),
        ));
    let m = expect(
        &route.run(&forbidden),
        ConditionStatus::True,
        "AsExpected",
        &[],
    );
    assert!(m.ends_with("from the OpenShift router. The Nodes' podCIDRs could not be checked: no grant to list them (list nodes is forbidden)."), "{m}");

    let too_many = MockFacts::at(NOW)
        .with_network_policy(policy.clone())
        .with_node_pod_cidrs(NodePodCidrsFact::TooMany(10_001));
    expect(
        &route.run(&too_many),
        ConditionStatus::True,
        "AsExpected",
        &[
            "The Nodes' podCIDRs could not be checked: the cluster has more than 10,000 Nodes (10001 seen).",
        ],
    );

    let incomplete = MockFacts::at(NOW).with_node_pod_cidrs(NodePodCidrsFact::Incomplete(
        (1..=5).map(|i| format!("edge-{i}")).collect(),
    ));
    let open = Case {
        pods: ungranted(),
        ..Case::ingress(Value::Null)
    };
    fails(
        &open.run(&incomplete),
        "ExposureOpen",
        &[
            "; the console trusts no peer with X-Forwarded-For. The Nodes' podCIDRs could not be checked: Nodes edge-1, edge-2, edge-3 and 2 more have no spec.podCIDRs.",
        ],
    );
}

#[test]
fn messages_say_when_the_pod_cidr_check_is_not_meaningful() {
    let facts = MockFacts::at(NOW)
        .with_network_policy(own_policy(json!([router()])))
        .with_node_pod_cidrs(NodePodCidrsFact::Known(vec![NodeCidrs {
            node: "worker-1".to_owned(),
            pod_cidrs: vec!["10.244.1.0/24".to_owned()],
        }]));
    let case = Case {
        pods: vec![
            pod("orders-console-1")
                .at("10.128.2.17", "worker-1")
                .granted(),
        ],
        ..Case::route()
    };
    expect(
        &case.run(&facts),
        ConditionStatus::True,
        "AsExpected",
        &[
            "The podCIDR check is not meaningful: the address of console Pod orders-console-1 (10.128.2.17, Node worker-1) is outside its own Node's spec.podCIDRs (the CNI allocates Pod addresses elsewhere).",
        ],
    );
}

// ---- Bounds ----------------------------------------------------------------------------------

#[test]
fn messages_stay_bounded() {
    let long = "x".repeat(30);
    let from: Vec<Value> = (0..40)
        .map(|i| json!({"namespaceSelector": {"matchLabels": {format!("team-{i}-{long}"): long.clone()}}}))
        .collect();
    let pods: Vec<PodFact> = (0..200)
        .map(|i| {
            pod(&format!("orders-console-{i}-{long}"))
                .at(&format!("10.128.2.{}", i % 250), "worker-1")
                .trust(if i % 2 == 0 { "all-peers" } else { "none" })
        })
        .collect();
    let facts = MockFacts::at(NOW)
        .with_network_policy(own_policy(json!(from)))
        .with_node_pod_cidrs(NodePodCidrsFact::Incomplete(
            (0..500).map(|i| format!("node-{i}-{long}")).collect(),
        ));
    let case = Case {
        network_policy: json!({"from": from}),
        pods,
        ..Case::ingress(Value::Null)
    };
    let (status, _, m) = verdict(&case.run(&facts));
    assert_eq!(status, ConditionStatus::True);
    assert!(m.contains("and 37 more"), "{m}");
    assert!(m.contains("and 97 more"), "{m}");
    assert!(m.contains("and 497 more"), "{m}");
}
