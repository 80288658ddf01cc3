//! Downloads bounded before and while they are read: a manifest's blobs
//! summed against [`MAX_MODULE_BYTES`] before any is fetched, a signature's
//! held to [`MAX_SIGNATURE_BYTES`], and each blob read no further than the
//! size its descriptor gives, whatever the registry sends.

use futures::StreamExt;
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::{Client, Reference};

use crate::runtime::MAX_MODULE_BYTES;

/// The largest blob a signature is read from (a cosign payload is under
/// 1 KiB, a Sigstore bundle with its certificate chain a few KiB).
pub(super) const MAX_SIGNATURE_BYTES: u64 = 1 << 20;

/// Why a blob was not read whole. Only `Registry` is worth retrying
/// (the registry unreachable, failing, or sending bytes that are not the
/// blob); `Oversized` is not: what was published is larger than it may
/// be, or the registry sends more than its manifest gives.
#[derive(Debug, thiserror::Error)]
pub(super) enum BoundedReadError {
    #[error(transparent)]
    Registry { source: OciDistributionError },
    #[error(transparent)]
    Oversized(#[from] Oversized),
}

/// What is larger than it may be, said before it is downloaded or when
/// the registry sends past it. None is retryable.
#[derive(Debug, thiserror::Error)]
pub enum Oversized {
    /// Malformed: a manifest giving a blob a negative size (which would
    /// lower the sum).
    #[error("its manifest gives a blob the size {size}")]
    NegativeSize { size: i64 },
    /// A manifest whose blobs together are more than a module may be;
    /// `largest`: its largest layer's media type and size.
    #[error(
        "its manifest gives its blobs {total} bytes{}, more than the {} MiB ({MAX_MODULE_BYTES} bytes) a guest module may be; nothing downloaded",
        largest.as_ref().map(|(media_type, size)| format!(" (its largest layer, {media_type}, {size} bytes)")).unwrap_or_default(),
        MAX_MODULE_BYTES >> 20
    )]
    Module {
        total: u64,
        largest: Option<(String, i64)>,
    },
    /// A signature's blob, as its descriptor gives it.
    #[error(
        "its manifest gives a signature blob {size} bytes, more than the {} KiB a signature may be; not downloaded",
        MAX_SIGNATURE_BYTES >> 10
    )]
    Signature { size: i64 },
    /// `what`, as the registry sends it past the size its descriptor
    /// gives.
    #[error(
        "the registry sends {what} past the {declared} bytes its manifest gives it; refused at that bound"
    )]
    SentPast { what: String, declared: u64 },
}

/// Whether the blobs of `manifest` (its config and layers), as its
/// descriptors give them, fit in [`MAX_MODULE_BYTES`]; if not, what they
/// take, said before anything is downloaded.
pub(super) fn check(manifest: &OciImageManifest) -> Result<(), Oversized> {
    let blobs = std::iter::once(&manifest.config).chain(&manifest.layers);
    let mut total: u64 = 0;
    for blob in blobs {
        let size =
            u64::try_from(blob.size).map_err(|_| Oversized::NegativeSize { size: blob.size })?;
        total = total.saturating_add(size);
    }
    if total <= MAX_MODULE_BYTES {
        return Ok(());
    }
    let largest = manifest
        .layers
        .iter()
        .max_by_key(|l| l.size)
        .map(|l| (l.media_type.clone(), l.size));
    Err(Oversized::Module { total, largest })
}

/// The signature blob `blob` of `reference`, refused unread when its
/// descriptor gives it more than [`MAX_SIGNATURE_BYTES`], else [`read`].
pub(super) async fn read_signature(
    client: &Client,
    reference: &Reference,
    blob: &OciDescriptor,
) -> Result<Vec<u8>, BoundedReadError> {
    if !(0..=MAX_SIGNATURE_BYTES as i64).contains(&blob.size) {
        return Err(Oversized::Signature { size: blob.size }.into());
    }
    read(client, reference, blob, "a signature").await
}

/// The blob `blob` of `reference`, read up to the size its descriptor
/// gives (bounded first, by [`check`] or [`read_signature`]) and checked
/// against its digest: a registry sending more is cut off there.
pub(super) async fn read(
    client: &Client,
    reference: &Reference,
    blob: &OciDescriptor,
    what: &str,
) -> Result<Vec<u8>, BoundedReadError> {
    let declared = u64::try_from(blob.size).unwrap_or(0);
    let beyond = || {
        BoundedReadError::from(Oversized::SentPast {
            what: what.to_owned(),
            declared,
        })
    };
    let registry = |source| BoundedReadError::Registry { source };
    let mut stream = client
        .pull_blob_stream(reference, blob)
        .await
        .map_err(registry)?;
    if stream.content_length.is_some_and(|len| len > declared) {
        return Err(beyond());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| registry(e.into()))?;
        if (bytes.len() + chunk.len()) as u64 > declared {
            return Err(beyond());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(sizes: &[i64]) -> OciImageManifest {
        let blob = |size| OciDescriptor {
            media_type: "application/wasm".into(),
            size,
            ..OciDescriptor::default()
        };
        OciImageManifest {
            config: blob(100),
            layers: sizes.iter().copied().map(blob).collect(),
            ..OciImageManifest::default()
        }
    }

    #[test]
    fn a_manifest_is_held_to_the_bound_by_all_its_blobs_together() {
        let bound = MAX_MODULE_BYTES as i64;
        assert!(check(&manifest(&[bound - 200, 100])).is_ok());
        assert_eq!(
            check(&manifest(&[bound - 200, 101]))
                .unwrap_err()
                .to_string(),
            format!(
                "its manifest gives its blobs {} bytes (its largest layer, application/wasm, {} bytes), more than the 64 MiB ({bound} bytes) a guest module may be; nothing downloaded",
                bound + 1,
                bound - 200
            )
        );
        // A negative size would lower the sum: refused for what it is.
        assert!(matches!(
            check(&manifest(&[bound, -1000])),
            Err(Oversized::NegativeSize { size: -1000 })
        ));
    }
}
