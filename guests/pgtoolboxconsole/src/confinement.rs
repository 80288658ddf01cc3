//! ExposureConfined: whether the console's `<name>-ingress` NetworkPolicy admits only the router, ingress controller or gateway to the console port.
//!
//! The advisory condition is present only while an exposure is published
//! (found, or possibly left behind in a kind the operator may no longer
//! read), or while the ingress policy is kept without one
//! (`ExposurePolicyKept`: a console Pod may still trust every peer, or the
//! console is stalled on HostnameNotAllowed with its policy left as it
//! was). A console that never had a policy and publishes nothing has no
//! ExposureConfined; when the policies cannot be read and nothing is
//! published, a previous ExposurePolicyKept is given again as it was.
//! When several problems hold,
//! the first in this order decides (README-confinement.md says why):
//!
//! 1. `ExposurePolicyKept` / `ExposureOpen` — whether a policy is in force
//!    at all (an exposure that is still published and unconfined is
//!    `ExposureOpen` even while the hostname is refused);
//! 2. `ExposurePeersBroad` — a peer of `from` admits (nearly) everyone;
//! 3. `ExposurePolicyBypassed` — another policy admits more to the port;
//! 4. `ExposureTrustUnverified` — the peers could not be checked yet, or
//!    a wider `from` waits for the any-peer trust to go;
//! 5. True (`AsExpected`).
//!
//! Whether a console Pod trusts `X-Forwarded-For` from every peer that
//! reaches its port is the Pod annotation
//! `pgtoolbox.fyannk.dev/xff-trust: all-peers` (see [`pods`]); the
//! workload grants it only when [`Confinement::trust_every_peer`].

mod nodes;
pub mod pods;
pub mod policy;
pub mod text;

use reconciler_guest_sdk::verdict::{condition, fails, ok};
use reconciler_guest_sdk::{
    Condition, ConditionStatus, ExposureKind, Facts, NetworkPolicyFact, PodFact,
};
use reconciler_netpol::peers::{PeerBroadness, peer_broadness};
use reconciler_netpol::within::peer_within_any;
use serde_json::{Value, json};

use policy::{Admitted, Desired, NotRendered, kind_name};

/// The condition's type and its False reasons, as the registry holds them.
pub use crate::registry::{
    EXPOSURE_CONFINED as CONDITION, EXPOSURE_OPEN, EXPOSURE_PEERS_BROAD, EXPOSURE_POLICY_BYPASSED,
    EXPOSURE_POLICY_KEPT, EXPOSURE_TRUST_UNVERIFIED,
};

/// More NetworkPolicies than this in the namespace are not checked.
pub const MAX_POLICIES: usize = 250;
/// More console Pods than this are not checked.
pub const MAX_PODS: usize = 250;

/// The `.status` field the check keeps: `{"verifiedIpBlocks": [...]}`.
/// Its own top-level key, since status fields merge shallowly.
pub const STATUS_FIELD: &str = "exposureConfinement";
/// The `ipBlock` peers an earlier pass verified, canonical and sorted.
pub const VERIFIED_IP_BLOCKS: &str = "verifiedIpBlocks";

/// The labels of the console's Pods (`<name>` is the console's name).
pub fn console_labels(name: &str) -> Vec<(String, String)> {
    vec![
        (
            "app.kubernetes.io/name".to_owned(),
            "pgtoolbox-console".to_owned(),
        ),
        ("app.kubernetes.io/instance".to_owned(), name.to_owned()),
    ]
}

/// The name of the console's ingress NetworkPolicy.
pub fn policy_name(name: &str) -> String {
    format!("{name}-ingress")
}

/// What is published for the console, as the ExposureReady evaluation found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// No Route, Ingress or HTTPRoute of the console exists.
    Nothing,
    /// An exposure object of this kind exists.
    Found(ExposureKind),
    /// One may remain: the console published one of this kind before, and
    /// the operator may not read the kind in the namespace.
    Unreadable(ExposureKind),
}

