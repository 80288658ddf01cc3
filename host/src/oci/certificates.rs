//! Keyless signers: the certificate a cosign signature carries, chained
//! to the verification policy's trust roots (given to the host, never
//! fetched) and read for the identity it was issued to, as Fulcio writes
//! it: the subject an e-mail or URI alternative name, the OIDC issuer an
//! extension.

use std::fmt;

use x509_parser::certificate::X509Certificate;
use x509_parser::der_parser::der::parse_der_utf8string;
use x509_parser::error::{PEMError, X509Error};
use x509_parser::extensions::GeneralName;
use x509_parser::nom;
use x509_parser::prelude::FromDer;
use x509_parser::time::ASN1Time;

use super::keys::{KeyError, PublicKey};
use super::transparency::Logs;

/// Fulcio's OIDC issuer extension (a DER UTF8String), and its first
/// version (the bare string).
const ISSUER: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// At most this many certificates between a signer's and a root.
const MAX_INTERMEDIATES: usize = 4;

/// Why trust roots, or a signer's certificate, are not taken. None is
/// retryable (nothing is fetched): the certificate is malformed (not PEM,
/// not X.509, no identity or key to read from it, trust roots that are
/// not CAs), or a valid one the policy does not trust (not valid when it
/// signed, not for code signing, chained to none of its roots).
#[derive(Debug, thiserror::Error)]
pub enum SignerCertificateError {
    /// Malformed: not PEM.
    #[error("not PEM: {source}")]
    NotPem {
        #[source]
        source: PEMError,
    },
    /// Malformed: trust roots with no certificate.
    #[error("holds no PEM CERTIFICATE")]
    NoRoots,
    /// Malformed: a trust root, numbered from 1, is not X.509.
    #[error("certificate {n}: not an X.509 certificate: {source}")]
    RootNotX509 {
        n: usize,
        #[source]
        source: nom::Err<X509Error>,
    },
    /// Malformed: a trust root, numbered from 1, that is no CA.
    #[error("certificate {n} ({subject}) is not a CA (basicConstraints)")]
    RootNotCa { n: usize, subject: String },
    /// Malformed: a signature's certificate annotation without one.
    #[error("the certificate annotation holds no PEM CERTIFICATE")]
    NoCertificate,
    /// Malformed: a signature's certificate is not X.509.
    #[error("not an X.509 certificate: {source}")]
    NotX509 {
        #[source]
        source: nom::Err<X509Error>,
    },
    /// Untrusted: not valid when it signed.
    #[error("its certificate ({subject}) is not valid at {at}: valid {not_before} to {not_after}")]
    NotValidAt {
        subject: String,
        at: ASN1Time,
        not_before: ASN1Time,
        not_after: ASN1Time,
    },
    /// Untrusted: not issued for code signing.
    #[error("its certificate ({subject}) is not for code signing (extendedKeyUsage)")]
    NotCodeSigning { subject: String },
    /// Untrusted: chained to none of the policy's trust roots.
    #[error(
        "its certificate ({subject}, issued by {issuer}) does not chain to the policy's trust roots"
    )]
    Unchained { subject: String, issuer: String },
    /// Malformed: it names no identity to check.
    #[error("its certificate names no e-mail or URI (subjectAltName)")]
    NoSubject,
    /// Malformed: it names no OIDC issuer.
    #[error("its certificate names no OIDC issuer (extension {ISSUER})")]
    NoIssuer,
    /// Malformed: the key it certifies is not one a signature is
    /// checked with.
    #[error(transparent)]
    Key(#[from] KeyError),
}

/// Who a keyless signature's certificate was issued to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignerIdentity {
    /// The OIDC issuer that vouched for the subject.
    pub issuer: String,
    /// The e-mail or URI the certificate names.
    pub subject: String,
}

impl fmt::Display for SignerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (issuer {})", self.subject, self.issuer)
    }
}

/// The CA certificates keyless signatures must chain to, DER, and the
/// transparency logs whose entries say when a signature was made.
#[derive(Debug)]
pub struct TrustRoots {
    roots: Vec<Vec<u8>>,
    pub logs: Option<Logs>,
}

/// A signer's certificate, read and chained to a root.
#[derive(Debug)]
pub struct Certified {
    pub identity: SignerIdentity,
    /// The key the certificate certifies: the one that signed.
    pub key: PublicKey,
}

impl TrustRoots {
    /// The roots a PEM bundle holds: every block a CA certificate.
    pub fn from_pem(pem: &[u8]) -> Result<TrustRoots, SignerCertificateError> {
        let roots = certificates(pem)?;
        if roots.is_empty() {
            return Err(SignerCertificateError::NoRoots);
        }
        for (n, der) in (1..).zip(&roots) {
            let root = X509Certificate::from_der(der)
                .map(|(_, c)| c)
                .map_err(|source| SignerCertificateError::RootNotX509 { n, source })?;
            if !root.is_ca() {
                return Err(SignerCertificateError::RootNotCa {
                    n,
                    subject: root.subject().to_string(),
                });
            }
        }
        Ok(TrustRoots { roots, logs: None })
    }

