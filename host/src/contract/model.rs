//! Conversions between the contract's generated types and the host's model.

use reconciler_conventions::kind::{self as model, KindSpec, ParentGates};
use reconciler_conventions::verdict::{
    ConditionStatus, Decision, EventType, KindEvent, Stall, Verdict,
};

use crate::contract::exports as wit;
use crate::contract::types as wit_types;

pub fn kind_ref(k: &wit_types::KindRef) -> model::KindRef {
    model::KindRef {
        group: k.group.clone(),
        version: k.version.clone(),
        kind: k.kind.clone(),
    }
}

/// The gates a guest lets its parents set (contract 0.5.0).
pub fn parent_gates(gates: &[wit::Gate]) -> ParentGates {
    ParentGates {
        mode: gates.contains(&wit::Gate::Mode),
        approval: gates.contains(&wit::Gate::Approval),
    }
}

/// The kind spec in the host's model, with the kinds the guest writes
/// (empty before contract 0.3.0) and the gates its parents may set (both
/// before contract 0.5.0).
pub(crate) fn kind_spec(
    s: wit::KindSpec,
    writes: Vec<wit_types::KindRef>,
    parent_gates: ParentGates,
) -> KindSpec {
    KindSpec {
        group: s.group,
        version: s.version,
        kind: s.kind,
        plural: s.plural,
        namespaced: s.namespaced,
        profile: match s.profile {
            wit::ConventionProfile::Progressing => model::Profile::Progressing,
            wit::ConventionProfile::Kstatus => model::Profile::Kstatus,
        },
        aspects: s.aspects,
        advisory: s.advisory,
        reasons: s
            .reasons
            .into_iter()
            .map(|r| model::ReasonEntry {
                name: r.name,
                owner: r.owner,
                meaning: r.meaning,
            })
            .collect(),
        negative_polarity: s.negative_polarity,
        quiet_reasons: s.quiet_reasons,
        stalls: s
            .stalls
            .into_iter()
            .map(|r| model::StallRule {
                reason: r.reason,
                recheck_seconds: r.recheck_seconds,
            })
            .collect(),
        reads: s
            .reads
            .iter()
            .map(|r| model::ReadDecl {
                kind: kind_ref(&r.kind),
                optional: r.optional,
                cross_namespace: r.cross_namespace,
                fields: r.fields.clone(),
            })
            .collect(),
        pause: s.pause.map(|p| model::PauseAnnotation {
            key: p.key,
            value: p.value,
        }),
        spec_schema: s.spec_schema,
        printer_columns: s
            .printer_columns
            .into_iter()
            .map(|c| model::PrinterColumn {
                name: c.name,
                type_: c.type_,
                json_path: c.json_path,
                wide: c.wide,
                description: c.description,
            })
            .collect(),
        writes: writes.iter().map(kind_ref).collect(),
        parent_gates,
    }
}

/// The largest body a guest may ask the host to apply: the API server's
/// own limit on an object stored in etcd is about 1.5 MiB, and a child a
/// guest renders is a fraction of it.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

/// A change a guest asks for, checked against its own declarations.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The object the guest wants: a JSON object whose `apiVersion`,
    /// `kind` and `metadata.name` match `kind` and `name`.
    Apply {
        kind: model::KindRef,
        name: String,
        body: serde_json::Value,
    },
    /// A child the guest no longer wants, as it saw it.
    Delete {
        kind: model::KindRef,
        name: String,
        uid: String,
    },
    /// A Secret of random values (`length` bytes under each key), created
    /// when missing, never overwritten.
    Generate {
        name: String,
        keys: Vec<(String, u32)>,
    },
    /// A TLS serving certificate for `dns_names` signed by the operator's
    /// CA, created when missing, replaced before it expires or when the
    /// names change.
    Certificate {
        name: String,
        dns_names: Vec<String>,
    },
    /// A ConfigMap whose `key` holds the certificates under each (Secret,
    /// key) of `sources`, applied as an `Apply` would be.
    Bundle {
        name: String,
        key: String,
        sources: Vec<(String, String)>,
        labels: Vec<(String, String)>,
    },
}

/// A deletion that takes access or exposure away (contract 0.5.0): made
/// whatever holds the parent's other changes, then announced by its Event.
#[derive(Clone, Debug, PartialEq)]
pub struct Withdrawal {
    pub kind: model::KindRef,
    pub name: String,
    /// The UID the guest saw: the deletion's precondition.
    pub uid: String,
    /// Raised once the object is gone (not when it was gone already).
    pub event: Option<KindEvent>,
}

