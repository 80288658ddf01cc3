//! ExposureReady of a kind published through a Route, an Ingress or an HTTPRoute (seed 000: the PgToolBoxConsole's and the PgAdmin's): what a pass observes of its exposure object, the condition, `status.url`, what may remain under a kind the operator is refused, and `status.publishedExposureKinds`.
//!
//! A guest observes once per pass ([`observe`]), decides the condition
//! ([`decide`]) when its configuration is valid, asks for the deletion of
//! what it no longer wants ([`Entry::withdrawable_uid`]), and appends the
//! seed's fixed sentences ([`Observation::may_remain`], [`with_sentences`])
//! whatever the condition says.
//!
//! ```
//! use reconciler_guest_sdk::exposure::{Url, decide, observe};
//! use reconciler_guest_sdk::mock::{MockFacts, meta};
//! use reconciler_guest_sdk::ownership::Parent;
//! use reconciler_guest_sdk::{Admission, ExposureFact, ExposureKind};
//!
//! let route = ExposureFact {
//!     meta: meta("team-b", "orders-console"),
//!     kind: ExposureKind::Route,
//!     hostnames: vec!["orders.apps.example.com".into()],
//!     admission: Admission::Admitted,
//! };
//! let facts = MockFacts::at(0).with_exposure(route);
//! let parent_meta = meta("team-b", "orders");
//! let console = Parent::of("PgToolBoxConsole", &parent_meta);
//! let status = serde_json::json!({});
//! let o = observe(&facts, &console, "orders-console", Some(ExposureKind::Route), &status);
//! let e = decide(&o, Some("orders.apps.example.com"), "the console");
//! assert_eq!(e.condition.message, "Route orders-console is admitted: the console is at https://orders.apps.example.com");
//! assert_eq!(e.url, Url::Set("https://orders.apps.example.com".into()));
//! assert_eq!(o.published_kinds(), serde_json::json!(["Route"]));
//! ```

use serde_json::Value;

use crate::ownership::Parent;
use crate::verdict::{RECONCILING, fails, holds, ok, unknown};
use crate::{
    Admission, ApplyOutcome, Availability, Change, Condition, ExposureFact, ExposureKind, Facts,
    KindRef, ReadError, message, read,
};

/// The aspect this module decides.
pub const EXPOSURE_READY: &str = "ExposureReady";
/// ExposureReady=True: `spec.exposure.type` is clusterIP, nothing is published.
pub const NOT_REQUESTED: &str = "NotRequested";
/// ExposureReady=False: a Route or Ingress refused by its controller.
pub const NOT_ADMITTED: &str = "NotAdmitted";
/// ExposureReady=False: an HTTPRoute refused by its Gateway.
pub const NOT_ACCEPTED: &str = "NotAccepted";
/// ExposureReady=False: Routes are not served, or refused in the namespace.
pub const ROUTE_API_UNAVAILABLE: &str = "RouteAPIUnavailable";
/// ExposureReady=False: HTTPRoutes are not served, or refused in the namespace.
pub const GATEWAY_API_UNAVAILABLE: &str = "GatewayAPIUnavailable";

/// The status field recording the kinds published, so a later refusal of
/// the kind still knows one may remain.
pub const PUBLISHED_KINDS_FIELD: &str = "publishedExposureKinds";
/// The status field holding the published address once it is admitted.
pub const URL_FIELD: &str = "url";

/// The kind's name as messages and `status.publishedExposureKinds` write it.
pub fn kind_name(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "Route",
        ExposureKind::Ingress => "Ingress",
        ExposureKind::HttpRoute => "HTTPRoute",
    }
}

/// The kind's plural, as in "may not read Routes".
pub fn kind_plural(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "Routes",
        ExposureKind::Ingress => "Ingresses",
        ExposureKind::HttpRoute => "HTTPRoutes",
    }
}

/// Every exposure kind, in the order they are looked at.
pub const EXPOSURE_KINDS: [ExposureKind; 3] = [
    ExposureKind::Route,
    ExposureKind::Ingress,
    ExposureKind::HttpRoute,
];

/// The kind `kind_name` names.
pub fn kind_named(name: &str) -> Option<ExposureKind> {
    EXPOSURE_KINDS.into_iter().find(|k| kind_name(*k) == name)
}

