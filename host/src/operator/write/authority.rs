//! The operator's own CA and the TLS serving certificates it signs for guests (`change.certificate`).
//!
//! The CA lives in one Secret (`--certificate-authority`, by default
//! `reconciler-host-ca` in the host's namespace), created on first use: a
//! second replica, or the host after a restart, reads the one that exists
//! (a create that lost the race reads the winner's). A serving certificate
//! is a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`, `ca.crt`)
//! annotated with its expiry and DNS names, so the cache (which holds no
//! Secret data) knows whether it is still good: it is replaced once two
//! thirds of its validity have passed, or when the names change, and
//! never otherwise.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

/// The annotation holding a serving certificate's expiry (RFC 3339).
pub(crate) const EXPIRY_ANNOTATION: &str = "reconciler.dev/certificate-expiry";
/// The annotation holding the DNS names it was issued for, comma-separated.
pub(crate) const DNS_NAMES_ANNOTATION: &str = "reconciler.dev/certificate-dns-names";
/// How long the CA the host creates is valid.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// The CA certificate's common name.
const CA_COMMON_NAME: &str = "reconciler-host CA";

/// Why the CA could not be read, made or used. A read or create error is
/// retryable (the pass fails and is retried with backoff); `Invalid` is
/// not until someone fixes the CA Secret.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("the CA Secret {secret}: {source}")]
    Api {
        secret: String,
        #[source]
        source: kube::Error,
    },
    #[error("the CA Secret {secret} is not a usable CA: {why}")]
    Invalid { secret: String, why: String },
    #[error("signing a certificate: {0}")]
    Signing(#[from] rcgen::Error),
}

/// The CA's place and the validity of what it signs.
#[derive(Clone, Debug)]
pub struct AuthorityConfig {
    pub namespace: String,
    pub name: String,
    /// How long a serving certificate is valid.
    pub validity: Duration,
}

/// The operator's CA: loaded (or created) on the first certificate asked.
pub struct Authority {
    client: Client,
    config: AuthorityConfig,
    loaded: OnceCell<Loaded>,
}

struct Loaded {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

/// A serving certificate Secret's body, and when to renew it.
pub struct Issued {
    pub secret: Value,
    pub renew_after: Duration,
}

impl Authority {
    pub fn new(client: Client, config: AuthorityConfig) -> Self {
        Authority {
            client,
            config,
            loaded: OnceCell::new(),
        }
    }

    fn secret_name(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// How long `cached` stays good for `dns_names`; `None`: issue now.
    pub(crate) fn still_good(
        &self,
        cached: &Value,
        dns_names: &[String],
        now: jiff::Timestamp,
    ) -> Option<Duration> {
        still_good(cached, dns_names, now, self.config.validity)
    }

    /// A serving certificate for `dns_names` in the Secret `name`.
    pub async fn issue(
        &self,
        name: &str,
        dns_names: &[String],
    ) -> Result<Issued, CertificateError> {
        let loaded = self.loaded.get_or_try_init(|| self.load()).await?;
        let (secret, _) = loaded.sign(name, dns_names, self.config.validity)?;
        Ok(Issued {
            secret,
            renew_after: self.config.validity * 2 / 3,
        })
    }

    /// Reads the CA Secret, or creates it when there is none.
    async fn load(&self) -> Result<Loaded, CertificateError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let api_error = |source| CertificateError::Api {
            secret: self.secret_name(),
            source,
        };
        let secret = match api.get_opt(&self.config.name).await.map_err(api_error)? {
            Some(secret) => secret,
            None => match api.create(&PostParams::default(), &self.new_ca()?).await {
                Ok(created) => {
                    tracing::info!(secret = %self.secret_name(), "created the operator's CA");
                    created
                }
                // Another replica made it meanwhile: it is the CA.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    api.get(&self.config.name).await.map_err(api_error)?
                }
                Err(e) => return Err(api_error(e)),
            },
        };
        let invalid = |why: String| CertificateError::Invalid {
            secret: self.secret_name(),
            why,
        };
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
                .ok_or_else(|| invalid(format!("no {key} in it")))
        };
        Loaded::from_pem(text("tls.crt")?, &text("tls.key")?).map_err(invalid)
    }

    /// A new self-signed CA, as a Secret to create.
    fn new_ca(&self) -> Result<Secret, CertificateError> {
        let (certificate, key) = new_ca_pem()?;
        let secret = json!({
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": base64(certificate), "tls.key": base64(key)},
        });
        serde_json::from_value(secret).map_err(|e| CertificateError::Invalid {
            secret: self.secret_name(),
            why: e.to_string(),
        })
    }
}

/// How long `cached` (a Secret as the cache holds it) stays good for
/// `dns_names`, from its annotations, when certificates are valid for
/// `validity`: until two thirds of it have passed. `None`: it is to be
/// (re)issued now.
fn still_good(
    cached: &Value,
    dns_names: &[String],
    now: jiff::Timestamp,
    validity: Duration,
) -> Option<Duration> {
    let annotations = &cached["metadata"]["annotations"];
    if annotations[DNS_NAMES_ANNOTATION].as_str()? != dns_names.join(",") {
        return None;
    }
    let expiry: jiff::Timestamp = annotations[EXPIRY_ANNOTATION].as_str()?.parse().ok()?;
    let margin = jiff::SignedDuration::try_from(validity / 3).ok()?;
    let left = now.duration_until(expiry.checked_sub(margin).ok()?);
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// A new self-signed CA: its certificate and key, PEM.
fn new_ca_pem() -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(1);
    params.not_after = now + CA_VALIDITY;
    let certificate = params.self_signed(&key)?;
    Ok((certificate.pem(), key.serialize_pem()))
}

