//! Growing while running: a guest dropped in for a kind the host does not
//! serve yet, or a replacement reading a kind not watched yet, gets its
//! watches (in the namespaces in scope, optional kinds probed as at start)
//! and, for a new kind, a cache, workers and every object queued.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::core::ApiResource;
use reconciler_conventions::kind::KindRef;
use tokio::sync::{mpsc, oneshot};

use super::cache::Change;
use super::gate::Refusal;
use super::metrics::Metrics;
use super::namespaces::{self, LeftOut};
use super::probe::Resolved;
use super::{Shared, Tasks, probe, swap};
use crate::facts::Availability;
use crate::runtime::GuestModule;

/// How long the watches started for a new kind or read may take to list
/// everything before the kind is served anyway (the watches go on).
pub(crate) const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// A module not (yet) served: why, and whether it is retried on every poll
/// (a CRD not installed yet, a permission not granted yet).
pub(crate) struct NotYet {
    pub refusal: Refusal,
    pub retry: bool,
}

impl NotYet {
    fn retry(check: &'static str, detail: String) -> Self {
        NotYet {
            refusal: Refusal { check, detail },
            retry: true,
        }
    }

    fn refuse(check: &'static str, detail: String) -> Self {
        NotYet {
            refusal: Refusal { check, detail },
            retry: false,
        }
    }
}

/// What the reloader needs to start watches and serve kinds.
pub(crate) struct Grow {
    pub client: Client,
    pub changes: mpsc::UnboundedSender<Change>,
    pub tasks: Arc<Tasks>,
    /// The namespaces watched ("" for all): `--namespaces` without the
    /// ones left out at start.
    pub scopes: Vec<String>,
    pub left_out: LeftOut,
    pub settings: BTreeMap<String, Vec<(String, String)>>,
    pub concurrency: usize,
    /// The kinds read by some module, watched or probed (optional, not
    /// served); a kind with a cache is watched as well.
    pub readable: BTreeSet<KindRef>,
}

/// A read to start: its resource (`None`: optional and not served) and
/// where it may be read.
struct Planned {
    kind: KindRef,
    optional: bool,
    resource: Option<Resolved>,
    availability: Vec<(String, Availability)>,
}

fn crd_name(kind: &KindRef, resource: Option<&ApiResource>, plural: &str) -> String {
    let plural = resource.map_or(plural, |r| r.plural.as_str());
    if kind.group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{}", kind.group)
    }
}

impl Grow {
    fn watched(&self, shared: &Shared, kind: &KindRef) -> bool {
        self.readable.contains(kind) || shared.source.cache(kind).is_some()
    }

    /// Probes where the host may list `resolved`, in every scope (only
    /// cluster-wide for a cluster-scoped kind).
    async fn availability(
        &self,
        kind: &KindRef,
        resolved: &Resolved,
    ) -> Result<Vec<(String, Availability)>, NotYet> {
        let mut found = Vec::new();
        for ns in &resolved.scopes(&self.scopes) {
            let a = probe::readable(&self.client, kind, &resolved.resource, ns)
                .await
                .map_err(|e| NotYet::retry("probe", e.to_string()))?;
            found.push((ns.clone(), a));
        }
        Ok(found)
    }

    /// Starts the watches of every kind `module` reads that the host does
    /// not watch yet, probed as at start: a read no module has optional
    /// must be served and listable wherever the host watches; an optional
    /// one is off where it is not. Returns the receivers of the watches'
    /// first listings. Nothing is started when a read is refused.
    pub async fn watch_reads(
        &mut self,
        shared: &Shared,
        module: &GuestModule,
    ) -> Result<Vec<oneshot::Receiver<()>>, NotYet> {
        let mut plan: Vec<Planned> = Vec::new();
        for r in &module.spec().reads {
            if self.watched(shared, &r.kind) || plan.iter().any(|p| p.kind == r.kind) {
                continue;
            }
            let resource = probe::resolve(&self.client, &r.kind)
                .await
                .map_err(|e| NotYet::retry("probe", e.to_string()))?;
            let Some(resource) = resource else {
                if r.optional {
                    plan.push(Planned {
                        kind: r.kind.clone(),
                        optional: true,
                        resource: None,
                        availability: Vec::new(),
                    });
                    continue;
                }
                return Err(NotYet::retry(
                    "reads",
                    format!(
                        "it reads {}, which this cluster does not serve (is its CustomResourceDefinition installed?); retrying on every poll",
                        r.kind
                    ),
                ));
            };
            let availability = self.availability(&r.kind, &resource).await?;
            if !r.optional
                && let Some((ns, a)) = availability
                    .iter()
                    .find(|(_, a)| *a != Availability::Available)
            {
                let detail = match a {
                    Availability::Forbidden => format!(
                        "it reads {}, and the host may not list {} {} (403); retrying on every poll",
                        r.kind,
                        namespaces::resource_name(&resource.resource),
                        if ns.is_empty() {
                            "in every namespace".to_owned()
                        } else {
                            format!("in namespace {ns}")
                        }
                    ),
                    _ => format!(
                        "it reads {}, which this cluster does not serve; retrying on every poll",
                        r.kind
                    ),
                };
                return Err(NotYet::retry("reads", detail));
            }
            plan.push(Planned {
                kind: r.kind.clone(),
                optional: r.optional,
                resource: Some(resource),
                availability,
            });
        }
        let mut synced = Vec::new();
        for p in plan {
            self.readable.insert(p.kind.clone());
            let Some(Resolved { resource, .. }) = p.resource else {
                tracing::warn!(kind = %p.kind, "optional API not served: the feature is off until the next start");
                shared
                    .source
                    .set_availability(p.kind.clone(), "", Availability::NotServed);
                continue;
            };
            let cache = shared.source.add_kind(p.kind.clone());
            let mut refused = Vec::new();
            for (ns, a) in &p.availability {
                if *a == Availability::Available {
                    synced.push(super::start_watch(
                        &self.client,
                        &self.tasks,
                        &self.changes,
                        &resource,
                        &cache,
                        ns,
                    ));
                } else {
                    shared.source.set_availability(p.kind.clone(), ns, *a);
                    refused.push(ns.clone());
                }
            }
            tracing::info!(kind = %p.kind, optional = p.optional, "watching a kind read by a new module");
            if !refused.is_empty() {
                tracing::warn!(kind = %p.kind, namespaces = ?refused, "optional API refused (403): off in these namespaces");
                shared
                    .metrics
                    .refused_namespaces
                    .get_or_create(&Metrics::kind(&p.kind.kind))
                    .set(i64::try_from(refused.len()).unwrap_or(i64::MAX));
            }
        }
        Ok(synced)
    }

