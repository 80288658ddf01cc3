//! A ring member's pass of a parent it is asked to hand over
//! ([`crate::operator::ring::partition::Claim::HandOver`]), which it does from
//! here (its children first), so no other pass of the parent is in flight
//! on this member; and, where the API server selects, the parents of the
//! slots it gains passed at once.

use std::sync::Arc;

use tokio::sync::watch;

use super::{Ended, forgotten};
use crate::operator::kinds::{Kind, Registry};
use crate::operator::ring::partition::HandOver;
use crate::operator::ring::slots::{self, Slots};
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::pass::Done;

/// The pass of `key` that hands its parent over as `asked`: forgotten once
/// handed over, passed again otherwise.
pub(super) async fn hand_over(
    registry: &Registry,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    key: &ParentKey,
    asked: HandOver<'_>,
) -> Ended {
    let HandOver { member, parent, to } = asked;
    let uid = parent["metadata"]["uid"].as_str().unwrap_or_default();
    let children = registry.source().controlled_everywhere(&key.namespace, uid);
    let done = match member
        .hand_over(&kind.resource, parent, &to, &children)
        .await
    {
        Ok(()) => return forgotten(queue, key),
        // Changed since cached: the watch brings the new version.
        Err(e) if e.is_conflict() => Done::Retry,
        Err(e) => {
            tracing::warn!(parent.kind = %kind.resource.kind, parent.namespace = %key.namespace, parent.name = %key.name, error = %e, "ring: not handed over yet; tried again");
            Done::Failed { retry_before: None }
        }
    };
    Ended::without_guest(done)
}

/// Where the API server selects: passes now the cached parents of every
/// slot the member is let pass anew (`gained`), as it is; until the member
/// stops.
pub(crate) async fn pass_gained(registry: Arc<Registry>, mut gained: watch::Receiver<Slots>) {
    while gained.changed().await.is_ok() {
        let slots_now = gained.borrow_and_update().clone();
        for (_, kind) in registry.kinds() {
            let parents: Vec<(String, String)> = kind
                .cache
                .list("", &Default::default())
                .iter()
                .filter(|p| {
                    p["metadata"]["uid"]
                        .as_str()
                        .is_some_and(|uid| slots_now.contains(&slots::of_uid(uid)))
                })
                .map(|p| {
                    let md = &p["metadata"];
                    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
                    (text(&md["namespace"]), text(&md["name"]))
                })
                .collect();
            let kind_ref = kind.cache.kind().clone();
            registry.scheduler().pass_now(&kind_ref, &parents);
        }
    }
}
