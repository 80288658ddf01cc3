//! The guests directory, opened once with cap-std and read through that
//! handle only: nothing outside it is read, and a symlink that leads out of
//! it is refused (a symlink inside it, such as a ConfigMap volume's
//! `x.wasm -> ..data/x.wasm`, is followed).
//!
//! Changes are found by polling ([`GuestsDir::scan`]): each `*.wasm` entry's
//! metadata, followed through its symlinks, plus the targets of those
//! symlinks, is its stamp; only an entry whose stamp changed is read again,
//! and only a changed content digest (or changed fixtures beside it) is
//! reported. The fixtures directory is read when the module's stamp changed,
//! not watched on its own. inotify is not used: a
//! ConfigMap update replaces the `..data` symlink by a rename, and a watch on
//! the directory sees that rename but not that `x.wasm` (a symlink that did
//! not change) now resolves to other bytes; polling stamps is what
//! kubelet-fed operators do, and costs a few `stat` calls per poll.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt};

use crate::operator::hot_swap::gate::ShippedFixture;
use crate::runtime::MAX_MODULE_BYTES;
use crate::runtime::artifacts::digest;

/// A module file's content, and the fixtures shipped beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestFile {
    /// The entry's name in the directory (`x.wasm`).
    pub file: String,
    /// The guest's name: the file stem.
    pub stem: String,
    pub bytes: Vec<u8>,
    /// The hex SHA-256 of `bytes`.
    pub digest: String,
    /// `<stem>.fixtures/*.yaml`, by file name, with their golden files.
    pub fixtures: Vec<ShippedFixture>,
}

/// What a scan found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DirEvent {
    /// A module file is new, or its content changed.
    Changed(GuestFile),
    /// A module file is gone.
    Removed { file: String, stem: String },
    /// A module file cannot be read (a symlink escaping the directory, a
    /// dangling one, a permission): reported once per distinct error.
    Unreadable { file: String, error: String },
}

/// The identity of an entry's current content, cheap to take: the followed
/// metadata and the symlink targets on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    links: Vec<PathBuf>,
}

#[derive(Debug)]
enum Seen {
    Read {
        stamp: Stamp,
        digest: String,
        fixtures: Vec<ShippedFixture>,
    },
    Unreadable {
        error: String,
    },
}

/// The opened guests directory and what was last seen in it.
#[derive(Debug)]
pub struct GuestsDir {
    dir: Dir,
    path: PathBuf,
    seen: BTreeMap<String, Seen>,
}

