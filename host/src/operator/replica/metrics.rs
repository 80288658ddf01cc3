//! The operator's metrics, in the Prometheus text format (served by
//! [`crate::operator::http`]): which module serves each kind, passes,
//! status writes, Events, guest errors by class, evaluation time, hot
//! swaps (swaps, refusals, rollbacks), refused and unwatched namespaces,
//! the size of the dependency index, queue depths, watch health, children
//! applied and deleted, every request sent to the API server, how long
//! work has waited, plans awaiting a decision, refused withdrawals; the
//! ring's members by state, parents assigned to no member serving, and the
//! oldest parent not passed since its spec changed.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

/// A ring member's state, as the coordinator sees its Lease: `serving`
/// (in the view, given parents), `unacknowledged` (live, not in the view:
/// it has not acknowledged one), `refused` (named like a member, not
/// written by the ring).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModuleLabels {
    pub kind: String,
    pub guest: String,
    pub digest: String,
    /// The contract version the module implements (`0.2.0`).
    pub contract: String,
}

impl ModuleLabels {
    /// The series of `module` serving `kind`.
    pub fn of(kind: &str, module: &crate::runtime::Module) -> Self {
        ModuleLabels {
            kind: kind.to_owned(),
            guest: module.name().to_owned(),
            digest: module.digest().to_owned(),
            contract: module.contract_version().to_owned(),
        }
    }
}

/// A request by its HTTP method (`GET`, `PATCH`, ...), its verb (`get`,
/// `list`, `watch`, `create`, `patch`, ...) and the resource it names
/// (`deployments`, `evidenceagents/status`; [`crate::operator::replica::client`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    pub verb: String,
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    pub kind: String,
    pub check: String,
}

/// A child kind of a parent kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChildLabels {
    pub kind: String,
    pub child: String,
}

/// A refused child apply, by the class of the API server's answer.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChildRefusalLabels {
    pub kind: String,
    pub child: String,
    pub class: String,
}

/// One watch: its kind (`group/version/Kind`) and namespace ("" for all).
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct WatchLabels {
    pub kind: String,
    pub namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    pub kind: String,
    pub class: String,
}

type HistogramFamily = Family<KindLabel, Histogram, fn() -> Histogram>;

/// Every metric the operator keeps.
pub struct Metrics {
    registry: Registry,
    pub modules: Family<ModuleLabels, Gauge>,
    pub passes: Family<KindLabel, Counter>,
    pub status_writes: Family<KindLabel, Counter>,
    pub events: Family<KindLabel, Counter>,
    pub guest_errors: Family<ErrorLabels, Counter>,
    /// The host's own work in a pass: evaluation through the guest and
    /// the conventions engine, API round trips excluded.
    pub pass_seconds: HistogramFamily,
    /// The guest's evaluation alone (instantiation and `evaluate`).
    pub guest_seconds: HistogramFamily,
    /// Modules swapped in while running, refused by the gate, rolled back.
    pub swaps: Family<KindLabel, Counter>,
    pub swap_refusals: Family<RefusalLabels, Counter>,
    pub rollbacks: Family<KindLabel, Counter>,
    pub refused_namespaces: Family<KindLabel, Gauge>,
    /// Namespaces of `--namespaces` left out of the watch at start.
    pub unwatched_namespaces: Gauge,
    /// Guest modules held pending: an API their kind needs is not served
    /// (retried on every poll of the guests directory).
    pub modules_pending: Gauge,
    pub dependency_entries: Gauge,
    /// Keys waiting for a pass, per kind.
    pub queue_depth: Family<KindLabel, Gauge>,
    /// Objects this replica caches, per kind (a ring member caches its own
    /// parents and their children, and what guests read).
    pub cached_objects: Family<KindLabel, Gauge>,
    /// The bytes of their text it holds, per kind, as held (packed): what
    /// falls when the kind's readers declare fewer fields.
    pub cached_bytes: Family<KindLabel, Gauge>,
    /// Per watch: connected (1) or failing (0), the Unix time of its last
    /// event, and how often it failed and restarted.
    pub watch_connected: Family<WatchLabels, Gauge>,
    pub watch_last_event: Family<WatchLabels, Gauge>,
    pub watch_restarts: Family<WatchLabels, Counter>,
    /// Children applied, applies not sent (the cached child had every
    /// field), deletions, and refused applies by class.
    pub child_applies: Family<ChildLabels, Counter>,
    /// Every request the host's client sent, by method, verb and resource.
    pub api_requests: Family<RequestLabels, Counter>,
    pub child_applies_unchanged: Family<ChildLabels, Counter>,
    /// Changes made twice in a row without settling, held back since.
    pub changes_not_settling: Family<KindLabel, Counter>,
    /// Passes after which a parent was at the per-parent write bound: its
    /// next pass waits.
    pub passes_delayed: Family<KindLabel, Counter>,
    pub child_deletes: Family<ChildLabels, Counter>,
    pub child_refusals: Family<ChildRefusalLabels, Counter>,
    /// How long work has waited with no pass ending (0 while idle).
    pub stuck_seconds: Gauge,
    /// ReconcilePlans awaiting a decision, per parent kind, and the age of
    /// the oldest.
    pub plans_pending: Family<KindLabel, Gauge>,
    pub plan_oldest_pending_seconds: Family<KindLabel, Gauge>,
    /// Passes whose withdrawals (access or exposure taken away) the API
    /// server refused.
    pub withdrawals_refused: Family<KindLabel, Counter>,
    /// The ring's members by state, as the coordinator sees them.
    pub ring_members: Family<MemberLabel, Gauge>,
    /// Parents the coordinator finds assigned to no member serving.
    pub ring_parents_unowned: Gauge,
    /// Per kind, how long the oldest parent this replica caches has waited
    /// for a pass since its spec changed (0: none waits).
    pub parent_unpassed_seconds: Family<KindLabel, Gauge>,
}