/// The API of an exposure kind.
///
/// ```
/// use reconciler_guest_sdk::{ExposureKind, exposure::kind_ref};
/// assert_eq!(kind_ref(ExposureKind::HttpRoute).group, "gateway.networking.k8s.io");
/// ```
pub fn kind_ref(kind: ExposureKind) -> KindRef {
    let (group, name) = match kind {
        ExposureKind::Route => ("route.openshift.io", "Route"),
        ExposureKind::Ingress => ("networking.k8s.io", "Ingress"),
        ExposureKind::HttpRoute => ("gateway.networking.k8s.io", "HTTPRoute"),
    };
    crate::spec::kind_ref(group, "v1", name)
}

/// What one read of an exposure object answered.
#[derive(Clone, Debug)]
pub enum Read {
    /// The object, as the host's exposure fact gives it.
    Found(Box<ExposureFact>),
    /// No object of that name.
    Absent,
    /// The API is not served by the cluster: nothing of the kind exists.
    NotServed,
    /// The operator may not read the kind in the namespace.
    Refused,
    /// Any other failure: not known now, retried.
    Failed(String),
}

/// One kind looked at: the requested one, and each recorded as published.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The kind looked at.
    pub kind: ExposureKind,
    /// The probe says the kind is refused (403) in the namespace.
    pub refused: bool,
    /// What the read answered.
    pub read: Read,
    /// Found past the cache (its kind refused), the parent's own, not
    /// being deleted, and its deletion not refused before: a pass that no
    /// longer wants it deletes it (seed 000).
    pub withdrawable: bool,
}

impl Entry {
    /// One may remain that the operator cannot manage: the kind is refused
    /// and the object was found anyway or could not be read.
    pub fn may_remain(&self) -> bool {
        matches!(self.read, Read::Found(_) | Read::Refused)
            && (self.refused || matches!(self.read, Read::Refused))
    }

    /// The uid of the object found, when it is withdrawable.
    pub fn withdrawable_uid(&self) -> Option<&str> {
        match &self.read {
            Read::Found(fact) if self.withdrawable => Some(fact.meta.uid.as_str()),
            _ => None,
        }
    }

    /// The kind is refused in the namespace, or its read was.
    pub fn refused_or_unreadable(&self) -> bool {
        self.refused || matches!(self.read, Read::Refused)
    }
}

/// The exposure objects of a parent, as one pass found them.
#[derive(Clone, Debug)]
pub struct Observation {
    /// The parent's namespace.
    pub namespace: String,
    /// The exposure object's name (`<name>-console`, `<name>-pgadmin`).
    pub object: String,
    /// The kind `spec.exposure.type` asks for; `None` for clusterIP.
    pub requested: Option<ExposureKind>,
    /// The requested kind and each recorded as published, in
    /// [`EXPOSURE_KINDS`] order.
    pub entries: Vec<Entry>,
    /// `status.publishedExposureKinds` before this pass.
    pub previous: Vec<ExposureKind>,
}

/// `status.publishedExposureKinds` of the previous status.
pub fn previous_kinds(status: &Value) -> Vec<ExposureKind> {
    status[PUBLISHED_KINDS_FIELD]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().and_then(kind_named))
        .collect()
}

/// The API whose availability is probed: Routes and HTTPRoutes are
/// optional, Ingress is always served.
fn optional_api(kind: ExposureKind) -> Option<KindRef> {
    (kind != ExposureKind::Ingress).then(|| kind_ref(kind))
}