/// Everything the confinement check needs from the rest of the pass.
pub struct ConfinementContext<'a> {
    pub namespace: &'a str,
    /// The console's name: its policy is `<name>-ingress`.
    pub name: &'a str,
    /// The exposure the spec requests; `None` for clusterIP.
    pub requested: Option<ExposureKind>,
    pub published: Published,
    /// `spec.exposure.networkPolicy` as written (`null` when absent).
    pub network_policy: &'a serde_json::Value,
    /// The console is stalled on HostnameNotAllowed: its exposure is
    /// withdrawn, the workload and the policy stay as they were.
    pub hostname_refused: bool,
    /// The console's Pods (from its workload; empty when there is none).
    pub pods: &'a [PodFact],
    /// The console's previous `.status` (`null` on first touch).
    pub previous_status: &'a serde_json::Value,
}

/// What becomes of the `<name>-ingress` policy, for whoever renders it.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyPlan {
    /// Render it with these peers (the spec's `from`, or the Route's
    /// default router peer).
    Render(Vec<Value>),
    /// Leave it as it is: a wider `from` waits until no console Pod
    /// carries the any-peer grant.
    HoldBack,
    /// Not rendered any more, but kept as it is: a console Pod may still
    /// trust every peer it admits, or the hostname is refused.
    Keep,
    /// Not rendered: delete it if it exists.
    Remove,
}

/// The check's outcome: the condition (absent when ExposureConfined is not
/// present) and the status fields it keeps.
#[derive(Debug)]
pub struct Confinement {
    pub condition: Option<Condition>,
    pub status_fields: serde_json::Map<String, serde_json::Value>,
    /// Whether the console Pods may carry the any-peer grant
    /// ([`pods::TRUST_ANNOTATION`]: [`pods::TRUST_ALL_PEERS`]): only while
    /// ExposureConfined is present and True (an exposure is published,
    /// confined and verified).
    /// Otherwise the Pod template says [`pods::TRUST_NONE`].
    pub trust_every_peer: bool,
    /// What becomes of the `<name>-ingress` policy.
    pub policy: PolicyPlan,
    /// The namespace's NetworkPolicies could not be read: the policy is
    /// held back or kept, and the pass is tried again soon.
    pub unread: bool,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            condition: None,
            status_fields: serde_json::Map::new(),
            trust_every_peer: false,
            policy: PolicyPlan::Remove,
            unread: false,
        }
    }
}

/// One decided outcome before presence is applied.
struct Outcome {
    status: ConditionStatus,
    reason: &'static str,
    main: String,
    xff: String,
}

impl Outcome {
    fn fails(reason: &'static str, main: String, pods: &[PodFact]) -> Self {
        Outcome {
            status: ConditionStatus::False,
            reason,
            main,
            xff: pods::xff_untrusted(pods),
        }
    }

    fn condition(self, notes: &[String]) -> Condition {
        let message = text::message(&self.main, &self.xff, notes);
        match self.status {
            ConditionStatus::True => ok(CONDITION, message),
            ConditionStatus::False => fails(CONDITION, self.reason, message),
            ConditionStatus::Unknown => {
                condition(CONDITION, ConditionStatus::Unknown, self.reason, message)
            }
        }
    }
}