impl GuestsDir {
    pub fn open(path: &Path) -> io::Result<Self> {
        let dir = Dir::open_ambient_dir(path, ambient_authority())?;
        Ok(GuestsDir {
            dir,
            path: path.to_owned(),
            seen: BTreeMap::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Compares the directory with the last scan (the first scan reports
    /// every module). Events are sorted by file name.
    pub(crate) fn scan(&mut self) -> io::Result<Vec<DirEvent>> {
        let mut names: Vec<String> = Vec::new();
        for entry in self.dir.entries()? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            // Hidden entries are ConfigMap internals (`..data`,
            // `..2026_...`) or files being written (`.x.wasm.tmp`).
            if name.starts_with('.') || !name.ends_with(".wasm") || name.len() == ".wasm".len() {
                continue;
            }
            names.push(name);
        }
        names.sort();
        let mut events = Vec::new();
        let gone: Vec<String> = self
            .seen
            .keys()
            .filter(|k| names.binary_search(k).is_err())
            .cloned()
            .collect();
        for file in gone {
            let was_read = matches!(self.seen.remove(&file), Some(Seen::Read { .. }));
            if was_read {
                events.push(DirEvent::Removed {
                    stem: stem_of(&file),
                    file,
                });
            }
        }
        for file in names {
            match self.check(&file) {
                Ok(Some(event)) => events.push(event),
                Ok(None) => {}
                Err(e) => {
                    let error = e.to_string();
                    let repeated = matches!(
                        self.seen.get(&file),
                        Some(Seen::Unreadable { error: last }) if *last == error
                    );
                    // An unreadable file keeps what was served from it: it
                    // is not a removal (a flip in progress, a bad link).
                    if !repeated {
                        if !matches!(self.seen.get(&file), Some(Seen::Read { .. })) {
                            self.seen.insert(
                                file.clone(),
                                Seen::Unreadable {
                                    error: error.clone(),
                                },
                            );
                        }
                        events.push(DirEvent::Unreadable { file, error });
                    }
                }
            }
        }
        Ok(events)
    }

    /// Reads `file` again if its stamp changed; reports it if its digest did.
    fn check(&mut self, file: &str) -> io::Result<Option<DirEvent>> {
        let stamp = self.stamp(file)?;
        if let Some(Seen::Read { stamp: last, .. }) = self.seen.get(file)
            && *last == stamp
        {
            return Ok(None);
        }
        let bytes = self.read_capped(file)?;
        let digest = digest(&bytes);
        let stem = stem_of(file);
        let fixtures = self.fixtures(&stem)?;
        // Reported when the module or its fixtures differ: a module the
        // gate refused for its fixtures is reconsidered once they change
        // and the module file is put in place again.
        let unchanged = matches!(
            self.seen.get(file),
            Some(Seen::Read { digest: last, fixtures: seen, .. })
                if *last == digest && *seen == fixtures
        );
        self.seen.insert(
            file.to_owned(),
            Seen::Read {
                stamp,
                digest: digest.clone(),
                fixtures: fixtures.clone(),
            },
        );
        if unchanged {
            return Ok(None);
        }
        Ok(Some(DirEvent::Changed(GuestFile {
            file: file.to_owned(),
            stem,
            bytes,
            digest,
            fixtures,
        })))
    }

    /// The module's bytes, refused past [`MAX_MODULE_BYTES`] before they are
    /// read (a file of any size would otherwise be held whole).
    fn read_capped(&self, file: &str) -> io::Result<Vec<u8>> {
        use std::io::Read as _;
        let mut f = self.dir.open(file)?;
        let too_big = |len: u64| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it is {len} bytes, more than the {} MiB a guest module may be",
                    MAX_MODULE_BYTES >> 20
                ),
            )
        };
        let len = f.metadata()?.len();
        if len > MAX_MODULE_BYTES {
            return Err(too_big(len));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        (&mut f)
            .take(MAX_MODULE_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_MODULE_BYTES {
            return Err(too_big(bytes.len() as u64));
        }
        Ok(bytes)
    }

    fn stamp(&self, file: &str) -> io::Result<Stamp> {
        // Followed (inside the directory only: an escaping link fails here).
        let md = self.dir.metadata(file)?;
        let mut links = Vec::new();
        let mut path = PathBuf::from(file);
        // The symlinks on the way, as many as a ConfigMap volume has (the
        // entry, then `..data`), bounded.
        for _ in 0..8 {
            let first: PathBuf = match path.components().next() {
                Some(Component::Normal(c)) => PathBuf::from(c),
                _ => break,
            };
            let target = if self.dir.symlink_metadata(&path)?.is_symlink() {
                self.dir.read_link_contents(&path)?
            } else if first != path && self.dir.symlink_metadata(&first)?.is_symlink() {
                let rest: PathBuf = path.components().skip(1).collect();
                self.dir.read_link_contents(&first)?.join(rest)
            } else {
                break;
            };
            links.push(target.clone());
            path = target;
        }
        Ok(Stamp {
            dev: md.dev(),
            ino: md.ino(),
            len: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
            links,
        })
    }

    /// The text of `file` in the directory, if it exists (a golden list
    /// beside a module).
    pub(crate) fn read_beside(&self, file: &str) -> io::Result<Option<String>> {
        match self.dir.read_to_string(file) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The fixture files of `<stem>.fixtures/` and their golden files, if
    /// the directory exists.
    fn fixtures(&self, stem: &str) -> io::Result<Vec<ShippedFixture>> {
        let name = format!("{stem}.fixtures");
        let sub = match self.dir.open_dir(&name) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for entry in sub.entries()? {
            let entry = entry?;
            let Some(file) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if file.starts_with('.') || !(file.ends_with(".yaml") || file.ends_with(".yml")) {
                continue;
            }
            let text = sub.read_to_string(&file)?;
            let shipped = ShippedFixture {
                name: format!("{name}/{file}"),
                text,
                golden: None,
            };
            let golden_file = shipped
                .golden_name()
                .strip_prefix(&format!("{name}/"))
                .map(str::to_owned)
                .unwrap_or_default();
            let golden = match sub.read_to_string(&golden_file) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            out.push(ShippedFixture { golden, ..shipped });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

fn stem_of(file: &str) -> String {
    file.strip_suffix(".wasm").unwrap_or(file).to_owned()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "reconciler-guests-dir-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn changed(events: &[DirEvent]) -> Vec<(&str, &[u8])> {
        events
            .iter()
            .filter_map(|e| match e {
                DirEvent::Changed(f) => Some((f.file.as_str(), f.bytes.as_slice())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reports_new_changed_and_removed_modules_once() {
        let path = temp("plain");
        std::fs::write(path.join("a.wasm"), b"one").unwrap();
        std::fs::write(path.join("notes.txt"), b"ignored").unwrap();
        std::fs::write(path.join(".b.wasm.tmp"), b"ignored").unwrap();
        let mut dir = GuestsDir::open(&path).unwrap();
        let first = dir.scan().unwrap();
        assert_eq!(changed(&first), vec![("a.wasm", &b"one"[..])]);
        assert!(dir.scan().unwrap().is_empty(), "nothing changed");

        // Rewritten with the same bytes: a new stamp, the same digest.
        std::fs::write(path.join("a.wasm"), b"one").unwrap();
        assert!(dir.scan().unwrap().is_empty(), "same content");

        let tmp = path.join(".a.wasm.tmp");
        std::fs::write(&tmp, b"two!").unwrap();
        std::fs::rename(&tmp, path.join("a.wasm")).unwrap();
        assert_eq!(
            changed(&dir.scan().unwrap()),
            vec![("a.wasm", &b"two!"[..])]
        );

        std::fs::remove_file(path.join("a.wasm")).unwrap();
        assert_eq!(
            dir.scan().unwrap(),
            vec![DirEvent::Removed {
                file: "a.wasm".into(),
                stem: "a".into()
            }]
        );
        assert!(dir.scan().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&path);
    }

    #[test]
    fn follows_a_configmap_data_flip() {
        let path = temp("configmap");
        std::fs::create_dir(path.join("..2026_11_29_a")).unwrap();
        std::fs::write(path.join("..2026_11_29_a/x.wasm"), b"old").unwrap();
        std::fs::create_dir(path.join("..2026_11_29_a/x.fixtures")).unwrap();
        std::fs::write(path.join("..2026_11_29_a/x.fixtures/f.yaml"), "name: f").unwrap();
        symlink("..2026_11_29_a", path.join("..data")).unwrap();
        symlink("..data/x.wasm", path.join("x.wasm")).unwrap();
        symlink("..data/x.fixtures", path.join("x.fixtures")).unwrap();
        let mut dir = GuestsDir::open(&path).unwrap();
        let first = dir.scan().unwrap();
        assert_eq!(changed(&first), vec![("x.wasm", &b"old"[..])]);
        let DirEvent::Changed(f) = &first[0] else {
            unreachable!()
        };
        assert_eq!(
            f.fixtures,
            vec![ShippedFixture {
                name: "x.fixtures/f.yaml".to_owned(),
                text: "name: f".to_owned(),
                golden: None,
            }]
        );

        // The kubelet's update: a new timestamped directory, a new `..data`
        // renamed over the old one, the old directory removed.
        std::fs::create_dir(path.join("..2026_11_29_b")).unwrap();
        std::fs::write(path.join("..2026_11_29_b/x.wasm"), b"new").unwrap();
        symlink("..2026_11_29_b", path.join("..data_tmp")).unwrap();
        std::fs::rename(path.join("..data_tmp"), path.join("..data")).unwrap();
        std::fs::remove_dir_all(path.join("..2026_11_29_a")).unwrap();
        assert_eq!(changed(&dir.scan().unwrap()), vec![("x.wasm", &b"new"[..])]);
        assert!(dir.scan().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&path);
    }

    #[test]
    fn refuses_a_symlink_escaping_the_directory() {
        let path = temp("escape");
        let outside = temp("escape-outside");
        std::fs::write(outside.join("evil.wasm"), b"outside").unwrap();
        symlink(outside.join("evil.wasm"), path.join("abs.wasm")).unwrap();
        let rel_target = format!(
            "../{}/evil.wasm",
            outside.file_name().unwrap().to_str().unwrap()
        );
        symlink(&rel_target, path.join("rel.wasm")).unwrap();
        std::fs::write(path.join("ok.wasm"), b"inside").unwrap();
        let mut dir = GuestsDir::open(&path).unwrap();
        let events = dir.scan().unwrap();
        assert_eq!(changed(&events), vec![("ok.wasm", &b"inside"[..])]);
        let unreadable: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                DirEvent::Unreadable { file, .. } => Some(file.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(unreadable, vec!["abs.wasm", "rel.wasm"], "{events:?}");
        // Reported once, not on every poll.
        assert!(dir.scan().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn refuses_a_module_larger_than_the_cap_without_reading_it() {
        let path = temp("huge");
        // Sparse: its length is past the cap, its blocks are not written.
        let huge = std::fs::File::create(path.join("huge.wasm")).unwrap();
        huge.set_len(MAX_MODULE_BYTES + 1).unwrap();
        std::fs::write(path.join("ok.wasm"), b"inside").unwrap();
        let mut dir = GuestsDir::open(&path).unwrap();
        let events = dir.scan().unwrap();
        assert_eq!(changed(&events), vec![("ok.wasm", &b"inside"[..])]);
        let errors: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                DirEvent::Unreadable { file, error } => Some(format!("{file}: {error}")),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 1, "{events:?}");
        assert!(
            errors[0].starts_with("huge.wasm: it is 67108865 bytes, more than the 64 MiB"),
            "{}",
            errors[0]
        );
        let _ = std::fs::remove_dir_all(&path);
    }
}
