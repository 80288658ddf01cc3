//! What the host's last apply of each child came to and what became of the
//! change last asked for it: one record a child, by kind, then by
//! namespace and name.

use std::collections::HashMap;

use reconciler_conventions::kind::KindRef;

use crate::facts::{ApplyOutcome, ChangeState};

/// The records of every child the host was asked to change.
///
/// A child's key is one string, `namespace/name` (neither holds a `/`),
/// under its kind: a record is one entry of one table, where a key of a
/// kind and two strings in each of two tables cost five allocations and
/// two slots a child.
#[derive(Default)]
pub(crate) struct ChildRecords(HashMap<KindRef, HashMap<Box<str>, Record>>);

/// One child's record.
#[derive(Default)]
struct Record {
    /// What its last apply came to, and when the API server answered it
    /// (a fixture may not say).
    apply: Option<(ApplyOutcome, Option<jiff::Timestamp>)>,
    /// What became of the change last asked for it.
    change: Option<ChangeState>,
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
        self.entry(kind, namespace, name).apply = Some((outcome, at));
    }

    /// Records what became of the change asked for the child.
    pub(crate) fn record_change(
        &mut self,
        kind: KindRef,
        namespace: &str,
        name: &str,
        state: ChangeState,
    ) {
        self.entry(kind, namespace, name).change = Some(state);
    }

    /// What the child's last apply came to, and when it was answered.
    pub(crate) fn last_apply(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<&(ApplyOutcome, Option<jiff::Timestamp>)> {
        self.get(kind, namespace, name)?.apply.as_ref()
    }

    /// What became of the change last asked for the child.
    pub(crate) fn change_state(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Option<&ChangeState> {
        self.get(kind, namespace, name)?.change.as_ref()
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
            Some(&(ApplyOutcome::Applied, None))
        );
        assert_eq!(
            records.change_state(&deployment, "ns", "a"),
            Some(&ChangeState::Withdrawn)
        );
        let other = kind("StatefulSet");
        assert_eq!(records.last_apply(&other, "ns", "a"), None);
        assert_eq!(
            records.change_state(&other, "ns", "a"),
            Some(&ChangeState::Made)
        );
    }
}
