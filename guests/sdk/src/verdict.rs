//! Builders for conditions and verdicts.

use crate::{Condition, ConditionStatus, EventType, KindEvent, Stall, Verdict};

/// The healthy reason of every aspect (the host's: no registration).
///
/// ```
/// use reconciler_guest_sdk::verdict::{AS_EXPECTED, ok};
/// assert_eq!(ok("WorkloadReady", "2/2 Ready").reason, AS_EXPECTED);
/// ```
pub const AS_EXPECTED: &str = "AsExpected";
/// A child not observed yet, or a read that failed: Unknown (the host's
/// reason: no registration).
///
/// ```
/// use reconciler_guest_sdk::verdict::{RECONCILING, unknown};
/// let c = unknown("WorkloadReady", RECONCILING, "Deployment a is not observed yet");
/// assert_eq!(c.reason, "Reconciling");
/// ```
pub const RECONCILING: &str = "Reconciling";
/// The status fields the host writes and a verdict may not set (its
/// `status-fields`): the conditions, observedGeneration, and the plan's
/// `currentPlanRef` and `changeSummary`.
pub const RESERVED_STATUS_FIELDS: &[&str] = &[
    "conditions",
    "observedGeneration",
    "currentPlanRef",
    "changeSummary",
];

/// `type` is True with reason AsExpected.
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, verdict::ok};
/// let c = ok("ConfigurationValid", "Cluster pg archives to ObjectStore backups");
/// assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::True, "AsExpected"));
/// ```
pub fn ok(type_: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::True, AS_EXPECTED, message)
}

/// `type` is True with a reason of its own (e.g. NotRequested).
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, verdict::holds};
/// let c = holds("ExposureReady", "NotRequested", "spec.exposure.type is clusterIP");
/// assert_eq!((c.status, c.reason.as_str()), (ConditionStatus::True, "NotRequested"));
/// ```
pub fn holds(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::True, reason, message)
}

/// `type` is False with `reason` (a registered reason).
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, verdict::fails};
/// let c = fails("ConfigurationValid", "ClusterNotFound", "Cluster pg does not exist in ns");
/// assert_eq!(c.status, ConditionStatus::False);
/// ```
pub fn fails(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::False, reason, message)
}

/// `type` is Unknown with `reason`.
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, verdict::{RECONCILING, unknown}};
/// let c = unknown("ServingCertificateReady", RECONCILING, "could not read Secret a-tls: not synced");
/// assert_eq!(c.status, ConditionStatus::Unknown);
/// ```
pub fn unknown(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::Unknown, reason, message)
}

/// A condition of `type_` with `status`, `reason` and `message`.
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, verdict::condition};
/// let c = condition("ExposureConfined", ConditionStatus::False, "ExposurePeersBroad", "admits every namespace");
/// assert_eq!(c.type_, "ExposureConfined");
/// ```
pub fn condition(
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: impl Into<String>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status,
        reason: reason.to_owned(),
        message: message.into(),
    }
}

/// Collects a verdict piece by piece: the aspects in Ready order up to
/// the first that is not True, the advisory conditions present, a stall,
/// status fields, Events, a requeue.
///
/// ```
/// use reconciler_guest_sdk::VerdictBuilder;
/// use reconciler_guest_sdk::verdict::{fails, ok};
///
/// let mut v = VerdictBuilder::new();
/// v.aspect(ok("ConfigurationValid", "valid"));
/// v.aspect(fails("WorkloadReady", "CrashLoopBackOff", "Deployment a: back-off"))
///     .field("url", serde_json::json!("https://a.apps.example.com"))
///     .requeue_after(60);
/// let verdict = v.build();
/// assert_eq!(verdict.aspects.len(), 2);
/// assert_eq!(verdict.fields()["url"], "https://a.apps.example.com");
/// ```
#[derive(Default)]
pub struct VerdictBuilder {
    aspects: Vec<Condition>,
    advisory: Vec<Condition>,
    stall: Option<Stall>,
    fields: serde_json::Map<String, serde_json::Value>,
    events: Vec<KindEvent>,
    requeue_after_seconds: Option<u32>,
}

