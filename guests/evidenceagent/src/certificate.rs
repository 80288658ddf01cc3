//! ServingCertificateReady: the issuer (the operator, or the OpenShift service CA and its CA bundle) issued the serving certificate; CertificateIssued once per certificate.

use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{Evaluation, EventType, Facts, SecretFact, VerdictBuilder, read};
use serde_json::{Value, json};

use crate::children::{CA_BUNDLE_KEY, Children, TLS_KEYS};
use crate::issuer::{Issuer, OPERATOR_EXPIRY_ANNOTATION};
use crate::registry::{CERTIFICATE_ISSUED, SERVICE_CA_PENDING, SERVING_CERTIFICATE_READY};

/// `.status.servingCertificate`: the certificate last seen issued
/// (`secretName`, `uid`, and `expiry` when the issuer annotated it).
pub const STATUS_FIELD: &str = "servingCertificate";

/// Decides ServingCertificateReady for `issuer`, records the issued
/// certificate in the status and reports a new one with CertificateIssued.
pub fn evaluate(
    input: &Evaluation,
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
    issuer: Issuer,
    verdict: &mut VerdictBuilder,
) {
    let secret_name = &children.serving_secret;
    let secret = match facts.secret(agent.namespace, secret_name) {
        Ok(secret) => secret,
        Err(error) => {
            let message = read::failure(&format!("Secret {secret_name}"), &error);
            verdict
                .aspect(unknown(SERVING_CERTIFICATE_READY, RECONCILING, message))
                .requeue_after(read::RETRY_SECONDS);
            return;
        }
    };
    match issuer {
        Issuer::Operator => by_operator(input, secret.as_ref(), secret_name, verdict),
        Issuer::ServiceCa => by_service_ca(input, facts, agent, children, secret.as_ref(), verdict),
    }
}

/// The operator's certificate: the Secret holds the TLS keys and the
/// host's expiry annotation; until then the host is issuing it (the pass
/// asks for it), which is Unknown, not a failure.
fn by_operator(
    input: &Evaluation,
    secret: Option<&SecretFact>,
    secret_name: &str,
    verdict: &mut VerdictBuilder,
) {
    let issuer = Issuer::Operator;
    let issued = secret.and_then(|s| {
        expiry(s, issuer)
            .filter(|_| missing_keys(s).is_empty())
            .map(|expiry| (s, expiry))
    });
    let condition = match (secret, issued) {
        (_, Some((secret, expiry))) => {
            record(input, secret, issuer, verdict);
            ok(
                SERVING_CERTIFICATE_READY,
                format!(
                    "Secret {secret_name} holds the serving certificate signed by the operator's CA (expires {expiry})"
                ),
            )
        }
        (None, None) => unknown(
            SERVING_CERTIFICATE_READY,
            RECONCILING,
            format!("the operator is issuing the serving certificate in Secret {secret_name}"),
        ),
        (Some(secret), None) => {
            let missing = missing_keys(secret);
            let found = if missing.is_empty() {
                format!("the certificate there has no {OPERATOR_EXPIRY_ANNOTATION} annotation")
            } else {
                format!("the Secret lacks {}", missing.join(" and "))
            };
            unknown(
                SERVING_CERTIFICATE_READY,
                RECONCILING,
                format!(
                    "the operator is issuing the serving certificate in Secret {secret_name}: {found}"
                ),
            )
        }
    };
    verdict.aspect(condition);
}

/// The service CA's certificate and CA bundle. A Secret the agent controls
/// is the operator's, from the other mode: not the service CA's.
fn by_service_ca(
    input: &Evaluation,
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
    secret: Option<&SecretFact>,
    verdict: &mut VerdictBuilder,
) {
    let issuer = Issuer::ServiceCa;
    let secret_name = &children.serving_secret;
    let operators = secret.is_some_and(|s| {
        s.meta
            .controller
            .as_ref()
            .is_some_and(|c| c.uid == agent.uid)
    });
    let issued = secret.filter(|s| !operators && missing_keys(s).is_empty());
    if let Some(secret) = issued {
        record(input, secret, issuer, verdict);
    }
    let bundle = match facts.config_map(agent.namespace, &children.ca_bundle) {
        Ok(bundle) => bundle,
        Err(error) => {
            let message = read::failure(&format!("ConfigMap {}", children.ca_bundle), &error);
            verdict
                .aspect(unknown(SERVING_CERTIFICATE_READY, RECONCILING, message))
                .requeue_after(read::RETRY_SECONDS);
            return;
        }
    };
    let injected = bundle.is_some_and(|b| b.keys.iter().any(|k| k == CA_BUNDLE_KEY));
    let pending = |message: String| fails(SERVING_CERTIFICATE_READY, SERVICE_CA_PENDING, message);
    let condition = match (secret, issued, injected) {
        (None, _, _) => pending(format!(
            "the OpenShift service CA has not issued Secret {secret_name} yet"
        )),
        (Some(_), None, _) if operators => pending(format!(
            "the OpenShift service CA has not issued Secret {secret_name} yet: the Secret there is the one the operator issued"
        )),
        (Some(secret), None, _) => pending(format!(
            "the OpenShift service CA has not issued the certificate yet: Secret {secret_name} lacks {}",
            missing_keys(secret).join(" and ")
        )),
        (_, Some(_), false) => pending(format!(
            "the OpenShift service CA has not injected its CA bundle into ConfigMap {} (key {CA_BUNDLE_KEY}) yet",
            children.ca_bundle
        )),
        (_, Some(secret), true) => ok(
            SERVING_CERTIFICATE_READY,
            format!(
                "Secret {secret_name} holds the serving certificate{}; ConfigMap {} holds the service CA bundle",
                expiry(secret, issuer)
                    .map(|e| format!(" (expires {e})"))
                    .unwrap_or_default(),
                children.ca_bundle
            ),
        ),
    };
    verdict.aspect(condition);
}

/// Writes the certificate `issuer` issued into the status, with a
/// CertificateIssued Event when it is not the one the status already
/// records (another Secret, or the same one with a new expiry: a renewal
/// in place).
fn record(input: &Evaluation, secret: &SecretFact, issuer: Issuer, verdict: &mut VerdictBuilder) {
    let expiry = expiry(secret, issuer);
    let mut seen = json!({"secretName": secret.meta.name, "uid": secret.meta.uid});
    if let Some(expiry) = expiry {
        seen["expiry"] = Value::from(expiry);
    }
    let parent = input.parent_json();
    let previous = &parent["status"][STATUS_FIELD];
    let same = previous["uid"] == seen["uid"] && previous["expiry"] == seen["expiry"];
    if !same {
        let what = if previous.is_null() {
            "issued"
        } else {
            "renewed"
        };
        verdict.event(
            EventType::Normal,
            CERTIFICATE_ISSUED,
            format!(
                "{} {what} the serving certificate in Secret {}{}",
                issuer.who(),
                secret.meta.name,
                expiry
                    .map(|e| format!(", valid until {e}"))
                    .unwrap_or_default()
            ),
        );
    }
    verdict.field(STATUS_FIELD, seen);
}

fn missing_keys(secret: &SecretFact) -> Vec<&'static str> {
    TLS_KEYS
        .into_iter()
        .filter(|k| !secret.keys.iter().any(|key| key == k))
        .collect()
}

fn expiry(secret: &SecretFact, issuer: Issuer) -> Option<&str> {
    secret
        .meta
        .annotations
        .iter()
        .find(|(k, _)| k == issuer.expiry_annotation())
        .map(|(_, v)| v.as_str())
}
