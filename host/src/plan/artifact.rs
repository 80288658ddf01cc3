//! The review artifact of a plan: its effects as a reviewer reads them
//! (seed 003, "Observe mode"). Inline in the plan below [`INLINE_LIMIT`];
//! above it, gzipped in an immutable ConfigMap the plan names, bound to
//! the plan by the SHA-256 of its text in the plan's immutable spec
//! ([`verify`]: what a reviewer reads is what the digest approves); when
//! even that would not fit a ConfigMap, a preview cut at [`INLINE_LIMIT`]
//! ending in a `# truncated: ...` line, with `truncated: true`. Never
//! executed: the host recomputes the effects to execute them.
//!
//! The text is YAML: one entry per change in the digest's canonical order
//! and form (`digest::effect`), so a generated Secret shows its keys and
//! their lengths and never a value (there is none yet).

use std::io::{Read as _, Write as _};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::contract::model::Change;
use crate::plan::digest::effect;

/// Effects up to this many bytes of text are inline in the plan.
pub(crate) const INLINE_LIMIT: usize = 32 * 1024;
/// Gzipped effects up to this many bytes go in a ConfigMap (its limit is
/// 1 MiB, base64 adds a third).
pub(crate) const CONFIG_MAP_LIMIT: usize = 700 * 1024;
/// The ConfigMap key holding the gzipped effects.
pub(crate) const CONFIG_MAP_KEY: &str = "effects.yaml.gz";

/// Where a plan's effects are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Artifact {
    Inline(String),
    /// Gzipped, for the ConfigMap `<plan>-effects`, and the SHA-256 of
    /// the text (lowercase hex), recorded in the plan's spec.
    ConfigMap {
        gz: Vec<u8>,
        sha256: String,
    },
    /// The start of the text, and a line saying it is cut.
    Preview(String),
}

/// How many changes of each sort a plan holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub applies: usize,
    pub deletions: usize,
    pub generated: usize,
}

impl Counts {
    pub fn of(changes: &[Change]) -> Counts {
        let mut counts = Counts::default();
        for change in changes {
            match change {
                Change::Delete { .. } => counts.deletions += 1,
                Change::Generate { .. } | Change::Certificate { .. } => counts.generated += 1,
                Change::Apply { .. } | Change::Bundle { .. } => counts.applies += 1,
            }
        }
        counts
    }

    pub fn to_json(self) -> Value {
        json!({"applies": self.applies, "deletions": self.deletions, "generated": self.generated})
    }

    /// "2 applies, 1 deletion, 0 generated".
    pub fn summary(self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{}, {}, {} generated",
            plural(self.applies, "apply", "applies"),
            plural(self.deletions, "deletion", "deletions"),
            self.generated
        )
    }
}

/// The effects of `changes` as text: YAML, canonical order.
pub fn text(changes: &[Change]) -> String {
    let mut effects: Vec<Value> = changes.iter().map(effect).collect();
    effects.sort_by(|a, b| {
        let key = |e: &Value| (e["kind"].to_string(), e["name"].to_string());
        key(a).cmp(&key(b))
    });
    serde_yaml::to_string(&effects).unwrap_or_default()
}

/// The artifact of `changes`.
pub fn artifact(changes: &[Change]) -> Artifact {
    let text = text(changes);
    if text.len() <= INLINE_LIMIT {
        return Artifact::Inline(text);
    }
    let gz = gzip(text.as_bytes());
    if gz.len() <= CONFIG_MAP_LIMIT {
        return Artifact::ConfigMap {
            gz,
            sha256: sha256(text.as_bytes()),
        };
    }
    let mut cut = INLINE_LIMIT - 200;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut preview = text[..cut].to_owned();
    preview.push_str(&format!(
        "\n# truncated: {} of {} bytes shown; the whole effects did not fit a ConfigMap\n",
        cut,
        text.len()
    ));
    Artifact::Preview(preview)
}

/// The artifact of a record of changes made without review (withdrawals,
/// what a plan deleted while Applying made): inline, or a preview (the
/// counts) where that is too large, never a ConfigMap (no one reviews it).
pub fn recorded(changes: &[Change]) -> Artifact {
    match artifact(changes) {
        Artifact::ConfigMap { .. } => Artifact::Preview(Counts::of(changes).summary()),
        other => other,
    }
}

/// The name of the ConfigMap holding the effects of plan `plan`.
pub fn config_map_name(plan: &str) -> String {
    format!("{plan}-effects")
}

impl Artifact {
    /// `spec.effects` of a plan named `plan`.
    pub fn spec(&self, plan: &str) -> Value {
        match self {
            Artifact::Inline(text) => json!({"inline": text}),
            Artifact::ConfigMap { sha256, .. } => json!({"configMapRef": {
                "name": config_map_name(plan),
                "key": CONFIG_MAP_KEY,
                "sha256": sha256,
            }}),
            Artifact::Preview(text) => json!({"preview": text, "truncated": true}),
        }
    }
}

