//! Guest modules in OCI registries: published by `reconciler-host push` in
//! the CNCF TAG Runtime layout of a wasm artifact ([`layout`]) with the
//! golden lists and fixtures a guests directory keeps beside them; pulled
//! by digest (a tag is resolved once and the pull pinned to it), the
//! contract checked from the artifact's config before the component is
//! downloaded, each pull kept in a local cache by digest ([`cache`]);
//! under a verification policy ([`policy`]), its cosign signatures
//! checked before anything is downloaded ([`signatures`]); its size bounded
//! from its manifest first, and every blob read within it ([`bounded`]).

pub mod bounded;
pub mod bundles;
pub mod cache;
pub mod certificates;
pub mod credentials;
pub mod keys;
pub mod layout;
pub mod policy;
pub mod signatures;
pub mod transparency;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use bounded::{BoundedReadError, Oversized};
pub use cache::ModuleCache;
pub use credentials::Credentials;
use layout::{CONFIG_MEDIA_TYPE, KIND, Packaged, WasmConfig};
pub use policy::Policy;
use signatures::Unverified;

use crate::runtime::LoadError;
use crate::runtime::module::check_import_names;

/// Why a push or a pull failed. `Registry` is worth retrying (the
/// registry unreachable, or answering an error), and `Unverified` when
/// its signatures could not be read; the others name what is wrong with
/// the reference, the artifact, its signatures or a local file.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("{reference:?} is not an OCI reference: {detail}")]
    Reference { reference: String, detail: String },
    #[error("{reference}: a module is pushed to a tag (its digest is the registry's answer)")]
    PushByDigest { reference: String },
    #[error("{reference}: {what}: {source}{refused}")]
    Registry {
        reference: String,
        what: &'static str,
        #[source]
        source: Box<OciDistributionError>,
        /// When the registry refused the credentials: which were sent.
        refused: String,
    },
    #[error("{reference} is not a guest module: {why}")]
    NotAModule { reference: String, why: String },
    /// Larger than a guest module may be, as its manifest says or as the
    /// registry sends it.
    #[error("{reference} is too large to serve: {source}")]
    TooLarge {
        reference: String,
        #[source]
        source: Oversized,
    },
    #[error(
        "{reference} cannot be served by this host (read from its config, nothing downloaded): {source}"
    )]
    Contract {
        reference: String,
        #[source]
        source: Box<LoadError>,
    },
    #[error("{reference} is refused by the verification policy {policy} for kind {kind}: {source}")]
    Unverified {
        reference: String,
        kind: String,
        policy: String,
        #[source]
        source: Box<Unverified>,
    },
    #[error("{reference} is refused by the verification policy {policy}: {why}")]
    NotInPolicy {
        reference: String,
        policy: String,
        why: String,
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
    /// The kind it was published to serve (the manifest's annotation),
    /// if it says.
    pub kind: Option<String>,
    /// The keys that signed it, of those its kind's rule names.
    pub signers: Vec<String>,
    /// Read from the local cache, not the registry.
    pub cached: bool,
}

/// A client of OCI registries.
pub struct Remote {
    client: Client,
    credentials: Credentials,
}

