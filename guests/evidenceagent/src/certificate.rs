//! ServingCertificateReady: the OpenShift service CA issued the serving certificate and injected its CA bundle; CertificateIssued once per certificate.

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{Evaluation, EventType, Facts, SecretFact, VerdictBuilder, read};
use serde_json::{Value, json};

use crate::children::{CA_BUNDLE_KEY, Children, EXPIRY_ANNOTATION, TLS_KEYS};
use crate::registry::{CERTIFICATE_ISSUED, SERVICE_CA_PENDING, SERVING_CERTIFICATE_READY};

/// `.status.servingCertificate`: the certificate last seen issued
/// (`secretName`, `uid`, and `expiry` when the service CA annotated it).
pub const STATUS_FIELD: &str = "servingCertificate";

/// Decides ServingCertificateReady, records the issued certificate in the
/// status and reports a new one with CertificateIssued.
pub fn evaluate(
    input: &Evaluation,
    facts: &dyn Facts,
    namespace: &str,
    children: &Children,
    verdict: &mut VerdictBuilder,
) {
    let secret_name = &children.serving_secret;
    let secret = match facts.secret(namespace, secret_name) {
        Ok(secret) => secret,
        Err(error) => {
            let message = read::failure(&format!("Secret {secret_name}"), &error);
            verdict
                .aspect(unknown(SERVING_CERTIFICATE_READY, RECONCILING, message))
                .requeue_after(read::RETRY_SECONDS);
            return;
        }
    };
    let issued = secret
        .as_ref()
        .filter(|s| TLS_KEYS.iter().all(|k| has_key(s, k)));
    if let Some(secret) = issued {
        record(input, secret, verdict);
    }
    let bundle = match facts.config_map(namespace, &children.ca_bundle) {
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
    let condition = match (secret.as_ref(), issued, injected) {
        (None, _, _) => fails(
            SERVING_CERTIFICATE_READY,
            SERVICE_CA_PENDING,
            format!("the OpenShift service CA has not issued Secret {secret_name} yet"),
        ),
        (Some(secret), None, _) => fails(
            SERVING_CERTIFICATE_READY,
            SERVICE_CA_PENDING,
            format!(
                "the OpenShift service CA has not issued the certificate yet: Secret {secret_name} lacks {}",
                missing_keys(secret).join(" and ")
            ),
        ),
        (_, Some(_), false) => fails(
            SERVING_CERTIFICATE_READY,
            SERVICE_CA_PENDING,
            format!(
                "the OpenShift service CA has not injected its CA bundle into ConfigMap {} (key {CA_BUNDLE_KEY}) yet",
                children.ca_bundle
            ),
        ),
        (_, Some(secret), true) => ok(
            SERVING_CERTIFICATE_READY,
            format!(
                "Secret {secret_name} holds the serving certificate{}; ConfigMap {} holds the service CA bundle",
                expiry(secret)
                    .map(|e| format!(" (expires {e})"))
                    .unwrap_or_default(),
                children.ca_bundle
            ),
        ),
    };
    verdict.aspect(condition);
}

/// Writes the issued certificate into the status, with a CertificateIssued
/// Event when it is not the one the status already records.
fn record(input: &Evaluation, secret: &SecretFact, verdict: &mut VerdictBuilder) {
    let expiry = expiry(secret);
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
                "the OpenShift service CA {what} the serving certificate in Secret {}{}",
                secret.meta.name,
                expiry
                    .map(|e| format!(", valid until {e}"))
                    .unwrap_or_default()
            ),
        );
    }
    verdict.field(STATUS_FIELD, seen);
}

fn has_key(secret: &SecretFact, key: &str) -> bool {
    secret.keys.iter().any(|k| k == key)
}

fn missing_keys(secret: &SecretFact) -> Vec<&'static str> {
    TLS_KEYS
        .into_iter()
        .filter(|k| !has_key(secret, k))
        .collect()
}

fn expiry(secret: &SecretFact) -> Option<&str> {
    secret
        .meta
        .annotations
        .iter()
        .find(|(k, _)| k == EXPIRY_ANNOTATION)
        .map(|(_, v)| v.as_str())
}
