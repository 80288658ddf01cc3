//! Children: the objects a guest wants applied, and deleted, made so.
//!
//! The changes of a pass are checked as a whole against the cache before
//! anything is written: an apply of an object controlled by another owner,
//! or a deletion of something the parent does not control (or of another
//! object than the one the guest saw), refuses them all, naming the guest
//! and the change. Then each apply carries the parent's namespace, the
//! parent as its controller and the host's managed-by label, and is sent by
//! server-side apply under the host's field manager, forced on the fields
//! it sets (a hand edit of those is put back; every other field stays its
//! writer's), unless the cached child holds the body as the API server
//! stores it ([`pending::unsettled`]): a converged parent costs no
//! request, and a body that drops a field is sent, so the field goes. An
//! apply the server stored otherwise, made again with nothing changed in
//! between, is held back ([`settling`]). Deletions carry the UID
//! the guest saw as a precondition. A generated Secret (random values the
//! guest never sees) is created when missing and never overwritten. What
//! each apply came to is recorded for `facts.last-apply`.

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::ApiResource;
use kube::{Api, Client};
use reconciler_conventions::engine::ErrorClass;
use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use crate::children::bodies::{Owner, generated_secret, lists_of, with_owner};
use crate::children::pending;
use crate::children::settling::{self, Unsettled};
use crate::contract::model::Change;
use crate::facts::meta::controller_uid;
use crate::facts::past_cache::PastCache;
use crate::facts::{ApplyOutcome, ChangeState};
use crate::marks::{ADOPT, FIELD_MANAGER};
pub use crate::marks::{APPLIED, MANAGED_BY};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::replica::metrics::{ChildLabels, ChildRefusalLabels, KindLabel, Metrics};
use crate::operator::write::api_error::{self, ApiErrorClass};
use crate::operator::write::authority::Authority;

/// Why the changes of a pass were not all made. Only `Api` with a
/// conflict is retried at once; the rest end the pass.
#[derive(Debug, thiserror::Error)]
pub enum ChildrenError {
    /// The guest asked for a change it may not make: nothing was written
    /// (the guest's fault).
    #[error("the {change} is refused: {why}")]
    Refused { change: String, why: String },
    /// The API server refused a change (recorded for `facts.last-apply`).
    #[error("the {change} failed: {text}")]
    Api {
        change: String,
        class: ApiErrorClass,
        text: String,
    },
    /// The operator's CA could not sign the certificate (its Secret could
    /// not be read or made, or is not a CA): retried with backoff.
    #[error("the {change} could not be issued: {text}")]
    Certificate { change: String, text: String },
    /// The operating system's random generator failed: retried with
    /// backoff, nothing of the Secret written.
    #[error(
        "the {change} could not be made: the operating system's random generator failed: {text}"
    )]
    Random { change: String, text: String },
    /// A kind the guest writes is not watched (not served by the cluster).
    #[error("the {change} is not possible: {kind} is not served by this cluster")]
    NotServed { change: String, kind: KindRef },
    /// The execution stopped before the `change`: what it executed (a
    /// plan) is gone. `made`: what was made before.
    #[error("the {change} was not made: {why}")]
    Stopped {
        change: String,
        why: String,
        made: Made,
    },
}

impl ChildrenError {
    /// The class the pass reports (ReconcileError), or `None` for a
    /// conflict, retried quietly.
    pub fn class(&self) -> Option<ErrorClass> {
        match self {
            ChildrenError::Refused { .. } => Some(ErrorClass::GuestFailed),
            ChildrenError::Api {
                class: ApiErrorClass::Reported(class),
                ..
            } => Some(*class),
            ChildrenError::Api { .. } => None,
            ChildrenError::NotServed { .. }
            | ChildrenError::Stopped { .. }
            | ChildrenError::Certificate { .. }
            | ChildrenError::Random { .. } => Some(ErrorClass::ReconciliationFailed),
        }
    }
}

