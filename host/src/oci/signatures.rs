//! Cosign signatures on a module, checked against its kind's rule in the
//! verification policy before the module is downloaded or compiled. Read
//! where cosign stores them: the tag `sha256-<hex>.sig` in the module's
//! repository (a manifest whose `simplesigning` layers each hold a payload
//! naming the signed digest, the signature over that payload in the
//! layer's annotation, and for a keyless signer the certificate beside it),
//! and Sigstore bundles among the module's referrers (cosign 3's default,
//! [`bundles`]); and checked offline: no transparency log or certificate
//! authority is asked.

use base64::Engine;
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;
use x509_parser::error::X509Error;

use super::bounded::{self, BoundedReadError, Oversized};
use super::bundles;
use super::certificates::{Certified, SignerCertificateError};
use super::policy::{By, Rule, Signer};
use super::transparency::{BUNDLE, TransparencyError};

/// The media type of a cosign signature layer (its payload).
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the signature over the payload, base64.
pub const SIGNATURE: &str = "dev.cosignproject.cosign/signature";
/// The layer annotations holding a keyless signer's certificate and the
/// chain to its root, PEM.
pub const CERTIFICATE: &str = "dev.sigstore.cosign/certificate";
pub const CHAIN: &str = "dev.sigstore.cosign/chain";
/// The `critical.type` of a payload signing an image.
const SIGNATURE_TYPE: &str = "cosign container image signature";

/// Why a module's signatures do not satisfy its rule. Only `Unreadable`
/// is worth retrying (the registry unreachable or failing). The others
/// are not: the module is unsigned, or signed by none its rule trusts
/// (`Unsigned`, `ForAnotherDigest`, `MissingAllOf`, `NoneOfAnyOf`), a
/// signature is larger than one may be (`TooLarge`), or the reference
/// checked was not pinned (`NotPinned`, the caller's mistake).
#[derive(Debug, thiserror::Error)]
pub enum Unverified {
    /// Nothing signed it (no signature cosign would store for it).
    #[error(
        "it carries no cosign signature (none under the tag sha256-<digest>.sig, none in a Sigstore bundle among its referrers)"
    )]
    Unsigned,
    /// Signatures are stored under its tag, but each signs another digest
    /// (copied from another module's tag): none is a signature of it.
    #[error(
        "the cosign signature(s) under its tag {tag} were made for another digest ({}), not its own: none signs it",
        digests.join(", ")
    )]
    ForAnotherDigest { tag: String, digests: Vec<String> },
    /// Signers of `allOf` that signed nothing.
    #[error("not signed by {} (of allOf; {checked} signature(s) checked){}", keys.join(", "), Refused(refused))]
    MissingAllOf {
        keys: Vec<String>,
        checked: usize,
        /// Why keyless signatures' certificates were not taken.
        refused: Vec<KeylessError>,
    },
    /// No signer of `anyOf` signed it.
    #[error("signed by none of {} (anyOf; {checked} signature(s) checked){}", keys.join(", "), Refused(refused))]
    NoneOfAnyOf {
        keys: Vec<String>,
        checked: usize,
        refused: Vec<KeylessError>,
    },
    /// The signatures could not be read from the registry: `at`, what
    /// was being read.
    #[error("its signatures could not be read from the registry: {at}: {source}")]
    Unreadable {
        at: String,
        #[source]
        source: Box<OciDistributionError>,
    },
    /// The reference checked names no digest to find signatures by.
    #[error(
        "its signatures could not be read from the registry: {reference} is not pinned to a digest"
    )]
    NotPinned { reference: String },
    /// A signature's blob, read from `at`, is larger than a signature
    /// may be.
    #[error("a signature stored for it is too large to read: {at}: {source}")]
    TooLarge {
        at: String,
        #[source]
        source: Oversized,
    },
}

