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

/// Why a blob was not read whole.
#[derive(Debug)]
pub(super) enum Cut {
    /// The registry failed, or sent bytes that are not the blob.
    Registry(OciDistributionError),
    /// More than a blob may be, as its descriptor gives it or as the
    /// registry sends it: what it says.
    Beyond(String),
}

/// Whether the blobs of `manifest` (its config and layers), as its
/// descriptors give them, fit in [`MAX_MODULE_BYTES`]; if not, what they
/// take, said before anything is downloaded.
pub(super) fn check(manifest: &OciImageManifest) -> Result<(), String> {
    let blobs = std::iter::once(&manifest.config).chain(&manifest.layers);
    let mut total: u64 = 0;
    for blob in blobs {
        let size = u64::try_from(blob.size)
            .map_err(|_| format!("its manifest gives a blob the size {}", blob.size))?;
        total = total.saturating_add(size);
    }
    if total <= MAX_MODULE_BYTES {
        return Ok(());
    }
    let largest = manifest
        .layers
        .iter()
        .max_by_key(|l| l.size)
        .map(|l| format!(" (its largest layer, {}, {} bytes)", l.media_type, l.size))
        .unwrap_or_default();
    Err(format!(
        "its manifest gives its blobs {total} bytes{largest}, more than the {} MiB ({MAX_MODULE_BYTES} bytes) a guest module may be; nothing downloaded",
        MAX_MODULE_BYTES >> 20
    ))
}

/// The signature blob `blob` of `reference`, refused unread when its
/// descriptor gives it more than [`MAX_SIGNATURE_BYTES`], else [`read`].
pub(super) async fn read_signature(
    client: &Client,
    reference: &Reference,
    blob: &OciDescriptor,
) -> Result<Vec<u8>, Cut> {
    if !(0..=MAX_SIGNATURE_BYTES as i64).contains(&blob.size) {
        return Err(Cut::Beyond(format!(
            "its manifest gives a signature blob {} bytes, more than the {} KiB a signature may be; not downloaded",
            blob.size,
            MAX_SIGNATURE_BYTES >> 10
        )));
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
) -> Result<Vec<u8>, Cut> {
    let declared = u64::try_from(blob.size).unwrap_or(0);
    let beyond = || {
        Cut::Beyond(format!(
            "the registry sends {what} past the {declared} bytes its manifest gives it; refused at that bound"
        ))
    };
    let mut stream = client
        .pull_blob_stream(reference, blob)
        .await
        .map_err(Cut::Registry)?;
    if stream.content_length.is_some_and(|len| len > declared) {
        return Err(beyond());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Cut::Registry(e.into()))?;
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
        assert_eq!(check(&manifest(&[bound - 200, 100])), Ok(()));
        assert_eq!(
            check(&manifest(&[bound - 200, 101])),
            Err(format!(
                "its manifest gives its blobs {} bytes (its largest layer, application/wasm, {} bytes), more than the 64 MiB ({bound} bytes) a guest module may be; nothing downloaded",
                bound + 1,
                bound - 200
            ))
        );
        // A negative size would lower the sum: refused for what it is.
        assert_eq!(
            check(&manifest(&[bound, -1000])),
            Err("its manifest gives a blob the size -1000".to_owned())
        );
    }
}