/// What the host did with a pass's changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Made {
    pub applied: usize,
    /// Applies not sent: the cached child already had every field.
    pub unchanged: usize,
    pub deleted: usize,
    /// Of those, objects read past the cache: no watch tells of their
    /// going, so the parent passes again to observe it.
    pub deleted_unwatched: usize,
    /// When the earliest serving certificate of the pass is to be renewed.
    pub renew_after: Option<Duration>,
    /// Applies that, made once more without settling, are held back from
    /// now on ([`settling`]): what the stall says of each.
    pub not_settling: Vec<String>,
}

/// The changes of a pass checked as a whole against the cache, each with
/// what the cache holds of its object: ready to be made, or planned.
pub struct Checked<'a> {
    owner: Owner<'a>,
    planned: Vec<CheckedChange<'a>>,
    /// After how many applies in a row without settling a change is held
    /// back ([`settling`]).
    held_after: u32,
}

impl Checked<'_> {
    /// Where a reviewer approves each change: a change an approved plan
    /// made that did not settle is held back at once, not planned again.
    pub(crate) fn under_review(mut self) -> Self {
        self.held_after = 1;
        self
    }

    /// What holds `change` back for not settling, if anything does.
    fn held_back<'c>(&self, change: &'c CheckedChange<'_>) -> Option<&'c Unsettled> {
        held_back(change.unsettled.as_ref(), self.held_after)
    }

    /// The changes that would change something now: an apply whose object
    /// lacks a field or was last applied with another body, a generated
    /// Secret or a certificate missing (or due for renewal), a deletion of
    /// an object that is there. What a plan holds and its digest hashes.
    pub fn pending(&self, authority: &Authority, now: jiff::Timestamp) -> Vec<Change> {
        self.pending_where(|change, cached| {
            let Change::Certificate { dns_names, .. } = change else {
                return false;
            };
            authority.still_good(cached, dns_names, now).is_some()
        })
    }

    /// As [`Checked::pending`] where there is no CA to ask: a
    /// certificate's Secret that is there counts as good.
    pub fn pending_offline(&self) -> Vec<Change> {
        self.pending_where(|_, _| true)
    }

    fn pending_where(&self, still_good: impl Fn(&Change, &Value) -> bool) -> Vec<Change> {
        self.planned
            .iter()
            .filter(|p| self.held_back(p).is_none())
            .filter(|p| {
                pending::pending(p.change, p.cached.as_ref(), p.desired.as_ref(), |c| {
                    still_good(p.change, c)
                })
            })
            .map(|p| p.change.clone())
            .collect()
    }

    /// The changes held back for not settling ([`settling`]): what the
    /// stall says of each.
    pub(crate) fn not_settling(&self) -> Vec<String> {
        self.planned
            .iter()
            .filter_map(|p| {
                let held = self.held_back(p)?;
                Some(settling::message(&named(&self.owner, p.change), held))
            })
            .collect()
    }

    /// Every change checked, pending or not.
    pub(crate) fn changes(&self) -> Vec<Change> {
        self.planned.iter().map(|p| p.change.clone()).collect()
    }
}

/// Checks `changes` for `parent` (of `parent_resource`) against the
/// cache: nothing is to be written if one is refused. `slot`: the ring
/// slot the children are labelled with, where a ring's API server selects.
pub fn check<'a>(
    source: &ClusterSource,
    past_cache: &PastCache,
    parent_resource: &'a ApiResource,
    parent: &'a Value,
    changes: &'a [Change],
    slot: Option<u16>,
) -> Result<Checked<'a>, ChildrenError> {
    let md = &parent["metadata"];
    let owner = Owner {
        api_version: &parent_resource.api_version,
        kind: &parent_resource.kind,
        name: md["name"].as_str().unwrap_or_default(),
        namespace: md["namespace"].as_str().unwrap_or_default(),
        uid: md["uid"].as_str().unwrap_or_default(),
        member: md["labels"][crate::marks::RING_MEMBER].as_str(),
        slot,
    };
    let planned = plan(source, past_cache, &owner, changes)?;
    Ok(Checked {
        owner,
        planned,
        held_after: settling::NOT_MADE_AFTER,
    })
}

/// Why an execution stops before its next change, if it does: asked
/// before each one.
pub(crate) type Stop<'a> = &'a (dyn Fn() -> Option<String> + Send + Sync);