impl Withdrawal {
    /// The Event raised once the object is gone, as the host publishes it.
    pub fn gone_event(&self) -> Option<reconciler_conventions::engine::Event> {
        self.event
            .as_ref()
            .map(|e| reconciler_conventions::engine::Event {
                type_: e.type_,
                reason: e.reason.clone(),
                note: reconciler_conventions::message::bound(&e.message),
            })
    }

    /// The deletion it makes, as an ordinary change.
    pub fn deletion(&self) -> Change {
        Change::Delete {
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
        }
    }
}

impl std::fmt::Display for Withdrawal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "withdrawal of {} {} (uid {})",
            self.kind.kind, self.name, self.uid
        )
    }
}

/// The kinds whose deletion takes access or exposure away, and so may be
/// a withdrawal: what binds a role, what grants one, and what publishes a
/// name or an address. Deleting anything else either widens something (a
/// NetworkPolicy's going lets Pods reach more) or takes nothing away.
pub(crate) const WITHDRAWABLE: &[(&str, &str)] = &[
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "Role"),
    ("networking.k8s.io", "Ingress"),
    ("route.openshift.io", "Route"),
    ("gateway.networking.k8s.io", "HTTPRoute"),
    ("gateway.networking.k8s.io", "GRPCRoute"),
    ("gateway.networking.k8s.io", "TLSRoute"),
    ("gateway.networking.k8s.io", "TCPRoute"),
    ("", "Service"),
];

/// Whether deleting an object of `kind` takes access or exposure away.
pub(crate) fn is_withdrawable(kind: &model::KindRef) -> bool {
    WITHDRAWABLE
        .iter()
        .any(|(group, k)| kind.group == *group && kind.kind == *k)
}

/// The most Secrets one CA bundle is mirrored from.
pub(crate) const MAX_BUNDLE_SOURCES: usize = 1000;

/// The most DNS names one serving certificate carries.
pub(crate) const MAX_DNS_NAMES: usize = 100;

/// The most random bytes under one key of a generated Secret.
pub(crate) const MAX_GENERATED_BYTES: u32 = 4096;

/// The core `v1` ConfigMap kind.
pub fn config_map_kind() -> model::KindRef {
    model::KindRef {
        group: String::new(),
        version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
    }
}

/// The core `v1` Secret kind.
pub fn secret_kind() -> model::KindRef {
    model::KindRef {
        group: String::new(),
        version: "v1".to_owned(),
        kind: "Secret".to_owned(),
    }
}

impl Change {
    pub fn kind(&self) -> model::KindRef {
        match self {
            Change::Apply { kind, .. } | Change::Delete { kind, .. } => kind.clone(),
            Change::Generate { .. } | Change::Certificate { .. } => secret_kind(),
            Change::Bundle { .. } => config_map_kind(),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Change::Apply { name, .. }
            | Change::Delete { name, .. }
            | Change::Generate { name, .. }
            | Change::Certificate { name, .. }
            | Change::Bundle { name, .. } => name,
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Apply { kind, name, .. } => write!(f, "apply of {} {name}", kind.kind),
            Change::Delete { kind, name, uid } => {
                write!(f, "deletion of {} {name} (uid {uid})", kind.kind)
            }
            Change::Generate { name, .. } => write!(f, "generated Secret {name}"),
            Change::Certificate { name, .. } => write!(f, "serving certificate Secret {name}"),
            Change::Bundle { name, .. } => write!(f, "CA bundle ConfigMap {name}"),
        }
    }
}