fn pass_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_01, 2.0, 20))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut m = Metrics {
            registry: Registry::with_prefix("reconciler"),
            modules: Family::default(),
            passes: Family::default(),
            status_writes: Family::default(),
            events: Family::default(),
            guest_errors: Family::default(),
            pass_seconds: Family::new_with_constructor(pass_histogram),
            guest_seconds: Family::new_with_constructor(pass_histogram),
            swaps: Family::default(),
            swap_refusals: Family::default(),
            rollbacks: Family::default(),
            refused_namespaces: Family::default(),
            unwatched_namespaces: Gauge::default(),
            modules_pending: Gauge::default(),
            dependency_entries: Gauge::default(),
            queue_depth: Family::default(),
            cached_objects: Family::default(),
            cached_bytes: Family::default(),
            watch_connected: Family::default(),
            watch_last_event: Family::default(),
            watch_restarts: Family::default(),
            child_applies: Family::default(),
            api_requests: Family::default(),
            child_applies_unchanged: Family::default(),
            changes_not_settling: Family::default(),
            passes_delayed: Family::default(),
            child_deletes: Family::default(),
            child_refusals: Family::default(),
            stuck_seconds: Gauge::default(),
            plans_pending: Family::default(),
            plan_oldest_pending_seconds: Family::default(),
            withdrawals_refused: Family::default(),
            ring_members: Family::default(),
            ring_parents_unowned: Gauge::default(),
            parent_unpassed_seconds: Family::default(),
        };
        m.register_passes();
        m.register_modules();
        m.register_watches();
        m.register_writes();
        m.register_progress();
        m
    }

    /// Registers what passes do: the modules serving, passes, writes, Events, errors, time.
    fn register_passes(&mut self) {
        let r = &mut self.registry;
        r.register(
            "module",
            "The guest module serving each kind (1), by digest",
            self.modules.clone(),
        );
        r.register("passes", "Passes run", self.passes.clone());
        r.register(
            "status_writes",
            "Status writes that succeeded",
            self.status_writes.clone(),
        );
        r.register("events", "Events published", self.events.clone());
        r.register(
            "guest_errors",
            "Passes whose guest failed, by class",
            self.guest_errors.clone(),
        );
        r.register(
            "pass_host_seconds",
            "Host time of a pass (guest evaluation and conventions engine), API round trips excluded",
            self.pass_seconds.clone(),
        );
        r.register(
            "guest_evaluation_seconds",
            "Time of a guest's evaluation (instantiation and evaluate) in a pass",
            self.guest_seconds.clone(),
        );
    }

    /// Registers hot swaps, refused namespaces, pending modules, unwatched namespaces.
    fn register_modules(&mut self) {
        let r = &mut self.registry;
        r.register(
            "swaps",
            "Guest modules swapped in while running",
            self.swaps.clone(),
        );
        r.register(
            "swap_refusals",
            "Guest modules refused, at start or by the hot-swap gate, by the check that failed",
            self.swap_refusals.clone(),
        );
        r.register(
            "rollbacks",
            "Swapped-in guest modules rolled back to the previous one",
            self.rollbacks.clone(),
        );
        r.register(
            "optional_api_refused_namespaces",
            "Watched namespaces where an optional API is refused (403)",
            self.refused_namespaces.clone(),
        );
        r.register(
            "modules_pending",
            "Guest modules held pending: an API their kind needs (its CRD, a kind it reads) is not served; retried on every poll",
            self.modules_pending.clone(),
        );
        r.register(
            "unwatched_namespaces",
            "Watched namespaces left out of the watch at start: the host may not list a kind it needs there",
            self.unwatched_namespaces.clone(),
        );
    }

    /// Registers the dependency index, queue depths, cached objects and watch health.
    fn register_watches(&mut self) {
        let r = &mut self.registry;
        r.register(
            "dependency_entries",
            "(read, parent) pairs in the dependency index",
            self.dependency_entries.clone(),
        );
        r.register(
            "queue_depth",
            "Parents waiting for a pass (due or backing off), per kind",
            self.queue_depth.clone(),
        );
        r.register(
            "cached_objects",
            "Objects this replica caches, per kind",
            self.cached_objects.clone(),
        );
        r.register(
            "cached_bytes",
            "Bytes of object text this replica caches, per kind, as held (packed against the kind's dictionary)",
            self.cached_bytes.clone(),
        );
        r.register(
            "watch_connected",
            "Whether a watch is connected (1) or failing and retrying (0)",
            self.watch_connected.clone(),
        );
        r.register(
            "watch_last_event_timestamp_seconds",
            "Unix time of a watch's last event (its age: time() minus this)",
            self.watch_last_event.clone(),
        );
        r.register(
            "watch_restarts",
            "Times a watch failed and restarted",
            self.watch_restarts.clone(),
        );
    }

    /// Registers the requests sent and the children applied, held, deleted, refused.
    fn register_writes(&mut self) {
        let r = &mut self.registry;
        r.register(
            "api_requests",
            "Requests the host sent to the API server (watches count once, when they start), by method, verb and resource",
            self.api_requests.clone(),
        );
        r.register(
            "child_applies",
            "Children applied (server-side apply) for a guest",
            self.child_applies.clone(),
        );
        r.register(
            "child_applies_unchanged",
            "Child applies not sent: the cached child had every field the guest asked for",
            self.child_applies_unchanged.clone(),
        );
        r.register(
            "changes_not_settling",
            "Changes made twice in a row that the API server stored otherwise than asked, the object unchanged since: not made again until the parent, the guest's asking or the object changes",
            self.changes_not_settling.clone(),
        );
        r.register(
            "passes_delayed",
            "Passes after which the parent had made as many writes in the last minute as the per-parent bound allows (120): its next pass waits until the oldest leaves the window",
            self.passes_delayed.clone(),
        );
        r.register(
            "child_deletes",
            "Children deleted for a guest",
            self.child_deletes.clone(),
        );
        r.register(
            "child_refusals",
            "Child applies the API server refused, by class",
            self.child_refusals.clone(),
        );
    }

    /// Registers waiting and the ring: stuck time, plans, refused withdrawals, members.
    fn register_progress(&mut self) {
        let r = &mut self.registry;
        r.register(
            "stuck_seconds",
            "How long parents have waited with no pass ending (0 while none waits); /healthz fails past --wedged-after",
            self.stuck_seconds.clone(),
        );
        r.register(
            "plans_pending",
            "ReconcilePlans awaiting a reviewer's decision, per parent kind",
            self.plans_pending.clone(),
        );
        r.register(
            "plan_oldest_pending_seconds",
            "Age of the oldest ReconcilePlan awaiting a decision, per parent kind (0: none)",
            self.plan_oldest_pending_seconds.clone(),
        );
        r.register(
            "withdrawals_refused",
            "Passes whose withdrawals (access or exposure taken away, such as a RoleBinding at its expiry) the API server refused",
            self.withdrawals_refused.clone(),
        );
        r.register(
            "ring_members",
            "The ring's members by state (serving, unacknowledged, refused), as its coordinator sees their Leases",
            self.ring_members.clone(),
        );
        r.register(
            "ring_parents_unowned",
            "Parents the ring's coordinator finds assigned to no member serving",
            self.ring_parents_unowned.clone(),
        );
        r.register(
            "parent_unpassed_seconds",
            "Per kind, how long the oldest parent this replica serves has waited for a pass since its spec changed (0: none)",
            self.parent_unpassed_seconds.clone(),
        );
    }

    pub fn kind(kind: &str) -> KindLabel {
        KindLabel {
            kind: kind.to_owned(),
        }
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("encoding into a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_appear_in_the_exposition_with_their_labels() {
        let m = Metrics::new();
        m.passes
            .get_or_create(&Metrics::kind("EvidenceAgent"))
            .inc();
        m.guest_errors
            .get_or_create(&ErrorLabels {
                kind: "EvidenceAgent".into(),
                class: "deadline".into(),
            })
            .inc();
        let text = m.encode();
        assert!(
            text.contains("reconciler_passes_total{kind=\"EvidenceAgent\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "reconciler_guest_errors_total{kind=\"EvidenceAgent\",class=\"deadline\"} 1"
            ),
            "{text}"
        );
    }
}
