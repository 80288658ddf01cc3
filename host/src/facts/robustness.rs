//! Fact derivation never panics on a malformed object: every derivation
//! (and the `facts` import serving it) is fed arbitrary JSON and
//! "near-valid" manifests (a valid object of each kind with one field
//! replaced by an arbitrary value, or removed) and must answer with a fact
//! or a read error. A panic inside a `facts` import would unwind through
//! the guest's wasm frames and kill the pass.
//!
//! The cases run `PROPTEST_CASES` times (256 unless set).

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;
use proptest::sample::Index;
use reconciler_conventions::kind::KindRef;
use serde::Deserialize;
use serde_json::{Value, json};

use super::certificates::{self, SUMMARY_FIELD};
use super::exposure::exposure_fact;
use super::meta::{object_meta, timestamp};
use super::network_policy::network_policy_fact;
use super::nodes::{node_cidrs, node_pod_cidrs};
use super::workload::{deployment_part, pod_fact};
use super::{Availability, Cached, FactServer, ObjectSource, Selector, SourceError};
use crate::contract::facts::{ExposureKind, Host as _};
use crate::contract::types::KindRef as WitKindRef;
use crate::facts::known_kinds::{
    cluster_role_kind, config_map_kind, deployment_kind, network_policy_kind, node_kind, pod_kind,
    secret_kind,
};

const EXPOSURES: [ExposureKind; 3] = [
    ExposureKind::Route,
    ExposureKind::Ingress,
    ExposureKind::HttpRoute,
];

/// Field names the derivations read, so arbitrary objects reach them.
const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "generation",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "creationTimestamp",
    "deletionTimestamp",
    "spec",
    "status",
    "replicas",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "template",
    "containers",
    "conditions",
    "type",
    "reason",
    "message",
    "phase",
    "podIP",
    "nodeName",
    "containerStatuses",
    "initContainerStatuses",
    "state",
    "waiting",
    "restartCount",
    "observedGeneration",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "podSelector",
    "policyTypes",
    "ingress",
    "ports",
    "from",
    "port",
    "endPort",
    "protocol",
    "ipBlock",
    "cidr",
    "except",
    "namespaceSelector",
    "podCIDR",
    "podCIDRs",
    "host",
    "rules",
    "hostnames",
    "parents",
    "loadBalancer",
    "data",
    "stringData",
    "binaryData",
    "tls.crt",
    SUMMARY_FIELD,
    "sha256",
    "pemBytes",
    "app",
];

const PEM: &str = "-----BEGIN CERTIFICATE-----\nAQID\nBAU=\n-----END CERTIFICATE-----\n";

/// Leaves that sit on the edges the derivations care about.
fn special_leaves() -> Vec<Value> {
    let mut leaves = vec![
        json!(0),
        json!(-1),
        json!(1),
        json!(i32::MAX),
        json!(i32::MIN),
        json!(i64::from(i32::MAX) + 1),
        json!(u64::from(u32::MAX) + 1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(1u64 << 63),
        json!(u64::MAX),
        json!(1.5),
        json!(-0.0),
        json!(1e308),
        json!(""),
        json!("é🦀"),
        json!(PEM),
        json!(STANDARD.encode(PEM)),
        json!(format!(" {} ", STANDARD.encode(PEM))),
        json!("1969-12-31T23:59:59.5Z"),
        json!("2026-11-29T12:00:00Z"),
        json!("9999-12-31T23:59:59.999999999Z"),
        json!("-009999-01-01T00:00:00Z"),
        json!("10.0.0.0/8"),
        json!("v1"),
        json!("apps/v1"),
        json!("In"),
        json!("NotIn"),
        json!("Exists"),
    ];
    for word in [
        "True",
        "False",
        "Unknown",
        "Ingress",
        "Egress",
        "Admitted",
        "Accepted",
        "Ready",
        "PodScheduled",
        "Unschedulable",
        "Progressing",
        "ProgressDeadlineExceeded",
        "ReplicaFailure",
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "CreateContainerConfigError",
        "secret \"x\" not found",
    ] {
        leaves.push(json!(word));
    }
    leaves
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        1 => ".{0,12}".prop_map(Value::String),
        2 => prop::sample::select(special_leaves()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(FIELDS).prop_map(str::to_owned),
        1 => ".{0,6}",
    ]
}

/// Arbitrary JSON: objects, arrays, strings, numbers, bools and nulls.
fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "ns", "uid": "u1", "generation": 2,
        "labels": {"app": "agent"}, "annotations": {"a": "b"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "p", "uid": "u0", "controller": true}],
        "creationTimestamp": "2026-11-29T12:00:00Z"})
}