/// Why a keyless signature was not taken for a signer the policy names
/// by identity. None is retryable (no log or authority is asked): its
/// log entry or certificate is malformed, or one the policy does not
/// trust; each source says which.
#[derive(Debug, thiserror::Error)]
pub enum KeylessError {
    /// Its transparency log entry.
    #[error(transparent)]
    Log(#[from] TransparencyError),
    /// Malformed: the time its log entry attests is no time a
    /// certificate can be checked at.
    #[error("its log entry's time {at}: {source}")]
    LogTime {
        at: i64,
        #[source]
        source: X509Error,
    },
    /// Its certificate.
    #[error(transparent)]
    Certificate(#[from] SignerCertificateError),
}

/// The certificates not taken, as a message ends: `; ...: why`.
struct Refused<'a>(&'a [KeylessError]);

impl std::fmt::Display for Refused<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some((first, rest)) = self.0.split_first() else {
            return Ok(());
        };
        write!(f, "; a keyless signature not taken: {first}")?;
        rest.iter().try_for_each(|why| write!(f, "; {why}"))
    }
}

/// A signature payload, as far as it is checked: what it signs.
#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    digest: String,
}

/// A signature over a payload that signs the module's digest.
struct Signed {
    payload: Vec<u8>,
    signature: Vec<u8>,
    /// The certificate beside it, if any: (PEM, chain PEM).
    certificate: Option<(String, Option<String>)>,
    /// Its transparency log entry (cosign's Rekor bundle), if any.
    bundle: Option<String>,
}

impl Signed {
    /// Whether `signer` made this signature; an error says why a
    /// certificate it carries was not taken for the signer's identity.
    fn by(&self, signer: &Signer) -> Result<bool, KeylessError> {
        match &signer.by {
            By::Key(key) => Ok(key.verifies(&self.payload, &self.signature)),
            By::Identity { identity, roots } => {
                let Some((certificate, chain)) = &self.certificate else {
                    return Ok(false);
                };
                // When it was signed: as a log the policy gives attests,
                // else now.
                let at = match (&roots.logs, &self.bundle) {
                    (Some(logs), Some(bundle)) => {
                        let at =
                            logs.signed_at(bundle, &self.payload, &self.signature, certificate)?;
                        x509_parser::time::ASN1Time::from_timestamp(at)
                            .map_err(|source| KeylessError::LogTime { at, source })?
                    }
                    _ => x509_parser::time::ASN1Time::now(),
                };
                let Certified {
                    identity: named,
                    key,
                } = roots.certify(certificate, chain.as_deref(), at)?;
                Ok(named == *identity && key.verifies(&self.payload, &self.signature))
            }
        }
    }
}

/// Reads the signatures of `pinned` (a reference by digest) with
/// `client` and checks them against `rule`. Returns the names of the keys
/// that signed.
pub async fn check(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &Reference,
    rule: &Rule,
) -> Result<Vec<String>, Unverified> {
    let (all_of, any_of) = match rule {
        Rule::Unsigned => return Ok(Vec::new()),
        Rule::Keys { all_of, any_of } => (all_of, any_of),
    };
    let (signatures, elsewhere) = read(client, auth, pinned).await?;
    if signatures.is_empty() {
        return Err(match elsewhere {
            Some(elsewhere) => Unverified::ForAnotherDigest {
                tag: elsewhere.tag,
                digests: elsewhere.digests.into_iter().collect(),
            },
            None => Unverified::Unsigned,
        });
    }
    // Each reason once, in the order of its text.
    let refused = std::cell::RefCell::new(std::collections::BTreeMap::new());
    let signed = |signer: &Signer| {
        signatures.iter().any(|s| {
            s.by(signer).unwrap_or_else(|why| {
                refused.borrow_mut().entry(why.to_string()).or_insert(why);
                false
            })
        })
    };
    let names = |keys: Vec<&Signer>| keys.into_iter().map(|k| k.name.clone()).collect();
    let missing: Vec<&Signer> = all_of.iter().filter(|k| !signed(k)).collect();
    if !missing.is_empty() {
        return Err(Unverified::MissingAllOf {
            keys: names(missing),
            checked: signatures.len(),
            refused: refused.into_inner().into_values().collect(),
        });
    }
    let any: Vec<&Signer> = any_of.iter().filter(|k| signed(k)).collect();
    if !any_of.is_empty() && any.is_empty() {
        return Err(Unverified::NoneOfAnyOf {
            keys: names(any_of.iter().collect()),
            checked: signatures.len(),
            refused: refused.into_inner().into_values().collect(),
        });
    }
    Ok(names(all_of.iter().chain(any).collect()))
}

