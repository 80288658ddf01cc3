//! What the soak watches while it runs, as a user would see it: every
//! version of every agent (a status older than one already seen, a foreign
//! field reverted, the transitions of the conditions), the gated agents'
//! Deployments (a change no reviewer decided), the RoleBindings of expired
//! access requests; and, at the end, the Events.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::runtime::watcher::{self, Event};

use crate::world::{self, GATED_AGENTS, gated_agent};

/// The image an agent without `spec.image` runs.
pub(crate) const DEFAULT_IMAGE: &str = "ghcr.io/fyannk/evidence-agent:1.0";

#[derive(Default)]
pub(crate) struct Observed {
    /// A status whose observedGeneration went back.
    pub stale_status_writes: AtomicUsize,
    /// A foreign status field gone or older than one seen before.
    pub foreign_reverted: AtomicUsize,
    /// A gated agent's Deployment running an image no reviewer approved.
    pub undecided_changes: Mutex<BTreeSet<(String, String)>>,
    /// Access requests whose RoleBinding outlived expiry by over 10 s.
    pub held_past_expiry: Mutex<BTreeSet<String>>,
    /// Per agent UID: each message a condition took, each time it took it.
    transitions: Mutex<HashMap<String, Vec<String>>>,
    /// The API server's outages (stopped until it listened again): no
    /// controller can take access away then, so a grant's 10 s count from
    /// the end of an outage that began within them.
    outages: Mutex<Vec<(jiff::Timestamp, jiff::Timestamp)>>,
    /// Per gated agent: the images a reviewer approved.
    approved: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// How many agent versions were seen.
    pub versions: AtomicUsize,
    /// Agents seen stalled by a change that does not settle (issue 51):
    /// the bundled guests' changes all settle.
    pub not_settling: Mutex<BTreeSet<String>>,
}

/// What the watch of agents remembers of each agent.
#[derive(Default)]
struct Seen {
    observed_generation: i64,
    foreign: Option<u64>,
    conditions: BTreeMap<String, (String, String, String)>,
}

impl Observed {
    pub(crate) fn new() -> Observed {
        let observed = Observed::default();
        let mut approved = observed.approved.lock().unwrap();
        for i in 0..GATED_AGENTS {
            approved.insert(gated_agent(i), BTreeSet::new());
        }
        drop(approved);
        observed
    }

    /// A reviewer approves `image` for `agent`'s Deployment (recorded
    /// before the decision lands).
    pub(crate) fn approve(&self, agent: &str, image: &str) {
        self.approved
            .lock()
            .unwrap()
            .entry(agent.to_owned())
            .or_default()
            .insert(image.to_owned());
    }

    /// The API server was out from `from` to `to`.
    pub(crate) fn outage(&self, from: jiff::Timestamp, to: jiff::Timestamp) {
        self.outages.lock().unwrap().push((from, to));
    }

    /// When a grant expiring at `expires` is due to be gone: its expiry,
    /// or the end of an outage that began before its 10 s were up and
    /// ended after it expired (one that began 0.2 s after an expiry left
    /// no controller the time either: seen in CI, deleted 5 s after the
    /// outage, flagged all the same).
    fn due(&self, expires: jiff::Timestamp) -> jiff::Timestamp {
        let grace = jiff::SignedDuration::from_secs(10);
        self.outages
            .lock()
            .unwrap()
            .iter()
            .filter(|(from, to)| *from <= expires + grace && expires <= *to)
            .map(|(_, to)| *to)
            .max()
            .unwrap_or(expires)
    }