/// The changes in the host's model, each checked against what the kind
/// declares it writes and the parent's namespace (`""`: cluster-scoped
/// parent); the first that is wrong fails them all, named. The
/// withdrawals come apart from the other changes: each must be a deletion
/// of a kind whose going takes access or exposure away
/// ([`is_withdrawable`]), and its Event a reason the kind registers.
pub fn changes(
    changes: Vec<wit::Change>,
    spec: &KindSpec,
    namespace: &str,
) -> Result<(Vec<Change>, Vec<Withdrawal>), String> {
    let mut checked = Vec::with_capacity(changes.len());
    let mut withdrawals = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for c in changes {
        let change = match c {
            wit::Change::Withdraw(w) => {
                withdrawals.push(checked_withdrawal(w, spec, &mut seen)?);
                continue;
            }
            wit::Change::Apply(a) => checked_apply(a, namespace)?,
            wit::Change::Delete(d) => Change::Delete {
                kind: kind_ref(&d.kind),
                name: d.name,
                uid: d.uid,
            },
            wit::Change::Generate(g) => checked_generate(g)?,
            wit::Change::Certificate(c) => checked_certificate(c)?,
            wit::Change::Bundle(b) => checked_bundle(b)?,
        };
        if !spec.writes.contains(&change.kind()) {
            return Err(format!(
                "{change}: the kind-spec's writes do not declare {}",
                change.kind()
            ));
        }
        if !seen.insert((change.kind(), change.name().to_owned())) {
            return Err(format!("{change}: the pass changes that object twice"));
        }
        checked.push(change);
    }
    Ok((checked, withdrawals))
}

/// A withdrawal checked: withdrawable, its Event's reason registered, its
/// kind declared, and its object not changed before in the pass (`seen`).
fn checked_withdrawal(
    w: wit::Withdrawal,
    spec: &KindSpec,
    seen: &mut std::collections::BTreeSet<(model::KindRef, String)>,
) -> Result<Withdrawal, String> {
    let withdrawal = Withdrawal {
        kind: kind_ref(&w.object.kind),
        name: w.object.name,
        uid: w.object.uid,
        event: w.event.map(kind_event),
    };
    if !is_withdrawable(&withdrawal.kind) {
        let kinds: Vec<&str> = WITHDRAWABLE.iter().map(|(_, k)| *k).collect();
        return Err(format!(
            "{withdrawal}: only a deletion that takes access or exposure away is a \
             withdrawal ({}), and deleting a {} is not one: ask for it as a delete",
            kinds.join(", "),
            withdrawal.kind
        ));
    }
    if let Some(event) = &withdrawal.event
        && !spec.reasons.iter().any(|r| r.name == event.reason)
    {
        return Err(format!(
            "{withdrawal}: its Event's reason {:?} is not in the kind's registry",
            event.reason
        ));
    }
    let deletion = withdrawal.deletion();
    if !spec.writes.contains(&deletion.kind()) {
        return Err(format!(
            "{withdrawal}: the kind-spec's writes do not declare {}",
            deletion.kind()
        ));
    }
    if !seen.insert((deletion.kind(), deletion.name().to_owned())) {
        return Err(format!("{withdrawal}: the pass changes that object twice"));
    }
    Ok(withdrawal)
}

/// An apply checked: a bounded JSON object naming its own kind and name, in
/// the parent's `namespace`, with no owner references of its own.
fn checked_apply(a: wit::ApplyObject, namespace: &str) -> Result<Change, String> {
    let kind = kind_ref(&a.kind);
    let what = format!("apply of {} {}", kind.kind, a.name);
    if a.body.len() > MAX_BODY_BYTES {
        return Err(format!(
            "{what}: its body is {} bytes, more than {MAX_BODY_BYTES}",
            a.body.len()
        ));
    }
    let body: serde_json::Value =
        serde_json::from_str(&a.body).map_err(|e| format!("{what}: its body is not JSON: {e}"))?;
    if !body.is_object() {
        return Err(format!(
            "{what}: its body must be a JSON object, got {}",
            kind_of_json(&body)
        ));
    }
    let api_version = kind.api_version();
    if body["apiVersion"] != api_version.as_str() || body["kind"] != kind.kind.as_str() {
        return Err(format!(
            "{what}: its body says apiVersion {} and kind {}, not {api_version} and {}",
            body["apiVersion"], body["kind"], kind.kind
        ));
    }
    if body["metadata"]["name"] != a.name.as_str() {
        return Err(format!(
            "{what}: its body's metadata.name is {}",
            body["metadata"]["name"]
        ));
    }
    if let Some(ns) = body["metadata"]["namespace"].as_str()
        && ns != namespace
    {
        return Err(format!(
            "{what}: it is in namespace {ns:?}; a guest writes only in its parent's namespace {namespace:?}"
        ));
    }
    if body["metadata"].get("ownerReferences").is_some() {
        return Err(format!(
            "{what}: it sets metadata.ownerReferences; the host makes the parent its controller"
        ));
    }
    Ok(Change::Apply {
        kind,
        name: a.name,
        body,
    })
}

