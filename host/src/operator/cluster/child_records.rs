//! What the host's last apply of each child came to and what became of the
//! change last asked for it: one record a child, by kind, then by
//! namespace and name.

use std::collections::HashMap;

use reconciler_conventions::kind::KindRef;

use crate::facts::{ApplyOutcome, ChangeState, Hold};

/// The records of every child the host was asked to change.
///
/// A child's key is one string, `namespace/name` (neither holds a `/`),
/// under its kind: a record is one entry of one table, where a key of a
/// kind and two strings in each of two tables cost five allocations and
/// two slots a child.
#[derive(Default)]
pub(crate) struct ChildRecords(HashMap<KindRef, HashMap<Box<str>, Record>>);

/// One child's record. A refusal (a code and two strings) is rare and
/// boxed: held in place, its room would be most of every record.
#[derive(Default)]
struct Record {
    /// What its last apply came to.
    apply: Option<Answered>,
    /// What became of the change last asked for it.
    change: Option<Change>,
}

/// What an apply came to, and when the API server answered it (a fixture
/// may not say).
struct Answered {
    /// `None`: applied.
    refused: Option<Box<ApplyOutcome>>,
    at: Option<jiff::Timestamp>,
}

impl Answered {
    fn new(outcome: ApplyOutcome, at: Option<jiff::Timestamp>) -> Self {
        let refused = match outcome {
            ApplyOutcome::Applied => None,
            refused @ ApplyOutcome::Refused { .. } => Some(Box::new(refused)),
        };
        Answered { refused, at }
    }

    fn outcome(&self) -> (ApplyOutcome, Option<jiff::Timestamp>) {
        let outcome = self
            .refused
            .as_deref()
            .map_or(ApplyOutcome::Applied, ApplyOutcome::clone);
        (outcome, self.at)
    }
}

/// A [`ChangeState`] as a record holds it.
enum Change {
    Made,
    Held(Hold),
    Withdrawn,
    Refused(Box<ChangeState>),
}

impl From<ChangeState> for Change {
    fn from(state: ChangeState) -> Self {
        match state {
            ChangeState::Made => Change::Made,
            ChangeState::Held(hold) => Change::Held(hold),
            ChangeState::Withdrawn => Change::Withdrawn,
            refused @ ChangeState::Refused { .. } => Change::Refused(Box::new(refused)),
        }
    }
}

impl Change {
    fn state(&self) -> ChangeState {
        match self {
            Change::Made => ChangeState::Made,
            Change::Held(hold) => ChangeState::Held(*hold),
            Change::Withdrawn => ChangeState::Withdrawn,
            Change::Refused(refused) => ChangeState::clone(refused),
        }
    }
}

fn key(namespace: &str, name: &str) -> Box<str> {
    format!("{namespace}/{name}").into()
}

impl ChildRecords {
    fn get(&self, kind: &KindRef, namespace: &str, name: &str) -> Option<&Record> {
        self.0.get(kind)?.get(&*key(namespace, name))
    }

    fn entry(&mut self, kind: KindRef, namespace: &str, name: &str) -> &mut Record {
        self.0
            .entry(kind)
            .or_default()
            .entry(key(namespace, name))
            .or_default()
    }

    /// Records what the child's apply came to, answered `at`.
    pub(crate) fn record_apply(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        outcome: ApplyOutcome,
        at: Option<jiff::Timestamp>,
    ) {
        self.entry(kind, namespace, name).apply = Some(Answered::new(outcome, at));
    }

    /// Records what became of the change asked for the child.
    pub(crate) fn record_change(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        state: ChangeState,
    ) {
        self.entry(kind, namespace, name).change = Some(state.into());
    }

    /// What the child's last apply came to, and when it was answered.
    pub(crate) fn last_apply(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<(ApplyOutcome, Option<jiff::Timestamp>)> {
        Some(self.get(kind, namespace, name)?.apply.as_ref()?.outcome())
    }

    /// What became of the change last asked for the child.
    pub(crate) fn change_state(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<ChangeState> {
        Some(self.get(kind, namespace, name)?.change.as_ref()?.state())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(kind: &str) -> KindRef {
        KindRef {
            group: "apps".into(),
            version: "v1".into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn a_childs_apply_and_change_are_recorded_apart_and_each_kept() {
        let mut records = ChildRecords::default();
        records.record_apply(kind("Deployment"), "ns", "a", ApplyOutcome::Applied, None);
        records.record_change(kind("Deployment"), "ns", "a", ChangeState::Withdrawn);
        records.record_change(kind("StatefulSet"), "ns", "a", ChangeState::Made);
        let deployment = kind("Deployment");
        assert_eq!(
            records.last_apply(&deployment, "ns", "a"),
            Some((ApplyOutcome::Applied, None))
        );
        assert_eq!(
            records.change_state(&deployment, "ns", "a"),
            Some(ChangeState::Withdrawn)
        );
        let other = kind("StatefulSet");
        assert_eq!(records.last_apply(&other, "ns", "a"), None);
        assert_eq!(
            records.change_state(&other, "ns", "a"),
            Some(ChangeState::Made)
        );
    }

    #[test]
    fn a_refusal_and_a_hold_read_back_as_recorded() {
        let mut records = ChildRecords::default();
        let refused = ApplyOutcome::Refused {
            code: 422,
            reason: "Invalid".into(),
            message: "spec.replicas: must be greater than or equal to 0".into(),
        };
        let at = jiff::Timestamp::from_second(1_700_000_000).unwrap();
        records.record_apply(kind("Deployment"), "ns", "a", refused.clone(), Some(at));
        let denied = ChangeState::Refused {
            code: 403,
            reason: "Forbidden".into(),
            message: "denied".into(),
        };
        records.record_change(kind("Deployment"), "ns", "a", denied.clone());
        records.record_change(
            kind("Deployment"),
            "ns",
            "b",
            ChangeState::Held(Hold::AwaitingApproval),
        );
        let deployment = kind("Deployment");
        assert_eq!(
            records.last_apply(&deployment, "ns", "a"),
            Some((refused, Some(at)))
        );
        assert_eq!(records.change_state(&deployment, "ns", "a"), Some(denied));
        assert_eq!(
            records.change_state(&deployment, "ns", "b"),
            Some(ChangeState::Held(Hold::AwaitingApproval))
        );
    }
}
