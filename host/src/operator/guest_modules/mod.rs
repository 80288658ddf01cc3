//! GuestModule objects: a module served from an OCI registry, declared as
//! a cluster-scoped object. Every replica watches them and stages each
//! source (pulled by digest, its signatures checked against the host's
//! verification policy: [`stage`]), and says so in its own entry of
//! `.status.replicas`. The replica holding the Lease offers a staged module
//! to the reloader, which gates, promotes and swaps it as it does a file
//! of the guests directory, and writes the object's conditions: a kind on
//! the kstatus profile ([`kind`]), its verdict made of what the module went
//! through ([`verdict`]), its status and Events derived by the conventions
//! engine like every kind's.
//!
//! One object at a time: a pull blocks the next (the pass workers go on).

pub mod kind;
pub(crate) mod stage;
pub(crate) mod verdict;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Api, Client};
use reconciler_conventions::engine::{self, Input, Outcome, Reported};
use reconciler_conventions::kind::KindSpec;
use reconciler_conventions::status::Status;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::cluster::watching;
use crate::operator::hot_swap::offers::{Offer, OfferSender, Offered};
use crate::operator::hot_swap::promotion::Promotion;
use crate::operator::kinds::Registry;
use crate::operator::write::status::{FIELD_MANAGER, StatusWriter};
use crate::pass::review::Review;
use kind::{GuestModuleSpec, InForce, ModuleApproval, ModuleDecision, ModuleSource, PromotionName};
pub use stage::Puller;
use stage::{Staged, Unstaged};
use verdict::{Known, Served};

/// A policy's refusal is checked again this often (a signature may be
/// added to the registry since).
const REFUSED_RETRY: Duration = Duration::from_secs(300);
/// How often every object is looked at again: a registry that failed, a
/// module rolled back.
const TICK: Duration = Duration::from_secs(5);

/// How a replica serves GuestModule objects.
#[derive(Clone)]
pub struct GuestModulesConfig {
    pub puller: Puller,
    /// This replica's name (its Pod's), its entry in `.status.replicas`.
    pub replica: String,
    /// How a module comes to serve when its object does not say.
    pub promotion: Promotion,
    /// The least review each kind's modules get (`--promotion-floor`),
    /// whatever their object asks.
    pub floors: BTreeMap<String, PromotionName>,
    /// Serve only the GuestModules this label selector selects (several
    /// installs of the host in one cluster); `None`: every one.
    pub selector: Option<String>,
    /// The client this replica writes its own entry of `.status.replicas`
    /// with: not fenced by the Lease, since a standby says what it staged
    /// too, and an entry is its writer's alone. `None`: the operator's.
    pub entries: Option<Client>,
}

impl std::fmt::Debug for GuestModulesConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestModulesConfig")
            .field("policy", &self.puller.policy.path())
            .field("replica", &self.replica)
            .field("promotion", &self.promotion)
            .field("floors", &self.floors)
            .field("selector", &self.selector)
            .finish_non_exhaustive()
    }
}

impl GuestModulesConfig {
    /// The promotion `spec`'s module is served under: never below its
    /// kind's floor.
    fn in_force(&self, spec: &GuestModuleSpec) -> InForce {
        spec.in_force(self.promotion, self.floors.get(&spec.kind).copied())
    }
}

/// What a replica holding the Lease serves with.
#[derive(Clone)]
pub(crate) struct Leading {
    pub registry: Arc<Registry>,
    pub offers: OfferSender,
    /// Whether it writes the objects' conditions and Events: the leader of
    /// shard 0. With `--shards`, every shard's leader serves the module
    /// and says so in its own entry of `.status.replicas`, and one writes
    /// the conditions (two would publish every transition twice).
    pub reports: bool,
}

/// One GuestModule as this replica knows it.
struct Tracked {
    object: Value,
    /// The generation staged, what staging found and when.
    staged: Option<(i64, Result<Staged, Unstaged>, Instant)>,
    /// What the reloader made of the staged module, on this replica.
    offered: Option<Offered>,
    /// The review of its shadow run, if it was shadowed.
    review: Option<Review>,
    reported: Reported,
    /// The entry this replica last wrote in `.status.replicas`.
    entry: Option<Value>,
}

