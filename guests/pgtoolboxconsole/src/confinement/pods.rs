//! The console Pods: which carry the X-Forwarded-For grant, their
//! addresses, and the sentence saying what the console does with the header.

use std::net::IpAddr;

use reconciler_guest_sdk::PodFact;

use super::text;

/// The Pod annotation the operator renders on the console's Pod template:
/// whether the console trusts `X-Forwarded-For` from every peer that
/// reaches its port.
pub const TRUST_ANNOTATION: &str = "pgtoolbox.fyannk.dev/xff-trust";
/// The grant: trust the header from every peer that reaches the port
/// (safe only while the ingress NetworkPolicy admits only the proxies).
pub const TRUST_ALL_PEERS: &str = "all-peers";
/// No grant: the console trusts the header from no peer.
pub const TRUST_NONE: &str = "none";

/// Whether the Pod may trust every peer: it carries the annotation with
/// any value but `none` (an unknown value is read as the grant, failing
/// closed: the policy is kept and a wider `from` held back for it).
pub fn holds_grant(pod: &PodFact) -> bool {
    pod.meta
        .annotations
        .iter()
        .any(|(k, v)| k == TRUST_ANNOTATION && v != TRUST_NONE)
}

/// The Pod's name, and when its deletion was asked if it is terminating.
pub fn named(pod: &PodFact) -> String {
    match &pod.meta.deletion {
        Some(t) => format!(
            "{} (terminating: its deletion was asked at {})",
            pod.meta.name,
            text::rfc3339(t)
        ),
        None => pod.meta.name.clone(),
    }
}

/// The Pods' addresses that parse; the Pod and its address for each.
pub fn addresses(pods: &[PodFact]) -> Vec<(&PodFact, IpAddr)> {
    pods.iter()
        .filter_map(|p| {
            let ip = p.pod_ip.as_deref()?.parse().ok()?;
            Some((p, ip))
        })
        .collect()
}

/// The Pods that carry the grant, terminating ones first (they are the
/// ones that hold a change back longest), then by name.
pub fn granted(pods: &[PodFact]) -> Vec<&PodFact> {
    let mut out: Vec<&PodFact> = pods.iter().filter(|p| holds_grant(p)).collect();
    out.sort_by(|a, b| {
        (a.meta.deletion.is_none(), &a.meta.name).cmp(&(b.meta.deletion.is_none(), &b.meta.name))
    });
    out
}

/// What the console does with `X-Forwarded-For`, when the exposure is
/// not confined (or not verified): no peer is trusted, unless Pods still
/// carry the grant, which is said with their names.
pub fn xff_untrusted(pods: &[PodFact]) -> String {
    let granted = granted(pods);
    if granted.is_empty() {
        return "the console trusts no peer with X-Forwarded-For".to_owned();
    }
    let names: Vec<String> = granted.iter().map(|p| named(p)).collect();
    let listed = text::list_capped(&names, text::POD_ITEM_CAP);
    let n = granted.len();
    let noun = text::agree(n, "Pod", "Pods");
    if n == pods.len() {
        let carry = text::agree(n, "carries", "carry");
        format!(
            "the console still trusts X-Forwarded-For from every peer that reaches its port: its {noun} {listed} {carry} the grant until the rollout without it is through"
        )
    } else {
        let trust = text::agree(n, "trusts", "trust");
        format!(
            "console {noun} {listed} still {trust} X-Forwarded-For from every peer that reaches the port until the rollout without the grant is through; the others trust no peer"
        )
    }
}

/// What the console does with `X-Forwarded-For` when it is confined to
/// `peers` (a description): trusted from them by the Pods with the grant.
pub fn xff_confined(pods: &[PodFact], peers: &str) -> String {
    let granted = granted(pods);
    if granted.is_empty() {
        return format!(
            "the console trusts no peer with X-Forwarded-For until its Pods carry the grant ({TRUST_ANNOTATION}: {TRUST_ALL_PEERS}); then it trusts {peers}"
        );
    }
    if granted.len() == pods.len() {
        return format!("the console trusts X-Forwarded-For from {peers}");
    }
    let names: Vec<String> = granted.iter().map(|p| named(p)).collect();
    let n = names.len();
    format!(
        "console {} {} {} X-Forwarded-For from {peers}; the others trust no peer until the rollout gives them the grant",
        text::agree(n, "Pod", "Pods"),
        text::list_capped(&names, text::POD_ITEM_CAP),
        text::agree(n, "trusts", "trust")
    )
}
