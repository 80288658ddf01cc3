//! Registry credentials, read from a Docker config file (`config.json`,
//! the file `docker login`, podman, crane, oras and cosign read and write,
//! and the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson`
//! Secret): per registry, a username and password (`auth`, or `username`
//! and `password`) or a registry token. Credential helpers are not run.
//! A secret is never printed: errors name the file and the registry only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// Why a config file cannot be used. None is retryable: the file is wrong.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("registry credentials {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("registry credentials {}: not a Docker config file: {detail}", path.display())]
    Parse { path: PathBuf, detail: String },
    #[error("registry credentials {}, registry {registry}: {why}", path.display())]
    Entry {
        path: PathBuf,
        registry: String,
        why: &'static str,
    },
}

/// The file as written (the fields this host reads).
#[derive(Deserialize)]
struct Written {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    registrytoken: Option<String>,
}

/// The credentials for each registry (`host[:port]`); a registry not
/// named is reached anonymously.
#[derive(Clone, Default)]
pub struct Credentials {
    by_registry: BTreeMap<String, RegistryAuth>,
    /// The file read, if any.
    file: Option<PathBuf>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.by_registry.keys()).finish()
    }
}

impl Credentials {
    /// None: every registry anonymous.
    pub fn anonymous() -> Self {
        Credentials::default()
    }

    /// The file Docker's tools read when none is named:
    /// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
    pub fn default_file() -> Option<PathBuf> {
        match std::env::var_os("DOCKER_CONFIG") {
            Some(dir) => Some(PathBuf::from(dir).join("config.json")),
            None => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".docker").join("config.json")),
        }
    }

    /// Reads the config file at `path`.
    pub fn read(path: &Path) -> Result<Self, CredentialsError> {
        let bytes = std::fs::read(path).map_err(|source| CredentialsError::Io {
            path: path.to_owned(),
            source,
        })?;
        let written: Written =
            serde_json::from_slice(&bytes).map_err(|e| CredentialsError::Parse {
                path: path.to_owned(),
                detail: format!("{e}"),
            })?;
        let mut by_registry = BTreeMap::new();
        for (key, entry) in written.auths {
            let wrong = |why| CredentialsError::Entry {
                path: path.to_owned(),
                registry: key.clone(),
                why,
            };
            let auth = if let Some(token) = entry.registrytoken {
                RegistryAuth::Bearer(token)
            } else if let Some(encoded) = entry.auth.filter(|a| !a.is_empty()) {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .ok()
                    .and_then(|d| String::from_utf8(d).ok())
                    .ok_or_else(|| wrong("its auth is not base64 of username:password"))?;
                let (user, password) = decoded
                    .split_once(':')
                    .ok_or_else(|| wrong("its auth is not base64 of username:password"))?;
                RegistryAuth::Basic(user.to_owned(), password.to_owned())
            } else {
                match (entry.username, entry.password) {
                    (Some(user), Some(password)) => RegistryAuth::Basic(user, password),
                    _ => {
                        return Err(wrong(
                            "it gives no auth, username and password, or registrytoken",
                        ));
                    }
                }
            };
            by_registry.insert(registry_of(&key), auth);
        }
        Ok(Credentials {
            by_registry,
            file: Some(path.to_owned()),
        })
    }

    /// Which credentials `registry` is sent, in words (never the secret).
    pub fn describe(&self, registry: &str) -> String {
        let file = match &self.file {
            None => return "sent anonymously: no registry config file (--registry-config)".into(),
            Some(file) => file.display(),
        };
        match self.for_registry(registry) {
            RegistryAuth::Anonymous => format!("sent anonymously: {file} names no {registry}"),
            RegistryAuth::Basic(user, _) => {
                format!("sent as {user}, the credentials {file} gives {registry}")
            }
            RegistryAuth::Bearer(_) => format!("sent the registry token {file} gives {registry}"),
        }
    }

    /// The credentials for `registry` (as a reference resolves it).
    pub fn for_registry(&self, registry: &str) -> RegistryAuth {
        self.by_registry
            .get(&registry_of(registry))
            .cloned()
            .unwrap_or(RegistryAuth::Anonymous)
    }
}

/// A config file's key as a registry's `host[:port]`: without a scheme or
/// a path, Docker Hub's names as one.
fn registry_of(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key);
    match host {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "index.docker.io".into(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Credentials, CredentialsError> {
        let path = std::env::temp_dir().join(format!(
            "oci-credentials-{}-{}.json",
            std::process::id(),
            json.len()
        ));
        std::fs::write(&path, json).unwrap();
        let read = Credentials::read(&path);
        let _ = std::fs::remove_file(&path);
        read
    }

    fn basic(auth: RegistryAuth) -> Option<(String, String)> {
        match auth {
            RegistryAuth::Basic(user, password) => Some((user, password)),
            _ => None,
        }
    }

    #[test]
    fn each_registry_gets_its_own_and_others_none() {
        let credentials = read(
            r#"{"auths": {
                "127.0.0.1:5000": {"auth": "YWxpY2U6czNjcjN0"},
                "https://registry.example/v2/": {"username": "bob", "password": "pw"},
                "https://index.docker.io/v1/": {"auth": "Y2Fyb2w6eA=="},
                "tokens.example": {"registrytoken": "t0k"}
              }, "credsStore": "desktop"}"#,
        )
        .unwrap();
        let pair = |u: &str, p: &str| Some((u.to_owned(), p.to_owned()));
        assert_eq!(
            basic(credentials.for_registry("127.0.0.1:5000")),
            pair("alice", "s3cr3t")
        );
        assert_eq!(
            basic(credentials.for_registry("registry.example")),
            pair("bob", "pw")
        );
        assert_eq!(
            basic(credentials.for_registry("docker.io")),
            pair("carol", "x")
        );
        assert!(matches!(
            credentials.for_registry("tokens.example"),
            RegistryAuth::Bearer(t) if t == "t0k"
        ));
        assert!(matches!(
            credentials.for_registry("127.0.0.1:5001"),
            RegistryAuth::Anonymous
        ));
        let listed = format!("{credentials:?}");
        assert!(
            !listed.contains("s3cr3t") && !listed.contains("pw\""),
            "{listed}"
        );
    }

    #[test]
    fn an_entry_that_cannot_be_used_is_named_without_its_secret() {
        for (json, expected) in [
            (
                r#"{"auths": {"r.example": {"auth": "not base64 s3cr3t"}}}"#,
                "registry r.example: its auth is not base64 of username:password",
            ),
            (
                r#"{"auths": {"r.example": {"username": "s3cr3t"}}}"#,
                "registry r.example: it gives no auth, username and password, or registrytoken",
            ),
            (r#"{"auths": ["#, "not a Docker config file"),
        ] {
            let error = read(json).expect_err(json).to_string();
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains("s3cr3t"), "{error}");
            assert!(error.starts_with("registry credentials "), "{error}");
        }
    }
}
