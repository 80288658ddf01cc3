//! Writing one condition over its previous value: observedGeneration,
//! lastTransitionTime and a bounded message.

use crate::message::bound;
use crate::status::{Condition, Status, rfc3339_seconds};
use crate::verdict::{self, ConditionStatus};

use super::INITIALIZING;

/// What a pass says about one condition: status, reason and message, with
/// no time and no generation (the [`ConditionWriter`] adds those).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Fact {
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
}

impl Fact {
    pub(super) fn new(status: ConditionStatus, reason: &str, message: impl Into<String>) -> Fact {
        Fact {
            status,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// Not evaluated yet: Unknown, never a guessed state.
    pub(super) fn initializing() -> Fact {
        Fact::new(ConditionStatus::Unknown, INITIALIZING, "Not evaluated yet")
    }
}

impl From<&verdict::Decision> for Fact {
    fn from(d: &verdict::Decision) -> Fact {
        Fact::new(d.status, &d.reason, d.message.clone())
    }
}

/// Writes conditions for one pass over the previous status.
pub(super) struct ConditionWriter<'a> {
    previous: &'a Status,
    generation: i64,
    now: jiff::Timestamp,
}

impl<'a> ConditionWriter<'a> {
    pub(super) fn new(
        previous: &'a Status,
        generation: i64,
        now: jiff::Timestamp,
    ) -> ConditionWriter<'a> {
        ConditionWriter {
            previous,
            generation,
            now,
        }
    }

    pub(super) fn generation(&self) -> i64 {
        self.generation
    }

    /// (Re)writes a condition: observedGeneration is the current generation;
    /// lastTransitionTime moves only when the status (True/False/Unknown)
    /// moves, whatever happens to reason and message.
    pub(super) fn write(&self, type_: &str, fact: Fact) -> Condition {
        let last_transition_time = match self.previous.condition(type_) {
            Some(before) if before.status == fact.status => before.last_transition_time.clone(),
            _ => rfc3339_seconds(self.now),
        };
        Condition {
            type_: type_.to_owned(),
            status: fact.status,
            reason: fact.reason,
            message: bound(&fact.message),
            last_transition_time,
            observed_generation: self.generation,
        }
    }

    /// The previous condition as it was written, its observedGeneration
    /// still saying which generation it describes; only its message is
    /// bounded (a no-op for anything the engine wrote).
    pub(super) fn keep(&self, type_: &str) -> Option<Condition> {
        self.previous.condition(type_).map(|before| Condition {
            message: bound(&before.message),
            ..before.clone()
        })
    }

    /// `fact` over the previous condition: kept as it was written, its
    /// observedGeneration included, when it says the same (status, reason
    /// and message), else (re)written at the current generation. How a
    /// pass that did not evaluate a condition gives it again.
    pub(super) fn carry_forward(&self, type_: &str, fact: Fact) -> Condition {
        match self.keep(type_) {
            Some(before)
                if before.status == fact.status
                    && before.reason == fact.reason
                    && before.message == bound(&fact.message) =>
            {
                before
            }
            _ => self.write(type_, fact),
        }
    }

    /// The previous condition, or Unknown/Initializing when there is none:
    /// for a condition the kind always carries that this pass did not set.
    pub(super) fn keep_or_initialize(&self, type_: &str) -> Condition {
        self.keep(type_)
            .unwrap_or_else(|| self.write(type_, Fact::initializing()))
    }
}
