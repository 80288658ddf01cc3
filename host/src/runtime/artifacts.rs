//! The compiled-artifact cache: a module is compiled once per digest and
//! engine configuration, and later loads deserialize the artifact.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::MAX_MODULE_BYTES;
use crate::disk_bound;

/// The hex SHA-256 of a module's bytes: its identity.
pub fn digest(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for b in Sha256::digest(bytes) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A directory of precompiled components, bounded in bytes.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    /// The most it keeps (the artifact stored last is kept whatever its
    /// size).
    max_bytes: u64,
}

/// The largest compiled artifact the cache loads or keeps: four times the
/// largest module (a JavaScript or Python guest's is about twice its
/// module, 36 MB of 12 to 20). One larger is compiled again, not loaded.
pub const MAX_ARTIFACT_BYTES: u64 = 4 * MAX_MODULE_BYTES;

/// The bound of a cache unless told (1 GiB: about five hundred Rust guests'
/// artifacts, or twenty-eight JavaScript or Python ones', 36 MB each).
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

impl ArtifactCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactCache {
            dir: dir.into(),
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Keeping at most `max_bytes`: past it, the artifacts loaded longest
    /// ago go first.
    pub fn bounded(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// `$XDG_CACHE_HOME/reconciler-host/modules`, or under `~/.cache`.
    pub fn default_dir() -> Option<PathBuf> {
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
    /// miss. A corrupt or incompatible artifact is replaced, and so is one
    /// larger than [`MAX_ARTIFACT_BYTES`].
    #[allow(unsafe_code)]
    pub fn load(
        &self,
        engine: &Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        let path = self.path_for(engine, digest);
        let within =
            std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_ARTIFACT_BYTES);
        if within {
            // SAFETY: the file is one this cache wrote, named by the
            // digest of its source and the engine's compatibility hash, in
            // a directory only the host writes. wasmtime checks the
            // artifact's header against the engine before using it.
            if let Ok(c) = unsafe { Component::deserialize_file(engine, &path) } {
                disk_bound::mark_read(&path);
                return Ok((c, true));
            }
        }
        let component = Component::new(engine, bytes)?;
        self.store(&path, &component.serialize()?);
        Ok((component, false))
    }

    /// Writes atomically (a temporary file renamed into place), then keeps
    /// the cache within its bound. A failure to write only costs a later
    /// recompile, so it is logged, not raised.
    fn store(&self, path: &Path, artifact: &[u8]) {
        if artifact.len() as u64 > MAX_ARTIFACT_BYTES {
            tracing::warn!(
                path = %path.display(),
                bytes = artifact.len(),
                "the compiled artifact is larger than the {} MiB the cache keeps: not stored",
                MAX_ARTIFACT_BYTES >> 20
            );
            return;
        }
        let result = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, artifact)?;
            std::fs::rename(&tmp, path)
        });
        if let Err(e) = result {
            tracing::warn!(path = %path.display(), error = %e, "cannot store the compiled artifact");
            return;
        }
        self.evict(path);
    }

    /// Removes the artifacts loaded longest ago until the cache is within
    /// its bound, never `keep` (the one just stored). Another host sharing
    /// the directory that is loading one removed compiles it again.
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let artifacts = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some(disk_bound::CacheEntry {
                    read: meta.modified().ok()?,
                    bytes: meta.len(),
                    path: e.path(),
                })
            })
            .collect();
        disk_bound::evict("compiled guests", artifacts, self.max_bytes, keep, |path| {
            std::fs::remove_file(path)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(export: &str) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(component (core module (func (export "{export}"))))"#
        ))
        .expect("a component")
    }

    #[test]
    fn past_its_bound_the_artifact_loaded_longest_ago_goes_first() {
        let dir = std::env::temp_dir().join(format!("artifact-cache-bound-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let engine = Engine::default();
        let [a, b, c] = ["a", "b", "c"].map(component);
        let path = |bytes: &[u8]| ArtifactCache::new(&dir).path_for(&engine, &digest(bytes));
        let from_cache = |cache: &ArtifactCache, bytes: &[u8]| {
            cache
                .load(&engine, bytes, &digest(bytes))
                .expect("compiled")
                .1
        };
        let loaded_at = |bytes: &[u8], seconds: u64| {
            let file = std::fs::File::options()
                .append(true)
                .open(path(bytes))
                .unwrap();
            file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
                .unwrap();
        };
        assert!(!from_cache(&ArtifactCache::new(&dir), &a), "compiled");
        let one = std::fs::metadata(path(&a)).unwrap().len();
        // Room for two artifacts (all three the same size), not three.
        let cache = ArtifactCache::new(&dir).bounded(one * 5 / 2);
        loaded_at(&a, 100);
        assert!(!from_cache(&cache, &b), "compiled");
        loaded_at(&b, 200);
        // a is loaded after b was stored: b is now the one loaded longest ago.
        assert!(from_cache(&cache, &a), "a from the cache");
        assert!(!from_cache(&cache, &c), "compiled");
        assert!(!path(&b).exists(), "loaded longest ago, removed");
        assert!(path(&a).exists() && path(&c).exists());
        // An artifact bigger than the bound is kept alone, whatever its size.
        let d = component("d");
        assert!(
            !from_cache(&ArtifactCache::new(&dir).bounded(1), &d),
            "compiled"
        );
        let kept: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(kept, [path(&d)]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An artifact in the cache larger than any module compiles to is not
    /// loaded: the module is compiled again and its artifact replaces it.
    #[test]
    fn a_cached_artifact_past_its_bound_is_compiled_again_not_loaded() {
        let dir = std::env::temp_dir().join(format!("artifact-cache-size-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let engine = Engine::default();
        let cache = ArtifactCache::new(&dir);
        let a = component("a");
        let path = cache.path_for(&engine, &digest(&a));
        let from_cache = || cache.load(&engine, &a, &digest(&a)).expect("loaded").1;
        assert!(!from_cache(), "compiled");
        let compiled = std::fs::metadata(&path).unwrap().len();
        assert!(from_cache(), "loaded from the cache");
        // Grown past the bound (sparse: no disk taken).
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(MAX_ARTIFACT_BYTES + 1)
            .unwrap();
        assert!(!from_cache(), "compiled again");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            compiled,
            "the artifact replaced"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
