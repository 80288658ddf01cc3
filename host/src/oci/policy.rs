//! The verification policy: for each kind, which cosign keys or keyless
//! identities must have signed a module before the host pulls it to serve
//! that kind. Read from one YAML file; every key and trust root is parsed
//! when the policy is read, so a policy naming a key that is not one fails
//! before any module is pulled.
//!
//! ```yaml
//! trustRoots: ca.pem                 # the CAs keyless certificates chain to
//! transparencyLogs: rekor.pub        # the logs whose entries date a signature
//! kinds:
//!   Widget:
//!     allOf: [release.pub]           # each of these signed it
//!     anyOf: [ci-2025.pub, ci-2026.pub] # and at least one of these
//!   Gizmo:
//!     allOf:                         # a keyless identity: a certificate
//!     - issuer: https://token.actions.githubusercontent.com
//!       subject: https://github.com/acme/gizmo/.github/workflows/release.yml@refs/heads/main
//!   Gadget:
//!     allowUnsigned: true            # served without a signature
//! ```
//!
//! A key or the trust roots are a path (relative to the policy file) or a
//! PEM written inline. The trust roots are given, never fetched: an
//! identity is checked against them offline. A kind the policy does not
//! name is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use serde::Deserialize;

use super::certificates::{SignerCertificateError, SignerIdentity, TrustRoots};
use super::keys::{KeyError, PublicKey};
use super::transparency::{Logs, TransparencyError};