    /// Watches every agent until the soak ends.
    pub(crate) async fn agents(&self, client: Client) {
        let mut seen: HashMap<String, Seen> = HashMap::new();
        let mut stream =
            watcher::watcher(world::agents(&client), watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let object = match event {
                Ok(Event::Apply(o) | Event::InitApply(o)) => world::agent_json(o),
                _ => continue,
            };
            self.versions.fetch_add(1, Ordering::Relaxed);
            let uid = object["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let status = &object["status"];
            let was = seen.entry(uid.clone()).or_default();
            if let Some(g) = status["observedGeneration"].as_i64() {
                if g < was.observed_generation {
                    self.stale_status_writes.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "soak: stale status of {}: observedGeneration {g} after {}",
                        object["metadata"]["name"], was.observed_generation
                    );
                }
                was.observed_generation = was.observed_generation.max(g);
            }
            let foreign = status["lastBackupVerified"]
                .as_str()
                .and_then(|v| v.strip_prefix('v'))
                .and_then(|n| n.parse::<u64>().ok());
            match (was.foreign, foreign) {
                (Some(before), now) if now.is_none_or(|n| n < before) => {
                    self.foreign_reverted.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "soak: the foreign field of {} went from v{before} to {now:?}",
                        object["metadata"]["name"]
                    );
                }
                _ => {}
            }
            was.foreign = foreign.max(was.foreign);
            let stalled = status["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Stalled" && c["reason"] == "ChangeNotSettling");
            if stalled {
                let name = object["metadata"]["name"].as_str().unwrap_or_default();
                if self.not_settling.lock().unwrap().insert(name.to_owned()) {
                    eprintln!("soak: {name} does not settle: {}", status["conditions"]);
                }
            }
            let mut transitions = self.transitions.lock().unwrap();
            for c in status["conditions"].as_array().into_iter().flatten() {
                let key = c["type"].as_str().unwrap_or_default().to_owned();
                let now = (
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                    c["message"].as_str().unwrap_or_default().to_owned(),
                );
                if was.conditions.get(&key) != Some(&now) {
                    transitions
                        .entry(uid.clone())
                        .or_default()
                        .push(now.2.clone());
                    was.conditions.insert(key, now);
                }
            }
        }
    }

    /// Watches the gated agents' Deployments until the soak ends.
    pub(crate) async fn deployments(&self, client: Client) {
        let api = world::api(&client, "apps/v1", "Deployment");
        let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            let object = match event {
                Ok(Event::Apply(o) | Event::InitApply(o)) => world::json_of(o),
                _ => continue,
            };
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            let Some(agent) = name.strip_suffix("-evidence-agent") else {
                continue;
            };
            let approved = self.approved.lock().unwrap();
            let Some(images) = approved.get(agent) else {
                continue;
            };
            for c in object["spec"]["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let image = c["image"].as_str().unwrap_or_default();
                if image.starts_with("ghcr.io/fyannk/evidence-agent") && !images.contains(image) {
                    let new = self
                        .undecided_changes
                        .lock()
                        .unwrap()
                        .insert((agent.to_owned(), image.to_owned()));
                    if new {
                        eprintln!(
                            "soak: {agent}'s Deployment runs {image}, which no reviewer approved"
                        );
                    }
                }
            }
        }
    }

    /// Every second until the soak ends: the RoleBinding of each access
    /// request expired over 10 s ago (or 10 s after the end of an API server
    /// outage its expiry fell in), if it is still there.
    pub(crate) async fn access(&self, client: Client) {
        let requests = world::api(&client, "pgtoolbox.fyannk.dev/v1alpha1", "PgAccessRequest");
        let bindings = world::api(&client, "rbac.authorization.k8s.io/v1", "RoleBinding");
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (Ok(requests), Ok(bindings)) = (
                requests.list(&Default::default()).await,
                bindings.list(&Default::default()).await,
            ) else {
                continue;
            };
            let bound: BTreeSet<String> = bindings
                .items
                .iter()
                .filter_map(|b| b.metadata.name.clone())
                .collect();
            let late = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(10);
            for r in requests.items {
                let r = world::json_of(r);
                let name = r["metadata"]["name"].as_str().unwrap_or_default();
                let expired = r["spec"]["expiresAt"]
                    .as_str()
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .is_some_and(|t| self.due(t) < late);
                if expired && bound.contains(name) {
                    let new = self
                        .held_past_expiry
                        .lock()
                        .unwrap()
                        .insert(name.to_owned());
                    if new {
                        eprintln!(
                            "soak: access request {name}'s RoleBinding outlived its expiry by over 10 s"
                        );
                    }
                }
            }
        }
    }

    /// Events about agents published more often than the conditions took
    /// their note: per agent and (type, reason, note), the publications
    /// (a series counts each) beyond the transitions into that message the
    /// watch saw. Events of no condition (a plan's, a certificate's: no
    /// condition ever took their note) are left out.
    pub(crate) async fn duplicate_events(&self, client: &Client) -> usize {
        let events = world::api(client, "events.k8s.io/v1", "Event");
        let listed = events.list(&Default::default()).await.expect("the Events");
        let mut published: BTreeMap<(String, String, String, String), i64> = BTreeMap::new();
        for e in listed.items {
            let e = world::json_of(e);
            if e["regarding"]["kind"] != "EvidenceAgent"
                || e["reason"].as_str().is_some_and(|r| r.starts_with("Plan"))
            {
                continue;
            }
            let key = (
                e["regarding"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["type"].as_str().unwrap_or_default().to_owned(),
                e["reason"].as_str().unwrap_or_default().to_owned(),
                e["note"].as_str().unwrap_or_default().to_owned(),
            );
            *published.entry(key).or_default() += e["series"]["count"].as_i64().unwrap_or(1);
        }
        let transitions = self.transitions.lock().unwrap();
        let mut duplicates = 0;
        for ((uid, type_, reason, note), count) in published {
            let taken = transitions
                .get(&uid)
                .map_or(0, |t| t.iter().filter(|m| **m == note).count() as i64);
            if taken > 0 && count > taken {
                eprintln!(
                    "soak: {count} {type_} {reason} Events about {uid} noting {note:?}, {taken} transitions into it"
                );
                duplicates += usize::try_from(count - taken).unwrap_or(0);
            }
        }
        duplicates
    }
}
