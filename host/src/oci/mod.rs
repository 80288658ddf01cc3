//! Guest modules in OCI registries: published by `reconciler-host push` in
//! the CNCF TAG Runtime layout of a wasm artifact ([`layout`]) with the
//! golden lists and fixtures a guests directory keeps beside them; pulled
//! by digest (a tag is resolved once and the pull pinned to it), the
//! contract checked from the artifact's config before the component is
//! downloaded, each pull kept in a local cache by digest ([`cache`]).

pub mod cache;
pub mod layout;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

pub use cache::ModuleCache;
use layout::{CONFIG_MEDIA_TYPE, Packaged, WasmConfig};

use crate::runtime::LoadError;
use crate::runtime::module::check_import_names;

/// Why a push or a pull failed. Only `Registry` is worth retrying (the
/// registry unreachable, or answering an error); the others name what is
/// wrong with the reference, the artifact or a local file.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{reference:?} is not an OCI reference: {detail}")]
    Reference { reference: String, detail: String },
    #[error("{reference}: a module is pushed to a tag (its digest is the registry's answer)")]
    PushByDigest { reference: String },
    #[error("{reference}: {what}: {source}")]
    Registry {
        reference: String,
        what: &'static str,
        #[source]
        source: Box<OciDistributionError>,
    },
    #[error("{reference} is not a guest module: {why}")]
    NotAModule { reference: String, why: String },
    #[error(
        "{reference} cannot be served by this host (read from its config, nothing downloaded): {source}"
    )]
    Contract {
        reference: String,
        #[source]
        source: Box<LoadError>,
    },
    #[error("not a WebAssembly component: {detail}")]
    NotAComponent { detail: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A module pulled: the reference pinned to its manifest's digest, and
/// the module with its files.
#[derive(Debug)]
pub struct Pulled {
    pub pinned: Reference,
    pub module: Packaged,
    /// Read from the local cache, not the registry.
    pub cached: bool,
}

/// A client of OCI registries.
pub struct Remote {
    client: Client,
    auth: RegistryAuth,
}

impl Remote {
    /// A client of registries over HTTPS, but those named in `insecure`
    /// (`host:port`, a registry on loopback) over plain HTTP. Anonymous.
    pub fn new(insecure: Vec<String>) -> Self {
        // The TLS provider kube's rustls already uses (the registry client
        // is built without one of its own), for callers other than the
        // binary, which installs it first thing.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let protocol = if insecure.is_empty() {
            ClientProtocol::Https
        } else {
            ClientProtocol::HttpsExcept(insecure)
        };
        Remote {
            client: Client::new(ClientConfig {
                protocol,
                ..ClientConfig::default()
            }),
            auth: RegistryAuth::Anonymous,
        }
    }

    /// Pushes `module` to the tag `reference`; returns the reference pinned
    /// to the digest of the manifest the registry stored.
    pub async fn push(&self, module: &Packaged, reference: &str) -> Result<Reference, OciError> {
        let parsed = parse(reference)?;
        if parsed.digest().is_some() {
            return Err(OciError::PushByDigest {
                reference: reference.to_owned(),
            });
        }
        let (layers, config) = module.artifact(created())?;
        let registry = |what| {
            move |source| OciError::Registry {
                reference: reference.to_owned(),
                what,
                source: Box::new(source),
            }
        };
        self.client
            .push(&parsed, &layers, config, &self.auth, None)
            .await
            .map_err(registry("pushing"))?;
        let digest = self
            .client
            .fetch_manifest_digest(&parsed, &self.auth)
            .await
            .map_err(registry("reading back the digest pushed"))?;
        Ok(parsed.clone_with_digest(digest))
    }

    /// Pulls the module `reference` names: a tag is resolved to its
    /// digest once, and everything after is read by that digest; a digest
    /// the cache keeps reads no registry. The config is checked (a guest
    /// module, of a contract this host serves) before the component is
    /// downloaded; what is downloaded is checked against its digest and
    /// kept in `cache`.
    pub async fn pull(&self, reference: &str, cache: &ModuleCache) -> Result<Pulled, OciError> {
        let parsed = parse(reference)?;
        let registry = |what| {
            move |source| OciError::Registry {
                reference: reference.to_owned(),
                what,
                source: Box::new(source),
            }
        };
        let digest = match parsed.digest() {
            Some(digest) => digest.to_owned(),
            None => self
                .client
                .fetch_manifest_digest(&parsed, &self.auth)
                .await
                .map_err(registry("resolving the tag"))?,
        };
        let pinned = parsed.clone_with_digest(digest.clone());
        if let Some(module) = cache.get(&digest) {
            return Ok(Pulled {
                pinned,
                module,
                cached: true,
            });
        }
        let not_a_module = |why: String| OciError::NotAModule {
            reference: pinned.to_string(),
            why,
        };
        let (manifest, _, config) = self
            .client
            .pull_manifest_and_config(&pinned, &self.auth)
            .await
            .map_err(registry("reading its manifest and config"))?;
        if manifest.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(not_a_module(format!(
                "its config is {}, not {CONFIG_MEDIA_TYPE}",
                manifest.config.media_type
            )));
        }
        let config: WasmConfig = serde_json::from_str(&config)
            .map_err(|e| not_a_module(format!("its config cannot be read: {e}")))?;
        let names = config
            .component
            .ok_or_else(|| not_a_module("its config names no component".into()))?;
        if !names
            .exports
            .iter()
            .any(|e| e.starts_with("reconciler:guest/"))
        {
            return Err(not_a_module(format!(
                "its component exports no reconciler:guest interface ({})",
                names.exports.join(", ")
            )));
        }
        check_import_names(&pinned.to_string(), names.imports).map_err(|source| {
            OciError::Contract {
                reference: pinned.to_string(),
                source: Box::new(source),
            }
        })?;
        let layers = layout::layers(&manifest).map_err(not_a_module)?;
        let blob = async |layer| {
            let mut bytes = Vec::new();
            self.client
                .pull_blob(&pinned, layer, &mut bytes)
                .await
                .map(|()| bytes)
        };
        let wasm = blob(layers.wasm)
            .await
            .map_err(registry("downloading the component"))?;
        let mut files = Vec::new();
        for (name, layer) in layers.files {
            let bytes = blob(layer)
                .await
                .map_err(registry("downloading a file beside the component"))?;
            files.push((name, bytes));
        }
        files.sort();
        let module = Packaged { wasm, files };
        cache.put(&digest, &module)?;
        Ok(Pulled {
            pinned,
            module,
            cached: false,
        })
    }
}

fn parse(reference: &str) -> Result<Reference, OciError> {
    reference.parse().map_err(|e| OciError::Reference {
        reference: reference.to_owned(),
        detail: format!("{e}"),
    })
}

/// The artifact's creation time: `SOURCE_DATE_EPOCH` when set (the same
/// module then pushes the same digest), else now.
fn created() -> String {
    let at = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or_else(jiff::Timestamp::now);
    reconciler_conventions::status::rfc3339_seconds(at)
}
