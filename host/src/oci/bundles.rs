//! Signatures in Sigstore's bundle format (cosign 3's default,
//! `--new-bundle-format`): found among the module's OCI referrers (the
//! referrers API, or the tag schema a registry without it keeps), each a
//! DSSE envelope whose in-toto statement names the module's digest. What
//! its signature covers is the envelope's pre-authentication encoding.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;

use super::bounded;
use super::signatures::{Unverified, unread};

/// What a bundle layer's media type starts with (`...v0.3+json`).
const BUNDLE: &str = "application/vnd.dev.sigstore.bundle";
/// The envelope's payload type: an in-toto statement.
const STATEMENT: &str = "application/vnd.in-toto+json";
/// The predicate of cosign's signature statement.
const SIGNS: &str = "https://sigstore.dev/cosign/sign/v1";

/// One signature a bundle holds over the module.
pub struct Enveloped {
    /// What the signature covers: the envelope's PAE.
    pub message: Vec<u8>,
    pub signature: Vec<u8>,
    /// The signer's certificate and the chain after it (PEM), if the
    /// bundle carries one.
    pub certificate: Option<(String, Option<String>)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    verification_material: Material,
    dsse_envelope: Option<Envelope>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    certificate: Option<Raw>,
    x509_certificate_chain: Option<Chain>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct Chain {
    certificates: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    payload: String,
    payload_type: String,
    signatures: Vec<Signature>,
}

#[derive(Deserialize)]
struct Signature {
    sig: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Statement {
    subject: Vec<Subject>,
    predicate_type: String,
}

#[derive(Deserialize)]
struct Subject {
    digest: BTreeMap<String, String>,
}

/// The signatures over `pinned` (a reference by digest) its referrers'
/// bundles hold; a bundle about another digest, or not cosign's signing
/// statement, holds none. An error says what could not be read.
pub async fn read(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &Reference,
) -> Result<Vec<Enveloped>, Unverified> {
    let unreadable = |at: String, source| Unverified::Unreadable {
        at,
        source: Box::new(source),
    };
    let Some(digest) = pinned.digest() else {
        return Ok(Vec::new());
    };
    let referrers = client
        .pull_referrers(pinned, None)
        .await
        .map_err(|e| unreadable("its referrers".to_owned(), e))?;
    let mut found = Vec::new();
    for entry in &referrers.manifests {
        let reference = Reference::with_digest(
            pinned.registry().to_owned(),
            pinned.repository().to_owned(),
            entry.digest.clone(),
        );
        let (manifest, _) = client
            .pull_image_manifest(&reference, auth)
            .await
            .map_err(|e| unreadable(reference.to_string(), e))?;
        for layer in manifest
            .layers
            .iter()
            .filter(|l| l.media_type.starts_with(BUNDLE))
        {
            let bytes = bounded::read_signature(client, &reference, layer)
                .await
                .map_err(|cut| unread(&reference, cut))?;
            found.extend(signatures(&bytes, digest));
        }
    }
    Ok(found)
}

/// The signatures a bundle holds over the module `digest` signs.
fn signatures(bundle: &[u8], digest: &str) -> Vec<Enveloped> {
    let Ok(bundle) = serde_json::from_slice::<Bundle>(bundle) else {
        return Vec::new();
    };
    let Some(envelope) = bundle.dsse_envelope else {
        return Vec::new();
    };
    let Ok(payload) = STANDARD.decode(&envelope.payload) else {
        return Vec::new();
    };
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    let signs_this = envelope.payload_type == STATEMENT
        && serde_json::from_slice::<Statement>(&payload).is_ok_and(|s| {
            s.predicate_type == SIGNS
                && s.subject
                    .iter()
                    .any(|x| x.digest.get("sha256").map(String::as_str) == Some(hex))
        });
    if !signs_this {
        return Vec::new();
    }
    let material = bundle.verification_material;
    let ders: Vec<Vec<u8>> = match (material.certificate, material.x509_certificate_chain) {
        (Some(c), _) => vec![c],
        (None, Some(chain)) => chain.certificates,
        (None, None) => Vec::new(),
    }
    .iter()
    .filter_map(|c| STANDARD.decode(&c.raw_bytes).ok())
    .collect();
    let certificate = ders.split_first().map(|(leaf, chain)| {
        let chain: String = chain.iter().map(|c| pem_of(c)).collect();
        (pem_of(leaf), (!chain.is_empty()).then_some(chain))
    });
    let message = pae(&envelope.payload_type, &payload);
    envelope
        .signatures
        .iter()
        .filter_map(|s| STANDARD.decode(&s.sig).ok())
        .map(|signature| Enveloped {
            message: message.clone(),
            signature,
            certificate: certificate.clone(),
        })
        .collect()
}

/// A DER certificate as PEM (how a signature's certificate is read).
fn pem_of(der: &[u8]) -> String {
    let base64 = STANDARD.encode(der);
    let lines: Vec<&str> = base64
        .as_bytes()
        .chunks(64)
        .filter_map(|line| std::str::from_utf8(line).ok())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

/// DSSE's pre-authentication encoding of a payload.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut message = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    message.extend_from_slice(payload);
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(subject: &str, predicate: &str) -> Vec<u8> {
        let statement = serde_json::json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"digest": {"sha256": subject}}],
            "predicateType": predicate,
        })
        .to_string();
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {"publicKey": {"hint": "x"}},
            "dsseEnvelope": {
                "payload": STANDARD.encode(&statement),
                "payloadType": STATEMENT,
                "signatures": [{"sig": STANDARD.encode(b"sig")}],
            },
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_bundle_signs_the_digest_its_statement_names_over_the_envelopes_encoding() {
        let found = signatures(&bundle("ab12", SIGNS), "sha256:ab12");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].signature, b"sig");
        let message = String::from_utf8(found[0].message.clone()).unwrap();
        assert!(
            message.starts_with("DSSEv1 28 application/vnd.in-toto+json "),
            "{message}"
        );
        assert!(found[0].certificate.is_none());
        assert!(signatures(&bundle("ff00", SIGNS), "sha256:ab12").is_empty());
        assert!(
            signatures(
                &bundle("ab12", "https://slsa.dev/provenance/v1"),
                "sha256:ab12"
            )
            .is_empty()
        );
        assert!(signatures(b"not json", "sha256:ab12").is_empty());
    }
}