/// Serves GuestModule objects until the task is dropped; `leading` holds
/// what the replica serves with once it holds the Lease.
pub(crate) async fn run(
    client: Client,
    config: GuestModulesConfig,
    mut leading: watch::Receiver<Option<Leading>>,
) {
    let spec = kind::spec();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(kind::GROUP, kind::VERSION, kind::KIND),
        kind::PLURAL,
    );
    let api = decode::api(&client, &resource, "");
    let entries = decode::api(config.entries.as_ref().unwrap_or(&client), &resource, "");
    let writer = StatusWriter::new(client.clone(), resource.clone());
    let mut guest_modules = GuestModules {
        spec,
        entries,
        writer,
        config,
        objects: BTreeMap::new(),
    };
    let mut watched = watcher::Config::default();
    if let Some(selector) = &guest_modules.config.selector {
        watched = watched.labels(selector);
    }
    let mut stream = watching::watch(api, watched).boxed();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_error: Option<String> = None;
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => {
                    last_error = None;
                    guest_modules.seen(o);
                }
                Some(Ok(watcher::Event::Delete(o))) => guest_modules.deleted(&o),
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    let e = e.to_string();
                    if last_error.as_ref() != Some(&e) {
                        tracing::warn!(error = %e, "cannot watch GuestModules (is the CustomResourceDefinition installed? see deploy/): retrying");
                        last_error = Some(e);
                    }
                    continue;
                }
                None => return,
            },
            changed = leading.changed() => {
                if changed.is_err() {
                    return;
                }
                // A new leader offers every staged module again.
                for tracked in guest_modules.objects.values_mut() {
                    tracked.offered = None;
                }
            }
            _ = tick.tick() => {}
        }
        let leading = leading.borrow().clone();
        guest_modules.settle(leading.as_ref()).await;
    }
}

struct GuestModules {
    spec: KindSpec,
    /// Where this replica writes its own entries.
    entries: Api<Decoded>,
    writer: StatusWriter,
    config: GuestModulesConfig,
    objects: BTreeMap<String, Tracked>,
}