/// Signatures under a module's tag made for other digests.
struct Elsewhere {
    tag: String,
    digests: std::collections::BTreeSet<String>,
}

/// The signatures stored for `pinned` whose payload signs its digest
/// (a payload signing another digest is no signature of this module),
/// and the digests its tag's signatures sign instead, if any do.
async fn read(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &Reference,
) -> Result<(Vec<Signed>, Option<Elsewhere>), Unverified> {
    let (mut signed, elsewhere) = read_tagged(client, auth, pinned).await?;
    let bundled = bundles::read(client, auth, pinned).await?;
    signed.extend(bundled.into_iter().map(|b| Signed {
        payload: b.message,
        signature: b.signature,
        certificate: b.certificate,
        bundle: None,
    }));
    Ok((signed, elsewhere))
}

/// The signatures stored under cosign's tag `sha256-<hex>.sig` whose
/// payload signs `pinned`'s digest, and the other digests its payloads
/// sign, if any.
async fn read_tagged(
    client: &Client,
    auth: &RegistryAuth,
    pinned: &Reference,
) -> Result<(Vec<Signed>, Option<Elsewhere>), Unverified> {
    let Some(digest) = pinned.digest() else {
        return Err(Unverified::NotPinned {
            reference: pinned.to_string(),
        });
    };
    let tag = Reference::with_tag(
        pinned.registry().to_owned(),
        pinned.repository().to_owned(),
        format!("{}.sig", digest.replace(':', "-")),
    );
    let unreadable = |e| Unverified::Unreadable {
        at: tag.to_string(),
        source: Box::new(e),
    };
    let manifest = match client.pull_image_manifest(&tag, auth).await {
        Ok((manifest, _)) => manifest,
        Err(e) if not_found(&e) => return Ok((Vec::new(), None)),
        Err(e) => return Err(unreadable(e)),
    };
    let mut signed = Vec::new();
    let mut digests = std::collections::BTreeSet::new();
    for layer in &manifest.layers {
        let Some(signature) = signature_of(layer) else {
            continue;
        };
        let annotation = |key| {
            layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .filter(|v| !v.is_empty())
                .cloned()
        };
        let certificate = annotation(CERTIFICATE).map(|c| (c, annotation(CHAIN)));
        let bundle = annotation(BUNDLE);
        let payload = bounded::read_signature(client, &tag, layer)
            .await
            .map_err(|cut| unread(&tag, cut))?;
        let signs = serde_json::from_slice::<Payload>(&payload)
            .ok()
            .filter(|p| p.critical.kind == SIGNATURE_TYPE)
            .map(|p| p.critical.image.digest);
        match signs {
            Some(signs) if signs == digest => signed.push(Signed {
                payload,
                signature,
                certificate,
                bundle,
            }),
            Some(other) => {
                digests.insert(other);
            }
            None => {}
        }
    }
    let elsewhere = (!digests.is_empty()).then(|| Elsewhere {
        tag: tag.tag().unwrap_or_default().to_owned(),
        digests,
    });
    Ok((signed, elsewhere))
}

/// Why a signature's blob read from `reference` was not taken.
pub(super) fn unread(reference: &Reference, error: BoundedReadError) -> Unverified {
    let at = reference.to_string();
    match error {
        BoundedReadError::Registry { source } => Unverified::Unreadable {
            at,
            source: Box::new(source),
        },
        BoundedReadError::Oversized(source) => Unverified::TooLarge { at, source },
    }
}

/// The signature a cosign layer carries, if it is one.
fn signature_of(layer: &OciDescriptor) -> Option<Vec<u8>> {
    if layer.media_type != SIMPLE_SIGNING {
        return None;
    }
    let encoded = layer.annotations.as_ref()?.get(SIGNATURE)?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
}

/// Whether the registry said there is no such manifest.
fn not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code: 404, .. } => true,
        OciDistributionError::RegistryError { envelope, .. } => {
            !envelope.errors.is_empty()
                && envelope.errors.iter().all(|e| {
                    matches!(
                        e.code,
                        OciErrorCode::ManifestUnknown
                            | OciErrorCode::NameUnknown
                            | OciErrorCode::NotFound
                    )
                })
        }
        _ => false,
    }
}
