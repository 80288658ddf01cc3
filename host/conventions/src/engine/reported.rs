//! What the Events of earlier passes of one object reported that its status
//! may no longer say: the error classes reported since a pass last ended
//! with a verdict, and the stall reported before an error pass cleared
//! Stalled.

use std::collections::BTreeSet;

use super::ErrorClass;

/// The memory of one object's reports, from one pass to the next. The host
/// keeps it per object in memory ([`super::Output::reported`] is what it
/// becomes once a pass's Events are published); an empty one (a restart)
/// falls back on what the status says: the class Ready carries, and
/// Stalled as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Each reported once, until a pass ends with a verdict (seed 000: "a
    /// reconciliation error of a class not already reported ..., once per
    /// class, not per retry").
    classes: BTreeSet<ErrorClass>,
    /// The reason of Stalled=True as the last pass that ended with a
    /// verdict wrote it: an error pass writes Stalled False (AsExpected),
    /// and the same stall found again afterwards is not reported again.
    stall: Option<String>,
}

impl Reported {
    pub(super) fn has_class(&self, class: ErrorClass) -> bool {
        self.classes.contains(&class)
    }

    /// After an error pass: `class` is reported too; the stall is kept.
    pub(super) fn with_class(&self, class: ErrorClass) -> Reported {
        let mut next = self.clone();
        next.classes.insert(class);
        next
    }

    /// After a pass that ended with a verdict (stalled on `stall`, if any):
    /// no class is reported any more.
    pub(super) fn after_verdict(stall: Option<&str>) -> Reported {
        Reported {
            classes: BTreeSet::new(),
            stall: stall.map(str::to_owned),
        }
    }

    pub(super) fn stall(&self) -> Option<&str> {
        self.stall.as_deref()
    }
}