impl VerdictBuilder {
    /// An empty verdict: nothing evaluated yet (what a paused pass
    /// returns when it checks nothing).
    ///
    /// ```
    /// let verdict = reconciler_guest_sdk::VerdictBuilder::new().build();
    /// assert!(verdict.aspects.is_empty() && verdict.stall.is_none());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets an aspect (replacing an earlier one of the same type).
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::{fails, ok}};
    /// let mut v = VerdictBuilder::new();
    /// v.aspect(ok("WorkloadReady", "")).aspect(fails("WorkloadReady", "PodNotReady", "0/1"));
    /// assert_eq!(v.build().aspect("WorkloadReady").unwrap().reason, "PodNotReady");
    /// ```
    pub fn aspect(&mut self, condition: Condition) -> &mut Self {
        upsert(&mut self.aspects, condition);
        self
    }

    /// Makes an advisory condition present (replacing an earlier one); one
    /// a pass leaves out is removed from the status.
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::ok};
    /// let mut v = VerdictBuilder::new();
    /// v.advisory(ok("ExposureConfined", "only the router is admitted"));
    /// assert!(v.build().advisory_of("ExposureConfined").is_some());
    /// ```
    pub fn advisory(&mut self, condition: Condition) -> &mut Self {
        upsert(&mut self.advisory, condition);
        self
    }

    /// The object cannot progress without a change of input. The first
    /// stall of a pass wins. Its reason must be declared in the kind spec's
    /// `stalls`.
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::fails};
    /// let mut v = VerdictBuilder::new();
    /// v.aspect(fails("ConfigurationValid", "ClusterNotFound", "Cluster pg does not exist"))
    ///     .stall("ClusterNotFound", "Cluster pg does not exist")
    ///     .stall("ImageRequired", "ignored: the first stall wins");
    /// assert_eq!(v.build().stall.unwrap().reason, "ClusterNotFound");
    /// ```
    pub fn stall(&mut self, reason: &str, message: impl Into<String>) -> &mut Self {
        if self.stall.is_none() {
            self.stall = Some(Stall {
                reason: reason.to_owned(),
                message: message.into(),
            });
        }
        self
    }

    /// Sets `.status.<key>`; `null` deletes it.
    ///
    /// ```
    /// use reconciler_guest_sdk::VerdictBuilder;
    /// let mut v = VerdictBuilder::new();
    /// v.field("url", serde_json::Value::Null);
    /// assert_eq!(v.build().fields(), serde_json::json!({"url": null}));
    /// ```
    pub fn field(&mut self, key: &str, value: serde_json::Value) -> &mut Self {
        self.fields.insert(key.to_owned(), value);
        self
    }

    /// An Event of the kind's own, emitted with the status write (its
    /// reason registered).
    ///
    /// ```
    /// use reconciler_guest_sdk::{EventType, VerdictBuilder};
    /// let mut v = VerdictBuilder::new();
    /// v.event(EventType::Normal, "CertificateIssued", "Secret a-tls issued, expires 2027-11-29");
    /// assert_eq!(v.build().events[0].reason, "CertificateIssued");
    /// ```
    pub fn event(
        &mut self,
        type_: EventType,
        reason: &str,
        message: impl Into<String>,
    ) -> &mut Self {
        self.events.push(KindEvent {
            type_,
            reason: reason.to_owned(),
            message: message.into(),
        });
        self
    }

    /// Evaluate again after `seconds` at the latest (the smallest wins).
    ///
    /// ```
    /// use reconciler_guest_sdk::VerdictBuilder;
    /// let mut v = VerdictBuilder::new();
    /// v.requeue_after(300).requeue_after(30);
    /// assert_eq!(v.build().requeue_after_seconds, Some(30));
    /// ```
    pub fn requeue_after(&mut self, seconds: u32) -> &mut Self {
        self.requeue_after_seconds = Some(
            self.requeue_after_seconds
                .map_or(seconds, |s| s.min(seconds)),
        );
        self
    }

    /// The aspect of that type set so far, if any.
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::ok};
    /// let mut v = VerdictBuilder::new();
    /// v.aspect(ok("ConfigurationValid", "valid"));
    /// assert!(v.aspect_of("ConfigurationValid").is_some() && v.aspect_of("WorkloadReady").is_none());
    /// ```
    pub fn aspect_of(&self, type_: &str) -> Option<&Condition> {
        self.aspects.iter().find(|c| c.type_ == type_)
    }

    /// The verdict as built so far (the builder can go on).
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::ok};
    /// let mut v = VerdictBuilder::new();
    /// v.aspect(ok("ConfigurationValid", "valid"));
    /// assert_eq!(v.build().aspects.len(), 1);
    /// ```
    pub fn build(&self) -> Verdict {
        Verdict {
            aspects: self.aspects.clone(),
            advisory: self.advisory.clone(),
            stall: self.stall.clone(),
            status_fields: serde_json::Value::Object(self.fields.clone()).to_string(),
            events: self.events.clone(),
            requeue_after_seconds: self.requeue_after_seconds,
        }
    }
}