/// Makes the checked changes: generated Secrets and certificates first,
/// immediately before the changes that use them, then the rest in the
/// guest's order; none after `stop` says why not.
pub async fn execute(
    client: &Client,
    source: &ClusterSource,
    metrics: &Metrics,
    authority: &Authority,
    checked: Checked<'_>,
    stop: Stop<'_>,
) -> Result<Made, ChildrenError> {
    let Checked {
        owner,
        mut planned,
        held_after,
    } = checked;
    planned.sort_by_key(|p| {
        !matches!(
            p.change,
            Change::Generate { .. } | Change::Certificate { .. }
        )
    });
    let mut maker = Maker {
        client,
        source,
        metrics,
        authority,
        owner: &owner,
        held_after,
        made: Made::default(),
    };
    for p in planned {
        let change = p.change;
        if let Some(why) = stop() {
            return Err(ChildrenError::Stopped {
                change: change.to_string(),
                why,
                made: maker.made,
            });
        }
        match change {
            Change::Apply { .. } | Change::Bundle { .. } => maker.apply(p).await?,
            Change::Generate { name, keys } => maker.generate(&p, name, keys).await?,
            Change::Certificate { name, dns_names } => {
                maker.certificate(&p, name, dns_names).await?;
            }
            Change::Delete { name, uid, .. } => maker.delete(&p, name, uid).await?,
        }
        // Made, or found made.
        source.record_change(
            change.kind(),
            owner.namespace,
            change.name(),
            ChangeState::Made,
        );
    }
    Ok(maker.made)
}

/// What making the changes of a pass writes with, records to and counts
/// in, and what it made so far: each kind of change made by its method.
struct Maker<'m> {
    client: &'m Client,
    source: &'m ClusterSource,
    metrics: &'m Metrics,
    authority: &'m Authority,
    owner: &'m Owner<'m>,
    /// After how many applies in a row without settling a change is held
    /// back ([`settling`]).
    held_after: u32,
    made: Made,
}

/// One change made, found made or held back; or why not.
type Step = Result<(), ChildrenError>;

