//! Shadow run: a candidate module passed on every live parent of its kind
//! beside the module serving it, on the same facts, writing nothing, with
//! what would differ per parent ([`compare`]): the review a new module
//! gets before it serves.
//!
//! The facts are read as `capture` reads them (the guests' reads and the
//! ReconcilePlans watched until listed, the watches stopped so the caches
//! hold still); each module's pass of a parent is the operator's own, made
//! as a dry run ([`live::dry_pass`]: its changes answered as the operator
//! would find them, the guest evaluated again on what became of them) at
//! one clock. The candidate is compared with the serving module's pass and
//! with the live status; where the serving module's pass does not
//! reproduce the live status, the review says so. Nothing is written: no
//! status, no Event, no change.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::ListParams;
use serde_json::Value;

use crate::capture::plans::GivenGates;
use crate::capture::{CaptureError, Subject, live};
use crate::operator::cluster::cache::ObjectCache;
use crate::operator::cluster::{decode, probe};
use crate::operator::kinds::watches::reads_of;
pub use crate::pass::compare::{self, Difference, Side};
use crate::runtime::Module;

/// One parent, shadowed.
pub struct Shadowed {
    pub parent: Subject,
    pub difference: Difference,
}

/// Shadows `candidate` beside `serving` (both of one kind) on every parent
/// of the kind in `scopes` ("" for every namespace), with `settings`,
/// under the host's `gates`. The errors are capture's: the same reads
/// fail the same ways.
pub async fn run(
    client: &Client,
    serving: &Module,
    candidate: &Module,
    scopes: &[String],
    settings: &[(String, String)],
    gates: GivenGates,
) -> Result<Vec<Shadowed>, CaptureError> {
    let kind = serving.spec().kind_ref();
    let resolved = probe::resolve(client, &kind)
        .await
        .map_err(|e| CaptureError::Probe(Box::new(e)))?
        .ok_or_else(|| CaptureError::NotInstalled { kind: kind.clone() })?;

    // What either module reads, watched until listed, then stopped.
    let mut reads: BTreeMap<_, bool> = BTreeMap::new();
    for module in [serving, candidate] {
        for (read, optional) in reads_of(module.spec()) {
            *reads.entry(read).or_insert(true) &= optional;
        }
    }
    let reads: Vec<_> = reads.into_iter().collect();
    let source = live::still_caches(client, scopes, &reads, &kind.kind).await?;

    let parents = list_parents(client, &kind, &resolved, scopes).await?;
    let still = live::Still::of(client, &source, &resolved.resource, settings, gates).await;
    let mut shadowed = Vec::with_capacity(parents.len());
    for parent in parents {
        let subject = Subject {
            namespace: parent["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            name: parent["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        let old = live::dry_pass(serving, &parent, &still).await;
        let new = live::dry_pass(candidate, &parent, &still).await;
        shadowed.push(Shadowed {
            parent: subject,
            difference: compare::passes(
                old.live.as_ref(),
                &Side::of(&old.evaluated, &old.status),
                &Side::of(&new.evaluated, &new.status),
            ),
        });
    }
    Ok(shadowed)
}

/// Every parent of the kind in `scopes`, as the operator's cache admits
/// it (typed and slimmed), sorted by namespace and name.
async fn list_parents(
    client: &Client,
    kind: &reconciler_conventions::kind::KindRef,
    resolved: &probe::Resolved,
    scopes: &[String],
) -> Result<Vec<Value>, CaptureError> {
    let cache = ObjectCache::new(kind.clone());
    let mut parents: Vec<Value> = Vec::new();
    for scope in scopes {
        let scope = if resolved.namespaced {
            scope.as_str()
        } else {
            ""
        };
        let api = decode::api(client, &resolved.resource, scope);
        let listed = api
            .list(&ListParams::default())
            .await
            .map_err(|e| match e {
                kube::Error::Api(s) if s.code == 403 => CaptureError::Forbidden {
                    what: format!("list {}", kind.kind),
                    message: s.message,
                },
                e => CaptureError::Api {
                    what: format!("listing {}", kind.kind),
                    source: Box::new(e),
                },
            })?;
        for object in listed.items {
            if let Some((admitted, _)) = cache.apply(object.into_value()) {
                parents.push((*admitted).clone());
            }
        }
        if !resolved.namespaced {
            break;
        }
    }
    parents.sort_by(|a, b| {
        let key = |o: &Value| {
            (
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    Ok(parents)
}
