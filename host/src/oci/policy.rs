//! The verification policy: for each kind, which cosign keys must have
//! signed a module before the host pulls it to serve that kind. Read from
//! one YAML file; every key is parsed when the policy is read, so a policy
//! naming a key that is not one fails before any module is pulled.
//!
//! ```yaml
//! kinds:
//!   Widget:
//!     allOf: [release.pub]           # each of these signed it
//!     anyOf: [ci-2025.pub, ci-2026.pub] # and at least one of these
//!   Gadget:
//!     allowUnsigned: true            # served without a signature
//! ```
//!
//! A key is a path (relative to the policy file) or a PEM written inline.
//! A kind the policy does not name is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::keys::PublicKey;

/// Why a policy cannot be read. None is retryable: the file is wrong.
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
    #[error("verification policy {}, kind {kind}: key {key}: {detail}", path.display())]
    Key {
        path: PathBuf,
        kind: String,
        key: String,
        detail: String,
    },
}

/// The policy file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    kinds: BTreeMap<String, WrittenKind>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WrittenKind {
    #[serde(default)]
    all_of: Vec<String>,
    #[serde(default)]
    any_of: Vec<String>,
    #[serde(default)]
    allow_unsigned: bool,
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
    /// Signed by each key of `all_of`, and by one of `any_of` if it names any.
    Keys { all_of: Vec<Key>, any_of: Vec<Key> },
}

/// A public key a policy names, parsed.
#[derive(Debug)]
pub struct Key {
    /// The path the policy gives, or `inline key <n>`.
    pub name: String,
    pub key: PublicKey,
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
        let base = path.parent().unwrap_or(Path::new("."));
        let mut kinds = BTreeMap::new();
        for (kind, rule) in written.kinds {
            let rule = Rule::read(path, base, &kind, rule)?;
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
    fn read(path: &Path, base: &Path, kind: &str, rule: WrittenKind) -> Result<Rule, PolicyError> {
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
                let mut keys = |written: Vec<String>| {
                    written
                        .into_iter()
                        .map(|key| Key::read(path, base, kind, key, &mut inline))
                        .collect::<Result<Vec<_>, _>>()
                };
                Ok(Rule::Keys {
                    all_of: keys(rule.all_of)?,
                    any_of: keys(rule.any_of)?,
                })
            }
        }
    }
}

impl Key {
    fn read(
        path: &Path,
        base: &Path,
        kind: &str,
        written: String,
        inline: &mut usize,
    ) -> Result<Key, PolicyError> {
        let (name, pem) = if written.trim_start().starts_with("-----BEGIN") {
            *inline += 1;
            (format!("inline key {inline}"), written.into_bytes())
        } else {
            let file = base.join(&written);
            let pem = std::fs::read(&file).map_err(|e| PolicyError::Key {
                path: path.to_owned(),
                kind: kind.to_owned(),
                key: written.clone(),
                detail: format!("{}: {e}", file.display()),
            })?;
            (written, pem)
        };
        let key = PublicKey::from_pem(&pem).map_err(|detail| PolicyError::Key {
            path: path.to_owned(),
            kind: kind.to_owned(),
            key: name.clone(),
            detail,
        })?;
        Ok(Key { name, key })
    }
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
                let names = |keys: &[Key]| keys.iter().map(|k| k.name.clone()).collect::<Vec<_>>();
                assert_eq!(names(all_of), ["release.pub"]);
                assert_eq!(names(any_of), ["inline key 1"]);
            }
            other => panic!("Widget: {other:?}"),
        }
        assert!(matches!(policy.rule("Gadget"), Some(Rule::Unsigned)));
        assert!(policy.rule("Other").is_none());
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