/// A generated Secret checked: at least one key, each a Secret key with a
/// bounded length.
fn checked_generate(g: wit::GenerateSecret) -> Result<Change, String> {
    let what = format!("generated Secret {}", g.name);
    if g.keys.is_empty() {
        return Err(format!("{what}: it names no key"));
    }
    for (key, length) in &g.keys {
        if !is_key(key) {
            return Err(format!("{what}: {key:?} is not a Secret key"));
        }
        if *length == 0 || *length > MAX_GENERATED_BYTES {
            return Err(format!(
                "{what}: key {key} asks for {length} bytes; 1 to {MAX_GENERATED_BYTES}"
            ));
        }
    }
    Ok(Change::Generate {
        name: g.name,
        keys: g.keys,
    })
}

/// A serving certificate checked: 1 to [`MAX_DNS_NAMES`] DNS names.
fn checked_certificate(c: wit::ServingCertificate) -> Result<Change, String> {
    let what = format!("serving certificate Secret {}", c.name);
    if c.dns_names.is_empty() || c.dns_names.len() > MAX_DNS_NAMES {
        return Err(format!(
            "{what}: it names {} DNS names; 1 to {MAX_DNS_NAMES}",
            c.dns_names.len()
        ));
    }
    if let Some(bad) = c.dns_names.iter().find(|n| !is_dns_name(n)) {
        return Err(format!("{what}: {bad:?} is not a DNS name"));
    }
    Ok(Change::Certificate {
        name: c.name,
        dns_names: c.dns_names,
    })
}

/// A CA bundle checked: a ConfigMap key and a bounded list of Secret keys.
fn checked_bundle(b: wit::CaBundle) -> Result<Change, String> {
    let what = format!("CA bundle ConfigMap {}", b.name);
    if !is_key(&b.key) {
        return Err(format!("{what}: {:?} is not a ConfigMap key", b.key));
    }
    if b.sources.len() > MAX_BUNDLE_SOURCES {
        return Err(format!(
            "{what}: {} sources, more than {MAX_BUNDLE_SOURCES}",
            b.sources.len()
        ));
    }
    if let Some((secret, key)) = b
        .sources
        .iter()
        .find(|(s, k)| !is_dns_name(s) || s.starts_with('*') || !is_key(k))
    {
        return Err(format!(
            "{what}: source {secret:?} key {key:?} does not name a Secret key"
        ));
    }
    Ok(Change::Bundle {
        name: b.name,
        key: b.key,
        sources: b.sources,
        labels: b.labels,
    })
}

fn kind_event(e: wit::KindEvent) -> KindEvent {
    KindEvent {
        type_: match e.type_ {
            wit::EventType::Normal => EventType::Normal,
            wit::EventType::Warning => EventType::Warning,
        },
        reason: e.reason,
        message: e.message,
    }
}

/// A verdict in the host's model. Fails when the status fields are not a
/// JSON object: that is a malformed verdict.
pub fn verdict(v: wit::Verdict) -> Result<Verdict, String> {
    let status_fields = if v.status_fields.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_json::from_str(&v.status_fields) {
            Ok(serde_json::Value::Object(m)) => m,
            Ok(other) => {
                return Err(format!(
                    "status-fields must be a JSON object, got {}",
                    kind_of_json(&other)
                ));
            }
            Err(e) => return Err(format!("status-fields is not JSON: {e}")),
        }
    };
    Ok(Verdict {
        aspects: v.aspects.into_iter().map(decision).collect(),
        advisory: v.advisory.into_iter().map(decision).collect(),
        stall: v.stall.map(|s| Stall {
            reason: s.reason,
            message: s.message,
        }),
        status_fields,
        events: v.events.into_iter().map(kind_event).collect(),
        requeue_after_seconds: v.requeue_after_seconds,
    })
}

fn decision(c: wit::Condition) -> Decision {
    Decision {
        type_: c.type_,
        status: match c.status {
            wit_types::ConditionStatus::True => ConditionStatus::True,
            wit_types::ConditionStatus::False => ConditionStatus::False,
            wit_types::ConditionStatus::Unknown => ConditionStatus::Unknown,
        },
        reason: c.reason,
        message: c.message,
    }
}

/// A key of a Secret's or ConfigMap's data.
fn is_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
}