/// A valid manifest of every kind the facts derive from.
fn manifests() -> Vec<Value> {
    let cond = |t: &str, s: &str| json!({"type": t, "status": s, "reason": "R", "message": "m"});
    vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("agent"),
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "agent"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "i"}]}}},
            "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
                "availableReplicas": 1, "conditions": [cond("Progressing", "False"), cond("ReplicaFailure", "True")]}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("agent-1"),
            "spec": {"containers": [{"name": "a", "image": "i"}], "nodeName": "n1"},
            "status": {"phase": "Pending", "podIP": "10.0.0.5",
                "conditions": [cond("Ready", "False"), cond("PodScheduled", "False")],
                "initContainerStatuses": [{"name": "init", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}}],
                "containerStatuses": [{"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 2,
                    "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("p"),
            "spec": {"podSelector": {"matchLabels": {"app": "agent"}}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"ports": [{"port": 8080, "endPort": 8090, "protocol": "TCP"}, {"port": "http"}],
                    "from": [{"podSelector": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]},
                              "namespaceSelector": {}},
                             {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"podCIDR": "10.0.1.0/24", "podCIDRs": ["10.0.1.0/24", "fd00::/64"]}}),
        json!({"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": meta("r"),
            "spec": {"host": "a.example.com"},
            "status": {"ingress": [{"conditions": [cond("Admitted", "False")]}, {"conditions": [cond("Admitted", "True")]}]}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("i"),
            "spec": {"rules": [{"host": "a.example.com"}, {}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": meta("h"),
            "spec": {"hostnames": ["a.example.com"]},
            "status": {"parents": [{"conditions": [cond("Accepted", "False"), cond("ResolvedRefs", "True")]}]}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": meta("tls"),
            "data": {"tls.crt": STANDARD.encode(PEM), "tls.key": "!!"}, "stringData": {"ca.crt": PEM}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": meta("slim"),
            "data": {"tls.crt": ""}, SUMMARY_FIELD: {"tls.crt": [{"sha256": "ab", "pemBytes": 63}]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c"),
            "data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
    ]
}

/// One step into a JSON value.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    At(usize),
}

/// Every node's path, the root's (empty) first.
fn paths(value: &Value) -> Vec<Vec<Step>> {
    fn walk(value: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        out.push(at.clone());
        match value {
            Value::Object(m) => {
                for (k, v) in m {
                    at.push(Step::Key(k.clone()));
                    walk(v, at, out);
                    at.pop();
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    at.push(Step::At(i));
                    walk(v, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn node_at<'a>(value: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(value, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::At(i) => &mut v[*i],
    })
}

/// A valid manifest with one field replaced by `replacement`, or removed
/// when there is none (the root is never removed).
fn near_valid() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(manifests()),
        any::<Index>(),
        prop::option::weighted(0.85, any_json()),
    )
        .prop_map(|(mut manifest, index, replacement)| {
            let all = paths(&manifest);
            let path = &all[index.index(all.len())];
            match (replacement, path.split_last()) {
                (Some(v), _) => *node_at(&mut manifest, path) = v,
                (None, Some((Step::Key(k), parent))) => {
                    if let Some(m) = node_at(&mut manifest, parent).as_object_mut() {
                        m.remove(k);
                    }
                }
                (None, Some((Step::At(i), parent))) => {
                    if let Some(a) = node_at(&mut manifest, parent).as_array_mut() {
                        a.remove(*i);
                    }
                }
                (None, None) => {}
            }
            manifest
        })
}

/// Serves `object` as every object of every kind, except the Deployment
/// when `deployment` is set (so a Pod under test belongs to a valid one).
struct Everywhere {
    object: Arc<Cached>,
    deployment: Option<Arc<Cached>>,
}

impl Everywhere {
    fn of(&self, kind: &KindRef) -> Arc<Cached> {
        match &self.deployment {
            Some(d) if *kind == deployment_kind() => d.clone(),
            _ => self.object.clone(),
        }
    }
}

impl ObjectSource for Everywhere {
    fn get(&self, kind: &KindRef, _: &str, _: &str) -> Result<Option<Arc<Cached>>, SourceError> {
        Ok(Some(self.of(kind)))
    }

    fn list(
        &self,
        kind: &KindRef,
        _: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        let object = self.of(kind);
        Ok(if selector.matches_by(|k| object.label(k)) {
            vec![object]
        } else {
            Vec::new()
        })
    }

    fn availability(&self, _: &KindRef, _: &str) -> Availability {
        Availability::Available
    }
}

fn custom_kind() -> KindRef {
    KindRef {
        group: "postgresql.cnpg.io".into(),
        version: "v1".into(),
        kind: "Cluster".into(),
    }
}

/// Every `facts` import, served from `source`: each answers (a fact or
/// an error) without panicking.
fn serve_everything(source: Everywhere) {
    let mut declared = vec![
        deployment_kind(),
        pod_kind(),
        secret_kind(),
        config_map_kind(),
        network_policy_kind(),
        node_kind(),
        cluster_role_kind(),
        custom_kind(),
    ];
    declared.extend(EXPOSURES.map(super::exposure::exposure_kind_ref));
    let mut facts = FactServer::new(Arc::new(source), declared, jiff::Timestamp::UNIX_EPOCH);
    let ns = || "ns".to_owned();
    let _ = facts.workload(ns(), ns());
    let _ = facts.secret(ns(), ns());
    let _ = facts.config_map(ns(), ns());
    let custom = WitKindRef {
        group: "postgresql.cnpg.io".into(),
        version: "v1".into(),
        kind: "Cluster".into(),
    };
    let _ = facts.get(custom.clone(), ns(), ns());
    let _ = facts.list(custom, ns(), vec![("app".into(), "agent".into())]);
    let _ = facts.network_policies(ns());
    let _ = facts.node_pod_cidrs();
    for kind in EXPOSURES {
        let _ = facts.exposure(kind, ns(), ns());
    }
    let _ = facts.cluster_role(ns());
    for key in ["tls.crt", "ca.crt", "tls.key", ""] {
        let _ = facts.secret_certificates(ns(), ns(), key.into());
    }
    let _ = facts.into_reads();
}

/// Every derivation of `object`, called directly and through the server.
fn derive_everything(object: &Value) {
    let _ = object_meta(object);
    let _ = timestamp(object);
    let selector = Selector::from_json(&object["spec"]["selector"]);
    let cached = Cached::new(Arc::new(object.clone()));
    let _ = selector.matches_by(|k| cached.label(k));
    let _ = Selector::from_json(object).matches(&Selector::labels_of(object));
    let _ = network_policy_fact(object);
    let _ = node_cidrs(object);
    let _ = node_pod_cidrs(&[Arc::new(object.clone()), Arc::new(json!({}))]);
    for kind in EXPOSURES {
        let _ = exposure_fact(kind, object);
    }
    let summary = certificates::summarize(object);
    let mut slimmed = object.clone();
    if let Some(m) = slimmed.as_object_mut() {
        m.insert(SUMMARY_FIELD.to_owned(), summary);
    }
    for key in ["tls.crt", "ca.crt", "tls.key", ""] {
        let _ = certificates::bundle(object, key);
        let _ = certificates::bundle(&slimmed, key);
    }
    let pod = Pod::deserialize(object)
        .ok()
        .map(|pod| pod_fact(object, &pod));
    if let Ok(d) = Deployment::deserialize(object) {
        let _ = deployment_part(object, &d).with_pods(pod.into_iter().collect());
    }
    serve_everything(Everywhere {
        object: Cached::new(Arc::new(object.clone())),
        deployment: None,
    });
    serve_everything(Everywhere {
        object: Cached::new(Arc::new(object.clone())),
        deployment: Some(Cached::new(Arc::new(manifests()[0].clone()))),
    });
}

/// Fragments of PEM text, to build near-valid certificate chains.
fn pem_text() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"-----BEGIN CERTIFICATE-----".to_vec()),
        Just(b"-----END CERTIFICATE-----".to_vec()),
        Just(b"-----BEGIN PRIVATE KEY-----".to_vec()),
        Just(b"AQID".to_vec()),
        Just(b"BAU=".to_vec()),
        Just(b"=".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"-----".to_vec()),
        Just("é".as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(fragment, 0..12).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn arbitrary_json_never_panics(object in any_json()) {
        derive_everything(&object);
    }

    #[test]
    fn near_valid_manifests_never_panic(object in near_valid()) {
        derive_everything(&object);
    }

    #[test]
    fn arbitrary_pem_never_panics(pem in pem_text()) {
        let found = certificates::certificates(&pem);
        prop_assert!(found.iter().all(|c| c.sha256.len() == 64));
        let secret = json!({"data": {"k": STANDARD.encode(&pem)},
            "stringData": {"s": String::from_utf8_lossy(&pem)}});
        let _ = certificates::bundle(&secret, "k");
        let _ = certificates::bundle(&secret, "s");
        let _ = certificates::summarize(&secret);
    }

    #[test]
    fn arbitrary_timestamps_never_panic(text in ".{0,40}") {
        if let Some(t) = timestamp(&json!(text)) {
            prop_assert!(t.nanos < 1_000_000_000);
        }
    }

    /// Seconds round down and nanoseconds count up from them, before the
    /// epoch as after it.
    #[test]
    fn timestamps_keep_their_sign(
        seconds in -62_135_596_800i64..253_402_300_800,
        nanos in 0i32..1_000_000_000,
    ) {
        let exact = jiff::Timestamp::from_second(seconds).unwrap()
            + jiff::SignedDuration::new(0, nanos);
        let t = timestamp(&json!(exact.to_string())).unwrap();
        prop_assert_eq!((t.seconds, t.nanos), (seconds, nanos.unsigned_abs()));
    }

    /// The sum of restart counts never overflows: negative counts read as
    /// 0, and the sum stops at `u32::MAX`.
    #[test]
    fn restart_counts_sum_without_overflow(
        init in prop::collection::vec(any::<i32>(), 0..4),
        main in prop::collection::vec(prop_oneof![Just(i32::MAX), any::<i32>()], 0..6),
    ) {
        let statuses = |counts: &[i32]| -> Vec<Value> {
            counts.iter().map(|c| json!({"name": "a", "restartCount": c})).collect()
        };
        let p = json!({"status": {"initContainerStatuses": statuses(&init),
            "containerStatuses": statuses(&main)}});
        let f = pod_fact(&p, &Pod::deserialize(&p).unwrap());
        let want = init
            .iter()
            .chain(&main)
            .map(|c| u64::from(c.max(&0).unsigned_abs()))
            .sum::<u64>()
            .min(u64::from(u32::MAX));
        prop_assert_eq!(u64::from(f.restart_count), want);
    }
}

#[test]
fn every_manifest_is_derived_whole() {
    for m in manifests() {
        derive_everything(&m);
    }
}

#[test]
fn deeply_nested_values_are_read_as_absent() {
    let mut deep = json!("leaf");
    for _ in 0..128 {
        deep = json!([{"conditions": deep}]);
    }
    for m in manifests() {
        for field in ["spec", "status", "metadata", "data"] {
            let mut object = m.clone();
            object[field] = deep.clone();
            derive_everything(&object);
        }
    }
}