/// Decides ExposureConfined.
pub fn evaluate(ctx: &ConfinementContext<'_>, facts: &dyn Facts) -> Confinement {
    let desired = policy::desired(ctx.requested, ctx.network_policy);
    let granted = !pods::granted(ctx.pods).is_empty();
    let may_be_present = ctx.published != Published::Nothing
        || ctx.hostname_refused
        || matches!(desired, Desired::Rendered { .. })
        || granted;
    if !may_be_present {
        // Nothing published, nothing rendered, nothing granted: absent,
        // and nothing read (no dependency on every Node and policy).
        return Confinement {
            status_fields: record(None),
            ..Confinement::default()
        };
    }
    let addressed = pods::addresses(ctx.pods);
    let node_check = nodes::check(&facts.node_pod_cidrs(), &addressed);
    let notes: Vec<String> = node_check.note.iter().cloned().collect();
    let policies = facts.network_policies(ctx.namespace);
    let own_name = policy_name(ctx.name);

    let decided = if ctx.hostname_refused {
        hostname_refused(ctx, &own_name, &policies)
    } else {
        match &desired {
            Desired::NotRendered(why) => not_rendered(ctx, *why, &own_name, &policies),
            Desired::Rendered {
                from,
                default_router,
            } => {
                let mut check = RenderedCheck {
                    ctx,
                    own_name: &own_name,
                    from,
                    default_router: *default_router,
                    node_pod_cidrs: &node_check.pod_cidrs,
                    addressed: &addressed,
                    record: None,
                };
                let (outcome, plan) = check.run(&policies);
                Decided {
                    present: Present::when(ctx.published != Published::Nothing),
                    outcome,
                    plan,
                    record: Some(check.record.take()),
                }
            }
        }
    };
    let mut status_fields = serde_json::Map::new();
    if let Some(r) = decided.record {
        status_fields = record(r);
    }
    let condition = match decided.present {
        Present::Yes => Some(decided.outcome.condition(&notes)),
        Present::No => None,
        Present::AsBefore => kept_before(ctx.previous_status),
    };
    // The grant follows the condition users read: only ExposureConfined
    // True, so no console trusts every peer while the condition is absent.
    let trust_every_peer = condition
        .as_ref()
        .is_some_and(|c| c.status == ConditionStatus::True);
    Confinement {
        condition,
        status_fields,
        trust_every_peer,
        policy: decided.plan,
        unread: policies.is_err(),
    }
}

/// Whether ExposureConfined is present.
#[derive(Clone, Copy)]
enum Present {
    Yes,
    No,
    /// Nothing is published and the NetworkPolicies could not be read, so
    /// whether the policy is kept is not known: a previous
    /// ExposurePolicyKept is given again as it was, else it stays absent.
    AsBefore,
}

impl Present {
    fn when(present: bool) -> Self {
        if present { Present::Yes } else { Present::No }
    }
}

/// The previous ExposureConfined, when it said the policy is kept.
fn kept_before(previous_status: &Value) -> Option<Condition> {
    crate::cabundle::previous(previous_status, CONDITION)
        .filter(|c| c.reason == EXPOSURE_POLICY_KEPT)
}

/// What one branch decided.
struct Decided {
    present: Present,
    outcome: Outcome,
    plan: PolicyPlan,
    /// The verified blocks to keep: `None` leaves the status field as it
    /// is, `Some(None)` deletes it.
    record: Option<Option<Vec<String>>>,
}

/// The status field holding the verified `ipBlock`s (deleted when `None`).
fn record(blocks: Option<Vec<String>>) -> serde_json::Map<String, Value> {
    let value = blocks.map_or(Value::Null, |b| json!({ VERIFIED_IP_BLOCKS: b }));
    let mut fields = serde_json::Map::new();
    fields.insert(STATUS_FIELD.to_owned(), value);
    fields
}

/// The labels the console's Pods carry: each Pod's own, or the
/// conventional ones when there is no Pod.
fn pod_label_sets(ctx: &ConfinementContext<'_>) -> Vec<Vec<(String, String)>> {
    if ctx.pods.is_empty() {
        vec![console_labels(ctx.name)]
    } else {
        ctx.pods.iter().map(|p| p.meta.labels.clone()).collect()
    }
}

