//! Object texts held compressed, each against a dictionary of its kind.
//!
//! Objects of one kind share their keys and most of their values (a
//! Deployment's template, a Pod's defaults, a certificate Secret's shape),
//! so a cache holds each object's JSON text as a zstd frame whose
//! dictionary is the text of another object of the kind (the first the
//! cache admitted, used as raw content): what is held is mostly what
//! differs from it. Unpacking is lossless; a reader gets the text back.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use zstd::zstd_safe::{self, CCtx, CDict, DCtx, DDict};

/// zstd's default level: the levels above it cost more time than they save
/// bytes on objects of a few kilobytes.
const LEVEL: i32 = 3;

/// The most of a reference object's text a dictionary takes: a larger one
/// (a ConfigMap of a megabyte first in its cache) would be held, digested
/// twice, for as long as the host runs, and helps no more.
const MAX_DICTIONARY: usize = 64 << 10;

/// A kind's dictionary, digested once for compression and once for
/// decompression.
pub struct Packer {
    compress: CDict<'static>,
    decompress: DDict<'static>,
}

thread_local! {
    /// Each thread's compression and decompression contexts, reused from
    /// one object to the next rather than allocated for each.
    static CONTEXTS: RefCell<(CCtx<'static>, DCtx<'static>)> =
        RefCell::new((CCtx::create(), DCtx::create()));
}

/// A cache's packers, each made from the first text it is asked for: its
/// objects' texts, and the host's apply entries on them (the same fields
/// on each child of a kind).
#[derive(Default)]
pub struct Packers {
    objects: OnceLock<Arc<Packer>>,
    applied: OnceLock<Arc<Packer>>,
}

impl Packers {
    /// The objects' packer (made from `reference`, if there is none yet).
    pub fn objects(&self, reference: &str) -> Arc<Packer> {
        self.objects.get_or_init(|| Packer::new(reference)).clone()
    }

    /// The apply entries' packer (made from `reference`, if there is none
    /// yet).
    pub fn applied(&self, reference: &str) -> Arc<Packer> {
        self.applied.get_or_init(|| Packer::new(reference)).clone()
    }
}

/// An object's text as a frame of its kind's [`Packer`].
pub struct Packed {
    frame: Box<[u8]>,
    /// The text's length, which the frame unpacks to.
    len: u32,
    packer: Arc<Packer>,
}

impl Packer {
    /// A packer whose dictionary is `reference`, the text of an object of
    /// the kind (its first [`MAX_DICTIONARY`] bytes).
    pub fn new(reference: &str) -> Arc<Packer> {
        let dictionary = &reference.as_bytes()[..reference.len().min(MAX_DICTIONARY)];
        Arc::new(Packer {
            compress: CDict::create(dictionary, LEVEL),
            decompress: DDict::create(dictionary),
        })
    }

    /// `text` packed; `None` where zstd could not (then the caller holds
    /// the text itself).
    pub fn pack(self: &Arc<Self>, text: &str) -> Option<Packed> {
        let len = u32::try_from(text.len()).ok()?;
        let mut frame = Vec::with_capacity(zstd_safe::compress_bound(text.len()));
        CONTEXTS
            .with_borrow_mut(|(cctx, _)| {
                cctx.compress_using_cdict(&mut frame, text.as_bytes(), &self.compress)
            })
            .ok()?;
        Some(Packed {
            frame: frame.into_boxed_slice(),
            len,
            packer: self.clone(),
        })
    }
}

impl Packed {
    /// The text packed.
    ///
    /// # Panics
    /// When the frame does not unpack to the text it was made from: a host
    /// defect (the frame and its dictionary are never changed).
    pub fn unpack(&self) -> String {
        let mut text = Vec::with_capacity(self.len as usize);
        CONTEXTS
            .with_borrow_mut(|(_, dctx)| {
                dctx.decompress_using_ddict(&mut text, &self.frame, &self.packer.decompress)
            })
            .expect("a packed text unpacks with its own dictionary");
        String::from_utf8(text).expect("a packed text was UTF-8")
    }

    /// The bytes held for the text.
    pub fn packed_len(&self) -> usize {
        self.frame.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_unpacks_to_itself_and_a_sibling_is_held_in_a_fraction_of_it() {
        let object = |name: &str, image: &str| {
            format!(
                r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}","namespace":"ns","labels":{{"app":"{name}"}}}},"spec":{{"replicas":1,"template":{{"spec":{{"containers":[{{"name":"agent","image":"{image}","ports":[{{"containerPort":8443,"protocol":"TCP"}}],"resources":{{}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Always","dnsPolicy":"ClusterFirst"}}}}}}}}"#
            )
        };
        let packer = Packer::new(&object("first", "ghcr.io/a:1"));
        let sibling = object("second-agent", "ghcr.io/a:2");
        let packed = packer.pack(&sibling).expect("packed");
        assert_eq!(packed.unpack(), sibling);
        assert!(
            packed.packed_len() * 4 < sibling.len(),
            "{} bytes packed of {}",
            packed.packed_len(),
            sibling.len()
        );
        let other = r#"{"kind":"Other","data":[1,2,3]}"#;
        assert_eq!(packer.pack(other).expect("packed").unpack(), other);
        assert_eq!(packer.pack("").expect("packed").unpack(), "");
    }

    #[test]
    fn a_reference_larger_than_a_dictionary_is_cut_and_still_packs() {
        let big = format!(r#"{{"data":"{}"}}"#, "x".repeat(MAX_DICTIONARY));
        let packer = Packer::new(&big);
        assert_eq!(packer.pack(&big).expect("packed").unpack(), big);
    }
}