/// Reads the exposure object `object` of the requested kind and of every
/// kind `status` records as published (`status` is the parent's status
/// before this pass).
pub fn observe(
    facts: &dyn Facts,
    parent: &Parent,
    object: &str,
    requested: Option<ExposureKind>,
    status: &Value,
) -> Observation {
    let namespace = parent.namespace;
    let previous = previous_kinds(status);
    let entries = EXPOSURE_KINDS
        .into_iter()
        .filter(|k| requested == Some(*k) || previous.contains(k))
        .map(|kind| {
            let availability = optional_api(kind).map_or(Availability::Available, |api| {
                facts.api_availability(&api, namespace)
            });
            let read = if availability == Availability::NotServed {
                Read::NotServed
            } else {
                match facts.exposure(kind, namespace, object) {
                    Ok(Some(found)) => Read::Found(Box::new(found)),
                    Ok(None) => Read::Absent,
                    Err(ReadError::NotServed(_)) => Read::NotServed,
                    Err(ReadError::Forbidden(_)) => Read::Refused,
                    Err(e) => {
                        Read::Failed(read::failure(&format!("{} {object}", kind_name(kind)), &e))
                    }
                }
            };
            let refused = availability == Availability::Forbidden;
            let withdrawable = refused
                && matches!(&read, Read::Found(f)
                    if f.meta.deletion.is_none()
                        && f.meta.controller.as_ref().is_some_and(|c| c.uid == parent.uid))
                && !matches!(
                    facts.last_apply(&kind_ref(kind), namespace, object),
                    Some(ApplyOutcome::Refused(_))
                );
            Entry {
                kind,
                refused,
                read,
                withdrawable,
            }
        })
        .collect();
    Observation {
        namespace: namespace.to_owned(),
        object: object.to_owned(),
        requested,
        entries,
        previous,
    }
}

impl Observation {
    /// The entry of `kind`, when it was looked at.
    pub fn entry(&self, kind: ExposureKind) -> Option<&Entry> {
        self.entries.iter().find(|e| e.kind == kind)
    }

    /// The fixed sentences appended to ExposureReady's message, whatever
    /// its reason: one per kind refused to the operator under which an
    /// object of the parent may remain, but those `changes` delete.
    pub fn may_remain(&self, changes: &[Change]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.may_remain() && !deletes(changes, e))
            .map(|e| {
                format!(
                    "the operator may not read {} in {}: {} {} {} published before may remain; delete it by hand",
                    kind_plural(e.kind),
                    self.namespace,
                    article(e.kind),
                    kind_name(e.kind),
                    self.object
                )
            })
            .collect()
    }

    /// `status.publishedExposureKinds` after this pass: the kinds found or
    /// possibly remaining, and those recorded before whose read failed;
    /// `null` (removed) when none.
    pub fn published_kinds(&self) -> Value {
        let kinds: Vec<Value> = self
            .entries
            .iter()
            .filter(|e| match &e.read {
                Read::Found(_) => true,
                Read::Refused => true,
                Read::Failed(_) => self.previous.contains(&e.kind),
                Read::Absent | Read::NotServed => false,
            })
            .map(|e| Value::String(kind_name(e.kind).to_owned()))
            .collect();
        if kinds.is_empty() {
            Value::Null
        } else {
            Value::Array(kinds)
        }
    }

    /// The object of the requested kind, when found.
    fn found(&self) -> Option<&ExposureFact> {
        self.requested
            .and_then(|k| self.entry(k))
            .and_then(|e| match &e.read {
                Read::Found(f) => Some(f.as_ref()),
                _ => None,
            })
    }
}

/// What happens to `status.url`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Url {
    /// Set to this address.
    Set(String),
    /// Removed.
    Clear,
    /// A read failed or nothing was evaluated: left as it is.
    #[default]
    Keep,
}

/// ExposureReady, before the may-remain sentences are appended.
#[derive(Clone, Debug)]
pub struct Exposure {
    /// ExposureReady.
    pub condition: Condition,
    /// What happens to `status.url`.
    pub url: Url,
    /// A read failed: the pass asks to be retried.
    pub retry: bool,
}

fn exposure(condition: Condition, url: Url) -> Exposure {
    Exposure {
        condition,
        url,
        retry: false,
    }
}