/// Why the own policy does not confine the console, if it does not.
fn own_policy_gap(
    ctx: &ConfinementContext<'_>,
    own_name: &str,
    own: Option<&NetworkPolicyFact>,
) -> Option<String> {
    let Some(own) = own else {
        return Some(format!("NetworkPolicy {own_name} does not exist"));
    };
    if !own.isolates_ingress {
        return Some(format!(
            "NetworkPolicy {own_name} does not isolate ingress (its policyTypes leave Ingress out)"
        ));
    }
    let unselected: Vec<String> = ctx
        .pods
        .iter()
        .filter(|p| !policy::selects(own, &p.meta.labels))
        .map(|p| p.meta.name.clone())
        .collect();
    if !unselected.is_empty() {
        return Some(format!(
            "NetworkPolicy {own_name} does not select console {} {}",
            text::agree(unselected.len(), "Pod", "Pods"),
            text::list(&unselected)
        ));
    }
    if ctx.pods.is_empty() && !policy::selects(own, &console_labels(ctx.name)) {
        return Some(format!(
            "NetworkPolicy {own_name} does not select the console's Pods"
        ));
    }
    None
}

/// ExposureOpen for what is published: False for an object found,
/// Unknown for one the operator may not read.
fn open(ctx: &ConfinementContext<'_>, why: &str) -> Outcome {
    let (status, main) = match ctx.published {
        Published::Unreadable(kind) => (
            ConditionStatus::Unknown,
            format!(
                "a {k} the console published before the operator was refused {k}s in {ns} may remain, and {why}: it may be gone, or still serve the console unconfined on its port {port}",
                k = kind_name(kind),
                ns = ctx.namespace,
                port = policy::CONSOLE_PORT.number,
            ),
        ),
        Published::Found(kind) => (
            ConditionStatus::False,
            format!(
                "{why}: any Pod can reach the console port {} that the {} publishes",
                policy::CONSOLE_PORT.number,
                kind_name(kind)
            ),
        ),
        Published::Nothing => (
            ConditionStatus::False,
            format!(
                "{why}: any Pod can reach the console port {}",
                policy::CONSOLE_PORT.number
            ),
        ),
    };
    Outcome {
        status,
        reason: EXPOSURE_OPEN,
        main,
        xff: pods::xff_untrusted(ctx.pods),
    }
}

/// Stalled on HostnameNotAllowed: the exposure is withdrawn, the workload
/// and the policy stay as they were. Present even with nothing published
/// while the policy exists (it is kept); ExposureOpen while something is
/// still published and unconfined.
fn hostname_refused(
    ctx: &ConfinementContext<'_>,
    own_name: &str,
    policies: &Result<Vec<NetworkPolicyFact>, reconciler_guest_sdk::ReadError>,
) -> Decided {
    let own = policies
        .as_ref()
        .ok()
        .and_then(|all| all.iter().find(|p| p.meta.name == own_name));
    let gap = match policies {
        Ok(_) => own_policy_gap(ctx, own_name, own),
        Err(e) => Some(format!(
            "the NetworkPolicies of {} could not be read ({})",
            ctx.namespace,
            read_error(e)
        )),
    };
    let kept = || {
        Outcome::fails(
            EXPOSURE_POLICY_KEPT,
            format!(
                "the console is stalled on HostnameNotAllowed: its exposure is withdrawn, and its workload and NetworkPolicy {own_name} stay as they were"
            ),
            ctx.pods,
        )
    };
    // Present while something is published, or while the policy is kept
    // without it (seed): not for a console that never had a policy.
    let (present, outcome) = match (ctx.published, gap) {
        (Published::Found(_) | Published::Unreadable(_), Some(why)) => (
            Present::Yes,
            open(
                ctx,
                &format!("the console is stalled on HostnameNotAllowed and {why}"),
            ),
        ),
        (Published::Found(_) | Published::Unreadable(_), None) => (Present::Yes, kept()),
        (Published::Nothing, _) => match (own, policies) {
            (Some(_), _) => (Present::Yes, kept()),
            (None, Ok(_)) => (Present::No, kept()),
            (None, Err(_)) => (Present::AsBefore, kept()),
        },
    };
    Decided {
        present,
        outcome,
        plan: PolicyPlan::Keep,
        record: None,
    }
}