/// Why a plan's ConfigMap does not hold the effects its spec names.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("the plan names no SHA-256 of its effects (made before artifacts were bound)")]
    Unbound,
    #[error("ConfigMap {0} is gone")]
    Missing(String),
    #[error("ConfigMap {0} has no key {1}")]
    NoKey(String, String),
    #[error("ConfigMap {0}, key {1}, is not gzipped text: {2}")]
    Unreadable(String, String, String),
    #[error(
        "ConfigMap {name} holds effects of SHA-256 {found}, not the {expected} the plan records: \
         it was changed after the plan was made"
    )]
    Mismatch {
        name: String,
        expected: String,
        found: String,
    },
}

/// The effects text in `config_map` (as the API serves it) when it is
/// the one the plan's `spec.effects.configMapRef` (`reference`) records.
pub fn verify(reference: &Value, config_map: &Value) -> Result<String, ArtifactError> {
    use base64::Engine as _;
    let name = config_map["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let key = reference["key"]
        .as_str()
        .unwrap_or(CONFIG_MAP_KEY)
        .to_owned();
    let expected = reference["sha256"]
        .as_str()
        .ok_or(ArtifactError::Unbound)?
        .to_owned();
    let encoded = config_map["binaryData"][&key]
        .as_str()
        .ok_or_else(|| ArtifactError::NoKey(name.clone(), key.clone()))?;
    let unreadable = |e: String| ArtifactError::Unreadable(name.clone(), key.clone(), e);
    let gz = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| unreadable(e.to_string()))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .map_err(|e| unreadable(e.to_string()))?;
    let found = sha256(text.as_bytes());
    if found != expected {
        return Err(ArtifactError::Mismatch {
            name,
            expected,
            found,
        });
    }
    Ok(text)
}

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .expect("gzip into memory cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::model::config_map_kind;

    fn config_map(name: &str, size: usize, seed: u64) -> Change {
        // Text that compresses poorly when `seed` varies per line.
        let data: String = (0..size / 16)
            .map(|i| {
                format!(
                    "{:015x}\n",
                    (i as u64 + seed).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                )
            })
            .collect();
        Change::Apply {
            kind: config_map_kind(),
            name: name.into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"d": data}}),
        }
    }

    #[test]
    fn small_effects_are_inline_and_never_show_a_secret_value() {
        let changes = vec![
            Change::Generate {
                name: "creds".into(),
                keys: vec![("password".into(), 32)],
            },
            config_map("b", 32, 0),
        ];
        let Artifact::Inline(text) = artifact(&changes) else {
            panic!("inline expected");
        };
        assert!(text.contains("op: generate"), "{text}");
        assert!(text.contains("password: 32"), "{text}");
        assert!(
            text.find("name: b").unwrap() < text.find("name: creds").unwrap(),
            "canonical order (kind, then name): ConfigMap before Secret\n{text}"
        );
        assert_eq!(
            Counts::of(&changes).summary(),
            "1 apply, 0 deletions, 1 generated"
        );
    }

    #[test]
    fn larger_effects_are_gzipped_for_a_configmap_bound_by_their_hash() {
        use base64::Engine as _;
        let changes = vec![config_map("big", 100 * 1024, 0)];
        let artifact = artifact(&changes);
        let Artifact::ConfigMap { gz, sha256 } = &artifact else {
            panic!("a ConfigMap expected");
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut text)
            .expect("gzip");
        assert_eq!(text, super::text(&changes));
        let reference = artifact.spec("p-1")["configMapRef"].clone();
        assert_eq!(
            reference,
            json!({"name": "p-1-effects", "key": "effects.yaml.gz", "sha256": sha256})
        );
        let stored = |gz: &[u8]| {
            json!({"metadata": {"name": "p-1-effects"}, "binaryData": {
                CONFIG_MAP_KEY: base64::engine::general_purpose::STANDARD.encode(gz)}})
        };
        assert_eq!(verify(&reference, &stored(gz)), Ok(text.clone()));
        // A forged text (what a reviewer would read) is told apart.
        let forged = super::gzip(text.replacen("big", "small", 1).as_bytes());
        assert!(matches!(
            verify(&reference, &stored(&forged)),
            Err(ArtifactError::Mismatch { .. })
        ));
        let unbound = json!({"name": "p-1-effects", "key": "effects.yaml.gz"});
        assert_eq!(verify(&unbound, &stored(gz)), Err(ArtifactError::Unbound));
    }

    #[test]
    fn effects_too_large_even_gzipped_are_a_truncated_preview() {
        let changes: Vec<Change> = (0..3)
            .map(|i| config_map(&format!("huge-{i}"), 1024 * 1024, i * 1_000_003))
            .collect();
        let Artifact::Preview(preview) = artifact(&changes) else {
            panic!("a preview expected");
        };
        assert!(preview.len() <= INLINE_LIMIT);
        assert!(
            preview
                .trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("# truncated: "),
            "{}",
            &preview[preview.len() - 200..]
        );
        assert_eq!(
            Artifact::Preview(preview.clone()).spec("p")["truncated"],
            true
        );
    }
}