impl Loaded {
    fn from_pem(ca_pem: String, key_pem: &str) -> Result<Self, String> {
        let key = KeyPair::from_pem(key_pem).map_err(|e| format!("tls.key: {e}"))?;
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, key).map_err(|e| format!("tls.crt: {e}"))?;
        Ok(Loaded { issuer, ca_pem })
    }

    /// The Secret `name` holding a new certificate for `dns_names`, valid
    /// for `validity`, and its expiry.
    fn sign(
        &self,
        name: &str,
        dns_names: &[String],
        validity: Duration,
    ) -> Result<(Value, jiff::Timestamp), rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(dns_names.to_vec())?;
        let mut dn = DistinguishedName::new();
        if let Some(first) = dns_names.first() {
            dn.push(DnType::CommonName, first.clone());
        }
        params.distinguished_name = dn;
        let now = time::OffsetDateTime::now_utc();
        // A minute back, for clocks slightly behind the host's.
        params.not_before = now - time::Duration::minutes(1);
        params.not_after = now + validity;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let certificate = params.signed_by(&key, &self.issuer)?;
        let expiry = jiff::Timestamp::from_second(params.not_after.unix_timestamp())
            .unwrap_or(jiff::Timestamp::MAX);
        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {
                "name": name,
                "annotations": {
                    EXPIRY_ANNOTATION: expiry.to_string(),
                    DNS_NAMES_ANNOTATION: dns_names.join(","),
                },
            },
            "data": {
                "tls.crt": base64(certificate.pem()),
                "tls.key": base64(key.serialize_pem()),
                "ca.crt": base64(self.ca_pem.clone()),
            },
        });
        Ok((secret, expiry))
    }
}

fn base64(text: String) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn decoded(secret: &Value, key: &str) -> String {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(secret["data"][key].as_str().expect(key))
            .expect("base64");
        String::from_utf8(bytes).expect("PEM text")
    }

    fn der(pem_text: &str) -> Vec<u8> {
        pem::parse(pem_text).expect("PEM").into_contents()
    }

    #[test]
    fn a_serving_certificate_is_signed_by_the_ca_for_its_names() {
        let (ca_pem, ca_key) = new_ca_pem().expect("CA");
        let loaded = Loaded::from_pem(ca_pem.clone(), &ca_key).expect("loads");
        let names = vec![
            "a-svc.ns.svc".to_owned(),
            "a-svc.ns.svc.cluster.local".to_owned(),
        ];
        let (secret, expiry) = loaded
            .sign("a-tls", &names, Duration::from_secs(3600))
            .expect("signed");
        assert_eq!(secret["type"], "kubernetes.io/tls");
        assert_eq!(decoded(&secret, "ca.crt"), ca_pem);
        let cert_der = der(&decoded(&secret, "tls.crt"));
        let (_, cert) = x509_parser::parse_x509_certificate(&cert_der).expect("X.509");
        let ca_der = der(&ca_pem);
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).expect("CA X.509");
        assert_eq!(cert.issuer(), ca.subject());
        cert.verify_signature(Some(ca.public_key()))
            .expect("signed by the CA's key");
        let sans: Vec<String> = cert
            .subject_alternative_name()
            .expect("SAN")
            .expect("present")
            .value
            .general_names
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(
            sans,
            [
                "DNSName(a-svc.ns.svc)",
                "DNSName(a-svc.ns.svc.cluster.local)"
            ]
        );
        assert_eq!(
            cert.validity().not_after.timestamp(),
            expiry.as_second(),
            "the annotation says when it expires"
        );
        assert_eq!(
            secret["metadata"]["annotations"][EXPIRY_ANNOTATION],
            expiry.to_string()
        );
        assert!(decoded(&secret, "tls.key").contains("PRIVATE KEY"));
    }

    #[test]
    fn a_ca_secret_without_a_key_or_certificate_is_refused_clearly() {
        let (ca_pem, ca_key) = new_ca_pem().expect("CA");
        let err = Loaded::from_pem(ca_pem.clone(), "garbage")
            .err()
            .expect("refused");
        assert!(err.starts_with("tls.key:"), "{err}");
        let err = Loaded::from_pem("garbage".into(), &ca_key)
            .err()
            .expect("refused");
        assert!(err.starts_with("tls.crt:"), "{err}");
    }

    #[test]
    fn a_certificate_stays_good_for_two_thirds_of_its_validity_and_its_names() {
        let validity = Duration::from_secs(3000);
        let now: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().expect("time");
        let cached = |expiry: &str, names: &str| {
            json!({"metadata": {"annotations": {
                EXPIRY_ANNOTATION: expiry, DNS_NAMES_ANNOTATION: names}}})
        };
        let names = vec!["a".to_owned(), "b".to_owned()];
        let good = |c: &Value| still_good(c, &names, now, validity);
        // Expires in 3000 s: renewed 1000 s before, 2000 s from now.
        assert_eq!(
            good(&cached("2026-12-01T00:50:00Z", "a,b")),
            Some(Duration::from_secs(2000))
        );
        assert_eq!(
            good(&cached("2026-12-01T00:16:40Z", "a,b")),
            None,
            "at the renewal time"
        );
        assert_eq!(
            good(&cached("2026-12-01T00:50:00Z", "a")),
            None,
            "other names"
        );
        assert_eq!(
            good(&json!({"metadata": {}})),
            None,
            "not one the host issued"
        );
        assert_eq!(good(&cached("soon", "a,b")), None, "an unreadable expiry");
    }
}
