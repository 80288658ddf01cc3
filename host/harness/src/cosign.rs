//! The real cosign, run by the Go program `tests/cosign` (its module's
//! command, built once per test binary): key pairs, and signatures of
//! modules pushed to a registry on loopback. Keyed and offline: nothing
//! is written to a transparency log.

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
        let dir = self.private.parent().expect("the key's directory");
        cosign(
            dir,
            &[
                "sign",
                "--key",
                self.private.to_str().expect("a UTF-8 path"),
                "--tlog-upload=false",
                "--allow-http-registry",
                "--allow-insecure-registry",
                "--yes",
                reference,
            ],
        );
    }
}
