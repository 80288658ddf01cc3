//! What a module needs the cluster to serve, resolved one way at start and for a module arriving while the host runs: its kind's CustomResourceDefinition, and every kind it must read.

use std::collections::BTreeMap;

use kube::Client;
use kube::core::ApiResource;
use reconciler_conventions::kind::{KindRef, KindSpec};

use crate::operator::cluster::probe::{self, ProbeError, Resolved};
use crate::operator::kinds::watches::{ReadRefused, reads_of};

/// What a module needs that the cluster does not serve (yet). Every variant
/// but [`Unmet::Probe`] is the module arriving before its API: held
/// pending, and served once the API appears. `Probe` is retryable too (the
/// API server did not answer as it should).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unmet {
    /// Its kind's CustomResourceDefinition is not installed.
    #[error(
        "the CustomResourceDefinition {crd} of kind {kind} is not installed (see `reconciler-host crd`)"
    )]
    NotInstalled { crd: String, kind: KindRef },
    /// A kind it must read is not served.
    #[error(transparent)]
    Read(ReadRefused),
    /// Asking the API server what it serves failed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

/// What a module needs, resolved: its kind, and the kinds it must read
/// that were not in `known` (optional reads are resolved where watched).
pub(crate) struct Needs {
    pub(crate) kind: Resolved,
    pub(crate) reads: Vec<(KindRef, Resolved)>,
}

/// Resolves what the module of `spec` needs: its kind, then each kind it
/// must read that `known` does not hold already.
pub(crate) async fn needs(
    client: &Client,
    spec: &KindSpec,
    known: &BTreeMap<KindRef, Resolved>,
) -> Result<Needs, Unmet> {
    let kind_ref = spec.kind_ref();
    let Some(kind) = probe::resolve(client, &kind_ref).await? else {
        return Err(Unmet::NotInstalled {
            crd: crd_name(&kind_ref, None, &spec.plural),
            kind: kind_ref,
        });
    };
    let mut reads = Vec::new();
    for (read, optional) in reads_of(spec) {
        if optional || known.contains_key(&read) || read == kind_ref {
            continue;
        }
        match probe::resolve(client, &read).await? {
            Some(r) => reads.push((read, r)),
            None => return Err(Unmet::Read(ReadRefused::NotInstalled { kind: read })),
        }
    }
    Ok(Needs { kind, reads })
}

/// The name of `kind`'s CustomResourceDefinition: `<plural>.<group>`, the
/// plural as the cluster serves it (`resource`) or as the module declares
/// it.
pub(crate) fn crd_name(kind: &KindRef, resource: Option<&ApiResource>, plural: &str) -> String {
    let plural = resource.map_or(plural, |r| r.plural.as_str());
    if kind.group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{}", kind.group)
    }
}