fn name_of(object: &Value) -> String {
    object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn generation_of(object: &Value) -> i64 {
    object["metadata"]["generation"].as_i64().unwrap_or(0)
}

impl GuestModules {
    fn seen(&mut self, object: Decoded) {
        let object = object.into_value();
        let name = name_of(&object);
        match self.objects.get_mut(&name) {
            Some(tracked) => tracked.object = object,
            None => {
                self.objects.insert(
                    name,
                    Tracked {
                        object,
                        staged: None,
                        offered: None,
                        review: None,
                        reported: Reported::default(),
                        entry: None,
                    },
                );
            }
        }
    }

    fn deleted(&mut self, object: &Decoded) {
        let name = object.metadata.name.clone().unwrap_or_default();
        if self.objects.remove(&name).is_some() {
            tracing::info!(
                guest_module = %name,
                "GuestModule {name} deleted: the module serving its kind keeps serving until another is offered or the host restarts"
            );
        }
    }

    /// Stages, offers and reports every object that needs it.
    async fn settle(&mut self, leading: Option<&Leading>) {
        let names: Vec<String> = self.objects.keys().cloned().collect();
        for name in names {
            self.stage(&name).await;
            if let Some(leading) = leading {
                self.offer(&name, leading).await;
                if leading.reports {
                    self.report(&name, leading).await;
                }
            }
            self.write_entry(&name, leading).await;
        }
    }

    /// Pulls and verifies the object's source when its generation is new,
    /// or when the last try is due again.
    async fn stage(&mut self, name: &str) {
        let Some(tracked) = self.objects.get_mut(name) else {
            return;
        };
        let generation = generation_of(&tracked.object);
        // A ConfigMap's data changes under one generation: read again on
        // every look (a GET; nothing is compiled unless its digest moves).
        let rereads = matches!(
            GuestModuleSpec::of(&tracked.object).map(|s| s.source),
            Ok(ModuleSource::ConfigMap(_))
        );
        let due = rereads
            || match &tracked.staged {
                None => true,
                Some((g, _, _)) if *g != generation => true,
                Some((_, Err(Unstaged::Unreachable(_)), at)) => {
                    at.elapsed() >= Duration::from_secs(verdict::PULL_RETRY_SECONDS.into())
                }
                Some((_, Err(Unstaged::Refused(_)), at)) => at.elapsed() >= REFUSED_RETRY,
                Some(_) => false,
            };
        if !due {
            return;
        }
        let result = match GuestModuleSpec::of(&tracked.object) {
            Ok(spec) => self.config.puller.stage(name, &spec).await,
            Err(e) => Err(Unstaged::NotAModule(e)),
        };
        // A new pull of the same module keeps what became of its offer,
        // and is not logged again.
        let same = match (&tracked.staged, &result) {
            (Some((_, Ok(old), _)), Ok(new)) => old.digest == new.digest,
            (Some((_, Err(old), _)), Err(new)) => old == new,
            _ => false,
        };
        if !same {
            match &result {
                Ok(staged) => tracing::info!(
                    guest_module = %name,
                    generation,
                    "staged {} (signed by {})",
                    staged.pinned,
                    if staged.signers.is_empty() { "nobody: the policy serves its kind unsigned".to_owned() } else { staged.signers.join(", ") }
                ),
                Err(e) => {
                    tracing::warn!(guest_module = %name, generation, "cannot stage GuestModule {name}: {e:?}")
                }
            }
            tracked.offered = None;
            tracked.review = None;
        }
        tracked.staged = Some((generation, result, Instant::now()));
    }

    /// Offers a staged module to the reloader, once per staging.
    async fn offer(&mut self, name: &str, leading: &Leading) {
        let Some(tracked) = self.objects.get_mut(name) else {
            return;
        };
        let Some((_, Ok(staged), _)) = &tracked.staged else {
            return;
        };
        let Ok(spec) = GuestModuleSpec::of(&tracked.object) else {
            return;
        };
        // Under manual promotion: checked only, until its digest is
        // approved; then offered again, to be swapped in.
        let approved = ModuleApproval::of(&tracked.object)
            .is_some_and(|a| a.digest == staged.digest && a.decision == ModuleDecision::Approved);
        let in_force = self.config.in_force(&spec).promotion;
        let manual = in_force == PromotionName::Manual;
        let promotion = match (manual, approved, &tracked.offered) {
            (true, true, Some(Offered::Checked)) => in_force.promotion(),
            (_, _, Some(_)) => return,
            (true, false, None) => Promotion::Checked,
            (_, _, None) => in_force.promotion(),
        };
        let (reply, answer) = oneshot::channel();
        let offer = Offer {
            file: staged.file.clone(),
            kind: spec.kind.clone(),
            promotion,
            reply,
        };
        if leading.offers.send(offer).is_err() {
            return;
        }
        let Ok(answer) = answer.await else {
            tracked.offered = None;
            return;
        };
        tracked.offered = Some(answer.offered);
        // Shadowed again (a new leader, an approved candidate): the new
        // review; else the one of this module before.
        if answer.review.is_some() {
            tracked.review = answer.review;
        }
    }

    /// Writes the object's conditions (the replica holding the Lease does)
    /// and publishes their Events.
    async fn report(&mut self, name: &str, leading: &Leading) {
        let Some(tracked) = self.objects.get_mut(name) else {
            return;
        };
        let Some((_, staged, _)) = &tracked.staged else {
            return;
        };
        let Ok(spec) = GuestModuleSpec::of(&tracked.object) else {
            return;
        };
        let served = match staged {
            Ok(staged) if serves(&leading.registry, &spec.kind, &staged.file.digest) => {
                Served::This
            }
            _ => Served::Other,
        };
        let approval = ModuleApproval::of(&tracked.object);
        let verdict = verdict::verdict(&Known {
            kind: &spec.kind,
            staged,
            offered: tracked.offered.as_ref(),
            promotion: self.config.in_force(&spec),
            approval: approval.as_ref(),
            review: tracked.review.as_ref(),
            served,
        });
        // The replicas' entries and a reviewer's decision are their
        // writers': never written back under the host's field manager.
        let mut previous = Status::from_json(&tracked.object["status"]).unwrap_or_default();
        previous.fields.remove(kind::REPLICAS);
        previous.fields.remove(kind::APPROVAL);
        // The review is the verdict's alone: none for a module not shadowed.
        previous.fields.remove(kind::SHADOW);
        let output = engine::decide(Input {
            spec: &self.spec,
            generation: generation_of(&tracked.object),
            paused: false,
            previous: &previous,
            now: jiff::Timestamp::now(),
            outcome: Outcome::Verdict(verdict),
            reported: &tracked.reported,
        });
        if !output.changed {
            return;
        }
        match self
            .writer
            .write_status(&tracked.object, &output.status)
            .await
        {
            Ok(stored) => {
                tracked.object = stored;
                self.writer.publish(&tracked.object, &output.events).await;
                tracked.reported = output.reported;
            }
            // A replica's entry written since: the next tick writes on
            // the version the watch brings.
            Err(e) => {
                tracing::debug!(guest_module = %name, error = %e, "GuestModule status not written")
            }
        }
    }

    /// Applies this replica's entry of `.status.replicas` when it changed,
    /// under a field manager of its own: no replica takes over another's.
    async fn write_entry(&mut self, name: &str, leading: Option<&Leading>) {
        let replica = self.config.replica.clone();
        let Some(tracked) = self.objects.get_mut(name) else {
            return;
        };
        let Some((_, staged, _)) = &tracked.staged else {
            return;
        };
        let (state, digest, message) = match (staged, leading, &tracked.offered) {
            (Err(e), _, _) => (kind::STATE_FAILED, None, unstaged_text(e)),
            (Ok(s), Some(leading), _)
                if GuestModuleSpec::of(&tracked.object)
                    .is_ok_and(|spec| serves(&leading.registry, &spec.kind, &s.file.digest)) =>
            {
                (kind::STATE_SERVING, Some(&s.digest), String::new())
            }
            (Ok(s), Some(_), Some(Offered::Refused(r) | Offered::Pending(r))) => {
                (kind::STATE_HELD, Some(&s.digest), r.detail.clone())
            }
            (Ok(s), Some(_), Some(Offered::Checked)) => (
                kind::STATE_HELD,
                Some(&s.digest),
                "passed every check; awaiting its promotion's decision".to_owned(),
            ),
            (Ok(s), Some(_), Some(Offered::Serving)) => (
                kind::STATE_HELD,
                Some(&s.digest),
                "rolled back after its probation".to_owned(),
            ),
            (Ok(s), _, _) => (
                kind::STATE_STAGED,
                Some(&s.digest),
                "pulled and verified here; served once this replica holds the Lease".to_owned(),
            ),
        };
        let mut entry = json!({"name": replica, "state": state});
        if let Some(digest) = digest {
            entry["digest"] = json!(digest);
        }
        if !message.is_empty() {
            entry["message"] = json!(reconciler_conventions::message::bound(&message));
        }
        if tracked.entry.as_ref() == Some(&entry) {
            return;
        }
        let mut written = entry.clone();
        written["lastUpdateTime"] = json!(reconciler_conventions::status::rfc3339_seconds(
            jiff::Timestamp::now()
        ));
        let body = json!({
            "apiVersion": kind::kind_ref().api_version(),
            "kind": kind::KIND,
            "metadata": {"name": name},
            "status": {kind::REPLICAS: [written]},
        });
        let params = PatchParams::apply(&entry_manager(&replica)).force();
        match self
            .entries
            .patch_status(name, &params, &Patch::Apply(&body))
            .await
        {
            Ok(_) => tracked.entry = Some(entry),
            Err(e) => {
                tracing::debug!(guest_module = %name, error = %e, "replica entry not written")
            }
        }
    }
}

/// Whether the module of digest `digest` (of its component) serves `kind`.
fn serves(registry: &Registry, kind: &str, digest: &str) -> bool {
    registry
        .kinds()
        .into_iter()
        .find(|(_, k)| k.resource.kind == kind)
        .and_then(|(_, k)| k.module())
        .is_some_and(|m| m.digest() == digest)
}

fn unstaged_text(e: &Unstaged) -> String {
    match e {
        Unstaged::Unreachable(m) | Unstaged::NotAModule(m) | Unstaged::Refused(m) => m.clone(),
    }
}

/// The field manager of a replica's own entry (at most 128 characters).
fn entry_manager(replica: &str) -> String {
    let mut manager = format!("{FIELD_MANAGER}/replica/{replica}");
    manager.truncate(128);
    manager
}
