//! The compiled-artifact cache: a module is compiled once per digest and
//! engine configuration, and later loads deserialize the artifact.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The hex SHA-256 of a module's bytes: its identity.
pub fn digest(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(bytes) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A directory of precompiled components.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache { dir: dir.into() }
    }

    /// `$XDG_CACHE_HOME/reconciler-host/modules`, or under `~/.cache`.
    pub(crate) fn default_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|base| base.join("reconciler-host").join("modules"))
    }

    /// The artifact's path: the module digest and the engine's
    /// compatibility hash (wasmtime version, features, settings).
    pub fn path_for(&self, engine: &Engine, digest: &str) -> PathBuf {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        self.dir.join(format!("{digest}-{:016x}.cwasm", h.finish()))
    }

    /// Loads the component from the cache, compiling and storing it on a
    /// miss. A corrupt or incompatible artifact is replaced.
    #[allow(unsafe_code)]
    pub fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        let path = self.path_for(engine, digest);
        if path.is_file() {
            // SAFETY: the file is one this cache wrote, named by the
            // digest of its source and the engine's compatibility hash, in
            // a directory only the host writes. wasmtime checks the
            // artifact's header against the engine before using it.
            if let Ok(c) = unsafe { Component::deserialize_file(engine, &path) } {
                return Ok((c, true));
            }
        }
        let component = Component::new(engine, bytes)?;
        self.store(&path, &component.serialize()?);
        Ok((component, false))
    }

    /// Writes atomically (a temporary file renamed into place). A failure
    /// to write only costs a later recompile, so it is logged, not raised.
    fn store(&self, path: &Path, artifact: &[u8]) {
        let result = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, artifact)?;
            std::fs::rename(&tmp, path)
        });
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "cannot store the compiled artifact");
        }
    }
}
