//! The pulled modules kept on disk by the digest of their artifact's
//! manifest: a pull by a digest already kept reads no registry, and a
//! module whose registry is gone still serves from here. Bounded in
//! bytes: past the bound, the modules read longest ago go first.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::OciError;
use super::layout::Packaged;
use crate::disk_bound;
use crate::runtime::artifacts;

/// A directory of pulled modules, one folder per manifest digest.
#[derive(Clone, Debug)]
pub struct ModuleCache {
    dir: PathBuf,
    /// The most it keeps, in bytes (the module kept last is kept whatever
    /// its size).
    max_bytes: u64,
}

/// The bound of a cache unless told (1 GiB: a thousand Rust guests, or
/// eighty JavaScript ones).
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// The record of a kept module, written last and touched on every read
/// (its modification time is when the module was last read).
const RECORD: &str = "kept.json";

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
        ModuleCache {
            dir,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Keeping at most `max_bytes`.
    pub fn bounded(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
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
        let record = folder.join(RECORD);
        let kept: Kept = serde_json::from_slice(&std::fs::read(&record).ok()?).ok()?;
        let wasm = std::fs::read(folder.join("module.wasm")).ok()?;
        if artifacts::digest(&wasm) != kept.wasm {
            return None;
        }
        let mut files = Vec::new();
        for (i, name) in kept.files.into_iter().enumerate() {
            files.push((name, std::fs::read(folder.join(format!("file-{i}"))).ok()?));
        }
        // Read now: the last to go when the cache is over its bound.
        disk_bound::mark_read(&record);
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
        let record = folder.join(RECORD);
        let temporary = folder.join(".kept.json.tmp");
        std::fs::write(&temporary, serde_json::to_vec(&kept).expect("JSON"))
            .map_err(io(&temporary))?;
        std::fs::rename(&temporary, &record).map_err(io(&record))?;
        self.evict(&folder);
        Ok(())
    }

    /// Removes the modules read longest ago until the cache is within its
    /// bound, never `keep` (the one just kept).
    fn evict(&self, keep: &Path) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let folders = entries
            .flatten()
            .filter_map(|entry| {
                let path = entry.path();
                let read = std::fs::metadata(path.join(RECORD)).ok()?.modified().ok()?;
                Some(disk_bound::CacheEntry {
                    read,
                    bytes: size(&path),
                    path,
                })
            })
            .collect();
        disk_bound::evict("pulled modules", folders, self.max_bytes, keep, |path| {
            std::fs::remove_dir_all(path)
        });
    }
}

/// The bytes of the files in `folder`.
fn size(folder: &Path) -> u64 {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
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

    #[test]
    fn past_its_bound_the_module_read_longest_ago_goes_first() {
        let dir = std::env::temp_dir().join(format!("oci-cache-bound-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let module = |byte: u8| Packaged {
            wasm: vec![byte; 1000],
            files: Vec::new(),
        };
        // Room for two modules (each 1000 bytes and its record), not three.
        let cache = ModuleCache::new(dir.clone()).bounded(2500);
        let at = |digest: &str, seconds: u64| {
            let record = dir.join(digest.replace(':', "-")).join(RECORD);
            let file = std::fs::File::options().append(true).open(record).unwrap();
            file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
                .unwrap();
        };
        cache.put("sha256:a", &module(1), None).unwrap();
        at("sha256:a", 100);
        cache.put("sha256:b", &module(2), None).unwrap();
        at("sha256:b", 200);
        // a is read after b was kept: b is now the one read longest ago.
        assert!(cache.get("sha256:a").is_some());
        cache.put("sha256:c", &module(3), None).unwrap();
        assert!(cache.get("sha256:b").is_none(), "read longest ago");
        assert!(cache.get("sha256:a").is_some());
        assert!(cache.get("sha256:c").is_some());
        // A module bigger than the bound is kept alone, whatever its size.
        let tight = ModuleCache::new(dir.clone()).bounded(10);
        tight.put("sha256:d", &module(4), None).unwrap();
        assert!(tight.get("sha256:d").is_some());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