/// ExposureReady of a parent whose configuration is valid and whose
/// hostname is allowed; `subject` is what its messages call what is
/// published ("the console", "pgAdmin").
pub fn decide(observation: &Observation, hostname: Option<&str>, subject: &str) -> Exposure {
    let Some(kind) = observation.requested else {
        return exposure(
            holds(
                EXPOSURE_READY,
                NOT_REQUESTED,
                "spec.exposure.type is clusterIP: nothing is published outside the cluster",
            ),
            Url::Clear,
        );
    };
    let ns = &observation.namespace;
    let object = &observation.object;
    let name = kind_name(kind);
    let (api_reason, api) = match kind {
        ExposureKind::Route => (
            ROUTE_API_UNAVAILABLE,
            "the Route API (route.openshift.io/v1)",
        ),
        ExposureKind::HttpRoute => (
            GATEWAY_API_UNAVAILABLE,
            "the Gateway API's HTTPRoute (gateway.networking.k8s.io/v1)",
        ),
        ExposureKind::Ingress => ("", "the Ingress API (networking.k8s.io/v1)"),
    };
    let Some(entry) = observation.entry(kind) else {
        return exposure(
            unknown(
                EXPOSURE_READY,
                RECONCILING,
                format!("{name} {object} is not observed yet"),
            ),
            Url::Clear,
        );
    };
    let optional = kind != ExposureKind::Ingress;
    if optional && matches!(entry.read, Read::NotServed) {
        return exposure(
            fails(
                EXPOSURE_READY,
                api_reason,
                format!(
                    "spec.exposure.type is {}, but {api} is not served by this cluster: {subject} in {ns} is not published",
                    type_name(kind)
                ),
            ),
            Url::Clear,
        );
    }
    if optional && entry.refused_or_unreadable() {
        return exposure(
            fails(
                EXPOSURE_READY,
                api_reason,
                format!(
                    "spec.exposure.type is {}, but {api} is not readable in {ns}: the operator is refused {} there, and {subject} is not published",
                    type_name(kind),
                    kind_plural(kind)
                ),
            ),
            Url::Clear,
        );
    }
    let fact = match &entry.read {
        Read::Found(_) => observation.found().expect("the requested kind was found"),
        Read::Absent => {
            return exposure(
                unknown(
                    EXPOSURE_READY,
                    RECONCILING,
                    format!("{name} {object} is not observed yet"),
                ),
                Url::Clear,
            );
        }
        Read::Failed(message) => {
            return Exposure {
                condition: unknown(EXPOSURE_READY, RECONCILING, message.clone()),
                url: Url::Keep,
                retry: true,
            };
        }
        Read::NotServed | Read::Refused => {
            return Exposure {
                condition: unknown(
                    EXPOSURE_READY,
                    RECONCILING,
                    format!("could not read {name} {object}: {api} answered no"),
                ),
                url: Url::Keep,
                retry: true,
            };
        }
    };
    let hostname = hostname.unwrap_or_default().to_ascii_lowercase();
    if !fact
        .hostnames
        .iter()
        .any(|h| h.to_ascii_lowercase() == hostname)
    {
        let publishes = if fact.hostnames.is_empty() {
            "no host name".to_owned()
        } else {
            fact.hostnames.join(", ")
        };
        return exposure(
            unknown(
                EXPOSURE_READY,
                RECONCILING,
                format!(
                    "{name} {object} publishes {publishes}, not spec.exposure.hostname {hostname} yet"
                ),
            ),
            Url::Clear,
        );
    }
    match &fact.admission {
        Admission::Admitted => exposure(
            ok(
                EXPOSURE_READY,
                format!("{name} {object} is admitted: {subject} is at https://{hostname}"),
            ),
            Url::Set(format!("https://{hostname}")),
        ),
        Admission::Refused(why) => {
            let (reason, verb) = if kind == ExposureKind::HttpRoute {
                (NOT_ACCEPTED, "accepted")
            } else {
                (NOT_ADMITTED, "admitted")
            };
            exposure(
                fails(
                    EXPOSURE_READY,
                    reason,
                    format!("{name} {object} is not {verb} by its controller: {why}"),
                ),
                Url::Clear,
            )
        }
        Admission::Pending => {
            let what = match kind {
                ExposureKind::Ingress => "has no address in status.loadBalancer yet",
                ExposureKind::Route => "has no answer from a router yet",
                ExposureKind::HttpRoute => "has no answer from its Gateway yet",
            };
            exposure(
                unknown(
                    EXPOSURE_READY,
                    RECONCILING,
                    format!("{name} {object} {what}"),
                ),
                Url::Clear,
            )
        }
    }
}

fn article(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "a",
        ExposureKind::Ingress | ExposureKind::HttpRoute => "an",
    }
}

/// The kind's `spec.exposure.type`.
pub fn type_name(kind: ExposureKind) -> &'static str {
    match kind {
        ExposureKind::Route => "route",
        ExposureKind::Ingress => "ingress",
        ExposureKind::HttpRoute => "gateway",
    }
}

