//! Events (events.k8s.io/v1) about parents, published after the status
//! write that they describe.
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
pub(crate) const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

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
pub(crate) struct EventPublisher {
    client: Client,
    instance: String,
    series: Mutex<HashMap<SeriesKey, Published>>,
}

/// An Event name for `parent`: its name, cut so that the name and the
/// `.<suffix>` fit [`MAX_NAME`] (cut on a character boundary; a name is
/// ASCII anyway), then the suffix.
pub(crate) fn event_name(parent: &str, suffix: &str) -> String {
    let room = MAX_NAME.saturating_sub(suffix.len() + 1);
    let mut cut = parent.len().min(room);
    while !parent.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = parent[..cut].trim_end_matches(['.', '-']);
    format!("{stem}.{suffix}")
}

impl EventPublisher {
    pub(crate) fn new(client: Client) -> Self {
        EventPublisher {
            client,
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| FIELD_MANAGER.to_owned()),
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes `event` about the object `regarding`.
    pub(crate) async fn publish(
        &self,
        regarding: &ObjectReference,
        event: &Event,
    ) -> Result<(), kube::Error> {
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
                    return Ok(());
                }
                // Gone (deleted, or expired by the API server's TTL): a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let suffix = format!("{:x}", now.as_nanosecond());
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
        api.create(&PostParams::default(), &created).await?;
        self.remember(key, name, 1);
        Ok(())
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
