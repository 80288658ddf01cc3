//! Shadow run: a candidate module evaluated on every live parent of its
//! kind beside the module serving it, on the same facts, writing nothing,
//! with what would differ per parent ([`compare`]): the review a new
//! module gets before it serves.
//!
//! The facts are read as `capture` reads them (the guests' reads watched
//! until listed, the watches stopped so the caches hold still, reads past
//! the cache made as the operator's pass makes them); both passes of a
//! parent are settled by the pass's own core ([`compare::as_if_made`]) at
//! one clock, from the parent's status as it is, as if every change were
//! made. Nothing is written: no status, no Event, no change.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::ListParams;
use serde_json::Value;

use crate::capture::{CaptureError, Subject, live};
use crate::operator::cluster::cache::ObjectCache;
use crate::operator::cluster::{decode, probe};
use crate::operator::kinds::watches::reads_of;
pub use crate::pass::compare::{self, Difference};
use crate::runtime::GuestModule;

/// One parent, shadowed.
pub struct Shadowed {
    pub parent: Subject,
    pub difference: Difference,
}

/// Shadows `candidate` beside `serving` (both of one kind) on every parent
/// of the kind in `scopes` ("" for every namespace), with `settings`.
/// The errors are capture's: the same reads fail the same ways.
pub async fn run(
    client: &Client,
    serving: &GuestModule,
    candidate: &GuestModule,
    scopes: &[String],
    settings: &[(String, String)],
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
    let now = jiff::Timestamp::now();
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
        let (old, _) = live::evaluate(client, serving, &parent, &source, settings, now).await;
        let (new, _) = live::evaluate(client, candidate, &parent, &source, settings, now).await;
        shadowed.push(Shadowed {
            parent: subject,
            difference: compare::passes(
                (serving.spec(), candidate.spec()),
                &parent,
                (&old, &new),
                now,
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
