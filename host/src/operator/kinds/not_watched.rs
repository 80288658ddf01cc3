//! NamespaceNotWatched: the objects of a served kind in a namespace left
//! out of the watch (`crate::operator::cluster::namespaces`) are told so,
//! once.

use std::sync::Arc;

use kube::Client;
use kube::api::ListParams;
use reconciler_conventions::engine;
use reconciler_conventions::status::Status;

use crate::operator::cluster::decode;
use crate::operator::cluster::namespaces::{LeftOut, not_watched_message};
use crate::operator::kinds::Kind;
use crate::operator::replica::leadership::Shard;
use crate::operator::replica::metrics::Metrics;
use crate::operator::write::owned::owned_part;

/// Once at start: on every object of a served kind in a namespace left out
/// of the watch, where the host may still list that kind, writes
/// Ready=Unknown (NamespaceNotWatched) and publishes its Warning. A refused
/// list or write is logged and skipped; nothing here fails the start.
pub(crate) async fn mark_not_watched(
    client: &Client,
    kinds: &[Arc<Kind>],
    metrics: &Metrics,
    left_out: &LeftOut,
    shard: Shard,
) {
    for (ns, refused) in left_out {
        let message = not_watched_message(ns, refused);
        for kind in kinds {
            let kind_ref = kind.cache.kind();
            if refused.iter().any(|r| &r.kind == kind_ref) {
                continue;
            }
            let Some(module) = kind.module() else {
                continue;
            };
            let spec = module.spec().clone();
            if !spec.namespaced {
                continue;
            }
            let api = decode::api(client, &kind.resource, ns);
            let listed = match api.list(&ListParams::default()).await {
                Ok(l) => l.items,
                Err(e) => {
                    tracing::warn!(namespace = %ns, kind = %kind_ref, error = %e, "cannot list the objects of a namespace left out of the watch; their status is not marked");
                    continue;
                }
            };
            let label = Metrics::kind(&kind.resource.kind);
            for object in listed {
                let mut parent = object.into_value();
                if let Some(o) = parent.as_object_mut() {
                    o.insert(
                        "apiVersion".into(),
                        kind.resource.api_version.clone().into(),
                    );
                    o.insert("kind".into(), kind.resource.kind.clone().into());
                }
                let name = parent["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if !shard.owns(ns, &name) {
                    continue;
                }
                let generation = parent["metadata"]["generation"].as_i64().unwrap_or(0);
                let previous = Status::from_json(&parent["status"])
                    .map(|s| owned_part(&s, &spec, &parent))
                    .unwrap_or_default();
                let decision = engine::not_watched(
                    &spec,
                    generation,
                    &previous,
                    jiff::Timestamp::now(),
                    &message,
                );
                if !decision.changed {
                    continue;
                }
                match kind.writer.write_status(&parent, &decision.status).await {
                    Ok(_) => {
                        metrics.status_writes.get_or_create(&label).inc();
                        tracing::info!(namespace = %ns, %name, kind = %kind_ref, "marked NamespaceNotWatched");
                    }
                    Err(e) => {
                        tracing::warn!(namespace = %ns, %name, kind = %kind_ref, error = %e, "cannot write NamespaceNotWatched; skipped");
                        continue;
                    }
                }
                kind.writer.publish(&parent, &decision.events).await;
                metrics
                    .events
                    .get_or_create(&label)
                    .inc_by(decision.events.len() as u64);
            }
        }
    }
}