impl Remote {
    /// A client of registries over HTTPS, but those named in `insecure`
    /// (`host:port`, a registry on loopback) over plain HTTP; each
    /// registry with its `credentials`, or anonymously.
    pub fn new(insecure: Vec<String>, credentials: Credentials) -> Self {
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
            credentials,
        }
    }

    /// Pushes `module`, which serves `kind`, to the tag `reference`;
    /// returns the reference pinned to the digest of the manifest the
    /// registry stored.
    pub async fn push(
        &self,
        module: &Packaged,
        kind: &str,
        reference: &str,
    ) -> Result<Reference, OciError> {
        let parsed = parse(reference)?;
        if parsed.digest().is_some() {
            return Err(OciError::PushByDigest {
                reference: reference.to_owned(),
            });
        }
        let (layers, config, manifest) = module.artifact(created(), kind)?;
        let registry = |what| move |source| self.registry_error(reference, what, source);
        self.client
            .push(
                &parsed,
                &layers,
                config,
                &self.auth(&parsed),
                Some(manifest),
            )
            .await
            .map_err(registry("pushing"))?;
        let digest = self
            .client
            .fetch_manifest_digest(&parsed, &self.auth(&parsed))
            .await
            .map_err(registry("reading back the digest pushed"))?;
        Ok(parsed.clone_with_digest(digest))
    }

    /// Pulls the module `reference` names: a tag is resolved to its
    /// digest once, and everything after is read by that digest; a digest
    /// the cache keeps reads no registry. The sizes its manifest gives are
    /// bounded before anything else is read, and no blob is read past its
    /// size. The config is checked (a guest module, of a contract this
    /// host serves) before the component is downloaded; what is downloaded
    /// is checked against its digest and kept in `cache`. Under a
    /// `policy`, the signatures its kind's rule asks for are checked
    /// before the config is read (a kind the policy does not name is
    /// refused), from the registry even when the cache keeps the module.
    pub async fn pull(
        &self,
        reference: &str,
        cache: &ModuleCache,
        policy: Option<&Policy>,
    ) -> Result<Pulled, OciError> {
        let parsed = parse(reference)?;
        let registry = |what| move |source| self.registry_error(reference, what, source);
        let digest = match parsed.digest() {
            Some(digest) => digest.to_owned(),
            None => self
                .client
                .fetch_manifest_digest(&parsed, &self.auth(&parsed))
                .await
                .map_err(registry("resolving the tag"))?,
        };
        let pinned = parsed.clone_with_digest(digest.clone());
        if let Some((module, kind)) = cache.get(&digest) {
            let signers = self.verify(&pinned, kind.as_deref(), policy).await?;
            return Ok(Pulled {
                pinned,
                module,
                kind,
                signers,
                cached: true,
            });
        }
        let not_a_module = |why: String| OciError::NotAModule {
            reference: pinned.to_string(),
            why,
        };
        let too_large = |source| OciError::TooLarge {
            reference: pinned.to_string(),
            source,
        };
        let (manifest, _) = self
            .client
            .pull_image_manifest(&pinned, &self.auth(&pinned))
            .await
            .map_err(registry("reading its manifest"))?;
        if manifest.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(not_a_module(format!(
                "its config is {}, not {CONFIG_MEDIA_TYPE}",
                manifest.config.media_type
            )));
        }
        bounded::check(&manifest).map_err(too_large)?;
        let kind = manifest
            .annotations
            .as_ref()
            .and_then(|a| a.get(KIND))
            .cloned();
        let signers = self.verify(&pinned, kind.as_deref(), policy).await?;
        let blob = async |layer, what: &str, reading: &'static str| {
            bounded::read(&self.client, &pinned, layer, what)
                .await
                .map_err(|error| match error {
                    BoundedReadError::Registry { source } => {
                        self.registry_error(reference, reading, source)
                    }
                    BoundedReadError::Oversized(oversized) => too_large(oversized),
                })
        };
        let config = blob(&manifest.config, "its config", "reading its config").await?;
        let config: WasmConfig = serde_json::from_slice(&config)
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
        let wasm = blob(layers.wasm, "the component", "downloading the component").await?;
        let mut files = Vec::new();
        for (name, layer) in layers.files {
            let what = format!("the file {name}");
            let bytes = blob(layer, &what, "downloading a file beside the component").await?;
            files.push((name, bytes));
        }
        files.sort();
        let module = Packaged { wasm, files };
        cache.put(&digest, &module, kind.as_deref())?;
        Ok(Pulled {
            pinned,
            module,
            kind,
            signers,
            cached: false,
        })
    }

    /// A registry's error; when it refused the credentials, saying which
    /// were sent (never the secret).
    fn registry_error(
        &self,
        reference: &str,
        what: &'static str,
        source: OciDistributionError,
    ) -> OciError {
        let status = match &source {
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_) => Some(401),
            OciDistributionError::ServerError { code, .. } => Some(*code),
            _ => None,
        };
        let refused = match status {
            Some(401 | 403) => {
                let registry = parse(reference)
                    .map(|r| r.resolve_registry().to_owned())
                    .unwrap_or_default();
                format!(" ({})", self.credentials.describe(&registry))
            }
            _ => String::new(),
        };
        OciError::Registry {
            reference: reference.to_owned(),
            what,
            source: Box::new(source),
            refused,
        }
    }

    /// The credentials for `reference`'s registry.
    fn auth(&self, reference: &Reference) -> RegistryAuth {
        self.credentials.for_registry(reference.resolve_registry())
    }

    /// Checks `pinned`, published for `kind`, against `policy`: its
    /// kind's rule, if the policy names the kind. Returns the keys that
    /// signed it.
    async fn verify(
        &self,
        pinned: &Reference,
        kind: Option<&str>,
        policy: Option<&Policy>,
    ) -> Result<Vec<String>, OciError> {
        let Some(policy) = policy else {
            return Ok(Vec::new());
        };
        let refused = |why: String| OciError::NotInPolicy {
            reference: pinned.to_string(),
            policy: policy.path().display().to_string(),
            why,
        };
        let kind = kind.ok_or_else(|| {
            refused(format!(
                "its manifest does not say which kind it serves ({KIND}); push it again"
            ))
        })?;
        let rule = policy
            .rule(kind)
            .ok_or_else(|| refused(format!("the policy names no kind {kind}")))?;
        signatures::check(&self.client, &self.auth(pinned), pinned, rule)
            .await
            .map_err(|source| OciError::Unverified {
                reference: pinned.to_string(),
                kind: kind.to_owned(),
                policy: policy.path().display().to_string(),
                source: Box::new(source),
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
