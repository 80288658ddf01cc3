//! Hot swap: the module serving a kind is replaced while the host runs.
//!
//! The [`Reloader`] polls the guests directory ([`GuestsDir`]); a new or
//! changed module is compiled and put through the gate ([`gate`]) while the
//! running one keeps serving; one that passes is swapped in atomically (a
//! pass takes the kind's module once, at its start, so a pass in flight
//! finishes on the old one) and every object of the kind is re-queued.
//! For its first passes the swapped-in module is on probation: above a
//! failure rate it is replaced by the module it replaced ([`record`]).
//!
//! A module for a kind no module serves is served without a restart
//! ([`super::grow`]): its CRD resolved (while it is not installed, the
//! module is refused once and retried on every poll), its watches and those
//! of the kinds it reads started and synced, then the kind is appended.
//! A replacement reading a kind not watched yet gets that kind's watches
//! before it is swapped in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::gate::{self, Refusal};
use super::grow::{Grow, NotYet};
use super::guests_dir::{DirEvent, GuestFile, GuestsDir};
use super::metrics::{Metrics, ModuleLabels, RefusalLabels};
use super::{ParentKey, Shared};
use crate::runtime::{GuestModule, Runtime};

/// When a swapped-in module is rolled back: more than `threshold` of its
/// first `window` passes failed by the guest's fault (a trap, a deadline,
/// the memory cap, a contract violation). Decided as soon as the count of
/// failures makes the rate certain, so a module failing every pass is
/// rolled back after `threshold × window` failures, not after `window`.
#[derive(Clone, Copy, Debug)]
pub struct RollbackPolicy {
    pub threshold: f64,
    pub window: u32,
}

impl Default for RollbackPolicy {
    fn default() -> Self {
        RollbackPolicy {
            threshold: 0.5,
            window: 20,
        }
    }
}

/// The module a kind is served by.
pub(crate) struct Slot {
    /// The module serving the kind, or, when `serving` is false, the last
    /// one that did (the gate compares a returning module with it).
    pub module: GuestModule,
    /// False once the module's file was removed: no pass runs.
    pub serving: bool,
    /// Set after a swap, until the rollback window has passed.
    pub probation: Option<Probation>,
}

pub(crate) struct Probation {
    previous: GuestModule,
    passes: u32,
    failures: u32,
    swapped_at: Instant,
}

impl Slot {
    pub fn new(module: GuestModule) -> Self {
        Slot {
            module,
            serving: true,
            probation: None,
        }
    }
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

fn module_labels(kind: &str, module: &GuestModule) -> ModuleLabels {
    ModuleLabels {
        kind: kind.to_owned(),
        guest: module.name().to_owned(),
        digest: module.digest().to_owned(),
        contract: module.contract_version().to_owned(),
    }
}

/// Asks for a pass of every cached object of the kind; returns how many.
pub(crate) fn requeue_all(shared: &Shared, index: usize) -> usize {
    let kind = shared.kind(index);
    let objects = kind.cache.list("", &Default::default());
    for object in &objects {
        let md = &object["metadata"];
        kind.queue.add(ParentKey {
            kind: index,
            namespace: md["namespace"].as_str().unwrap_or_default().to_owned(),
            name: md["name"].as_str().unwrap_or_default().to_owned(),
        });
    }
    objects.len()
}

/// Counts a pass of a module on probation; rolls it back when its failures
/// pass the threshold, ends the probation after the window.
pub(crate) fn record(shared: &Shared, index: usize, module: &GuestModule, failed: bool) {
    let kind = shared.kind(index);
    let policy = shared.rollback;
    if kind.slot.read().expect("slot lock").probation.is_none() {
        return;
    }
    let rolled_back = {
        let mut slot = kind.slot.write().expect("slot lock");
        if !slot.serving || slot.module.digest() != module.digest() {
            return;
        }
        let Some(p) = slot.probation.as_mut() else {
            return;
        };
        p.passes += 1;
        p.failures += u32::from(failed);
        if p.passes == 1 {
            tracing::info!(
                kind = %kind.resource.kind,
                guest = module.name(),
                digest = module.digest(),
                after_ms = u64::try_from(p.swapped_at.elapsed().as_millis()).unwrap_or(u64::MAX),
                "first pass on the swapped-in module"
            );
        }
        if f64::from(p.failures) > policy.threshold * f64::from(policy.window) {
            let p = slot.probation.take().expect("on probation");
            let bad = std::mem::replace(&mut slot.module, p.previous.clone());
            Some((bad, p))
        } else {
            if p.passes >= policy.window {
                tracing::info!(
                    kind = %kind.resource.kind,
                    guest = module.name(),
                    failures = p.failures,
                    passes = p.passes,
                    "swapped-in module kept after its rollback window"
                );
                slot.probation = None;
            }
            None
        }
    };
    let Some((bad, p)) = rolled_back else {
        return;
    };
    let name = &kind.resource.kind;
    shared
        .metrics
        .rollbacks
        .get_or_create(&Metrics::kind(name))
        .inc();
    shared.metrics.modules.remove(&module_labels(name, &bad));
    shared
        .metrics
        .modules
        .get_or_create(&module_labels(name, &p.previous))
        .set(1);
    tracing::warn!(
        kind = %name,
        "rolled back guest {} (digest {}…) to digest {}…: {} of its first {} passes failed (threshold {} over {} passes); re-evaluating {} objects",
        bad.name(),
        short(bad.digest()),
        short(p.previous.digest()),
        p.failures,
        p.passes,
        policy.threshold,
        policy.window,
        kind.cache.len(),
    );
    requeue_all(shared, index);
}

/// Watches the guests directory and swaps modules in.
pub(crate) struct Reloader<'r> {
    runtime: &'r Runtime,
    dir: GuestsDir,
    /// Which kind (index) each module file serves.
    files: BTreeMap<String, usize>,
    /// Starts watches and serves new kinds.
    grow: Grow,
    /// Module files not served yet, retried on every poll (a CRD not
    /// installed yet), with the last refusal's detail (logged once).
    pending: BTreeMap<String, (GuestFile, String)>,
    last_scan_error: Option<String>,
}