    /// What `certificate` (PEM, as cosign stores it beside a signature)
    /// certifies, if it chains through `chain` (PEM: intermediates, maybe
    /// the root) to one of these roots, may sign code and is valid `at`:
    /// when a transparency log attests the signature was made, else now.
    pub fn certify(
        &self,
        certificate: &str,
        chain: Option<&str>,
        at: ASN1Time,
    ) -> Result<Certified, SignerCertificateError> {
        let leaf = certificates(certificate.as_bytes())?
            .into_iter()
            .next()
            .ok_or(SignerCertificateError::NoCertificate)?;
        let leaf = parse(&leaf)?;
        if !leaf.validity().is_valid_at(at) {
            return Err(SignerCertificateError::NotValidAt {
                subject: leaf.subject().to_string(),
                at,
                not_before: leaf.validity().not_before,
                not_after: leaf.validity().not_after,
            });
        }
        let code_signing = leaf
            .extended_key_usage()
            .ok()
            .flatten()
            .is_some_and(|e| e.value.code_signing);
        if !code_signing {
            return Err(SignerCertificateError::NotCodeSigning {
                subject: leaf.subject().to_string(),
            });
        }
        let chain = chain
            .map(|c| certificates(c.as_bytes()))
            .transpose()?
            .unwrap_or_default();
        let intermediates: Vec<X509Certificate<'_>> = chain
            .iter()
            .filter_map(|der| parse(der).ok())
            .filter(|c| c.is_ca() && c.validity().is_valid_at(at))
            .collect();
        let roots: Vec<X509Certificate<'_>> = self
            .roots
            .iter()
            .filter_map(|der| parse(der).ok())
            .collect();
        let signs = |issuer: &X509Certificate<'_>, child: &X509Certificate<'_>| {
            issuer.subject() == child.issuer()
                && child.verify_signature(Some(issuer.public_key())).is_ok()
        };
        let mut current = &leaf;
        for _ in 0..=MAX_INTERMEDIATES {
            if roots.iter().any(|root| signs(root, current)) {
                return Ok(Certified {
                    identity: identity(&leaf)?,
                    key: PublicKey::from_der(leaf.public_key().raw)?,
                });
            }
            match intermediates.iter().find(|i| signs(i, current)) {
                Some(next) => current = next,
                None => break,
            }
        }
        Err(SignerCertificateError::Unchained {
            subject: leaf.subject().to_string(),
            issuer: leaf.issuer().to_string(),
        })
    }
}

/// The identity a signer's certificate names.
fn identity(leaf: &X509Certificate<'_>) -> Result<SignerIdentity, SignerCertificateError> {
    let subject = leaf
        .subject_alternative_name()
        .ok()
        .flatten()
        .and_then(|san| {
            san.value.general_names.iter().find_map(|name| match name {
                GeneralName::RFC822Name(s) | GeneralName::URI(s) => Some((*s).to_owned()),
                _ => None,
            })
        })
        .ok_or(SignerCertificateError::NoSubject)?;
    let issuer = leaf
        .iter_extensions()
        .find_map(|e| match e.oid.to_id_string().as_str() {
            ISSUER => parse_der_utf8string(e.value)
                .ok()
                .and_then(|(_, s)| s.as_str().ok().map(str::to_owned)),
            ISSUER_V1 => std::str::from_utf8(e.value).ok().map(str::to_owned),
            _ => None,
        })
        .ok_or(SignerCertificateError::NoIssuer)?;
    Ok(SignerIdentity { issuer, subject })
}

