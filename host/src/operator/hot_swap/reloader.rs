//! Hot swap: the module serving a kind is replaced while the host runs.
//!
//! The [`Reloader`] polls the guests directory ([`GuestsDir`]); a new or
//! changed module is compiled and put through the gate ([`gate`]) while the
//! running one keeps serving; one that passes is swapped in atomically (a
//! pass takes the kind's module once, at its start, so a pass in flight
//! finishes on the old one) and every object of the kind is re-queued.
//! For its first passes the swapped-in module is on probation
//! ([`crate::operator::kinds::probation`]).
//!
//! A module for a kind no module serves is served without a restart
//! ([`Serving::serve`]); a replacement reading a kind not watched yet gets that
//! kind's watches before it is swapped in.
//!
//! A module [`Offer`]ed from a GuestModule object goes through the same
//! gate and promotion, and takes its kind over from the directory's file:
//! that file's later changes are refused as claimed while the offer serves.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::operator::hot_swap::gate::{self, Check, Refusal};
use crate::operator::hot_swap::golden_lists::Golden;
use crate::operator::hot_swap::guests_dir::{DirEvent, GuestFile, GuestsDir};
use crate::operator::hot_swap::offers::{Answer, OFFERED_PREFIX, Offer, OfferReceiver, Offered};
use crate::operator::hot_swap::promotion::{self, Promotion, REVIEWED};
use crate::operator::hot_swap::serving::{NotYet, SYNC_TIMEOUT, Serving};
use crate::operator::hot_swap::unserved::Unserved;
use crate::operator::kinds::probation::short;
use crate::operator::kinds::served::{Probation, RollbackPolicy};
use crate::operator::kinds::{Kind, Registry};
use crate::operator::replica::metrics::{Metrics, ModuleLabels, RefusalLabels};
use crate::operator::schedule::KindId;
use crate::pass::review::Review;
use crate::runtime::{Module, Runtime};

/// Watches the guests directory and swaps modules in.
pub(crate) struct Reloader<'r> {
    runtime: &'r Runtime,
    dir: GuestsDir,
    /// Which kind each module file serves.
    files: BTreeMap<String, KindId>,
    /// Starts watches and serves new kinds.
    serving: Serving,
    /// The probation of a swapped-in module.
    rollback: RollbackPolicy,
    /// Module files not served yet, retried on every poll (a CRD not
    /// installed yet), with the last refusal's detail (logged once) and
    /// how it is promoted.
    pending: BTreeMap<String, (GuestFile, String, Promotion)>,
    last_scan_error: Option<String>,
    /// Swap in a module that drops a golden reason or aspect (with a WARN),
    /// as `--allow-golden-drift` lets it serve at start.
    allow_golden_drift: bool,
    /// The files the start refused: settled once served or removed.
    unserved: Arc<Unserved>,
    /// How a module that passed the gate comes to serve.
    promotion: Promotion,
    /// The review of the last shadow run, until an offer's answer takes it.
    review: Option<Review>,
}

impl<'r> Reloader<'r> {
    pub(crate) fn new(
        runtime: &'r Runtime,
        dir: GuestsDir,
        files: BTreeMap<String, KindId>,
        serving: Serving,
        rollback: RollbackPolicy,
        pending: Vec<GuestFile>,
        allow_golden_drift: bool,
    ) -> Self {
        Reloader {
            runtime,
            dir,
            files,
            serving,
            rollback,
            // Held at start (an API they need is missing): tried on the
            // first poll like a new module, their refusal logged then.
            pending: pending
                .into_iter()
                .map(|f| (f.file.clone(), (f, String::new(), Promotion::Direct)))
                .collect(),
            last_scan_error: None,
            allow_golden_drift,
            unserved: Arc::default(),
            promotion: Promotion::Direct,
            review: None,
        }
    }

    /// Promoting a module that passed the gate as `promotion` says.
    pub(crate) fn promoting(mut self, promotion: Promotion) -> Self {
        self.promotion = promotion;
        self
    }

    /// The files the start refused: each settled once served or removed.
    pub(crate) fn settling(mut self, unserved: Arc<Unserved>) -> Self {
        self.unserved = unserved;
        self
    }

