//! When this host first saw each plan that reads Rejected with no decision
//! time it can read: such a rejection holds the same changes for
//! `--replan-after` from then ([`crate::plan::lifecycle`]). Kept in memory,
//! a time no writer of the plan sets; a restart, or another replica taking
//! the parent over, sees it afresh and holds the changes longer, never
//! shorter.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::operator::cluster::cache::ClusterSource;
use crate::plan::record::{self, Plan};

/// Each such plan by UID: where it is and when it was first seen.
#[derive(Default)]
pub(super) struct FirstSeen(Mutex<HashMap<String, Seen>>);

struct Seen {
    namespace: String,
    name: String,
    at: jiff::Timestamp,
}

impl FirstSeen {
    /// When `plan`, in `namespace`, was first seen: `now` if never (then
    /// the plans no longer in `source`'s cache are forgotten).
    pub(super) fn of(
        &self,
        source: &ClusterSource,
        namespace: &str,
        plan: &Plan,
        now: jiff::Timestamp,
    ) -> jiff::Timestamp {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = seen.get(&plan.uid) {
            return s.at;
        }
        let cache = source.cache(&record::kind_ref());
        seen.retain(|uid, s| {
            cache
                .as_ref()
                .and_then(|c| c.get(&s.namespace, &s.name))
                .is_some_and(|o| o["metadata"]["uid"] == uid.as_str())
        });
        seen.insert(
            plan.uid.clone(),
            Seen {
                namespace: namespace.to_owned(),
                name: plan.name.clone(),
                at: now,
            },
        );
        now
    }
}
