//! Transparency log entries a keyless signature carries (cosign's Rekor
//! bundle): the log's signed entry timestamp checked against the log keys
//! the policy gives (never fetched), the entry matched to the signature,
//! its payload and certificate; the time the log attests is when the
//! signature was made, the time its short-lived certificate must cover.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use x509_parser::error::PEMError;

use super::keys::{KeyError, PublicKey};
use crate::runtime::artifacts::digest;

/// The layer annotation holding a signature's Rekor bundle (JSON).
pub const BUNDLE: &str = "dev.sigstore.cosign/bundle";

/// Why log keys, or a signature's log entry, are not taken. None is
/// retryable (no log is asked): the keys or the entry are malformed (not
/// PEM, not JSON, not base64, not a `hashedrekord`), or an entry the
/// policy does not trust (of a log it does not give, its timestamp not
/// that log's, recording another signature).
#[derive(Debug, thiserror::Error)]
pub enum TransparencyError {
    /// Malformed: log keys that are not PEM.
    #[error("not PEM: {source}")]
    NotPem {
        #[source]
        source: PEMError,
    },
    /// Malformed: a PEM block of another label among the log keys.
    #[error("a PEM {label}, not a PUBLIC KEY")]
    NotPublicKey { label: String },
    /// Malformed: a log key that is not one a signature is checked with.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Malformed: no log key.
    #[error("holds no PEM PUBLIC KEY")]
    NoKeys,
    /// Malformed: the bundle is not cosign's.
    #[error("its log entry is not read: {source}")]
    NotRead {
        #[source]
        source: serde_json::Error,
    },
    /// Untrusted: entered in a log the policy does not give.
    #[error("its log entry is from log {log_id}, not one the policy gives")]
    UnknownLog { log_id: String },
    /// Malformed: its signed entry timestamp is not base64.
    #[error("its log entry's timestamp is not base64: {source}")]
    TimestampNotBase64 {
        #[source]
        source: base64::DecodeError,
    },
    /// Untrusted: its signed entry timestamp is not the log's signature
    /// over the entry.
    #[error("its log entry's signed timestamp is not the log's")]
    TimestampNotTheLogs,
    /// Malformed: its body is not a `hashedrekord`.
    #[error("its log entry is not a hashedrekord")]
    NotHashedRekord,
    /// Untrusted: it records another signature than the one it is beside.
    #[error("its log entry records another signature, payload or certificate")]
    AnotherSignature,
}

/// The logs whose entries are taken, by their ID (the hex SHA-256 of the
/// key's DER SubjectPublicKeyInfo, as Rekor names itself).
#[derive(Debug)]
pub struct Logs {
    logs: Vec<(String, PublicKey)>,
}

/// cosign's bundle, as far as it is checked.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Bundle {
    signed_entry_timestamp: String,
    payload: Entry,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    body: String,
    integrated_time: i64,
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

/// A `hashedrekord` entry's body, as far as it is checked.
#[derive(Deserialize)]
struct Body {
    kind: String,
    spec: Spec,
}

#[derive(Deserialize)]
struct Spec {
    data: Data,
    signature: Signature,
}

#[derive(Deserialize)]
struct Data {
    hash: Hash,
}

#[derive(Deserialize)]
struct Hash {
    algorithm: String,
    value: String,
}

#[derive(Deserialize)]
struct Signature {
    content: String,
    #[serde(rename = "publicKey")]
    public_key: Content,
}

#[derive(Deserialize)]
struct Content {
    content: String,
}