    /// Polls every `poll`, and takes `offers` as they come, forever.
    ///
    /// Compiling and checking a module blocks this task, which is the
    /// operator's main task (the one awaiting shutdown), never a pass
    /// worker: passes go on with the running module meanwhile.
    pub(crate) async fn run(
        mut self,
        registry: Arc<Registry>,
        poll: Duration,
        mut offers: OfferReceiver,
    ) {
        let mut tick = tokio::time::interval(poll);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => self.poll(&registry).await,
                Some(offer) = offers.recv() => {
                    let Offer { file, kind, promotion, reply } = offer;
                    self.review = None;
                    let offered = self.offered(&registry, file, &kind, promotion).await;
                    let _ = reply.send(Answer {
                        offered,
                        review: self.review.take(),
                    });
                }
            }
        }
    }

    /// A module offered to serve `kind`, promoted as `promotion` says: it
    /// takes the kind over from the guests directory's file serving it,
    /// and is held to that file's golden lists (reasons and aspects are
    /// frozen API whatever the module's source).
    async fn offered(
        &mut self,
        registry: &Arc<Registry>,
        mut file: GuestFile,
        kind: &str,
        promotion: Promotion,
    ) -> Offered {
        let index = registry
            .kinds()
            .into_iter()
            .find(|(_, k)| k.resource.kind == kind)
            .map(|(id, _)| id);
        if let Some(index) = index {
            let offered_already = self
                .files
                .iter()
                .find(|(f, i)| **i == index && **f != file.file && f.starts_with(OFFERED_PREFIX));
            if let Some((other, _)) = offered_already {
                let refusal = Refusal::new(
                    Check::Claimed,
                    format!("kind {kind} is served from {other} already"),
                );
                return refuse(registry, &file, kind, refusal);
            }
            // The directory's file serving the kind gives way while the
            // offer is checked, and for good once it serves.
            let serving: Vec<String> = self
                .files
                .iter()
                .filter(|(f, i)| **i == index && **f != file.file)
                .map(|(f, _)| f.clone())
                .collect();
            for other in &serving {
                if let Some(stem) = other.strip_suffix(".wasm") {
                    file.stem = stem.to_owned();
                }
                self.files.remove(other);
            }
            let offered = self
                .changed(registry, file, None, false, promotion, Some(kind))
                .await;
            if offered != Offered::Serving {
                for other in serving {
                    self.files.insert(other, index);
                }
            }
            return offered;
        }
        self.changed(registry, file, None, false, promotion, Some(kind))
            .await
    }

    pub(crate) async fn poll(&mut self, registry: &Arc<Registry>) {
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
                    let last = self.pending.remove(&file.file).map(|(_, d, _)| d);
                    let name = file.file.clone();
                    self.changed(registry, file, last, false, self.promotion, None)
                        .await;
                    if self.files.contains_key(&name) {
                        self.unserved.settled(&name);
                    }
                }
                DirEvent::Removed { file, stem } => {
                    self.pending.remove(&file);
                    self.unserved.settled(&file);
                    self.removed(registry, &file, &stem);
                }
                DirEvent::Unreadable { file, error } => {
                    self.pending.remove(&file);
                    let kind = self
                        .files
                        .get(&file)
                        .map(|&i| registry.kind(i).resource.kind.clone())
                        .unwrap_or_default();
                    refused_count(registry, &kind, Check::Read);
                    tracing::warn!(
                        kind = %kind,
                        check = Check::Read.as_str(),
                        "refused guest file {file}: cannot read it inside the guests directory: {error}"
                    );
                }
            }
        }
        // Modules waiting for their CRD (or a read's): tried again.
        let pending = std::mem::take(&mut self.pending);
        for (_, (file, last, promotion)) in pending {
            self.changed(registry, file, Some(last), true, promotion, None)
                .await;
        }
        registry
            .metrics()
            .modules_pending
            .set(i64::try_from(self.pending.len()).unwrap_or(i64::MAX));
    }

    /// A module file, new or changed, or `retried` while pending (`last`:
    /// the detail of its last refusal, logged already), promoted as
    /// `promotion` says; refused unless it serves `must_serve`, where given.
    async fn changed(
        &mut self,
        registry: &Arc<Registry>,
        file: GuestFile,
        last: Option<String>,
        retried: bool,
        promotion: Promotion,
        must_serve: Option<&str>,
    ) -> Offered {
        let served = self.files.get(&file.file).copied();
        let served_kind = served.map(|i| registry.kind(i).resource.kind.clone());
        if !retried {
            tracing::info!(guest = %file.stem, digest = %file.digest, "guest file changed: checking the new module");
        }
        let started = Instant::now();
        let served_kind = served_kind.as_deref().unwrap_or_default();
        let module = match self.loaded(registry, &file, served_kind, must_serve) {
            Ok(module) => module,
            Err(refused) => return refused,
        };
        let claims = module.spec().kind_ref();
        let claimed = registry
            .kinds()
            .into_iter()
            .find(|(_, k)| k.cache.kind() == &claims)
            .map(|(id, _)| id);
        let index = match (served, claimed) {
            (Some(i), _) => i,
            (None, Some(j)) => {
                if let Some((other, _)) = self.files.iter().find(|(_, i)| **i == j) {
                    let refusal = Refusal::new(
                        Check::Claimed,
                        format!("it claims kind {claims}, which guest file {other} serves"),
                    );
                    return refuse(registry, &file, &claims.kind, refusal);
                }
                j
            }
            (None, None) => {
                return self
                    .serve_new(registry, file, &module, &claims.kind, last, promotion)
                    .await;
            }
        };
        let kind = registry.kind(index);
        let name = kind.resource.kind.clone();
        let (old, was_serving) = {
            let served = kind.served.read().expect("served lock");
            (served.module.clone(), served.serving)
        };
        if was_serving && old.digest() == module.digest() {
            tracing::info!(
                kind = %name,
                "guest {} (digest {}…) is the module serving kind {name} already: nothing to swap",
                module.name(),
                short(module.digest()),
            );
            self.files.insert(file.file, index);
            return Offered::Serving;
        }
        let checked = match gate::compatible(old.spec(), module.spec()) {
            Ok(()) => gate::fixtures(&module, &file.fixtures).await,
            refused => refused,
        };
        if let Err(refusal) = checked {
            return refuse(registry, &file, &name, refusal);
        }
        // Watches of kinds it reads that the host does not watch yet.
        if let Err(not_yet) = self.sync_reads(registry, &module, &name).await {
            return self.not_yet(registry, file, &name, not_yet, last, promotion);
        }
        // Auto promotion: what it would make of every parent, first.
        if matches!(promotion, Promotion::Auto | Promotion::Checked)
            && was_serving
            && let Err(refusal) = self
                .shadowed(registry, &kind, &name, &old, &module, promotion)
                .await
        {
            return refuse(registry, &file, &name, refusal);
        }
        if promotion == Promotion::Checked {
            tracing::info!(
                kind = %name,
                "guest {} (digest {}…) passed every check: it serves once its promotion is decided",
                module.name(),
                short(module.digest()),
            );
            return Offered::Checked;
        }
        self.install(&kind, &module, &old, was_serving);
        // What the caches hold follows the modules serving now (the one
        // replaced still counts while the new one is on probation).
        registry.hold_reads(None).await;
        self.files.insert(file.file, index);
        swap_counted(registry, &name, &old, &module);
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
        registry.requeue_all(index);
        Offered::Serving
    }

    /// Loads `file`'s module and holds it to what it is offered for
    /// (`must_serve`) and to its golden lists; a refusal is counted
    /// against `served_kind` (the kind the file serves, if any).
    fn loaded(
        &self,
        registry: &Registry,
        file: &GuestFile,
        served_kind: &str,
        must_serve: Option<&str>,
    ) -> Result<Module, Offered> {
        let module = match self.runtime.load(&file.stem, &file.bytes) {
            Ok(m) => m,
            Err(e) => {
                return Err(refuse(registry, file, served_kind, Refusal::from_load(&e)));
            }
        };
        if let Some(kind) = must_serve
            && module.spec().kind != kind
        {
            let refusal = Refusal::new(
                Check::Kind,
                format!(
                    "it serves kind {}, not {kind} as it was offered for",
                    module.spec().kind_ref()
                ),
            );
            return Err(refuse(registry, file, kind, refusal));
        }
        // The golden lists shipped beside it hold at hot swap as at start.
        match Golden::read(&self.dir, module.name()) {
            Ok(golden) => {
                if let Err(refusal) = golden.check(module.spec()) {
                    if self.allow_golden_drift {
                        tracing::warn!(
                            guest = module.name(),
                            "--allow-golden-drift: swapping in guest {} though {}",
                            module.name(),
                            refusal.detail
                        );
                    } else {
                        return Err(refuse(registry, file, served_kind, refusal));
                    }
                }
            }
            Err(e) => {
                return Err(refuse(
                    registry,
                    file,
                    served_kind,
                    Refusal::new(
                        Check::Read,
                        format!(
                            "cannot read its golden lists ({0}.reasons, {0}.aspects): {e}",
                            module.name()
                        ),
                    ),
                ));
            }
        }
        Ok(module)
    }

    /// A module for `kind`, which no module serves: its fixtures run, then
    /// it serves the kind (unless only checked), or waits for it pending.
    async fn serve_new(
        &mut self,
        registry: &Arc<Registry>,
        file: GuestFile,
        module: &Module,
        kind: &str,
        last: Option<String>,
        promotion: Promotion,
    ) -> Offered {
        if let Err(refusal) = gate::fixtures(module, &file.fixtures).await {
            return refuse(registry, &file, kind, refusal);
        }
        if promotion == Promotion::Checked {
            return Offered::Checked;
        }
        match self.serving.serve(registry, module).await {
            Ok(index) => {
                self.files.insert(file.file, index);
                Offered::Serving
            }
            Err(not_yet) => self.not_yet(registry, file, kind, not_yet, last, promotion),
        }
    }

    /// Starts the watches of the kinds `module` reads that the host does
    /// not watch yet, and waits (bounded) for their first listings; then
    /// has the caches hold what it reads beside what is served, listing
    /// again a kind of which it reads more (bounded too): its shadow run
    /// and first pass read what it declares.
    async fn sync_reads(
        &self,
        registry: &Registry,
        module: &Module,
        name: &str,
    ) -> Result<(), NotYet> {
        let synced = self.serving.watch_reads(registry, module).await?;
        if !synced.is_empty()
            && tokio::time::timeout(SYNC_TIMEOUT, futures::future::join_all(synced))
                .await
                .is_err()
        {
            tracing::warn!(kind = %name, "the watches of the module's new reads did not list everything in time; swapping it in anyway");
        }
        registry.hold_reads(Some(module)).await;
        Ok(())
    }

    /// Shadows `module` beside `old` on every parent of `kind` (`name`),
    /// keeping the review: refused if `promotion` holds it back.
    async fn shadowed(
        &mut self,
        registry: &Registry,
        kind: &Kind,
        name: &str,
        old: &Module,
        module: &Module,
        promotion: Promotion,
    ) -> Result<(), Refusal> {
        let review = promotion::shadow(registry, kind, old, module).await;
        let held = promotion::held(&review, promotion);
        self.review = Some(review.bounded(REVIEWED));
        let parents = held?;
        tracing::info!(
            kind = %name,
            parents,
            "shadowed guest {} (digest {}…) on {parents} parent(s): no parent turns from Ready True to False, no new guest error",
            module.name(),
            short(module.digest()),
        );
        Ok(())
    }

    /// Makes `module` serve `kind` in place of `old`, on probation if
    /// `old` was serving.
    fn install(&self, kind: &Kind, module: &Module, old: &Module, was_serving: bool) {
        let mut served = kind.served.write().expect("served lock");
        served.module = module.clone();
        served.serving = true;
        // A swap during a probation falls back to the module that was
        // serving before it, the last one that proved itself. A module
        // returning after its file was removed has nothing serving to
        // fall back to.
        let previous = served
            .probation
            .take()
            .map_or_else(|| old.clone(), |p| p.previous);
        served.probation = was_serving.then(|| Probation {
            previous,
            policy: self.rollback,
            passes: 0,
            failures: 0,
            swapped_at: Instant::now(),
        });
    }

    /// A module not served (yet): refused; kept pending and retried on
    /// every poll when what it waits for may come (a CRD installed), with
    /// its refusal logged and counted once while it stays the same.
    fn not_yet(
        &mut self,
        registry: &Registry,
        file: GuestFile,
        kind: &str,
        not_yet: NotYet,
        last: Option<String>,
        promotion: Promotion,
    ) -> Offered {
        let NotYet { refusal, retry } = not_yet;
        if last.as_deref() != Some(refusal.detail.as_str()) {
            refuse(registry, &file, kind, refusal.clone());
        }
        if retry {
            self.pending
                .insert(file.file.clone(), (file, refusal.detail.clone(), promotion));
            Offered::Pending(refusal)
        } else {
            Offered::Refused(refusal)
        }
    }

    fn removed(&mut self, registry: &Registry, file: &str, stem: &str) {
        let Some(index) = self.files.remove(file) else {
            return;
        };
        let kind = registry.kind(index);
        let module = {
            let mut served = kind.served.write().expect("served lock");
            served.serving = false;
            served.probation = None;
            served.module.clone()
        };
        registry
            .metrics()
            .modules
            .remove(&ModuleLabels::of(&kind.resource.kind, &module));
        tracing::warn!(
            kind = %kind.resource.kind,
            "guest {stem} removed: kind {} is no longer served; its objects keep their status until a module serves it again",
            module.spec().kind_ref(),
        );
    }
}

fn refused_count(registry: &Registry, kind: &str, check: Check) {
    registry
        .metrics()
        .swap_refusals
        .get_or_create(&RefusalLabels {
            kind: kind.to_owned(),
            check: check.to_string(),
        })
        .inc();
}

/// Counts a swap of kind `name`'s module: the labels of `old` give way to
/// those of `module`.
fn swap_counted(registry: &Registry, name: &str, old: &Module, module: &Module) {
    registry
        .metrics()
        .modules
        .remove(&ModuleLabels::of(name, old));
    registry
        .metrics()
        .modules
        .get_or_create(&ModuleLabels::of(name, module))
        .set(1);
    registry
        .metrics()
        .swaps
        .get_or_create(&Metrics::kind(name))
        .inc();
}

/// One log line and one count: the running module stays.
fn refuse(registry: &Registry, file: &GuestFile, kind: &str, refusal: Refusal) -> Offered {
    refused_count(registry, kind, refusal.check);
    tracing::warn!(
        kind = %kind,
        check = refusal.check.as_str(),
        "refused guest {} (digest {}…): {}",
        file.stem,
        short(&file.digest),
        refusal.detail
    );
    Offered::Refused(refusal)
}
