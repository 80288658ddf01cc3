//! Keyless signers: the certificate a cosign signature carries, chained
//! to the verification policy's trust roots (given to the host, never
//! fetched) and read for the identity it was issued to, as Fulcio writes
//! it: the subject an e-mail or URI alternative name, the OIDC issuer an
//! extension.

use std::fmt;

use x509_parser::certificate::X509Certificate;
use x509_parser::der_parser::der::parse_der_utf8string;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;
use x509_parser::time::ASN1Time;

use super::keys::PublicKey;
use super::transparency::Logs;

/// Fulcio's OIDC issuer extension (a DER UTF8String), and its first
/// version (the bare string).
const ISSUER: &str = "1.3.6.1.4.1.57264.1.8";
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
/// At most this many certificates between a signer's and a root.
const MAX_INTERMEDIATES: usize = 4;

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
    pub fn from_pem(pem: &[u8]) -> Result<TrustRoots, String> {
        let roots = certificates(pem)?;
        if roots.is_empty() {
            return Err("holds no PEM CERTIFICATE".into());
        }
        for (n, der) in roots.iter().enumerate() {
            let root = parse(der).map_err(|e| format!("certificate {}: {e}", n + 1))?;
            if !root.is_ca() {
                return Err(format!(
                    "certificate {} ({}) is not a CA (basicConstraints)",
                    n + 1,
                    root.subject()
                ));
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
    ) -> Result<Certified, String> {
        let leaf = certificates(certificate.as_bytes())?
            .into_iter()
            .next()
            .ok_or("the certificate annotation holds no PEM CERTIFICATE")?;
        let leaf = parse(&leaf)?;
        if !leaf.validity().is_valid_at(at) {
            return Err(format!(
                "its certificate ({}) is not valid at {at}: valid {} to {}",
                leaf.subject(),
                leaf.validity().not_before,
                leaf.validity().not_after
            ));
        }
        let code_signing = leaf
            .extended_key_usage()
            .ok()
            .flatten()
            .is_some_and(|e| e.value.code_signing);
        if !code_signing {
            return Err(format!(
                "its certificate ({}) is not for code signing (extendedKeyUsage)",
                leaf.subject()
            ));
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
        Err(format!(
            "its certificate ({}, issued by {}) does not chain to the policy's trust roots",
            leaf.subject(),
            leaf.issuer()
        ))
    }
}

/// The identity a signer's certificate names.
fn identity(leaf: &X509Certificate<'_>) -> Result<SignerIdentity, String> {
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
        .ok_or("its certificate names no e-mail or URI (subjectAltName)")?;
    let issuer = leaf
        .iter_extensions()
        .find_map(|e| match e.oid.to_id_string().as_str() {
            ISSUER => parse_der_utf8string(e.value)
                .ok()
                .and_then(|(_, s)| s.as_str().ok().map(str::to_owned)),
            ISSUER_V1 => std::str::from_utf8(e.value).ok().map(str::to_owned),
            _ => None,
        })
        .ok_or(format!(
            "its certificate names no OIDC issuer (extension {ISSUER})"
        ))?;
    Ok(SignerIdentity { issuer, subject })
}

/// The DER of every CERTIFICATE block of a PEM text.
fn certificates(pem: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut found = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
        let block = block.map_err(|e| format!("not PEM: {e}"))?;
        if block.label == "CERTIFICATE" {
            found.push(block.contents);
        }
    }
    Ok(found)
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| format!("not an X.509 certificate: {e}"))
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
            without.contains("does not chain to the policy's trust roots"),
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
        assert!(refused.contains("does not chain"), "{refused}");
        let (expired, _) = leaf(&root, true, -1);
        let refused = roots.certify(&expired, None, now()).unwrap_err();
        assert!(refused.contains("is not valid at"), "{refused}");
        let (tls, _) = leaf(&root, false, 1);
        let refused = roots.certify(&tls, None, now()).unwrap_err();
        assert!(refused.contains("not for code signing"), "{refused}");
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
        assert!(refused.starts_with("certificate 1 ("), "{refused}");
        assert!(
            refused.ends_with("is not a CA (basicConstraints)"),
            "{refused}"
        );
        assert_eq!(
            TrustRoots::from_pem(b"").unwrap_err(),
            "holds no PEM CERTIFICATE"
        );
    }
}
