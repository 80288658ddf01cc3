//! A ring member's pass of a parent that is not its to pass: assigned to
//! another member or to none yet, or one it is asked to hand over, which
//! it does from here (its children first), so no other pass of the parent
//! is in flight on this member. Where the API server selects, a pass of a
//! parent it may pass is counted in flight until it ends.

use std::sync::Arc;

use tokio::sync::watch;

use super::Ended;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::ring::Claim;
use crate::operator::ring::passing::InFlight;
use crate::operator::ring::slots::{self, Slots};
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::pass::Done;

/// How the pass of `key` ends when the parent is not this member's to
/// pass (`Err`); otherwise the pass goes on, holding what counts it in
/// flight where the API server selects.
pub(super) async fn claimed(
    registry: &Registry,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    key: &ParentKey,
) -> Result<Option<InFlight>, Ended> {
    let Some(member) = registry.ring() else {
        return Ok(None);
    };
    let Some(parent) = kind.cache.get(&key.namespace, &key.name) else {
        return Ok(None);
    };
    let converged = || {
        queue.forget(key);
        Ended::without_guest(Done::Converged {
            requeue_after: None,
        })
    };
    if member.passing().is_some() {
        return member.enter(&parent).map(Some).ok_or_else(converged);
    }
    let done = match member.claim(&parent) {
        Claim::Mine => return Ok(None),
        Claim::Other => return Err(converged()),
        Claim::Draining(to) => {
            let uid = parent["metadata"]["uid"].as_str().unwrap_or_default();
            let children = registry.source().controlled_everywhere(&key.namespace, uid);
            match member
                .hand_over(&kind.resource, &parent, &to, &children)
                .await
            {
                Ok(()) => return Err(converged()),
                // Changed since cached: the watch brings the new version.
                Err(e) if e.is_conflict() => Done::Retry,
                Err(e) => {
                    tracing::warn!(parent.kind = %kind.resource.kind, parent.namespace = %key.namespace, parent.name = %key.name, error = %e, "ring: not handed over yet; tried again");
                    Done::Failed { retry_before: None }
                }
            }
        }
    };
    Err(Ended::without_guest(done))
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
