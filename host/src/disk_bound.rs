//! Caches on disk kept within a bound in bytes: what was read longest ago goes first.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One entry a cache keeps: when it was last read (its modification time,
/// see [`mark_read`]), its size, and where it is.
pub(crate) struct CacheEntry {
    pub read: SystemTime,
    pub bytes: u64,
    pub path: PathBuf,
}

/// Marks `path` as read now, so it is the last to go.
pub(crate) fn mark_read(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Removes the entries read longest ago until the rest total at most
/// `max_bytes`, never `keep` (the one just kept, whatever its size). An
/// entry that cannot be removed is left; the bound is kept the next time.
pub(crate) fn evict(
    cache: &'static str,
    mut entries: Vec<CacheEntry>,
    max_bytes: u64,
    keep: &Path,
    remove: impl Fn(&Path) -> std::io::Result<()>,
) {
    let mut total: u64 = entries.iter().map(|e| e.bytes).sum();
    entries.sort_by_key(|e| e.read);
    for entry in entries {
        if total <= max_bytes {
            break;
        }
        if entry.path != keep && remove(&entry.path).is_ok() {
            tracing::info!(
                cache,
                path = %entry.path.display(),
                bytes = entry.bytes,
                "removed what was read longest ago: the cache is over its bound"
            );
            total -= entry.bytes;
        }
    }
}
