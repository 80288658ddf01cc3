//! Events (events.k8s.io/v1) about parents. The Events of a status
//! transition are published *before* the status write that records it, each
//! named by the transition (the status it leaves, the object's UID, its
//! type, reason and note): a host killed between the two publishes them
//! again on its next pass under the same names, which the API server
//! refuses as existing, so a kill neither loses nor repeats one (issue 31).
//!
//! The host publishes its own Events rather than through kube-runtime's
//! `Recorder`, whose aggregation key leaves out the note: a second Event of
//! the same reason within its window bumps the first one's count and keeps
//! the first note, so a user reads "crash message A" while the status says
//! "B". Here an Event repeated with the same type, reason and note within
//! [`SERIES_WINDOW`] becomes a series (its count bumped, as the Recorder
//! does); any other note is an Event of its own. Names are bounded: a
//! parent's name may be 253 characters, an Event's too, so the name is cut
//! to leave room for the suffix.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconciler_conventions::engine::Event;
use reconciler_conventions::verdict::EventType;

use crate::operator::write::FIELD_MANAGER;

/// How long a published Event can grow into a series.
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// The longest Event name the API server accepts (a DNS subdomain).
const MAX_NAME: usize = 253;

/// What makes two Events one series: the object, type, reason and note.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey {
    uid: String,
    type_: EventType,
    reason: String,
    note: String,
}

struct Published {
    name: String,
    count: i32,
    at: Instant,
}

/// Publishes the Events of one kind's parents.
pub struct EventPublisher {
    client: Client,
    instance: String,
    series: Mutex<HashMap<SeriesKey, Published>>,
}

/// An Event name for `parent`: its name, cut so that the name and the
/// `.<suffix>` fit [`MAX_NAME`] (cut on a character boundary; a name is
/// ASCII anyway), then the suffix.
pub fn event_name(parent: &str, suffix: &str) -> String {
    let room = MAX_NAME.saturating_sub(suffix.len() + 1);
    let mut cut = parent.len().min(room);
    while !parent.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = parent[..cut].trim_end_matches(['.', '-']);
    format!("{stem}.{suffix}")
}

/// The name suffix of the Event `key` of the transition leaving the status
/// `transition`: 16 hex digits of a SHA-256 over both.
fn transition_suffix(key: &SeriesKey, transition: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let mut digest = Sha256::new();
    for part in [
        key.uid.as_str(),
        transition,
        match key.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        },
        &key.reason,
        &key.note,
    ] {
        digest.update(part.len().to_be_bytes());
        digest.update(part.as_bytes());
    }
    digest.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl EventPublisher {
    pub fn new(client: Client) -> Self {
        EventPublisher {
            client,
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| FIELD_MANAGER.to_owned()),
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes `event` about the object `regarding`; `transition` (the
    /// status the event's transition leaves, as text) names it, so that
    /// publishing it again creates nothing. Without one, the Event is named
    /// by the time. Returns whether it was published now (false: found
    /// published already).
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        event: &Event,
        transition: Option<&str>,
    ) -> Result<bool, kube::Error> {
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let key = SeriesKey {
            uid: regarding.uid.clone().unwrap_or_default(),
            type_: event.type_,
            reason: event.reason.clone(),
            note: event.note.clone(),
        };
        let now = jiff::Timestamp::now();
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
        let repeat = {
            let mut series = self.series.lock().expect("series lock");
            series.retain(|_, p| p.at.elapsed() < SERIES_WINDOW);
            series.get(&key).map(|p| (p.name.clone(), p.count + 1))
        };
        if let Some((name, count)) = repeat {
            let patch = serde_json::json!({
                "series": EventSeries { count, last_observed_time: MicroTime(now) },
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.remember(key, name, count);
                    return Ok(true);
                }
                // Gone (deleted, or expired by the API server's TTL): a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let suffix = match transition {
            Some(transition) => transition_suffix(&key, transition),
            None => format!("{:x}", now.as_nanosecond()),
        };
        let name = event_name(regarding.name.as_deref().unwrap_or(FIELD_MANAGER), &suffix);
        let created = K8sEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            action: Some("Reconcile".to_owned()),
            reason: Some(event.reason.clone()),
            note: Some(event.note.clone()),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(FIELD_MANAGER.to_owned()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        let created = match api.create(&PostParams::default(), &created).await {
            Ok(_) => true,
            // Published already, by a pass that did not get to record the
            // transition (killed, or its status write conflicted).
            Err(kube::Error::Api(s)) if s.code == 409 && transition.is_some() => {
                tracing::debug!(event = %name, "the transition's Event exists already");
                false
            }
            Err(e) => return Err(e),
        };
        self.remember(key, name, 1);
        Ok(created)
    }

    fn remember(&self, key: SeriesKey, name: String, count: i32) {
        self.series.lock().expect("series lock").insert(
            key,
            Published {
                name,
                count,
                at: Instant::now(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transitions_event_has_one_name_whoever_publishes_it() {
        let key = |note: &str| SeriesKey {
            uid: "u-1".into(),
            type_: EventType::Warning,
            reason: "CrashLoopBackOff".into(),
            note: note.into(),
        };
        let leaving = r#"{"conditions":[{"type":"Ready","status":"True"}]}"#;
        let name = transition_suffix(&key("crashing"), leaving);
        assert_eq!(name.len(), 16);
        assert_eq!(name, transition_suffix(&key("crashing"), leaving));
        // Another note, or the same one leaving another status: another Event.
        assert_ne!(name, transition_suffix(&key("crashed"), leaving));
        assert_ne!(name, transition_suffix(&key("crashing"), "{}"));
    }

    #[test]
    fn an_event_name_fits_whatever_the_parent_name() {
        let suffix = "18c4a1e2b3d4f5a6";
        assert_eq!(event_name("orders", suffix), "orders.18c4a1e2b3d4f5a6");
        let long = "a".repeat(253);
        let name = event_name(&long, suffix);
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.ends_with(".18c4a1e2b3d4f5a6"));
        // A cut never leaves a trailing dot or dash before the suffix.
        let dotted = format!("{}.-{}", "b".repeat(234), "c".repeat(30));
        let name = event_name(&dotted, suffix);
        assert!(name.len() <= MAX_NAME, "{name}");
        assert!(!name.contains(".-."), "{name}");
        assert!(!name.contains("-."), "{name}");
    }
}