/// No policy is rendered: kept while a Pod may trust every peer it admits,
/// else ExposureOpen for whatever is still published.
fn not_rendered(
    ctx: &ConfinementContext<'_>,
    why: NotRendered,
    own_name: &str,
    policies: &Result<Vec<NetworkPolicyFact>, reconciler_guest_sdk::ReadError>,
) -> Decided {
    let granted = pods::granted(ctx.pods);
    let why_text = why.describe();
    let own_exists = policies
        .as_ref()
        .map(|all| all.iter().any(|p| p.meta.name == own_name));
    let (present, outcome, plan) = match (granted.is_empty(), &own_exists) {
        (false, Ok(true)) => (
            Present::Yes,
            Outcome::fails(
                EXPOSURE_POLICY_KEPT,
                format!(
                    "NetworkPolicy {own_name} is no longer rendered ({why_text}) and is kept while a console Pod may still trust every peer it admits"
                ),
                ctx.pods,
            ),
            PolicyPlan::Keep,
        ),
        (false, Err(e)) => (
            if ctx.published == Published::Nothing {
                Present::AsBefore
            } else {
                Present::Yes
            },
            Outcome::fails(
                EXPOSURE_TRUST_UNVERIFIED,
                format!(
                    "NetworkPolicy {own_name} is no longer rendered ({why_text}), and whether it is still in place could not be read ({}); it is kept while a console Pod may still trust every peer",
                    read_error(e)
                ),
                ctx.pods,
            ),
            PolicyPlan::Keep,
        ),
        _ => {
            let why = match own_exists {
                Ok(true) => format!(
                    "{why_text}, so no ingress NetworkPolicy is rendered ({own_name} is removed)"
                ),
                _ => format!("{why_text}, so no ingress NetworkPolicy is rendered"),
            };
            (
                Present::when(ctx.published != Published::Nothing),
                open(ctx, &why),
                PolicyPlan::Remove,
            )
        }
    };
    Decided {
        present,
        outcome,
        plan,
        record: Some(None),
    }
}

fn read_error(e: &reconciler_guest_sdk::ReadError) -> String {
    use reconciler_guest_sdk::ReadError::*;
    let text = match e {
        NotDeclared(t) | NotServed(t) | Forbidden(t) | Failed(t) => t,
    };
    text::truncate(text, text::ITEM_CAP)
}

/// The checks of a rendered policy, in precedence order.
struct RenderedCheck<'a> {
    ctx: &'a ConfinementContext<'a>,
    own_name: &'a str,
    from: &'a [Value],
    default_router: bool,
    node_pod_cidrs: &'a [reconciler_netpol::cidr::Cidr],
    addressed: &'a [(&'a PodFact, std::net::IpAddr)],
    /// The verified `ipBlock`s to keep in the status.
    record: Option<Vec<String>>,
}