impl Maker<'_> {
    /// The API of `p`'s object and the labels it is counted by.
    fn to(&self, p: &CheckedChange<'_>) -> (Api<Decoded>, ChildLabels) {
        let labels = ChildLabels {
            kind: self.owner.kind.to_owned(),
            child: p.change.kind().kind.clone(),
        };
        // Every answer is the whole child: decoded bounded.
        let api = decode::api(self.client, &p.resource, self.owner.namespace);
        (api, labels)
    }

    /// The error of `change` the API server refused, the refusal recorded
    /// as what became of the change (`facts.change-state`).
    fn failed(&self, change: &Change, e: kube::Error) -> ChildrenError {
        if let kube::Error::Api(status) = &e {
            self.source.record_change(
                change.kind(),
                self.owner.namespace,
                change.name(),
                ChangeState::Refused {
                    code: status.code,
                    reason: status.reason.clone(),
                    message: status.message.clone(),
                },
            );
        }
        ChildrenError::Api {
            change: change.to_string(),
            class: api_error::classify(&e),
            text: api_error::text(&e),
        }
    }

    /// An apply (or a bundle): sent by server-side apply unless held back
    /// or the cached child holds it already, then its settling followed.
    async fn apply(&mut self, p: CheckedChange<'_>) -> Step {
        let (api, labels) = self.to(&p);
        let (source, metrics, owner, change) = (self.source, self.metrics, self.owner, p.change);
        let desired = p.desired.unwrap_or_default();
        if held_back(p.unsettled.as_ref(), self.held_after).is_some() {
            return Ok(());
        }
        if p.cached
            .as_ref()
            .is_some_and(|c| pending::unsettled(&desired, c).is_none())
        {
            self.made.unchanged += 1;
            metrics.child_applies_unchanged.get_or_create(&labels).inc();
            return Ok(());
        }
        let mut applied = api
            .patch(change.name(), &params_force(), &Patch::Apply(&desired))
            .await;
        // Refused as invalid over a child the parent controls: a
        // list entry another writer keyed differently (a Service
        // port changed by hand) stays beside the host's. The lists
        // the body sets are taken back whole, then applied again.
        if let (Err(kube::Error::Api(s)), Some(current)) = (&applied, &p.cached)
            && s.code == 422
            && controller_uid(current) == Some(owner.uid)
            && let Some(lists) = lists_of(&desired)
        {
            let mut reset = lists;
            reset["metadata"] = json!({
                "resourceVersion": current["metadata"]["resourceVersion"],
            });
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            tracing::info!(child = %change, "taking back the lists another writer changed");
            if api
                .patch(change.name(), &params, &Patch::Merge(&reset))
                .await
                .is_ok()
            {
                applied = api
                    .patch(change.name(), &params_force(), &Patch::Apply(&desired))
                    .await;
            }
        }
        record(source, metrics, owner, change, &applied);
        let stored = applied.map_err(|e| self.failed(change, e))?.into_value();
        self.made.applied += 1;
        metrics.child_applies.get_or_create(&labels).inc();
        let (kind, name) = (change.kind(), change.name());
        let before = source.unsettled(&kind, owner.namespace, name);
        let after = settling::after_apply(before.as_ref(), &desired, p.cached.as_ref(), &stored);
        if let Some(u) = &after
            && u.times == self.held_after
        {
            let message = settling::message(&named(owner, change), u);
            tracing::warn!(child = %change, %message, "a change does not settle");
            metrics
                .changes_not_settling
                .get_or_create(&KindLabel {
                    kind: owner.kind.to_owned(),
                })
                .inc();
            self.made.not_settling.push(message);
        }
        source.record_unsettled(kind.clone(), owner.namespace, name, after);
        if let Some(cache) = source.cache(&kind) {
            cache.apply_if_newer(stored);
        }
        Ok(())
    }

    /// A generated Secret `name` of random `keys`: created when missing,
    /// never overwritten.
    async fn generate(
        &mut self,
        p: &CheckedChange<'_>,
        name: &str,
        keys: &[(String, u32)],
    ) -> Step {
        let (api, labels) = self.to(p);
        let change = p.change;
        // Never overwritten: one that exists (the parent's, or no
        // one's) is adopted as it is.
        if p.cached.is_some() {
            self.made.unchanged += 1;
            let unchanged = &self.metrics.child_applies_unchanged;
            unchanged.get_or_create(&labels).inc();
            return Ok(());
        }
        let secret = generated_secret(name, keys).map_err(|e| ChildrenError::Random {
            change: change.to_string(),
            text: e.to_string(),
        })?;
        let secret = with_owner(&secret, self.owner);
        match create(&api, secret).await {
            Ok(_) => {
                self.made.applied += 1;
                self.metrics.child_applies.get_or_create(&labels).inc();
                self.source.record_apply(
                    change.kind(),
                    self.owner.namespace,
                    name,
                    ApplyOutcome::Applied,
                );
            }
            // Made meanwhile (a second replica): adopted as it is.
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {}
            Err(e) => return Err(self.failed(change, e)),
        }
        Ok(())
    }

    /// A serving certificate Secret `name` for `dns_names`: kept while
    /// still good, else issued, and created or replaced.
    async fn certificate(
        &mut self,
        p: &CheckedChange<'_>,
        name: &str,
        dns_names: &[String],
    ) -> Step {
        let (api, labels) = self.to(p);
        let (metrics, owner, change) = (self.metrics, self.owner, p.change);
        let now = jiff::Timestamp::now();
        let good = p
            .cached
            .as_ref()
            .and_then(|c| self.authority.still_good(c, dns_names, now));
        if let Some(left) = good {
            self.made.unchanged += 1;
            self.made.renew_after = earliest(self.made.renew_after, left);
            metrics.child_applies_unchanged.get_or_create(&labels).inc();
            return Ok(());
        }
        let issued = self.authority.issue(name, dns_names).await.map_err(|e| {
            ChildrenError::Certificate {
                change: change.to_string(),
                text: e.to_string(),
            }
        })?;
        let mut secret = with_owner(&issued.secret, owner);
        let written = match &p.cached {
            None => create(&api, secret).await,
            // Replaced only if it is still the one the cache
            // holds: a second replica's renewal is not overwritten.
            Some(current) => {
                secret["metadata"]["resourceVersion"] =
                    current["metadata"]["resourceVersion"].clone();
                match serde_json::from_value::<DynamicObject>(secret) {
                    Ok(secret) => {
                        api.replace(name, &PostParams::default(), &Decoded::new(secret))
                            .await
                    }
                    Err(e) => Err(kube::Error::SerdeError(e)),
                }
            }
        };
        record(self.source, metrics, owner, change, &written);
        match written {
            Ok(_) => {
                self.made.applied += 1;
                self.made.renew_after = earliest(self.made.renew_after, issued.renew_after);
                metrics.child_applies.get_or_create(&labels).inc();
            }
            // Issued meanwhile by a second replica: its certificate
            // is the one; the next pass reads it.
            Err(kube::Error::Api(s)) if s.code == 409 && p.cached.is_none() => {}
            Err(e) => return Err(self.failed(change, e)),
        }
        Ok(())
    }

    /// A deletion of `name`, with the `uid` the guest saw as its
    /// precondition: nothing to do if the object is gone.
    async fn delete(&mut self, p: &CheckedChange<'_>, name: &str, uid: &str) -> Step {
        let (api, labels) = self.to(p);
        if p.cached.is_none() {
            return Ok(());
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => {
                self.made.deleted += 1;
                self.made.deleted_unwatched += usize::from(p.unwatched);
                self.metrics.child_deletes.get_or_create(&labels).inc();
            }
            // Gone already, or another object by that name now.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => {
                // What the guest learns of an object it cannot
                // watch: its deletion refused (seed 000: the
                // sentence on ExposureReady instead).
                if p.unwatched {
                    record_refusal(self.source, self.metrics, self.owner, p.change, &e);
                }
                return Err(self.failed(p.change, e));
            }
        }
        Ok(())
    }
}