    /// Serves a kind no module serves yet from `module` (the gate's load
    /// checks and fixtures passed): resolves its CRD, starts the watches of
    /// the kind and of its new reads, waits for their first listings, then
    /// appends the kind, spawns its workers and queues every object.
    /// Returns the kind's index.
    pub async fn serve_new(
        &mut self,
        shared: &Arc<Shared>,
        module: &GuestModule,
    ) -> Result<usize, NotYet> {
        let spec = module.spec();
        let kind_ref = spec.kind_ref();
        let resolved = probe::resolve(&self.client, &kind_ref)
            .await
            .map_err(|e| NotYet::retry("probe", e.to_string()))?;
        let Some(resolved) = resolved else {
            return Err(NotYet::retry(
                "crd",
                format!(
                    "the CustomResourceDefinition {} of kind {kind_ref} is not installed (see `reconciler-host crd`); retrying on every poll until it is",
                    crd_name(&kind_ref, None, &spec.plural)
                ),
            ));
        };
        let resource = resolved.resource.clone();
        if resource.kind != kind_ref.kind {
            return Err(NotYet::refuse(
                "kind",
                format!("the cluster serves {kind_ref} as {}", resource.kind),
            ));
        }
        let parent_watched = shared.source.cache(&kind_ref).is_some();
        let availability = if parent_watched {
            Vec::new()
        } else {
            self.availability(&kind_ref, &resolved).await?
        };
        if let Some((ns, a)) = availability
            .iter()
            .find(|(_, a)| *a != Availability::Available)
        {
            let detail = match a {
                Availability::Forbidden => format!(
                    "the host may not list {} {} (403); retrying on every poll",
                    namespaces::resource_name(&resource),
                    if ns.is_empty() {
                        "in every namespace".to_owned()
                    } else {
                        format!("in namespace {ns}")
                    }
                ),
                _ => format!(
                    "the CustomResourceDefinition {} of kind {kind_ref} is not served; retrying on every poll until it is",
                    crd_name(&kind_ref, Some(&resource), &spec.plural)
                ),
            };
            return Err(NotYet::retry("crd", detail));
        }
        let mut synced = self.watch_reads(shared, module).await?;
        let cache = shared.source.add_kind(kind_ref.clone());
        if !parent_watched {
            for ns in &resolved.scopes(&self.scopes) {
                synced.push(super::start_watch(
                    &self.client,
                    &self.tasks,
                    &self.changes,
                    &resource,
                    &cache,
                    ns,
                ));
            }
        }
        let waits = synced.len();
        if tokio::time::timeout(SYNC_TIMEOUT, futures::future::join_all(synced))
            .await
            .is_err()
        {
            tracing::warn!(kind = %kind_ref, watches = waits, timeout_s = SYNC_TIMEOUT.as_secs(), "the new kind's watches did not list everything in time; serving it anyway, objects are queued as they arrive");
        }
        let settings = super::settings_of(&self.settings, &kind_ref.kind);
        let kind = Arc::new(super::new_kind(
            &self.client,
            &shared.metrics,
            module.clone(),
            resource,
            cache,
            settings,
        ));
        if !self.left_out.is_empty() {
            namespaces::mark_not_watched(
                &self.client,
                std::slice::from_ref(&kind),
                &shared.metrics,
                &self.left_out,
            )
            .await;
        }
        let index = shared.push_kind(kind);
        super::spawn_workers(shared, &self.tasks, index, self.concurrency);
        let queued = swap::requeue_all(shared, index);
        tracing::info!(
            index,
            digest = module.digest(),
            objects = queued,
            "serving new kind {kind_ref} from guest {}",
            module.name()
        );
        Ok(index)
    }
}
