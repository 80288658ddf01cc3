//! InstanceCABundleComplete: whether the server CA of every selected CloudNativePG Cluster is in the mirrored `<name>-instance-ca` ConfigMap, and `status.instanceCABundle`.

use std::collections::BTreeSet;

use reconciler_guest_sdk::message::{self, MAX_MESSAGE_BYTES};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::verdict::{RECONCILING, condition, fails, ok, unknown};
use reconciler_guest_sdk::{Condition, ConditionStatus, Facts, ReadError, read};
use serde_json::{Value, json};

use crate::children::CA_KEY;
use crate::registry::*;

/// The status field listing the Clusters left out of the bundle.
pub const FIELD: &str = "instanceCABundle";

/// The most PEM bytes the mirrored bundle holds. A ConfigMap is at most
/// 1 MiB (1,048,576 bytes) as stored, metadata included; the bundle keeps
/// 48,576 bytes of headroom for the object's metadata, the key and the
/// operator's annotations. At about 700 bytes per EC CA and 1,200–2,000
/// per RSA CA, that is several hundred distinct CAs.
pub const BUNDLE_LIMIT_BYTES: u64 = 1_000_000;
/// The most CA Secrets one bundle is mirrored from (the host's bound on a
/// CA bundle's sources): a Cluster whose Secret would be one more is left
/// out as InstanceCABundleFull too.
pub const MAX_SOURCES: usize = 1000;

/// Why a Cluster's CA is not in the bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub cluster: String,
    pub secret: String,
    /// SecretNotFound, SecretKeyMissing, InstanceCAInvalid or InstanceCABundleFull.
    pub reason: &'static str,
}

/// The condition, the status field, and what the mirror holds.
#[derive(Debug)]
pub struct Bundle {
    pub condition: Condition,
    /// `status.instanceCABundle`: `null` removes it.
    pub field: Value,
    pub retry: bool,
    /// The CA Secrets (key `ca.crt`) whose certificates the mirror holds,
    /// in Cluster name order, each once, and only those that add a CA;
    /// `None` when the console does not
    /// write the mirror: another object controls the ConfigMap, or a read
    /// failed.
    pub sources: Option<Vec<String>>,
}

fn unread(message: String) -> Bundle {
    Bundle {
        condition: unknown(INSTANCE_CA_BUNDLE_COMPLETE, RECONCILING, message),
        field: Value::Null,
        retry: true,
        sources: None,
    }
}