/// A change checked and ready to make: its kind's resource, the child as
/// the cache holds it, and for an apply (or a bundle) the object to apply.
struct CheckedChange<'c> {
    change: &'c Change,
    resource: ApiResource,
    cached: Option<Value>,
    desired: Option<Value>,
    /// `cached` was read past the cache (a deletion only).
    unwatched: bool,
    /// The same body made before without settling, the object unchanged
    /// since: how often ([`settling`]).
    unsettled: Option<Unsettled>,
}

/// `unsettled`, where it holds its change back: made `held_after` times.
fn held_back(unsettled: Option<&Unsettled>, held_after: u32) -> Option<&Unsettled> {
    unsettled.filter(|u| u.times >= held_after)
}

/// Checks `changes` as a whole against the cache: nothing is written if
/// one is refused.
fn plan<'c>(
    source: &ClusterSource,
    past_cache: &PastCache,
    owner: &Owner<'_>,
    changes: &'c [Change],
) -> Result<Vec<CheckedChange<'c>>, ChildrenError> {
    let mut planned = Vec::with_capacity(changes.len());
    for change in changes {
        let kind = &change.kind();
        let Some(resource) = source.resource(kind) else {
            return Err(ChildrenError::NotServed {
                change: change.to_string(),
                kind: kind.clone(),
            });
        };
        let mut cached = source
            .cache(kind)
            .and_then(|c| c.get_cached(owner.namespace, change.name()))
            .map(|c| c.with_applied());
        // An object of a kind the host may not watch there, which the
        // pass read past the cache: only ever deleted (seed 000).
        let mut unwatched = false;
        if cached.is_none()
            && matches!(change, Change::Delete { .. })
            && let Some(found) = past_cache.found(kind, owner.namespace, change.name())
        {
            cached = Some(found.value().as_ref().clone());
            unwatched = true;
        }
        let refused = |why: String| ChildrenError::Refused {
            change: change.to_string(),
            why,
        };
        let controller = cached.as_ref().and_then(controller_uid);
        match change {
            Change::Apply { .. } | Change::Generate { .. } | Change::Bundle { .. } => {
                if let Some(other) = controller
                    && other != owner.uid
                {
                    return Err(refused(format!(
                        "the object is controlled by another owner (uid {other})"
                    )));
                }
                // Taking over an object nothing controls needs the consent
                // of whoever may change it: its creator's rights are not the
                // parent's author's. A generated Secret is never written
                // over, so never taken over.
                let consent = format!("{}/{}", owner.kind, owner.name);
                if !matches!(change, Change::Generate { .. })
                    && let Some(existing) = &cached
                    && controller.is_none()
                    && existing["metadata"]["annotations"][ADOPT] != consent.as_str()
                {
                    return Err(refused(format!(
                        "the object exists and nothing controls it: the host takes it over only \
                         when whoever may change it consents with the annotation {ADOPT}: {consent}"
                    )));
                }
            }
            Change::Certificate { .. } => {
                if cached.is_some() && controller != Some(owner.uid) {
                    return Err(refused(
                        "the Secret exists and the parent does not control it".to_owned(),
                    ));
                }
            }
            Change::Delete { uid, .. } => match &cached {
                Some(child) if child["metadata"]["uid"] != uid.as_str() => {
                    return Err(refused(format!(
                        "the object is another one now (uid {})",
                        child["metadata"]["uid"]
                    )));
                }
                Some(_) if controller != Some(owner.uid) => {
                    return Err(refused("the parent does not control it".to_owned()));
                }
                _ => {}
            },
        }
        let desired = pending::desired(change, source, owner);
        let unsettled = desired.as_ref().and_then(|d| {
            let remembered = source.unsettled(kind, owner.namespace, change.name());
            settling::remembered_for(remembered.as_ref(), d, cached.as_ref()).cloned()
        });
        planned.push(CheckedChange {
            change,
            resource,
            cached,
            desired,
            unwatched,
            unsettled,
        });
    }
    Ok(planned)
}