/// Appends the may-remain sentences to ExposureReady's message. The seed
/// fixes them ("... may remain; delete it by hand"), so they survive
/// whatever the controller's message before them says: that message is
/// cut first, within the host's bound.
pub fn with_sentences(mut condition: Condition, sentences: &[String]) -> Condition {
    if !sentences.is_empty() {
        let tail: String = sentences.iter().map(|s| format!("; {s}")).collect();
        condition.message = message::bound_keeping_tail(&condition.message, &tail);
    }
    condition
}

/// Whether `changes` delete (or withdraw) the object `entry` found.
fn deletes(changes: &[Change], entry: &Entry) -> bool {
    let Read::Found(fact) = &entry.read else {
        return false;
    };
    changes.iter().any(|c| {
        let deleted = match c {
            Change::Delete(d) => d,
            Change::Withdraw(w) => &w.object,
            _ => return false,
        };
        deleted.uid == fact.meta.uid && deleted.kind == kind_ref(entry.kind)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConditionStatus;
    use crate::mock::{MockFacts, meta};
    use serde_json::json;

    fn route(admission: Admission) -> ExposureFact {
        ExposureFact {
            meta: meta("team-b", "orders-console"),
            kind: ExposureKind::Route,
            hostnames: vec!["orders.apps.example.com".into()],
            admission,
        }
    }

    fn observe_with(
        facts: &MockFacts,
        requested: Option<ExposureKind>,
        status: Value,
    ) -> Observation {
        let meta = meta("team-b", "orders");
        observe(
            facts,
            &Parent::of("PgToolBoxConsole", &meta),
            "orders-console",
            requested,
            &status,
        )
    }

    fn decide(o: &Observation, hostname: Option<&str>) -> Exposure {
        super::decide(o, hostname, "the console")
    }

    #[test]
    fn kind_names_round_trip() {
        for k in EXPOSURE_KINDS {
            assert_eq!(kind_named(kind_name(k)), Some(k));
            assert_eq!(kind_ref(k).kind, kind_name(k));
        }
        assert_eq!(kind_named("Service"), None);
    }

    #[test]
    fn an_admitted_route_sets_the_url_and_is_recorded() {
        let facts = MockFacts::at(0).with_exposure(route(Admission::Admitted));
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        let e = decide(&o, Some("orders.apps.example.com"));
        assert_eq!(e.condition.status, ConditionStatus::True);
        assert_eq!(e.url, Url::Set("https://orders.apps.example.com".into()));
        assert_eq!(o.published_kinds(), json!(["Route"]));
        assert!(o.may_remain(&[]).is_empty());
    }

    #[test]
    fn a_refused_route_kind_may_remain_with_the_fixed_sentence() {
        let facts = MockFacts::at(0).with_availability(
            &kind_ref(ExposureKind::Route),
            "team-b",
            Availability::Forbidden,
        );
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        let e = decide(&o, Some("orders.apps.example.com"));
        assert_eq!(e.condition.reason, ROUTE_API_UNAVAILABLE);
        assert_eq!(
            e.condition.message,
            "spec.exposure.type is route, but the Route API (route.openshift.io/v1) is not readable in team-b: the operator is refused Routes there, and the console is not published"
        );
        assert_eq!(
            o.may_remain(&[]),
            [
                "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand"
            ]
        );
        assert_eq!(o.published_kinds(), json!(["Route"]));
    }

    #[test]
    fn a_recorded_route_is_looked_at_after_a_switch_to_ingress() {
        let facts = MockFacts::at(0).with_availability(
            &kind_ref(ExposureKind::Route),
            "team-b",
            Availability::Forbidden,
        );
        let o = observe_with(
            &facts,
            Some(ExposureKind::Ingress),
            json!({"publishedExposureKinds": ["Route"]}),
        );
        let e = decide(&o, Some("orders.apps.example.com"));
        assert_eq!(e.condition.status, ConditionStatus::Unknown);
        assert_eq!(o.may_remain(&[]).len(), 1);
        assert_eq!(o.previous, [ExposureKind::Route]);
    }

    #[test]
    fn a_route_found_past_the_cache_is_withdrawable_and_its_deletion_ends_the_sentence() {
        let route_api = kind_ref(ExposureKind::Route);
        let mut owned = route(Admission::Admitted);
        owned.meta.controller = Some(crate::ControllerRef {
            api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
            kind: "PgToolBoxConsole".into(),
            name: "orders".into(),
            uid: meta("team-b", "orders").uid,
        });
        let facts = MockFacts::at(0)
            .with_availability(&route_api, "team-b", Availability::Forbidden)
            .with_direct_get(&route_api, "team-b")
            .with_exposure(owned);
        let o = observe_with(
            &facts,
            Some(ExposureKind::Ingress),
            json!({"publishedExposureKinds": ["Route"]}),
        );
        let route_entry = o.entry(ExposureKind::Route).expect("looked at");
        let uid = route_entry
            .withdrawable_uid()
            .expect("withdrawable")
            .to_owned();
        assert_eq!(o.may_remain(&[]).len(), 1);
        let delete = Change::Delete(crate::DeleteObject {
            kind: route_api,
            name: "orders-console".into(),
            uid,
        });
        assert!(o.may_remain(&[delete]).is_empty());
    }

    #[test]
    fn not_served_means_nothing_remains() {
        let facts = MockFacts::at(0).with_availability(
            &kind_ref(ExposureKind::HttpRoute),
            "team-b",
            Availability::NotServed,
        );
        let o = observe_with(&facts, Some(ExposureKind::HttpRoute), json!({}));
        let e = decide(&o, Some("h.example.com"));
        assert_eq!(e.condition.reason, GATEWAY_API_UNAVAILABLE);
        assert!(e.condition.message.contains("not served"));
        assert!(o.may_remain(&[]).is_empty());
        assert_eq!(o.published_kinds(), Value::Null);
    }

    #[test]
    fn admission_refused_pending_and_another_hostname() {
        let facts =
            MockFacts::at(0).with_exposure(route(Admission::Refused("HostAlreadyClaimed".into())));
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        let e = decide(&o, Some("orders.apps.example.com"));
        assert_eq!(e.condition.reason, NOT_ADMITTED);
        assert!(e.condition.message.contains("HostAlreadyClaimed"));
        let facts = MockFacts::at(0).with_exposure(route(Admission::Pending));
        let o = observe_with(&facts, Some(ExposureKind::Route), json!({}));
        assert_eq!(
            decide(&o, Some("orders.apps.example.com")).condition.status,
            ConditionStatus::Unknown
        );
        let e = decide(&o, Some("new.apps.example.com"));
        assert!(
            e.condition
                .message
                .contains("not spec.exposure.hostname new.apps.example.com yet")
        );
        assert_eq!(e.url, Url::Clear);
    }

    #[test]
    fn cluster_ip_is_not_requested() {
        let o = observe_with(&MockFacts::at(0), None, json!({}));
        let e = decide(&o, None);
        assert_eq!(
            (e.condition.status, e.condition.reason.as_str()),
            (ConditionStatus::True, NOT_REQUESTED)
        );
        assert_eq!(e.url, Url::Clear);
        assert!(o.entries.is_empty());
    }

    /// Seed 000, RouteAPIUnavailable: the operator "appends a fixed
    /// sentence to ExposureReady's message, whatever the reason"; "Every
    /// message is bounded": the controller's text is cut, never the
    /// sentence.
    #[test]
    fn the_fixed_sentence_survives_a_long_controller_message() {
        let sentence = "the operator may not read Routes in team-b: a Route orders-console published before may remain; delete it by hand".to_owned();
        let long = fails(EXPOSURE_READY, NOT_ADMITTED, "é".repeat(3000));
        let c = with_sentences(long, std::slice::from_ref(&sentence));
        assert!(c.message.len() <= message::MAX_MESSAGE_BYTES);
        assert!(
            c.message.ends_with(&format!("…[truncated]; {sentence}")),
            "{}",
            c.message
        );
        assert_eq!(message::bound(&c.message), c.message, "the host keeps it");
        let short = with_sentences(
            fails(EXPOSURE_READY, NOT_ADMITTED, "m"),
            std::slice::from_ref(&sentence),
        );
        assert_eq!(short.message, format!("m; {sentence}"));
    }
}