/// A DNS name a certificate may carry: lowercase DNS-1123 labels joined by
/// dots, at most 253 characters; the first label may be `*`.
fn is_dns_name(name: &str) -> bool {
    name.len() <= 253
        && !name.is_empty()
        && name.split('.').enumerate().all(|(i, label)| {
            (i == 0 && label == "*")
                || (!label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-'))
        })
}

fn kind_of_json(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::types as t;

    fn spec(writes: &[&str]) -> KindSpec {
        KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["Ready2".into()],
            writes: writes
                .iter()
                .map(|k| model::KindRef {
                    group: String::new(),
                    version: "v1".into(),
                    kind: (*k).into(),
                })
                .collect(),
            ..KindSpec::default()
        }
    }

    fn config_map() -> t::KindRef {
        t::KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        }
    }

    fn apply(body: serde_json::Value) -> wit::Change {
        wit::Change::Apply(wit::ApplyObject {
            kind: config_map(),
            name: "c".into(),
            body: body.to_string(),
        })
    }

    fn refused(changes: Vec<wit::Change>, writes: &[&str]) -> String {
        super::changes(changes, &spec(writes), "ns").expect_err("refused")
    }

    #[test]
    fn a_change_must_be_what_the_kind_declares_and_name_itself() {
        let body =
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(super::changes(vec![apply(body.clone())], &spec(&["ConfigMap"]), "ns").is_ok());
        assert!(refused(vec![apply(body.clone())], &[]).contains("do not declare"));
        assert!(
            refused(vec![apply(serde_json::json!([1]))], &["ConfigMap"])
                .contains("must be a JSON object")
        );
        let other = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "elsewhere"}});
        assert!(refused(vec![apply(other)], &["ConfigMap"]).contains("parent's namespace"));
        let owned = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "ownerReferences": []}});
        assert!(refused(vec![apply(owned)], &["ConfigMap"]).contains("ownerReferences"));
        let misnamed =
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}});
        assert!(refused(vec![apply(misnamed)], &["ConfigMap"]).contains("metadata.name"));
        assert!(refused(vec![apply(body.clone()), apply(body)], &["ConfigMap"]).contains("twice"));
        let huge = "x".repeat(MAX_BODY_BYTES + 1);
        let oversized = wit::Change::Apply(wit::ApplyObject {
            kind: config_map(),
            name: "c".into(),
            body: huge,
        });
        assert!(refused(vec![oversized], &["ConfigMap"]).contains("bytes, more than"));
    }

    fn withdraw(group: &str, kind: &str, reason: &str) -> wit::Change {
        wit::Change::Withdraw(wit::Withdrawal {
            object: wit::DeleteObject {
                kind: t::KindRef {
                    group: group.into(),
                    version: "v1".into(),
                    kind: kind.into(),
                },
                name: "w".into(),
                uid: "u-1".into(),
            },
            event: Some(wit::KindEvent {
                type_: wit::EventType::Normal,
                reason: reason.into(),
                message: "taken away".into(),
            }),
        })
    }

    fn writing(kinds: &[(&str, &str)]) -> KindSpec {
        KindSpec {
            writes: kinds
                .iter()
                .map(|(g, k)| model::KindRef {
                    group: (*g).into(),
                    version: "v1".into(),
                    kind: (*k).into(),
                })
                .collect(),
            reasons: vec![model::ReasonEntry {
                name: "AccessWithdrawn".into(),
                owner: "widget".into(),
                meaning: "Event: a grant taken away.".into(),
            }],
            ..spec(&[])
        }
    }

    #[test]
    fn a_withdrawal_is_a_deletion_that_takes_access_or_exposure_away() {
        let rbac = "rbac.authorization.k8s.io";
        let spec = writing(&[
            (rbac, "RoleBinding"),
            ("networking.k8s.io", "NetworkPolicy"),
        ]);
        let (changes, withdrawals) = super::changes(
            vec![withdraw(rbac, "RoleBinding", "AccessWithdrawn")],
            &spec,
            "ns",
        )
        .expect("a RoleBinding's deletion is a withdrawal");
        assert!(changes.is_empty());
        assert_eq!(withdrawals.len(), 1);
        assert_eq!(
            withdrawals[0].deletion(),
            Change::Delete {
                kind: spec.writes[0].clone(),
                name: "w".into(),
                uid: "u-1".into()
            }
        );
        // A NetworkPolicy's going widens what Pods reach: refused, named.
        let widening = super::changes(
            vec![withdraw(
                "networking.k8s.io",
                "NetworkPolicy",
                "AccessWithdrawn",
            )],
            &spec,
            "ns",
        )
        .expect_err("not a withdrawal");
        assert!(
            widening.starts_with("withdrawal of NetworkPolicy w (uid u-1): only a deletion that takes access or exposure away"),
            "{widening}"
        );
        let unregistered = super::changes(vec![withdraw(rbac, "RoleBinding", "Gone")], &spec, "ns")
            .expect_err("an Event reason the kind does not register");
        assert!(unregistered.contains("\"Gone\" is not in the kind's registry"));
        let undeclared = super::changes(
            vec![withdraw(rbac, "RoleBinding", "AccessWithdrawn")],
            &writing(&[]),
            "ns",
        )
        .expect_err("a kind the guest does not write");
        assert!(undeclared.contains("do not declare"), "{undeclared}");
    }

    #[test]
    fn a_generated_secret_names_keys_and_bounded_lengths() {
        let generate = |keys: Vec<(&str, u32)>| {
            wit::Change::Generate(wit::GenerateSecret {
                name: "s".into(),
                keys: keys.into_iter().map(|(k, n)| (k.to_owned(), n)).collect(),
            })
        };
        let ok = super::changes(
            vec![generate(vec![("password", 32)])],
            &spec(&["Secret"]),
            "ns",
        )
        .map(|(changes, _)| changes);
        assert_eq!(
            ok,
            Ok(vec![Change::Generate {
                name: "s".into(),
                keys: vec![("password".into(), 32)]
            }])
        );
        assert!(refused(vec![generate(vec![("password", 32)])], &[]).contains("do not declare"));
        assert!(refused(vec![generate(vec![])], &["Secret"]).contains("names no key"));
        assert!(
            refused(vec![generate(vec![("a/b", 8)])], &["Secret"]).contains("not a Secret key")
        );
        assert!(refused(vec![generate(vec![("k", 0)])], &["Secret"]).contains("1 to 4096"));
        assert!(refused(vec![generate(vec![("k", 5000)])], &["Secret"]).contains("1 to 4096"));
    }

    #[test]
    fn a_ca_bundle_names_a_configmap_key_and_secret_keys() {
        let bundle = |key: &str, sources: &[(&str, &str)]| {
            wit::Change::Bundle(wit::CaBundle {
                name: "c-instance-ca".into(),
                key: key.into(),
                sources: sources
                    .iter()
                    .map(|(s, k)| ((*s).to_owned(), (*k).to_owned()))
                    .collect(),
                labels: vec![("app".into(), "c".into())],
            })
        };
        let ok = super::changes(
            vec![bundle("ca.crt", &[("pg-ca", "ca.crt")])],
            &spec(&["ConfigMap"]),
            "ns",
        )
        .map(|(changes, _)| changes);
        assert_eq!(
            ok,
            Ok(vec![Change::Bundle {
                name: "c-instance-ca".into(),
                key: "ca.crt".into(),
                sources: vec![("pg-ca".into(), "ca.crt".into())],
                labels: vec![("app".into(), "c".into())],
            }])
        );
        assert!(refused(vec![bundle("ca.crt", &[])], &["Secret"]).contains("do not declare"));
        assert!(refused(vec![bundle("a/b", &[])], &["ConfigMap"]).contains("not a ConfigMap key"));
        assert!(
            refused(vec![bundle("k", &[("Bad_Name", "ca.crt")])], &["ConfigMap"])
                .contains("does not name a Secret key")
        );
    }

    #[test]
    fn a_serving_certificate_names_bounded_dns_names() {
        let certificate = |names: &[&str]| {
            wit::Change::Certificate(wit::ServingCertificate {
                name: "tls".into(),
                dns_names: names.iter().map(|n| (*n).to_owned()).collect(),
            })
        };
        let names = ["a-svc.ns.svc", "*.example.com"];
        assert_eq!(
            super::changes(vec![certificate(&names)], &spec(&["Secret"]), "ns")
                .map(|(changes, _)| changes),
            Ok(vec![Change::Certificate {
                name: "tls".into(),
                dns_names: names.iter().map(|n| (*n).to_owned()).collect()
            }])
        );
        assert!(refused(vec![certificate(&names)], &[]).contains("do not declare"));
        assert!(refused(vec![certificate(&[])], &["Secret"]).contains("1 to 100"));
        for bad in ["Upper.example", "a..b", "-a.b", "a.*.b", ""] {
            assert!(
                refused(vec![certificate(&[bad])], &["Secret"]).contains("is not a DNS name"),
                "{bad}"
            );
        }
    }
}