/// How a message names the object of `change` of the parent `owner`:
/// `ConfigMap ns/name`.
fn named(owner: &Owner<'_>, change: &Change) -> String {
    format!(
        "{} {}/{}",
        change.kind().kind,
        owner.namespace,
        change.name()
    )
}

fn params_force() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// Records what the API server answered to a write of `change`, for
/// `facts.last-apply`, and counts a refusal by class.
fn record<T>(
    source: &ClusterSource,
    metrics: &Metrics,
    owner: &Owner<'_>,
    change: &Change,
    answer: &Result<T, kube::Error>,
) {
    match answer {
        Ok(_) => source.record_apply(
            change.kind(),
            owner.namespace,
            change.name(),
            ApplyOutcome::Applied,
        ),
        Err(e) => record_refusal(source, metrics, owner, change, e),
    }
}

/// Records the API server's refusal of a write of `change` (its code,
/// reason and message, for `facts.last-apply`) and counts it by class.
fn record_refusal(
    source: &ClusterSource,
    metrics: &Metrics,
    owner: &Owner<'_>,
    change: &Change,
    e: &kube::Error,
) {
    metrics
        .child_refusals
        .get_or_create(&ChildRefusalLabels {
            kind: owner.kind.to_owned(),
            child: change.kind().kind.clone(),
            class: class_label(api_error::classify(e)).to_owned(),
        })
        .inc();
    if let kube::Error::Api(status) = e {
        let outcome = ApplyOutcome::Refused {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        };
        source.record_apply(change.kind(), owner.namespace, change.name(), outcome);
    }
}

async fn create(api: &Api<Decoded>, object: Value) -> Result<Decoded, kube::Error> {
    match serde_json::from_value::<DynamicObject>(object) {
        Ok(object) => {
            api.create(&PostParams::default(), &Decoded::new(object))
                .await
        }
        Err(e) => Err(kube::Error::SerdeError(e)),
    }
}

fn earliest(current: Option<Duration>, other: Duration) -> Option<Duration> {
    Some(current.map_or(other, |c| c.min(other)))
}

fn class_label(class: ApiErrorClass) -> &'static str {
    match class {
        ApiErrorClass::Conflict => "conflict",
        ApiErrorClass::Reported(class) => class.as_str(),
    }
}
