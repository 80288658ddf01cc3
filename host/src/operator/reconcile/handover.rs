//! A ring member's pass of a parent that is not its to pass: assigned to
//! another member or to none yet, or one it is asked to hand over, which
//! it does from here (its children first), so no other pass of the parent
//! is in flight on this member.

use super::Ended;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::ring::Claim;
use crate::operator::schedule::ParentKey;
use crate::operator::schedule::queue::WorkQueue;
use crate::pass::Done;

/// How the pass of `key` ends when the parent is not this member's to
/// pass; `None` when it is (or the host is not in a ring).
pub(super) async fn not_mine(
    registry: &Registry,
    kind: &Kind,
    queue: &WorkQueue<ParentKey>,
    key: &ParentKey,
) -> Option<Ended> {
    let member = registry.ring()?;
    let parent = kind.cache.get(&key.namespace, &key.name)?;
    let done = match member.claim(&parent) {
        Claim::Mine => return None,
        Claim::Other => {
            queue.forget(key);
            Done::Converged {
                requeue_after: None,
            }
        }
        Claim::Draining(to) => {
            let uid = parent["metadata"]["uid"].as_str().unwrap_or_default();
            let children = registry.source().controlled_everywhere(&key.namespace, uid);
            match member
                .hand_over(&kind.resource, &parent, &to, &children)
                .await
            {
                Ok(()) => {
                    queue.forget(key);
                    Done::Converged {
                        requeue_after: None,
                    }
                }
                // Changed since cached: the watch brings the new version.
                Err(e) if e.is_conflict() => Done::Retry,
                Err(e) => {
                    tracing::warn!(parent.kind = %kind.resource.kind, parent.namespace = %key.namespace, parent.name = %key.name, error = %e, "ring: not handed over yet; tried again");
                    Done::Failed { retry_before: None }
                }
            }
        }
    };
    Some(Ended::without_guest(done))
}