impl RenderedCheck<'_> {
    /// How a peer of `from` is named: its index and description.
    fn peer_name(&self, index: usize, peer: &Value) -> String {
        if self.default_router {
            format!("the OpenShift router ({})", policy::describe_peer(peer))
        } else {
            format!("from[{index}] ({})", policy::describe_peer(peer))
        }
    }

    fn run(
        &mut self,
        policies: &Result<Vec<NetworkPolicyFact>, reconciler_guest_sdk::ReadError>,
    ) -> (Outcome, PolicyPlan) {
        let ctx = self.ctx;
        let render = PolicyPlan::Render(self.from.to_vec());
        // The peers' broadness and the verified ipBlocks, whatever decides.
        let too_many_pods = ctx.pods.len() > MAX_PODS;
        let pod_ips: Vec<std::net::IpAddr> = if too_many_pods {
            Vec::new()
        } else {
            self.addressed.iter().map(|(_, ip)| *ip).collect()
        };
        let broad: Vec<(usize, &Value, String)> = self
            .from
            .iter()
            .enumerate()
            .filter_map(|(i, peer)| {
                peer_broadness(peer, &pod_ips, self.node_pod_cidrs).map(|why| {
                    // The peer's name already says it is an ipBlock.
                    let why = match why {
                        PeerBroadness::IpBlock(block) => block.to_string(),
                        other => other.to_string(),
                    };
                    (i, peer, why)
                })
            })
            .collect();
        let blocks = self.ip_blocks();
        let block_broad = broad
            .iter()
            .any(|(_, peer, _)| policy::ip_block_key(peer).is_some());
        let verified_now = !blocks.is_empty() && !too_many_pods && !pod_ips.is_empty();
        let previously = previously_verified(ctx.previous_status).as_ref() == Some(&blocks);
        self.record = (!blocks.is_empty() && !block_broad && (verified_now || previously))
            .then(|| blocks.clone());
        let policies = match policies {
            Ok(p) => p,
            Err(e) => {
                // Whether `from` widens the policy is not known: held back.
                return (
                    Outcome::fails(
                        EXPOSURE_TRUST_UNVERIFIED,
                        format!(
                            "the NetworkPolicies of {} could not be read ({}): the peers are not checked",
                            ctx.namespace,
                            read_error(e)
                        ),
                        ctx.pods,
                    ),
                    PolicyPlan::HoldBack,
                );
            }
        };
        let own = policies.iter().find(|p| p.meta.name == self.own_name);

        // 1. Is a policy in force at all?
        if let Some(gap) = own_policy_gap(ctx, self.own_name, own) {
            return (open(ctx, &gap), render);
        }

        // 2. A peer that admits (nearly) everyone.
        if let Some((i, peer, why)) = broad.first() {
            let more = match broad.len() {
                1 => String::new(),
                n => format!(" ({} more peers of from are broad too)", n - 1),
            };
            return (
                Outcome::fails(
                    EXPOSURE_PEERS_BROAD,
                    format!(
                        "{} admits (nearly) everyone: {why}{more}",
                        self.peer_name(*i, peer)
                    ),
                    ctx.pods,
                ),
                render,
            );
        }

        // 3. Another policy admits more to the console port.
        if policies.len() > MAX_POLICIES {
            return (
                Outcome::fails(
                    EXPOSURE_POLICY_BYPASSED,
                    format!(
                        "{} has {} NetworkPolicies, more than the {MAX_POLICIES} checked: another one may admit more to the console port",
                        ctx.namespace,
                        policies.len()
                    ),
                    ctx.pods,
                ),
                render,
            );
        }
        let bypasses = self.bypasses(policies);
        if let Some((name, what)) = bypasses.first() {
            let own_note = if name == self.own_name {
                " (it is not narrowed to from yet)"
            } else {
                ""
            };
            let more = match bypasses.len() {
                1 => String::new(),
                n => format!("; {} more NetworkPolicies do too", n - 1),
            };
            return (
                Outcome::fails(
                    EXPOSURE_POLICY_BYPASSED,
                    format!(
                        "NetworkPolicy {name} admits {what} to the console port {}, which spec.exposure.networkPolicy.from does not list{own_note}; NetworkPolicies add up{more}",
                        policy::CONSOLE_PORT.number
                    ),
                    ctx.pods,
                ),
                render,
            );
        }

        // 4. What could not be checked yet.
        if too_many_pods {
            return (
                Outcome::fails(
                    EXPOSURE_TRUST_UNVERIFIED,
                    format!(
                        "the console has {} Pods, more than the {MAX_PODS} checked: the peers are not verified against their addresses",
                        ctx.pods.len()
                    ),
                    ctx.pods,
                ),
                render,
            );
        }
        if !blocks.is_empty() && !verified_now && !previously {
            return (
                Outcome::fails(
                    EXPOSURE_TRUST_UNVERIFIED,
                    format!(
                        "no console Pod has an address yet, and no earlier check verified the ipBlock peers {}: they are checked once a Pod has one",
                        text::list_capped(&blocks, text::ITEM_CAP)
                    ),
                    ctx.pods,
                ),
                render,
            );
        }
        let own = own.expect("the own policy exists: checked above");
        if let Some((i, peer)) = self.widened(own) {
            let granted = pods::granted(ctx.pods);
            let (main, plan) = if granted.is_empty() {
                (
                    format!(
                        "NetworkPolicy {} does not admit {} yet: the wider from is applied before any console Pod is granted trust",
                        self.own_name,
                        self.peer_name(i, peer)
                    ),
                    render,
                )
            } else {
                (
                    format!(
                        "spec.exposure.networkPolicy.from admits {} that NetworkPolicy {} does not: the wider from is held back until no console Pod trusts every peer",
                        self.peer_name(i, peer),
                        self.own_name
                    ),
                    PolicyPlan::HoldBack,
                )
            };
            return (
                Outcome::fails(EXPOSURE_TRUST_UNVERIFIED, main, ctx.pods),
                plan,
            );
        }

        // 5. Confined.
        let peers: Vec<String> = self
            .from
            .iter()
            .enumerate()
            .map(|(i, p)| self.peer_name(i, p))
            .collect();
        let trusted = if self.default_router {
            "the OpenShift router"
        } else {
            "these peers"
        };
        (
            Outcome {
                status: ConditionStatus::True,
                reason: reconciler_guest_sdk::verdict::AS_EXPECTED,
                main: format!(
                    "NetworkPolicy {} admits only {} to the console port {}",
                    self.own_name,
                    text::list_capped(&peers, text::ITEM_CAP + 16),
                    policy::CONSOLE_PORT.number
                ),
                xff: pods::xff_confined(ctx.pods, trusted),
            },
            render,
        )
    }

    /// The `ipBlock` peers of `from`, canonical, sorted, deduplicated.
    fn ip_blocks(&self) -> Vec<String> {
        let mut blocks: Vec<String> = self.from.iter().filter_map(policy::ip_block_key).collect();
        blocks.sort();
        blocks.dedup();
        blocks
    }

    /// The policies (by name) that select a console Pod, isolate its
    /// ingress and admit to its port a peer `from` does not list, with
    /// what they admit.
    fn bypasses(&self, policies: &[NetworkPolicyFact]) -> Vec<(String, String)> {
        let label_sets = pod_label_sets(self.ctx);
        policies
            .iter()
            .filter(|p| p.isolates_ingress)
            .filter(|p| label_sets.iter().any(|l| policy::selects(p, l)))
            .filter_map(|p| {
                let what = match policy::admitted(p) {
                    Admitted::Everyone => "every source (a rule without from)".to_owned(),
                    Admitted::Peers(peers) => {
                        let extra: Vec<String> = peers
                            .iter()
                            .filter(|peer| !peer_within_any(peer, self.from))
                            .map(policy::describe_peer)
                            .collect();
                        if extra.is_empty() {
                            return None;
                        }
                        text::list_capped(&extra, text::ITEM_CAP)
                    }
                };
                Some((p.meta.name.clone(), what))
            })
            .collect()
    }

    /// The first peer of `from` the own policy does not admit yet.
    fn widened<'v>(&'v self, own: &NetworkPolicyFact) -> Option<(usize, &'v Value)> {
        let Admitted::Peers(current) = policy::admitted(own) else {
            return None;
        };
        self.from
            .iter()
            .enumerate()
            .find(|(_, peer)| !peer_within_any(peer, &current))
    }
}

/// The blocks an earlier pass verified, from the previous status (a
/// field that is not a list of strings verified nothing).
fn previously_verified(previous_status: &Value) -> Option<Vec<String>> {
    previous_status
        .get(STATUS_FIELD)?
        .get(VERIFIED_IP_BLOCKS)?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}