impl<'r> Reloader<'r> {
    pub fn new(
        runtime: &'r Runtime,
        dir: GuestsDir,
        files: BTreeMap<String, usize>,
        grow: Grow,
    ) -> Self {
        Reloader {
            runtime,
            dir,
            files,
            grow,
            pending: BTreeMap::new(),
            last_scan_error: None,
        }
    }

    /// Polls every `poll`, forever.
    ///
    /// Compiling and checking a module blocks this task, which is the
    /// operator's main task (the one awaiting shutdown), never a pass
    /// worker: passes go on with the running module meanwhile.
    pub async fn run(mut self, shared: Arc<Shared>, poll: Duration) {
        let mut tick = tokio::time::interval(poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.poll(&shared).await;
        }
    }

    pub async fn poll(&mut self, shared: &Arc<Shared>) {
        let events = match self.dir.scan() {
            Ok(events) => {
                self.last_scan_error = None;
                events
            }
            Err(e) => {
                let e = e.to_string();
                if self.last_scan_error.as_ref() != Some(&e) {
                    tracing::warn!(dir = %self.dir.path().display(), error = %e, "cannot scan the guests directory; the running modules stay");
                    self.last_scan_error = Some(e);
                }
                return;
            }
        };
        for event in events {
            match event {
                DirEvent::Changed(file) => {
                    let last = self.pending.remove(&file.file).map(|(_, d)| d);
                    self.changed(shared, file, last, false).await;
                }
                DirEvent::Removed { file, stem } => {
                    self.pending.remove(&file);
                    self.removed(shared, &file, &stem);
                }
                DirEvent::Unreadable { file, error } => {
                    self.pending.remove(&file);
                    let kind = self
                        .files
                        .get(&file)
                        .map(|&i| shared.kind(i).resource.kind.clone())
                        .unwrap_or_default();
                    refused_count(shared, &kind, "read");
                    tracing::warn!(
                        kind = %kind,
                        check = "read",
                        "refused guest file {file}: cannot read it inside the guests directory: {error}"
                    );
                }
            }
        }
        // Modules waiting for their CRD (or a read's): tried again.
        let pending = std::mem::take(&mut self.pending);
        for (_, (file, last)) in pending {
            self.changed(shared, file, Some(last), true).await;
        }
    }