/// The DER of every CERTIFICATE block of a PEM text.
fn certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, SignerCertificateError> {
    let mut found = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
        let block = block.map_err(|source| SignerCertificateError::NotPem { source })?;
        if block.label == "CERTIFICATE" {
            found.push(block.contents);
        }
    }
    Ok(found)
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, SignerCertificateError> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|source| SignerCertificateError::NotX509 { source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, SanType, SigningKey,
    };

    const GITHUB: &str = "https://token.actions.githubusercontent.com";
    const WORKFLOW: &str =
        "https://github.com/acme/guests/.github/workflows/release.yml@refs/heads/main";

    /// A CA named `name`, signed by `by` (self-signed without).
    fn ca(name: &str, by: Option<&Issuer<'_, KeyPair>>) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = match by {
            Some(issuer) => params.signed_by(&key, issuer).unwrap(),
            None => params.self_signed(&key).unwrap(),
        };
        (cert.pem(), Issuer::new(params, key))
    }

    /// A signer's certificate as Fulcio issues one: the subject an URI,
    /// the issuer in its extension, for code signing; its key's PEM.
    fn leaf(by: &Issuer<'_, KeyPair>, code_signing: bool, days: i64) -> (String, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![SanType::URI(WORKFLOW.try_into().unwrap())];
        if code_signing {
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        }
        let mut issuer = vec![0x0c, GITHUB.len() as u8];
        issuer.extend_from_slice(GITHUB.as_bytes());
        params.custom_extensions = vec![CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
            issuer,
        )];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(days);
        let cert = params.signed_by(&key, by).unwrap();
        (cert.pem(), key)
    }

    fn now() -> ASN1Time {
        ASN1Time::now()
    }

    #[test]
    fn a_certificate_chained_to_a_root_names_its_subject_and_issuer() {
        let (root_pem, root) = ca("root", None);
        let (intermediate_pem, intermediate) = ca("intermediate", Some(&root));
        let roots = TrustRoots::from_pem(root_pem.as_bytes()).unwrap();
        let want = SignerIdentity {
            issuer: GITHUB.into(),
            subject: WORKFLOW.into(),
        };
        let (direct, _) = leaf(&root, true, 1);
        assert_eq!(roots.certify(&direct, None, now()).unwrap().identity, want);
        // Through an intermediate the signature carries in its chain
        // (cosign's chain ends with the root: taken from the roots only).
        let (through, _) = leaf(&intermediate, true, 1);
        let chain = format!("{intermediate_pem}{root_pem}");
        assert_eq!(
            roots
                .certify(&through, Some(&chain), now())
                .unwrap()
                .identity,
            want
        );
        let without = roots.certify(&through, None, now()).unwrap_err();
        assert!(
            matches!(without, SignerCertificateError::Unchained { .. }),
            "{without:?}"
        );
        assert!(
            without.to_string().ends_with(
                ", issued by CN=intermediate) does not chain to the policy's trust roots"
            ),
            "{without}"
        );
    }

    #[test]
    fn a_certificate_off_the_roots_expired_or_not_for_code_signing_is_refused() {
        let (root_pem, root) = ca("root", None);
        let (other_pem, other) = ca("root", None);
        let roots = TrustRoots::from_pem(root_pem.as_bytes()).unwrap();
        // Another CA of the same name, even with itself as the chain.
        let (forged, _) = leaf(&other, true, 1);
        let refused = roots.certify(&forged, Some(&other_pem), now()).unwrap_err();
        assert!(
            matches!(refused, SignerCertificateError::Unchained { .. }),
            "{refused:?}"
        );
        let (expired, _) = leaf(&root, true, -1);
        let refused = roots.certify(&expired, None, now()).unwrap_err();
        assert!(
            matches!(refused, SignerCertificateError::NotValidAt { .. }),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("is not valid at"), "{refused}");
        let (tls, _) = leaf(&root, false, 1);
        let refused = roots.certify(&tls, None, now()).unwrap_err();
        assert!(
            matches!(refused, SignerCertificateError::NotCodeSigning { .. }),
            "{refused:?}"
        );
        assert!(
            refused
                .to_string()
                .ends_with(") is not for code signing (extendedKeyUsage)"),
            "{refused}"
        );
        // Not a certificate at all: malformed, not untrusted.
        let refused = roots.certify("hello", None, now()).unwrap_err();
        assert!(
            matches!(refused, SignerCertificateError::NoCertificate),
            "{refused:?}"
        );
    }

    #[test]
    fn the_key_certified_is_the_signers() {
        let (root_pem, root) = ca("root", None);
        let roots = TrustRoots::from_pem(root_pem.as_bytes()).unwrap();
        let (cert, key) = leaf(&root, true, 1);
        let (_, other) = leaf(&root, true, 1);
        let certified = roots.certify(&cert, None, now()).unwrap();
        assert!(
            certified
                .key
                .verifies(b"payload", &key.sign(b"payload").unwrap())
        );
        assert!(
            !certified
                .key
                .verifies(b"payload", &other.sign(b"payload").unwrap())
        );
    }

    #[test]
    fn trust_roots_that_are_not_cas_are_refused_naming_the_certificate() {
        let (_, root) = ca("root", None);
        let (leaf_pem, _) = leaf(&root, true, 1);
        let refused = TrustRoots::from_pem(leaf_pem.as_bytes()).unwrap_err();
        assert!(
            matches!(refused, SignerCertificateError::RootNotCa { n: 1, .. }),
            "{refused:?}"
        );
        let refused = refused.to_string();
        assert!(refused.starts_with("certificate 1 ("), "{refused}");
        assert!(
            refused.ends_with("is not a CA (basicConstraints)"),
            "{refused}"
        );
        assert_eq!(
            TrustRoots::from_pem(b"").unwrap_err().to_string(),
            "holds no PEM CERTIFICATE"
        );
    }
}
