//! The real cosign, run by the Go program `tests/cosign` (its module's
//! command, built once per test binary): key pairs, and signatures of
//! modules pushed to a registry on loopback, keyed or with a certificate
//! from a test certificate authority (a keyless signer's, as Fulcio would
//! issue it), its entry in a test transparency log (as Rekor would sign
//! it) attached when asked. Offline: no real log is written to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::go_programs;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// `tests/cosign`, built once per test binary.
fn program() -> &'static PathBuf {
    PROGRAM.get_or_init(|| go_programs::build("cosign"))
}

/// cosign run in `dir` (its TUF cache there too, never the user's),
/// private keys without a password, registry credentials read from
/// `dir/config.json` if the test wrote one (Docker's config file).
fn cosign(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(program())
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "")
        .env("TUF_ROOT", dir.join(".sigstore"))
        .env("DOCKER_CONFIG", dir)
        .args(args)
        .output()
        .expect("cosign runs");
    assert!(
        output.status.success(),
        "cosign {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A key pair cosign generated: `<dir>/<name>.key` and `<dir>/<name>.pub`.
pub struct KeyPair {
    pub private: PathBuf,
    pub public: PathBuf,
}

impl KeyPair {
    /// Generates one in `dir`.
    pub fn generate(dir: &Path, name: &str) -> KeyPair {
        cosign(dir, &["generate-key-pair", "--output-key-prefix", name]);
        KeyPair {
            private: dir.join(format!("{name}.key")),
            public: dir.join(format!("{name}.pub")),
        }
    }

    /// Signs `reference` (by digest) where it is stored, in a registry
    /// reached over plain HTTP (with the credentials of `config.json`
    /// beside the keys, if any).
    pub fn sign(&self, reference: &str) {
        self.sign_with(reference, &[]);
    }

    /// Signs `reference` in Sigstore's bundle format (cosign 3's default),
    /// stored among its referrers.
    pub fn sign_bundled(&self, reference: &str) {
        self.sign_with(reference, &["--new-bundle-format"]);
    }

    /// The same, as the keyless signer `certificate` names.
    pub fn sign_bundled_as(&self, reference: &str, certificate: &Certificate) {
        self.sign_with(
            reference,
            &[
                "--new-bundle-format",
                "--certificate",
                certificate.path.to_str().expect("a UTF-8 path"),
                "--certificate-chain",
                certificate.chain.to_str().expect("a UTF-8 path"),
            ],
        );
    }

    /// Signs `reference` as the keyless signer `certificate` names: cosign
    /// attaches the certificate and its chain to the signature.
    pub fn sign_as(&self, reference: &str, certificate: &Certificate) {
        self.sign_with(
            reference,
            &[
                "--certificate",
                certificate.path.to_str().expect("a UTF-8 path"),
                "--certificate-chain",
                certificate.chain.to_str().expect("a UTF-8 path"),
            ],
        );
    }

    /// Signs `reference` as the keyless signer `certificate` names, the
    /// signature entered in `log` at `entered` (seconds since the epoch):
    /// the payload cosign would sign, signed by cosign (`sign-blob`), and
    /// attached by cosign with the certificate and the log's bundle.
    pub fn sign_logged(
        &self,
        reference: &str,
        certificate: &Certificate,
        log: &TransparencyLog,
        entered: i64,
    ) {
        let dir = self.private.parent().expect("the key's directory");
        let (repository, digest) = reference.split_once('@').expect("a reference by digest");
        let payload = serde_json::json!({"critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        }, "optional": null})
        .to_string();
        let name = digest.replace(':', "-");
        let payload_path = dir.join(format!("{name}.payload.json"));
        std::fs::write(&payload_path, &payload).expect("writing the payload");
        let signed = cosign(
            dir,
            &[
                "sign-blob",
                "--key",
                self.private.to_str().expect("a UTF-8 path"),
                "--tlog-upload=false",
                "--yes",
                payload_path.to_str().expect("a UTF-8 path"),
            ],
        );
        let signature = String::from_utf8(signed.stdout).expect("base64");
        let signature = signature.trim();
        let signature_path = dir.join(format!("{name}.sig"));
        std::fs::write(&signature_path, signature).expect("writing the signature");
        let pem = std::fs::read_to_string(&certificate.path).expect("the certificate");
        let bundle = log.entry(payload.as_bytes(), signature, &pem, entered);
        let bundle_path = dir.join(format!("{name}.rekor.json"));
        std::fs::write(&bundle_path, bundle).expect("writing the bundle");
        cosign(
            dir,
            &[
                "attach",
                "signature",
                "--payload",
                payload_path.to_str().expect("a UTF-8 path"),
                "--signature",
                signature_path.to_str().expect("a UTF-8 path"),
                "--certificate",
                certificate.path.to_str().expect("a UTF-8 path"),
                "--certificate-chain",
                certificate.chain.to_str().expect("a UTF-8 path"),
                "--rekor-response",
                bundle_path.to_str().expect("a UTF-8 path"),
                "--allow-http-registry",
                "--allow-insecure-registry",
                reference,
            ],
        );
    }

    fn sign_with(&self, reference: &str, more: &[&str]) {
        let dir = self.private.parent().expect("the key's directory");
        let key = self.private.to_str().expect("a UTF-8 path");
        let mut args = vec!["sign", "--key", key];
        args.extend_from_slice(more);
        args.extend_from_slice(&[
            "--tlog-upload=false",
            "--allow-http-registry",
            "--allow-insecure-registry",
            "--yes",
            reference,
        ]);
        cosign(dir, &args);
    }
}

/// A test certificate authority for keyless signers, standing in for
/// Fulcio (which cannot run here): it certifies a cosign key pair as an
/// identity, the subject an e-mail and the OIDC issuer in Fulcio's
/// extension, for code signing.
pub struct Authority {
    /// Its root certificate, PEM: the trust root a policy names.
    pub root: PathBuf,
    dir: PathBuf,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A certificate an [`Authority`] issued, and the chain cosign attaches.
pub struct Certificate {
    pub path: PathBuf,
    pub chain: PathBuf,
}

/// Fulcio's OIDC issuer extension.
const OIDC_ISSUER: &[u64] = &[1, 3, 6, 1, 4, 1, 57264, 1, 8];

impl Authority {
    /// A new root, `<dir>/<name>-root.pem`.
    pub fn new(dir: &Path, name: &str) -> Authority {
        let key = rcgen::KeyPair::generate().expect("a CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let root = params.self_signed(&key).expect("a CA certificate");
        let path = dir.join(format!("{name}-root.pem"));
        std::fs::write(&path, root.pem()).expect("writing the root");
        Authority {
            root: path,
            dir: dir.to_owned(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// Certifies `keys`' public key as `subject` (an e-mail) vouched for
    /// by the OIDC `issuer`, valid from a day ago for `days` days.
    pub fn certify(&self, keys: &KeyPair, issuer: &str, subject: &str, days: i64) -> Certificate {
        let now = time::OffsetDateTime::now_utc();
        self.certify_between(
            keys,
            issuer,
            subject,
            (
                now - time::Duration::days(1),
                now + time::Duration::days(days),
            ),
        )
    }

    /// The same, valid from `valid.0` to `valid.1` (as Fulcio's, ten
    /// minutes).
    pub fn certify_between(
        &self,
        keys: &KeyPair,
        issuer: &str,
        subject: &str,
        valid: (time::OffsetDateTime, time::OffsetDateTime),
    ) -> Certificate {
        let public = std::fs::read_to_string(&keys.public).expect("the public key");
        let public = rcgen::SubjectPublicKeyInfo::from_pem(&public).expect("a public key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.subject_alt_names = vec![rcgen::SanType::Rfc822Name(
            subject.try_into().expect("an e-mail"),
        )];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        // A DER UTF8String.
        let mut oidc = vec![0x0c, u8::try_from(issuer.len()).expect("a short issuer")];
        oidc.extend_from_slice(issuer.as_bytes());
        params.custom_extensions =
            vec![rcgen::CustomExtension::from_oid_content(OIDC_ISSUER, oidc)];
        (params.not_before, params.not_after) = valid;
        let certificate = params
            .signed_by(&public, &self.issuer)
            .expect("a certificate");
        let name = format!(
            "{}-{}",
            subject.replace(['@', '.'], "-"),
            valid.0.unix_timestamp()
        );
        let path = self.dir.join(format!("{name}.pem"));
        std::fs::write(&path, certificate.pem()).expect("writing the certificate");
        Certificate {
            path,
            chain: self.root.clone(),
        }
    }
}

/// A transparency log, standing in for Rekor (which cannot run here): its
/// key signs each entry it is handed, as Rekor signs the entry timestamp
/// of what it records, in the bundle cosign attaches (`--rekor-response`).
pub struct TransparencyLog {
    key: rcgen::KeyPair,
    /// Its public key, PEM: what a policy's `transparencyLogs` gives.
    pub public: PathBuf,
}

impl TransparencyLog {
    /// A new log, its key at `<dir>/<name>.pub`.
    pub fn new(dir: &Path, name: &str) -> TransparencyLog {
        let key = rcgen::KeyPair::generate().expect("a log key");
        let public = dir.join(format!("{name}.pub"));
        std::fs::write(&public, key.public_key_pem()).expect("writing the log key");
        TransparencyLog { key, public }
    }

    /// The bundle recording `signature` (base64) over `payload` by
    /// `certificate` (PEM) entered at `entered`, as cosign stores it:
    /// a hashedrekord entry and the log's signed entry timestamp over the
    /// entry as canonical JSON.
    fn entry(&self, payload: &[u8], signature: &str, certificate: &str, entered: i64) -> String {
        use base64::Engine;
        use rcgen::{PublicKeyData, SigningKey};
        let b64 = base64::engine::general_purpose::STANDARD;
        let hash = reconciler_host::runtime::artifacts::digest(payload);
        let body = serde_json::json!({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hash}},
            "signature": {"content": signature, "publicKey": {"content": b64.encode(certificate)}},
        }});
        let body = b64.encode(body.to_string());
        let id = reconciler_host::runtime::artifacts::digest(&self.key.subject_public_key_info());
        let canonical = format!(
            "{{\"body\":\"{body}\",\"integratedTime\":{entered},\"logID\":\"{id}\",\"logIndex\":1}}"
        );
        let set = self
            .key
            .sign(canonical.as_bytes())
            .expect("signing the entry");
        serde_json::json!({
            "base64Signature": signature,
            "rekorBundle": {
                "SignedEntryTimestamp": b64.encode(set),
                "Payload": {"body": body, "integratedTime": entered, "logIndex": 1, "logID": id},
            },
        })
        .to_string()
    }
}