    /// A module file, new or changed, or `retried` while pending (`last`:
    /// the detail of its last refusal, logged already).
    async fn changed(
        &mut self,
        shared: &Arc<Shared>,
        file: GuestFile,
        last: Option<String>,
        retried: bool,
    ) {
        let served = self.files.get(&file.file).copied();
        let served_kind = served.map(|i| shared.kind(i).resource.kind.clone());
        if !retried {
            tracing::info!(guest = %file.stem, digest = %file.digest, "guest file changed: checking the new module");
        }
        let started = Instant::now();
        let module = match self.runtime.load(&file.stem, &file.bytes) {
            Ok(m) => m,
            Err(e) => {
                return refuse(
                    shared,
                    &file,
                    served_kind.as_deref().unwrap_or_default(),
                    Refusal::from_load(&e),
                );
            }
        };
        let claims = module.spec().kind_ref();
        let claimed = shared
            .kinds()
            .iter()
            .position(|k| k.cache.kind() == &claims);
        let index = match (served, claimed) {
            (Some(i), _) => i,
            (None, Some(j)) => {
                if let Some((other, _)) = self.files.iter().find(|(_, i)| **i == j) {
                    let refusal = Refusal {
                        check: "claimed",
                        detail: format!("it claims kind {claims}, which guest file {other} serves"),
                    };
                    return refuse(shared, &file, &claims.kind, refusal);
                }
                j
            }
            (None, None) => {
                if let Err(refusal) = gate::fixtures(&module, &file.fixtures) {
                    return refuse(shared, &file, &claims.kind, refusal);
                }
                match self.grow.serve_new(shared, &module).await {
                    Ok(index) => {
                        self.files.insert(file.file, index);
                    }
                    Err(not_yet) => self.not_yet(shared, file, &claims.kind, not_yet, last),
                }
                return;
            }
        };
        let kind = shared.kind(index);
        let name = kind.resource.kind.clone();
        let (old, was_serving) = {
            let slot = kind.slot.read().expect("slot lock");
            (slot.module.clone(), slot.serving)
        };
        if was_serving && old.digest() == module.digest() {
            self.files.insert(file.file, index);
            return;
        }
        let checked = gate::compatible(old.spec(), module.spec())
            .and_then(|()| gate::fixtures(&module, &file.fixtures));
        if let Err(refusal) = checked {
            return refuse(shared, &file, &name, refusal);
        }
        // Watches of kinds it reads that the host does not watch yet.
        let synced = match self.grow.watch_reads(shared, &module).await {
            Ok(synced) => synced,
            Err(not_yet) => return self.not_yet(shared, file, &name, not_yet, last),
        };
        if !synced.is_empty()
            && tokio::time::timeout(super::grow::SYNC_TIMEOUT, futures::future::join_all(synced))
                .await
                .is_err()
        {
            tracing::warn!(kind = %name, "the watches of the module's new reads did not list everything in time; swapping it in anyway");
        }
        {
            let mut slot = kind.slot.write().expect("slot lock");
            slot.module = module.clone();
            slot.serving = true;
            // A swap during a probation falls back to the module that was
            // serving before it, the last one that proved itself. A module
            // returning after its file was removed has nothing serving to
            // fall back to.
            let previous = slot
                .probation
                .take()
                .map_or_else(|| old.clone(), |p| p.previous);
            slot.probation = was_serving.then(|| Probation {
                previous,
                passes: 0,
                failures: 0,
                swapped_at: Instant::now(),
            });
        }
        self.files.insert(file.file, index);
        shared.metrics.modules.remove(&module_labels(&name, &old));
        shared
            .metrics
            .modules
            .get_or_create(&module_labels(&name, &module))
            .set(1);
        shared
            .metrics
            .swaps
            .get_or_create(&Metrics::kind(&name))
            .inc();
        tracing::info!(
            kind = %name,
            checked_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "swapped in guest {} (digest {}…) for kind {} in place of digest {}…{}; re-evaluating {} objects",
            module.name(),
            short(module.digest()),
            module.spec().kind_ref(),
            short(old.digest()),
            if was_serving { "" } else { " (not served since its file was removed)" },
            kind.cache.len(),
        );
        requeue_all(shared, index);
    }

    /// A module not served (yet): refused; kept pending and retried on
    /// every poll when what it waits for may come (a CRD installed), with
    /// its refusal logged and counted once while it stays the same.
    fn not_yet(
        &mut self,
        shared: &Shared,
        file: GuestFile,
        kind: &str,
        not_yet: NotYet,
        last: Option<String>,
    ) {
        let NotYet { refusal, retry } = not_yet;
        if last.as_deref() != Some(refusal.detail.as_str()) {
            refuse(shared, &file, kind, refusal.clone());
        }
        if retry {
            self.pending
                .insert(file.file.clone(), (file, refusal.detail));
        }
    }

    fn removed(&mut self, shared: &Shared, file: &str, stem: &str) {
        let Some(index) = self.files.remove(file) else {
            return;
        };
        let kind = shared.kind(index);
        let module = {
            let mut slot = kind.slot.write().expect("slot lock");
            slot.serving = false;
            slot.probation = None;
            slot.module.clone()
        };
        shared
            .metrics
            .modules
            .remove(&module_labels(&kind.resource.kind, &module));
        tracing::warn!(
            kind = %kind.resource.kind,
            "guest {stem} removed: kind {} is no longer served; its objects keep their status until a module serves it again",
            module.spec().kind_ref(),
        );
    }
}

fn refused_count(shared: &Shared, kind: &str, check: &str) {
    shared
        .metrics
        .swap_refusals
        .get_or_create(&RefusalLabels {
            kind: kind.to_owned(),
            check: check.to_owned(),
        })
        .inc();
}

/// One log line and one count: the running module stays.
fn refuse(shared: &Shared, file: &GuestFile, kind: &str, refusal: Refusal) {
    refused_count(shared, kind, refusal.check);
    tracing::warn!(
        kind = %kind,
        check = refusal.check,
        "refused guest {} (digest {}…): {}",
        file.stem,
        short(&file.digest),
        refusal.detail
    );
}
