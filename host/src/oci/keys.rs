//! The public keys a verification policy names (PEM, as `cosign
//! generate-key-pair` writes them), and the signatures they verify, with
//! ring: ECDSA P-256 with SHA-256 (cosign's default), P-384 with SHA-384,
//! Ed25519, and RSA PKCS#1 v1.5 with SHA-256.

use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use x509_parser::error::{PEMError, X509Error};
use x509_parser::nom;
use x509_parser::prelude::FromDer;
use x509_parser::x509::SubjectPublicKeyInfo;

/// Why a public key cannot be taken: each says the key is malformed (not
/// a PEM `PUBLIC KEY`, not a SubjectPublicKeyInfo) or of an algorithm
/// cosign does not sign with. None is retryable: the key is what it is.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Malformed: not PEM.
    #[error("not a PEM block: {source}")]
    NotPem {
        #[source]
        source: nom::Err<PEMError>,
    },
    /// Malformed: a PEM block of another label.
    #[error("a PEM {label}, not a PUBLIC KEY")]
    NotPublicKey { label: String },
    /// Malformed: its DER is not a SubjectPublicKeyInfo.
    #[error("not a SubjectPublicKeyInfo: {source}")]
    NotSubjectPublicKeyInfo {
        #[source]
        source: nom::Err<X509Error>,
    },
    /// A key, of an algorithm (and curve, if it names one) no cosign
    /// signature is made with.
    #[error(
        "a key of algorithm {algorithm}{} is not one cosign signs with \
         (ECDSA P-256 or P-384, Ed25519, RSA)",
        curve.as_ref().map(|c| format!(" on curve {c}")).unwrap_or_default()
    )]
    Algorithm {
        algorithm: String,
        curve: Option<String>,
    },
}

/// A public key, parsed.
pub struct PublicKey {
    algorithm: &'static dyn VerificationAlgorithm,
    key: Vec<u8>,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({:?})", self.algorithm)
    }
}

impl PublicKey {
    /// The key a PEM `PUBLIC KEY` block holds (a SubjectPublicKeyInfo).
    pub fn from_pem(pem: &[u8]) -> Result<PublicKey, KeyError> {
        let (_, block) =
            x509_parser::pem::parse_x509_pem(pem).map_err(|source| KeyError::NotPem { source })?;
        if block.label != "PUBLIC KEY" {
            return Err(KeyError::NotPublicKey { label: block.label });
        }
        PublicKey::from_der(&block.contents)
    }

    /// The key a DER SubjectPublicKeyInfo holds (as a certificate carries
    /// it).
    pub fn from_der(der: &[u8]) -> Result<PublicKey, KeyError> {
        let (_, info) = SubjectPublicKeyInfo::from_der(der)
            .map_err(|source| KeyError::NotSubjectPublicKeyInfo { source })?;
        let algorithm = info.algorithm.algorithm.to_id_string();
        let curve = info
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok())
            .map(|oid| oid.to_id_string());
        let algorithm: &'static dyn VerificationAlgorithm =
            match (algorithm.as_str(), curve.as_deref()) {
                // id-ecPublicKey on prime256v1, on secp384r1
                ("1.2.840.10045.2.1", Some("1.2.840.10045.3.1.7")) => {
                    &signature::ECDSA_P256_SHA256_ASN1
                }
                ("1.2.840.10045.2.1", Some("1.3.132.0.34")) => &signature::ECDSA_P384_SHA384_ASN1,
                ("1.3.101.112", _) => &signature::ED25519,
                ("1.2.840.113549.1.1.1", _) => &signature::RSA_PKCS1_2048_8192_SHA256,
                (algorithm, curve) => {
                    return Err(KeyError::Algorithm {
                        algorithm: algorithm.to_owned(),
                        curve: curve.map(str::to_owned),
                    });
                }
            };
        Ok(PublicKey {
            algorithm,
            key: info.subject_public_key.data.to_vec(),
        })
    }

    /// Whether `signature` is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(self.algorithm, &self.key)
            .verify(message, signature)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};

    /// A P-256 key pair, and its public key as PEM.
    fn p256() -> (EcdsaKeyPair, String) {
        let random = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &random).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &random)
                .unwrap();
        // SubjectPublicKeyInfo: id-ecPublicKey, prime256v1, the point.
        let mut spki = vec![
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
            0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
        ];
        spki.extend_from_slice(pair.public_key().as_ref());
        let pem = pem::encode(&pem::Pem::new("PUBLIC KEY", spki));
        (pair, pem)
    }

    #[test]
    fn a_signature_verifies_under_its_key_only_and_over_its_message_only() {
        let (pair, pem) = p256();
        let (_, other) = p256();
        let random = SystemRandom::new();
        let signature = pair.sign(&random, b"payload").unwrap();
        let key = PublicKey::from_pem(pem.as_bytes()).unwrap();
        assert!(key.verifies(b"payload", signature.as_ref()));
        assert!(!key.verifies(b"payload!", signature.as_ref()));
        let other = PublicKey::from_pem(other.as_bytes()).unwrap();
        assert!(!other.verifies(b"payload", signature.as_ref()));
    }

    #[test]
    fn what_is_not_a_public_key_is_named() {
        let certificate = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n";
        let refused = PublicKey::from_pem(certificate.as_bytes()).unwrap_err();
        assert!(
            matches!(&refused, KeyError::NotPublicKey { label } if label == "CERTIFICATE"),
            "{refused:?}"
        );
        assert_eq!(refused.to_string(), "a PEM CERTIFICATE, not a PUBLIC KEY");
        let refused = PublicKey::from_pem(b"hello").unwrap_err();
        assert!(matches!(refused, KeyError::NotPem { .. }), "{refused:?}");
        assert!(refused.to_string().starts_with("not a PEM block"));
    }
}
