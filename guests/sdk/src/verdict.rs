//! Builders for conditions and verdicts.

use crate::{Condition, ConditionStatus, EventType, KindEvent, Stall, Verdict};

/// The healthy reason of every aspect.
pub const AS_EXPECTED: &str = "AsExpected";
/// A child not observed yet.
pub const RECONCILING: &str = "Reconciling";

/// `type` is True with reason AsExpected.
pub fn ok(type_: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::True, AS_EXPECTED, message)
}

/// `type` is True with a reason of its own (e.g. NotRequested).
pub fn holds(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::True, reason, message)
}

/// `type` is False with `reason`.
pub fn fails(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::False, reason, message)
}

/// `type` is Unknown with `reason`.
pub fn unknown(type_: &str, reason: &str, message: impl Into<String>) -> Condition {
    condition(type_, ConditionStatus::Unknown, reason, message)
}

/// A condition of `type_` with `status`, `reason` and `message`.
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

/// Collects a verdict piece by piece.
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
    /// An empty verdict: nothing evaluated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets an aspect (replacing an earlier one of the same type).
    pub fn aspect(&mut self, condition: Condition) -> &mut Self {
        upsert(&mut self.aspects, condition);
        self
    }

    /// Makes an advisory condition present (replacing an earlier one).
    pub fn advisory(&mut self, condition: Condition) -> &mut Self {
        upsert(&mut self.advisory, condition);
        self
    }

    /// The object cannot progress without a change of input. The first
    /// stall of a pass wins.
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
    pub fn field(&mut self, key: &str, value: serde_json::Value) -> &mut Self {
        self.fields.insert(key.to_owned(), value);
        self
    }

    /// An Event of the kind's own, emitted with the status write.
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
    pub fn requeue_after(&mut self, seconds: u32) -> &mut Self {
        self.requeue_after_seconds = Some(
            self.requeue_after_seconds
                .map_or(seconds, |s| s.min(seconds)),
        );
        self
    }

    /// The aspect of that type set so far, if any.
    pub fn aspect_of(&self, type_: &str) -> Option<&Condition> {
        self.aspects.iter().find(|c| c.type_ == type_)
    }

    /// The verdict as built so far.
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
    pub fn aspect(&self, type_: &str) -> Option<&Condition> {
        self.aspects.iter().find(|c| c.type_ == type_)
    }

    /// The advisory condition of that type, if present.
    pub fn advisory_of(&self, type_: &str) -> Option<&Condition> {
        self.advisory.iter().find(|c| c.type_ == type_)
    }

    /// The status fields as JSON.
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