fn upsert(list: &mut Vec<Condition>, condition: Condition) {
    match list.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => *existing = condition,
        None => list.push(condition),
    }
}

impl Verdict {
    /// The aspect of that type, if the verdict has it.
    ///
    /// ```
    /// use reconciler_guest_sdk::{VerdictBuilder, verdict::ok};
    /// let mut v = VerdictBuilder::new();
    /// v.aspect(ok("ConfigurationValid", "valid"));
    /// assert_eq!(v.build().aspect("ConfigurationValid").unwrap().message, "valid");
    /// ```
    pub fn aspect(&self, type_: &str) -> Option<&Condition> {
        self.aspects.iter().find(|c| c.type_ == type_)
    }

    /// The advisory condition of that type, if present.
    ///
    /// ```
    /// use reconciler_guest_sdk::VerdictBuilder;
    /// assert!(VerdictBuilder::new().build().advisory_of("ExposureConfined").is_none());
    /// ```
    pub fn advisory_of(&self, type_: &str) -> Option<&Condition> {
        self.advisory.iter().find(|c| c.type_ == type_)
    }

    /// The status fields as JSON.
    ///
    /// ```
    /// use reconciler_guest_sdk::VerdictBuilder;
    /// let mut v = VerdictBuilder::new();
    /// v.field("observedImage", serde_json::json!("ghcr.io/a/b:1"));
    /// assert_eq!(v.build().fields()["observedImage"], "ghcr.io/a/b:1");
    /// ```
    pub fn fields(&self) -> serde_json::Value {
        serde_json::from_str(&self.status_fields).unwrap_or(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_aspect_replaces_earlier_of_same_type() {
        let mut b = VerdictBuilder::new();
        b.aspect(ok("WorkloadReady", ""));
        b.aspect(fails("WorkloadReady", "PodNotReady", "1/2"));
        let v = b.build();
        assert_eq!(v.aspects.len(), 1);
        assert_eq!(v.aspect("WorkloadReady").unwrap().reason, "PodNotReady");
    }

    #[test]
    fn first_stall_wins_and_smallest_requeue_wins() {
        let mut b = VerdictBuilder::new();
        b.stall("ImageRequired", "a").stall("ClusterNotFound", "b");
        b.requeue_after(120).requeue_after(30).requeue_after(300);
        let v = b.build();
        assert_eq!(v.stall.unwrap().reason, "ImageRequired");
        assert_eq!(v.requeue_after_seconds, Some(30));
    }

    #[test]
    fn fields_serialize_as_a_json_object() {
        let mut b = VerdictBuilder::new();
        b.field("url", serde_json::Value::Null);
        assert_eq!(b.build().fields(), serde_json::json!({"url": null}));
    }
}