/// Why a policy cannot be read. None is retryable: the file, or a PEM
/// file it names, is wrong.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("verification policy {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("verification policy {}: {detail}", path.display())]
    Parse { path: PathBuf, detail: String },
    #[error("verification policy {}, kind {kind}: {why}", path.display())]
    Kind {
        path: PathBuf,
        kind: String,
        why: String,
    },
    #[error("verification policy {}, kind {kind}: key {key}: {source}", path.display())]
    Key {
        path: PathBuf,
        kind: String,
        key: String,
        #[source]
        source: KeyError,
    },
    #[error("verification policy {}, trustRoots: {source}", path.display())]
    TrustRoots {
        path: PathBuf,
        #[source]
        source: SignerCertificateError,
    },
    #[error("verification policy {}, transparencyLogs: {source}", path.display())]
    TransparencyLogs {
        path: PathBuf,
        #[source]
        source: TransparencyError,
    },
    #[error(
        "verification policy {}, transparencyLogs: given without trustRoots: a log dates a keyless certificate, which needs its roots",
        path.display()
    )]
    LogsWithoutRoots { path: PathBuf },
    /// A PEM file the policy names cannot be read; `at` says where the
    /// policy names it (`trustRoots`, `kind <kind>: key <key>`).
    #[error("verification policy {}, {at}: {}: {source}", path.display(), file.display())]
    PemFile {
        path: PathBuf,
        at: String,
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The policy file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct Written {
    #[serde(default)]
    trust_roots: Option<String>,
    #[serde(default)]
    transparency_logs: Option<String>,
    kinds: BTreeMap<String, WrittenKind>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WrittenKind {
    #[serde(default)]
    all_of: Vec<WrittenSigner>,
    #[serde(default)]
    any_of: Vec<WrittenSigner>,
    #[serde(default)]
    allow_unsigned: bool,
}

/// A key (a path or an inline PEM), or a keyless identity.
#[derive(Deserialize)]
#[serde(untagged)]
enum WrittenSigner {
    Key(String),
    Identity(WrittenIdentity),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenIdentity {
    issuer: String,
    subject: String,
}

/// A verification policy, read whole.
#[derive(Debug)]
pub struct Policy {
    path: PathBuf,
    kinds: BTreeMap<String, Rule>,
}

/// What one kind's modules must carry.
#[derive(Debug)]
pub enum Rule {
    /// Served without a signature.
    Unsigned,
    /// Signed by each signer of `all_of`, and by one of `any_of` if it
    /// names any.
    Keys {
        all_of: Vec<Signer>,
        any_of: Vec<Signer>,
    },
}

/// A signer a policy names, parsed.
#[derive(Debug)]
pub struct Signer {
    /// The path the policy gives, `inline key <n>`, or the identity.
    pub name: String,
    pub by: By,
}

/// How a signer is recognised.
#[derive(Debug)]
pub enum By {
    /// Its public key verifies the signature.
    Key(PublicKey),
    /// The signature carries a certificate issued to it, chained to the
    /// policy's trust roots, whose key verifies the signature.
    Identity {
        identity: SignerIdentity,
        roots: Arc<TrustRoots>,
    },
}

impl Policy {
    /// Reads the policy at `path`, and the keys it names.
    pub fn read(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.to_owned(),
            source,
        })?;
        let written: Written = serde_yaml::from_str(&text).map_err(|e| PolicyError::Parse {
            path: path.to_owned(),
            detail: format!("{e}"),
        })?;
        let roots = written
            .trust_roots
            .map(|written| {
                let (_, pem) = read_pem(path, "trustRoots", written, "trust roots", &mut 0)?;
                TrustRoots::from_pem(&pem).map_err(|source| PolicyError::TrustRoots {
                    path: path.to_owned(),
                    source,
                })
            })
            .transpose()?;
        let roots = match (roots, written.transparency_logs) {
            (Some(mut roots), Some(logs)) => {
                let at = "transparencyLogs";
                let (_, pem) = read_pem(path, at, logs, "transparency logs", &mut 0)?;
                let logs =
                    Logs::from_pem(&pem).map_err(|source| PolicyError::TransparencyLogs {
                        path: path.to_owned(),
                        source,
                    })?;
                roots.logs = Some(logs);
                Some(roots)
            }
            (None, Some(_)) => {
                return Err(PolicyError::LogsWithoutRoots {
                    path: path.to_owned(),
                });
            }
            (roots, None) => roots,
        }
        .map(Arc::new);
        let mut kinds = BTreeMap::new();
        for (kind, rule) in written.kinds {
            let rule = Rule::read(path, roots.as_ref(), &kind, rule)?;
            kinds.insert(kind, rule);
        }
        Ok(Policy {
            path: path.to_owned(),
            kinds,
        })
    }

    /// Where it was read from, as messages name it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rule for `kind`'s modules, if the policy names the kind.
    pub fn rule(&self, kind: &str) -> Option<&Rule> {
        self.kinds.get(kind)
    }
}

impl Rule {
    fn read(
        path: &Path,
        roots: Option<&Arc<TrustRoots>>,
        kind: &str,
        rule: WrittenKind,
    ) -> Result<Rule, PolicyError> {
        let wrong = |why: &str| PolicyError::Kind {
            path: path.to_owned(),
            kind: kind.to_owned(),
            why: why.to_owned(),
        };
        let signed = !rule.all_of.is_empty() || !rule.any_of.is_empty();
        match (rule.allow_unsigned, signed) {
            (true, true) => Err(wrong(
                "allowUnsigned and keys together: a kind is either signed or not",
            )),
            (true, false) => Ok(Rule::Unsigned),
            (false, false) => Err(wrong(
                "names no key (allOf or anyOf), and does not say allowUnsigned: true",
            )),
            (false, true) => {
                let mut inline = 0;
                let mut signers = |written: Vec<WrittenSigner>| {
                    written
                        .into_iter()
                        .map(|signer| match signer {
                            WrittenSigner::Key(key) => {
                                Signer::key(path, kind, key, &mut inline)
                            }
                            WrittenSigner::Identity(WrittenIdentity { issuer, subject }) => {
                                let identity = SignerIdentity { issuer, subject };
                                let roots = roots.ok_or_else(|| {
                                    wrong(&format!(
                                        "names the identity {identity}, but the policy gives no trustRoots to check it against"
                                    ))
                                })?;
                                Ok(Signer {
                                    name: identity.to_string(),
                                    by: By::Identity {
                                        identity,
                                        roots: roots.clone(),
                                    },
                                })
                            }
                        })
                        .collect::<Result<Vec<_>, _>>()
                };
                Ok(Rule::Keys {
                    all_of: signers(rule.all_of)?,
                    any_of: signers(rule.any_of)?,
                })
            }
        }
    }
}

impl Signer {
    fn key(
        path: &Path,
        kind: &str,
        written: String,
        inline: &mut usize,
    ) -> Result<Signer, PolicyError> {
        let at = format!("kind {kind}: key {written}");
        let (name, pem) = read_pem(path, &at, written, "key", inline)?;
        let key = PublicKey::from_pem(&pem).map_err(|source| PolicyError::Key {
            path: path.to_owned(),
            kind: kind.to_owned(),
            key: name.clone(),
            source,
        })?;
        Ok(Signer {
            name,
            by: By::Key(key),
        })
    }
}

/// A PEM the policy at `path` writes inline (named `inline <what> <n>`)
/// or names by a path relative to it, `at` the place it names it: its
/// name and bytes.
fn read_pem(
    path: &Path,
    at: &str,
    written: String,
    what: &str,
    inline: &mut usize,
) -> Result<(String, Vec<u8>), PolicyError> {
    if written.trim_start().starts_with("-----BEGIN") {
        *inline += 1;
        return Ok((format!("inline {what} {inline}"), written.into_bytes()));
    }
    let file = path.parent().unwrap_or(Path::new(".")).join(&written);
    let pem = std::fs::read(&file).map_err(|source| PolicyError::PemFile {
        path: path.to_owned(),
        at: at.to_owned(),
        file,
        source,
    })?;
    Ok((written, pem))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 public key (cosign's default), PEM.
    const KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEJKpouaFW3QcW7uaGrnjPpMXxZUw0
U89DLO7zgQ/0Was+PVlnNpU4/F8Po53yxweNlL4jotjozefCCuk6Sc95fA==
-----END PUBLIC KEY-----
";

    fn read(yaml: &str, files: &[(&str, &str)]) -> Result<Policy, PolicyError> {
        let dir =
            std::env::temp_dir().join(format!("oci-policy-{}-{}", std::process::id(), yaml.len()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let path = dir.join("policy.yaml");
        std::fs::write(&path, yaml).unwrap();
        let policy = Policy::read(&path);
        let _ = std::fs::remove_dir_all(&dir);
        policy
    }

    #[test]
    fn keys_by_path_and_inline_and_unsigned_kinds_are_read() {
        let yaml = format!(
            "kinds:\n  Widget:\n    allOf: [release.pub]\n    anyOf:\n      - |\n{}\n  Gadget:\n    allowUnsigned: true\n",
            KEY.lines()
                .map(|l| format!("        {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let policy = read(&yaml, &[("release.pub", KEY)]).unwrap();
        match policy.rule("Widget") {
            Some(Rule::Keys { all_of, any_of }) => {
                let names =
                    |keys: &[Signer]| keys.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
                assert_eq!(names(all_of), ["release.pub"]);
                assert_eq!(names(any_of), ["inline key 1"]);
            }
            other => panic!("Widget: {other:?}"),
        }
        assert!(matches!(policy.rule("Gadget"), Some(Rule::Unsigned)));
        assert!(policy.rule("Other").is_none());
    }

    /// A self-signed CA certificate, PEM.
    fn ca() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn identities_are_read_against_the_trust_roots_given() {
        let yaml = "trustRoots: ca.pem\nkinds:\n  Widget:\n    anyOf:\n    - release.pub\n    - issuer: https://issuer.example\n      subject: ci@example.com\n";
        let policy = read(yaml, &[("release.pub", KEY), ("ca.pem", &ca())]).unwrap();
        let Some(Rule::Keys { all_of, any_of }) = policy.rule("Widget") else {
            panic!("Widget: {:?}", policy.rule("Widget"));
        };
        assert!(all_of.is_empty());
        assert_eq!(
            any_of[1].name,
            "ci@example.com (issuer https://issuer.example)"
        );
        assert!(
            matches!(&any_of[1].by, By::Identity { identity, .. } if identity.subject == "ci@example.com")
        );
        assert!(matches!(any_of[0].by, By::Key(_)));
    }

    #[test]
    fn a_policy_that_cannot_be_enforced_is_refused_naming_the_kind_and_key() {
        let errors = [
            (
                "kinds:\n  Widget: {}\n",
                "kind Widget: names no key (allOf or anyOf), and does not say allowUnsigned: true",
            ),
            (
                "kinds:\n  Widget: {allOf: [release.pub], allowUnsigned: true}\n",
                "kind Widget: allowUnsigned and keys together",
            ),
            (
                "kinds:\n  Widget: {anyOf: [missing.pub]}\n",
                "kind Widget: key missing.pub:",
            ),
            (
                "kinds:\n  Widget: {allOf: [notakey.pub]}\n",
                "kind Widget: key notakey.pub: not a PEM block",
            ),
            (
                "kinds:\n  Widget: {keyless: [someone]}\n",
                "unknown field `keyless`",
            ),
            (
                "kinds:\n  Widget: {allOf: [{issuer: https://i, subject: s}]}\n",
                "kind Widget: names the identity s (issuer https://i), but the policy gives no trustRoots",
            ),
            (
                "trustRoots: notakey.pub\nkinds:\n  Widget: {allowUnsigned: true}\n",
                "trustRoots: holds no PEM CERTIFICATE",
            ),
            (
                "trustRoots: missing.pem\nkinds:\n  Widget: {allowUnsigned: true}\n",
                "trustRoots: ",
            ),
        ];
        for (yaml, expected) in errors {
            let error = read(yaml, &[("notakey.pub", "hello\n")])
                .expect_err(yaml)
                .to_string();
            assert!(error.contains(expected), "{yaml}: {error}");
            assert!(error.starts_with("verification policy "), "{error}");
        }
    }
}