impl Logs {
    /// The logs of a PEM bundle of public keys.
    pub fn from_pem(pem: &[u8]) -> Result<Logs, TransparencyError> {
        let mut logs = Vec::new();
        for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
            let block = block.map_err(|source| TransparencyError::NotPem { source })?;
            if block.label != "PUBLIC KEY" {
                return Err(TransparencyError::NotPublicKey { label: block.label });
            }
            let key = PublicKey::from_der(&block.contents)?;
            logs.push((digest(&block.contents), key));
        }
        if logs.is_empty() {
            return Err(TransparencyError::NoKeys);
        }
        Ok(Logs { logs })
    }

    /// When (seconds since the epoch) one of these logs entered
    /// `signature` over `payload` by `certificate` (PEM), as `bundle`
    /// (cosign's annotation) attests.
    pub fn signed_at(
        &self,
        bundle: &str,
        payload: &[u8],
        signature: &[u8],
        certificate: &str,
    ) -> Result<i64, TransparencyError> {
        let bundle: Bundle =
            serde_json::from_str(bundle).map_err(|source| TransparencyError::NotRead { source })?;
        let entry = &bundle.payload;
        let (_, key) = self
            .logs
            .iter()
            .find(|(id, _)| *id == entry.log_id)
            .ok_or_else(|| TransparencyError::UnknownLog {
                log_id: entry.log_id.clone(),
            })?;
        // What the log signed: the entry as canonical JSON (keys sorted).
        let canonical = format!(
            "{{\"body\":{},\"integratedTime\":{},\"logID\":{},\"logIndex\":{}}}",
            serde_json::Value::from(entry.body.as_str()),
            entry.integrated_time,
            serde_json::Value::from(entry.log_id.as_str()),
            entry.log_index
        );
        let set = STANDARD
            .decode(&bundle.signed_entry_timestamp)
            .map_err(|source| TransparencyError::TimestampNotBase64 { source })?;
        if !key.verifies(canonical.as_bytes(), &set) {
            return Err(TransparencyError::TimestampNotTheLogs);
        }
        let body = STANDARD
            .decode(&entry.body)
            .ok()
            .and_then(|b| serde_json::from_slice::<Body>(&b).ok())
            .ok_or(TransparencyError::NotHashedRekord)?;
        let spec = &body.spec;
        let logged_certificate = STANDARD.decode(&spec.signature.public_key.content).ok();
        let matches = body.kind == "hashedrekord"
            && spec.data.hash.algorithm == "sha256"
            && spec.data.hash.value == digest(payload)
            && STANDARD.decode(&spec.signature.content).ok().as_deref() == Some(signature)
            && logged_certificate.as_deref().map(trim) == Some(trim(certificate.as_bytes()));
        if !matches {
            return Err(TransparencyError::AnotherSignature);
        }
        Ok(entry.integrated_time)
    }
}

fn trim(pem: &[u8]) -> &[u8] {
    pem.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{KeyPair, PublicKeyData, SigningKey};

    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n";

    /// A log: its key, and its ID.
    fn log() -> (KeyPair, String) {
        let key = KeyPair::generate().unwrap();
        let id = digest(&key.subject_public_key_info());
        (key, id)
    }

    fn logs(of: &[&KeyPair]) -> Logs {
        let pem: String = of.iter().map(|k| k.public_key_pem()).collect();
        Logs::from_pem(pem.as_bytes()).unwrap()
    }

    /// The bundle `log` would write for `signature` over `payload`, entered
    /// at `time`.
    fn bundle(log: &(KeyPair, String), payload: &[u8], signature: &[u8], time: i64) -> String {
        let body = serde_json::json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": digest(payload)}},
            "signature": {"content": STANDARD.encode(signature),
                          "publicKey": {"content": STANDARD.encode(CERTIFICATE)}},
        }});
        let body = STANDARD.encode(body.to_string());
        let canonical = format!(
            "{{\"body\":\"{body}\",\"integratedTime\":{time},\"logID\":\"{}\",\"logIndex\":7}}",
            log.1
        );
        serde_json::json!({
            "SignedEntryTimestamp": STANDARD.encode(log.0.sign(canonical.as_bytes()).unwrap()),
            "Payload": {"body": body, "integratedTime": time, "logIndex": 7, "logID": log.1},
        })
        .to_string()
    }

    #[test]
    fn an_entry_of_a_log_given_dates_the_signature_it_records() {
        let (ours, theirs) = (log(), log());
        let given = logs(&[&ours.0]);
        let entry = bundle(&ours, b"payload", b"signature", 1_700_000_000);
        assert_eq!(
            given
                .signed_at(&entry, b"payload", b"signature", CERTIFICATE)
                .unwrap(),
            1_700_000_000
        );
        let other = given
            .signed_at(&entry, b"payload", b"another", CERTIFICATE)
            .unwrap_err();
        assert!(
            matches!(other, TransparencyError::AnotherSignature),
            "{other:?}"
        );
        let foreign = bundle(&theirs, b"payload", b"signature", 1);
        let refused = given
            .signed_at(&foreign, b"payload", b"signature", CERTIFICATE)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "its log entry is from log {}, not one the policy gives",
                theirs.1
            )
        );
        // The time moved after the log signed it.
        let moved = entry.replace("1700000000", "1800000000");
        let refused = given
            .signed_at(&moved, b"payload", b"signature", CERTIFICATE)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "its log entry's signed timestamp is not the log's"
        );
        // Not a bundle: malformed, not untrusted.
        let refused = given
            .signed_at("{", b"payload", b"signature", CERTIFICATE)
            .unwrap_err();
        assert!(
            matches!(refused, TransparencyError::NotRead { .. }),
            "{refused:?}"
        );
    }

    #[test]
    fn log_keys_that_are_not_public_keys_are_refused() {
        assert_eq!(
            Logs::from_pem(CERTIFICATE.as_bytes())
                .unwrap_err()
                .to_string(),
            "a PEM CERTIFICATE, not a PUBLIC KEY"
        );
        assert!(matches!(
            Logs::from_pem(b"").unwrap_err(),
            TransparencyError::NoKeys
        ));
    }
}