/// The server CA Secret of a Cluster: `spec.certificates.serverCASecret`,
/// or CloudNativePG's generated `<cluster>-ca`.
pub fn server_ca_secret(cluster_name: &str, cluster: &Value) -> String {
    cluster["spec"]["certificates"]["serverCASecret"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map_or_else(|| format!("{cluster_name}-ca"), str::to_owned)
}

/// Decides InstanceCABundleComplete for a console that mirrors the bundle
/// (`spec.instanceCABundleRef` omitted) into ConfigMap `bundle`.
pub fn evaluate(
    facts: &dyn Facts,
    console: &Parent,
    bundle: &str,
    selector: Option<&[(String, String)]>,
) -> Bundle {
    let namespace = console.namespace;
    match facts.config_map(namespace, bundle) {
        Ok(Some(existing)) => {
            if let Some(refusal) = console.refusal("ConfigMap", bundle, &existing.meta) {
                return Bundle {
                    condition: fails(
                        INSTANCE_CA_BUNDLE_COMPLETE,
                        RESOURCE_NOT_OWNED,
                        format!(
                            "{refusal}: the instance CA bundle is not mirrored, every Cluster reads \"not verifiable\" in the console"
                        ),
                    ),
                    field: Value::Null,
                    retry: false,
                    sources: None,
                };
            }
        }
        Ok(None) => {}
        Err(e) => return unread(read::failure(&format!("ConfigMap {bundle}"), &e)),
    }
    let Some(selector) = selector else {
        return complete(
            bundle,
            0,
            0,
            "no Cluster is selected (spec.clusterSelector is not set)",
        );
    };
    let clusters = match facts.list(&cluster_kind(), namespace, selector) {
        Ok(clusters) => clusters,
        Err(ReadError::NotServed(_)) => {
            return complete(
                bundle,
                0,
                0,
                "no Cluster is selected (the CloudNativePG Cluster API is not served)",
            );
        }
        Err(e) => return unread(read::failure(&format!("the Clusters of {namespace}"), &e)),
    };
    let mut included: BTreeSet<String> = BTreeSet::new();
    let mut bytes: u64 = 0;
    let mut full = false;
    let mut missing: Vec<Missing> = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    for cluster in &clusters {
        let name = &cluster.meta.name;
        let json: Value = serde_json::from_str(&cluster.json).unwrap_or_default();
        let secret = server_ca_secret(name, &json);
        let left_out = |reason| Missing {
            cluster: name.clone(),
            secret: secret.clone(),
            reason,
        };
        let found = match facts.secret_certificates(namespace, &secret, CA_KEY) {
            Ok(found) => found,
            Err(e) => return unread(read::failure(&format!("Secret {secret}"), &e)),
        };
        let Some(found) = found else {
            missing.push(left_out(SECRET_NOT_FOUND));
            continue;
        };
        if !found.has_key {
            missing.push(left_out(SECRET_KEY_MISSING));
            continue;
        }
        if found.certificates.is_empty() {
            missing.push(left_out(INSTANCE_CA_INVALID));
            continue;
        }
        // Distinct CAs only: Clusters sharing a CA add it once. Each PEM
        // block is written followed by a newline.
        let mut new: Vec<(&str, u64)> = Vec::new();
        for c in &found.certificates {
            if !included.contains(&c.sha256) && !new.iter().any(|(s, _)| *s == c.sha256) {
                new.push((&c.sha256, u64::from(c.pem_bytes) + 1));
            }
        }
        let adds: u64 = new.iter().map(|(_, b)| b).sum();
        let one_source_more = !sources.contains(&secret) && sources.len() >= MAX_SOURCES;
        if !new.is_empty() && (full || bytes + adds > BUNDLE_LIMIT_BYTES || one_source_more) {
            // The first Cluster that does not fit fills the bundle: it and
            // every later one (by name) with a CA not already in are left out.
            full = true;
            missing.push(left_out(INSTANCE_CA_BUNDLE_FULL));
            continue;
        }
        // Only a Secret that adds a CA is a source: the others' are in.
        if !new.is_empty() && !sources.contains(&secret) {
            sources.push(secret);
        }
        bytes += adds;
        included.extend(new.into_iter().map(|(s, _)| s.to_owned()));
    }
    if missing.is_empty() {
        let why = match clusters.len() {
            0 => "no Cluster is selected (spec.clusterSelector matches none)".to_owned(),
            n => format!("the server CA of every selected Cluster ({n}) is in ConfigMap {bundle}"),
        };
        return Bundle {
            sources: Some(sources),
            ..complete(bundle, included.len(), bytes, &why)
        };
    }
    Bundle {
        condition: fails(
            INSTANCE_CA_BUNDLE_COMPLETE,
            INSTANCE_CA_MISSING,
            missing_message(bundle, clusters.len(), &missing),
        ),
        field: json!({
            "missing": missing
                .iter()
                .map(|m| json!({"cluster": m.cluster, "secret": m.secret, "reason": m.reason}))
                .collect::<Vec<_>>()
        }),
        retry: false,
        sources: Some(sources),
    }
}

fn complete(bundle: &str, cas: usize, bytes: u64, why: &str) -> Bundle {
    let held = if cas == 0 {
        format!("; ConfigMap {bundle} is mirrored empty")
    } else {
        let plural = if cas == 1 { "" } else { "s" };
        format!(" ({cas} distinct CA{plural}, {bytes} bytes)")
    };
    Bundle {
        condition: ok(INSTANCE_CA_BUNDLE_COMPLETE, format!("{why}{held}")),
        field: Value::Null,
        retry: false,
        sources: Some(Vec::new()),
    }
}

/// Why a Cluster is left out, in the seed's words, by reason.
const WHY: &[(&str, &str)] = &[
    (SECRET_NOT_FOUND, "its CA Secret does not exist"),
    (SECRET_KEY_MISSING, "a Secret without ca.crt"),
    (
        INSTANCE_CA_INVALID,
        "a ca.crt with no PEM certificate in it",
    ),
    (
        INSTANCE_CA_BUNDLE_FULL,
        "the mirrored bundle reached the size a ConfigMap holds; the Clusters after it, by name, are left out",
    ),
];

/// InstanceCAMissing's message: each left-out Cluster (with its CA Secret)
/// under the reason it is left out for, and why. Within the message bound:
/// every reason is given with why, and the Clusters are named in turn
/// across the reasons while they fit; a reason whose Clusters do not all
/// fit says how many more, and status.instanceCABundle.missing names each.
fn missing_message(bundle: &str, selected: usize, missing: &[Missing]) -> String {
    let groups: Vec<(&str, &str, Vec<String>)> = WHY
        .iter()
        .map(|(reason, why)| {
            let names = missing
                .iter()
                .filter(|m| m.reason == *reason)
                .map(|m| format!("{} ({})", m.cluster, m.secret))
                .collect();
            (*reason, *why, names)
        })
        .filter(|(_, _, names): &(_, _, Vec<String>)| !names.is_empty())
        .collect();
    let head = format!(
        "{} of {selected} selected Clusters have no server CA in ConfigMap {bundle} and read \"not verifiable\" in the console",
        missing.len()
    );
    let render = |shown: &[usize]| {
        let mut m = head.clone();
        for ((reason, why, names), &n) in groups.iter().zip(shown) {
            m.push_str(&format!("; {reason} ({why}): "));
            m.push_str(&names[..n].join(", "));
            match (n, names.len() - n) {
                (_, 0) => {}
                (0, more) => m.push_str(&format!("{more} Clusters")),
                (_, more) => m.push_str(&format!(", and {more} more")),
            }
        }
        if groups
            .iter()
            .zip(shown)
            .any(|((_, _, names), &n)| n < names.len())
        {
            m.push_str(" (status.instanceCABundle.missing names each)");
        }
        m
    };
    let mut shown = vec![0; groups.len()];
    let mut growing = true;
    while growing {
        growing = false;
        for i in 0..groups.len() {
            if shown[i] < groups[i].2.len() {
                shown[i] += 1;
                if render(&shown).len() <= MAX_MESSAGE_BYTES {
                    growing = true;
                } else {
                    shown[i] -= 1;
                }
            }
        }
    }
    message::bound(&render(&shown))
}

/// The previous InstanceCABundleComplete (or any condition) of `status`,
/// given again as it was: while paused or stalled the operator does not
/// touch the bundle, so what was said of it still holds, and a verdict
/// that does not evaluate everything carries it forward with its older
/// observedGeneration (the contract's rule for advisory conditions).
pub fn previous(status: &Value, type_: &str) -> Option<Condition> {
    let c = status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(type_))?;
    let status = match c["status"].as_str()? {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    Some(condition(
        type_,
        status,
        c["reason"].as_str()?,
        c["message"].as_str().unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::mock::{MockFacts, meta};
    use reconciler_guest_sdk::{CertificateBundleFact, CertificateFact};

    /// The console `name` of namespace `ns`, uid `uid`.
    fn parent(name: &'static str) -> Parent<'static> {
        Parent {
            kind: KIND,
            namespace: "ns",
            name,
            uid: "uid",
        }
    }

    fn cluster(name: &str, labels: Value, ca_secret: Option<&str>) -> Value {
        let mut c = json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "ns", "labels": labels}, "spec": {"instances": 1}});
        if let Some(s) = ca_secret {
            c["spec"]["certificates"] = json!({"serverCASecret": s});
        }
        c
    }

    fn certs(secret: &str, shas: &[(&str, u32)]) -> CertificateBundleFact {
        CertificateBundleFact {
            meta: meta("ns", secret),
            has_key: true,
            certificates: shas
                .iter()
                .map(|(s, b)| CertificateFact {
                    sha256: (*s).into(),
                    pem_bytes: *b,
                })
                .collect(),
        }
    }

    fn team() -> Vec<(String, String)> {
        vec![("team".into(), "a".into())]
    }

    #[test]
    fn every_selected_ca_in_is_complete() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), cluster("pg1", json!({"team": "a"}), None))
            .with_object(
                &cluster_kind(),
                cluster("pg2", json!({"team": "a"}), Some("shared-ca")),
            )
            .with_object(
                &cluster_kind(),
                cluster("other", json!({"team": "b"}), None),
            )
            .with_certificates(CA_KEY, certs("pg1-ca", &[("aa", 700)]))
            .with_certificates(CA_KEY, certs("shared-ca", &[("aa", 700)]));
        let b = evaluate(&facts, &parent("c"), "c-instance-ca", Some(&team()));
        assert_eq!(
            b.condition.status,
            ConditionStatus::True,
            "{:?}",
            b.condition
        );
        assert!(b.condition.message.contains("(2)"));
        assert!(b.condition.message.contains("1 distinct CA, 701 bytes"));
        assert_eq!(b.field, Value::Null);
        // shared-ca holds pg1-ca's CA: it adds nothing.
        assert_eq!(b.sources, Some(vec!["pg1-ca".to_owned()]));
    }

    #[test]
    fn no_selector_selects_nothing() {
        let b = evaluate(&MockFacts::at(0), &parent("c"), "c-instance-ca", None);
        assert_eq!(b.condition.status, ConditionStatus::True);
        assert!(b.condition.message.contains("no Cluster is selected"));
    }

    #[test]
    fn each_missing_ca_is_named_with_its_reason() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), cluster("a", json!({"team": "a"}), None))
            .with_object(&cluster_kind(), cluster("b", json!({"team": "a"}), None))
            .with_object(&cluster_kind(), cluster("c", json!({"team": "a"}), None))
            .with_secret("ns", "b-ca", &["tls.crt"])
            .with_certificates(CA_KEY, certs("c-ca", &[]));
        let b = evaluate(&facts, &parent("x"), "x-instance-ca", Some(&team()));
        assert_eq!(b.condition.reason, INSTANCE_CA_MISSING);
        assert_eq!(
            b.condition.message,
            "3 of 3 selected Clusters have no server CA in ConfigMap x-instance-ca and read \"not verifiable\" in the console; \
             SecretNotFound (its CA Secret does not exist): a (a-ca); \
             SecretKeyMissing (a Secret without ca.crt): b (b-ca); \
             InstanceCAInvalid (a ca.crt with no PEM certificate in it): c (c-ca)"
        );
        assert_eq!(
            b.field,
            json!({"missing": [
                {"cluster": "a", "secret": "a-ca", "reason": "SecretNotFound"},
                {"cluster": "b", "secret": "b-ca", "reason": "SecretKeyMissing"},
                {"cluster": "c", "secret": "c-ca", "reason": "InstanceCAInvalid"},
            ]})
        );
    }

    #[test]
    fn a_full_bundle_leaves_out_the_clusters_after_it_by_name() {
        let mut facts = MockFacts::at(0);
        let big = 400_000;
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            facts = facts
                .with_object(&cluster_kind(), cluster(name, json!({"team": "a"}), None))
                .with_certificates(
                    CA_KEY,
                    certs(&format!("{name}-ca"), &[(&format!("sha{i}"), big)]),
                );
        }
        // e shares a's CA: it is in even after the bundle is full.
        facts = facts.with_object(
            &cluster_kind(),
            cluster("e", json!({"team": "a"}), Some("a-ca")),
        );
        let b = evaluate(&facts, &parent("x"), "x-instance-ca", Some(&team()));
        let reasons: Vec<(&str, &str)> = b.field["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["cluster"].as_str().unwrap(),
                    m["reason"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            reasons,
            [("c", "InstanceCABundleFull"), ("d", "InstanceCABundleFull")]
        );
        // Only what fits is mirrored; e's Secret is a's.
        assert_eq!(b.sources, Some(vec!["a-ca".to_owned(), "b-ca".to_owned()]));
    }

    #[test]
    fn a_bundle_is_mirrored_from_at_most_max_sources_secrets() {
        let mut facts = MockFacts::at(0);
        for i in 0..=MAX_SOURCES {
            let name = format!("pg{i:04}");
            facts = facts
                .with_object(&cluster_kind(), cluster(&name, json!({"team": "a"}), None))
                .with_certificates(
                    CA_KEY,
                    certs(&format!("{name}-ca"), &[(&format!("sha{i}"), 500)]),
                );
        }
        let b = evaluate(&facts, &parent("x"), "x-instance-ca", Some(&team()));
        assert_eq!(b.sources.map(|s| s.len()), Some(MAX_SOURCES));
        assert_eq!(
            b.field["missing"],
            json!([{"cluster": "pg1000", "secret": "pg1000-ca", "reason": "InstanceCABundleFull"}])
        );
    }

    /// Seed 000: InstanceCAMissing, "naming each Cluster and why"; "Every
    /// message is bounded."
    #[test]
    fn many_missing_are_named_across_every_reason_within_the_bound() {
        let mut facts = MockFacts::at(0);
        for i in 0..300 {
            let name = format!("pg{i:03}");
            facts = facts.with_object(&cluster_kind(), cluster(&name, json!({"team": "a"}), None));
            if i % 100 == 1 {
                facts = facts.with_secret("ns", &format!("{name}-ca"), &["tls.crt"]);
            }
        }
        let b = evaluate(&facts, &parent("x"), "x-instance-ca", Some(&team()));
        let m = &b.condition.message;
        assert!(m.len() <= MAX_MESSAGE_BYTES, "{}", m.len());
        assert!(!m.contains(message::TRUNCATION_MARKER), "{m}");
        assert!(m.contains("SecretKeyMissing (a Secret without ca.crt): pg001 (pg001-ca), pg101 (pg101-ca), pg201 (pg201-ca) (status"), "{m}");
        assert!(
            m.contains(
                "SecretNotFound (its CA Secret does not exist): pg000 (pg000-ca), pg002 (pg002-ca)"
            ),
            "{m}"
        );
        assert!(m.contains(", and 258 more; SecretKeyMissing"), "{m}");
        assert!(
            m.ends_with("(status.instanceCABundle.missing names each)"),
            "{m}"
        );
        assert_eq!(b.field["missing"].as_array().map(Vec::len), Some(300));
    }

    #[test]
    fn the_previous_condition_is_read_back() {
        let status = json!({"conditions": [{"type": "InstanceCABundleComplete", "status": "False", "reason": "InstanceCAMissing", "message": "m"}]});
        let c = previous(&status, INSTANCE_CA_BUNDLE_COMPLETE).unwrap();
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::False, "InstanceCAMissing")
        );
        assert!(previous(&json!({}), INSTANCE_CA_BUNDLE_COMPLETE).is_none());
    }
}
