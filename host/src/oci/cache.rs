//! The pulled modules kept on disk by the digest of their artifact's
//! manifest: a pull by a digest already kept reads no registry, and a
//! module whose registry is gone still serves from here.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::OciError;
use super::layout::Packaged;
use crate::runtime::artifacts;

/// A directory of pulled modules, one folder per manifest digest.
#[derive(Clone, Debug)]
pub struct ModuleCache {
    dir: PathBuf,
}

/// What the cache keeps of a pulled artifact beside its files.
#[derive(Deserialize, Serialize)]
struct Kept {
    /// The hex SHA-256 of the component, checked on every read.
    wasm: String,
    files: Vec<String>,
    /// The kind the manifest said it serves.
    #[serde(default)]
    kind: Option<String>,
}

impl ModuleCache {
    pub fn new(dir: PathBuf) -> Self {
        ModuleCache { dir }
    }

    /// `~/.cache/reconciler-host/pulled` (or under `XDG_CACHE_HOME`).
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("reconciler-host").join("pulled"))
    }

    fn folder(&self, digest: &str) -> PathBuf {
        self.dir.join(digest.replace(':', "-"))
    }

    /// The module pulled as the manifest `digest` and the kind its
    /// manifest said it serves, if it is kept whole (a component whose
    /// bytes no longer match what was kept is not).
    pub fn get(&self, digest: &str) -> Option<(Packaged, Option<String>)> {
        let folder = self.folder(digest);
        let kept: Kept =
            serde_json::from_slice(&std::fs::read(folder.join("kept.json")).ok()?).ok()?;
        let wasm = std::fs::read(folder.join("module.wasm")).ok()?;
        if artifacts::digest(&wasm) != kept.wasm {
            return None;
        }
        let mut files = Vec::new();
        for (i, name) in kept.files.into_iter().enumerate() {
            files.push((name, std::fs::read(folder.join(format!("file-{i}"))).ok()?));
        }
        Some((Packaged { wasm, files }, kept.kind))
    }

    /// Keeps `module`, pulled as the manifest `digest` that says it
    /// serves `kind`: its files first, its record last, so a folder
    /// without a record is never read.
    pub fn put(&self, digest: &str, module: &Packaged, kind: Option<&str>) -> Result<(), OciError> {
        let folder = self.folder(digest);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| OciError::Io { path, source }
        };
        std::fs::create_dir_all(&folder).map_err(io(&folder))?;
        let write = |name: &str, bytes: &[u8]| {
            let path = folder.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))
        };
        write("module.wasm", &module.wasm)?;
        for (i, (_, bytes)) in module.files.iter().enumerate() {
            write(&format!("file-{i}"), bytes)?;
        }
        let kept = Kept {
            wasm: artifacts::digest(&module.wasm),
            files: module.files.iter().map(|(name, _)| name.clone()).collect(),
            kind: kind.map(str::to_owned),
        };
        let record = folder.join("kept.json");
        let temporary = folder.join(".kept.json.tmp");
        std::fs::write(&temporary, serde_json::to_vec(&kept).expect("JSON"))
            .map_err(io(&temporary))?;
        std::fs::rename(&temporary, &record).map_err(io(&record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_module_reads_back_whole_and_a_tampered_one_is_not_served() {
        let dir = std::env::temp_dir().join(format!("oci-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = ModuleCache::new(dir.clone());
        let module = Packaged {
            wasm: b"\0asm-module".to_vec(),
            files: vec![("reasons".into(), b"AsExpected\n".to_vec())],
        };
        let digest = "sha256:abc";
        assert_eq!(cache.get(digest), None);
        cache.put(digest, &module, Some("Widget")).unwrap();
        assert_eq!(cache.get(digest), Some((module, Some("Widget".into()))));
        std::fs::write(dir.join("sha256-abc/module.wasm"), b"other").unwrap();
        assert_eq!(
            cache.get(digest),
            None,
            "bytes that do not match the record"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
