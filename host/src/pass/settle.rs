//! A pass's end, decided: from the guest's outcome and what became of the
//! changes it asked for, the engine's status and Events, the plan's part
//! of the status, and when the parent passes again.

use std::time::Duration;

use reconciler_conventions::engine::{
    self, ErrorClass, Input, Outcome, Output, PlanFacts, Reported,
};
use reconciler_conventions::kind::{CHANGE_NOT_SETTLING, KindSpec};
use reconciler_conventions::status::Status;
use reconciler_conventions::verdict::{Stall, Verdict};

use crate::facts::SourceError;
use crate::runtime::{Blame, GuestError, GuestErrorClass};

/// How a pass ended, for the work queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Done {
    /// Converged: resets the backoff; a periodic requeue, if any.
    Converged { requeue_after: Option<Duration> },
    /// Stalled, needing a human: no backoff (retrying will not help), only
    /// the kind's periodic recheck, if any. Resets the backoff.
    Stalled { recheck_after: Option<Duration> },
    /// Failed: again after the key's next exponential backoff, or sooner
    /// when the pass asked for a time before it (an expiry the guest's
    /// verdict asked for: a failure never makes a timed withdrawal late).
    Failed { retry_before: Option<Duration> },
    /// A conflict: again soon (a tenth of the base backoff), leaving the
    /// backoff as it was.
    Retry,
}

/// A change, a plan or a withdrawal the host could not make, as it
/// classifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The class the pass reports; `None` for a conflict (the object
    /// changed meanwhile): retried soon, nothing reported.
    pub class: Option<ErrorClass>,
    /// What failed, as Ready's message says it.
    pub text: String,
    /// The guest asked for what the contract refuses: its fault.
    pub guest: bool,
}

/// The parent a pass settles, as it was read.
pub struct Parent<'a> {
    pub spec: &'a KindSpec,
    pub generation: i64,
    pub paused: bool,
    /// The part of its status the host owns.
    pub previous: &'a Status,
    pub now: jiff::Timestamp,
    /// What its passes reported before.
    pub reported: &'a Reported,
}

/// What happened in a pass, before its status.
pub struct Happened<'a> {
    /// The guest's verdict, or why there is none.
    pub outcome: Result<Verdict, GuestError>,
    /// A read the source could not serve: the pass fails whatever the
    /// verdict says (seed 000, retried with backoff).
    pub failed_read: Option<&'a SourceError>,
    /// The verdict's withdrawals were made or tried: Ready says what
    /// failed, the verdict the rest (contract 0.5.0).
    pub withdrew: bool,
    /// The parent's plan could not be made or moved.
    pub plan: Option<Failure>,
    /// The changes the pass made (or a withdrawal) failed.
    pub changes: Option<Failure>,
    /// What the status says of the parent's plan: `None` where changes are
    /// made directly.
    pub plan_facts: Option<&'a PlanFacts>,
    /// When the host's own effects ask to pass again (a certificate due
    /// for renewal, a deletion no watch reports, a rejection's hold).
    pub host_requeue: Vec<Duration>,
    /// A change the host holds back for not settling: the pass stalls
    /// with the host's reason [`CHANGE_NOT_SETTLING`] and this message,
    /// unless the guest's verdict stalls already.
    pub not_settling: Option<String>,
}

/// A pass, settled.
#[derive(Debug)]
pub enum Settled {
    /// A conflict (a decision landed, an object changed): again soon,
    /// nothing written, nothing reported.
    Retry,
    Decided {
        /// The status (to write when `changed`) and the Events due once
        /// it is written.
        output: Output,
        done: Done,
        /// The guest was to blame for a failure (counted against a
        /// swapped-in module's probation).
        blamed: bool,
        /// The class of the guest's failure, where it failed.
        guest_error: Option<GuestErrorClass>,
    },
}

/// Settles a pass of `parent` from what `happened`.
pub fn settle(parent: &Parent<'_>, happened: Happened<'_>) -> Settled {
    let Happened {
        outcome,
        failed_read,
        withdrew,
        plan,
        changes,
        plan_facts,
        host_requeue,
        not_settling,
    } = happened;
    // When the guest's verdict asked to pass again (an expiry), a failed
    // pass is retried no later than that.
    let asked_after = outcome
        .as_ref()
        .ok()
        .and_then(|v| v.requeue_after_seconds)
        .map(|s| Duration::from_secs(u64::from(s)));
    let mut blamed = outcome.as_ref().is_err_and(|e| e.blame() == Blame::Guest);
    let mut guest_error = outcome.as_ref().err().map(|e| e.class);
    let mut failed = outcome.is_err() || failed_read.is_some();
    let withdrawing = withdrew.then(|| outcome.as_ref().ok().cloned()).flatten();
    let outcome = match outcome {
        Err(e) => Outcome::Error {
            class: ErrorClass::GuestFailed,
            text: e.to_string(),
        },
        // A read the source could not serve (a kind gone since start, a
        // required kind refused or not watched) fails the pass: what the
        // guest made of it is moot. Only an optional kind not served or
        // refused is the guest's to report.
        Ok(_) if failed_read.is_some() => {
            let read = failed_read.expect("a failed read");
            Outcome::Error {
                class: match read {
                    SourceError::Undecodable { .. } => ErrorClass::ObjectUndecodable,
                    _ => ErrorClass::ReconciliationFailed,
                },
                text: read.to_string(),
            }
        }
        Ok(mut verdict) => match plan.or(changes) {
            None => {
                if verdict.stall.is_none()
                    && let Some(message) = not_settling
                {
                    verdict.stall = Some(Stall {
                        reason: CHANGE_NOT_SETTLING.to_owned(),
                        message,
                    });
                }
                Outcome::Verdict(verdict)
            }
            Some(Failure { class: None, .. }) => return Settled::Retry,
            Some(Failure {
                class: Some(class),
                text,
                guest,
            }) => {
                failed = true;
                if guest {
                    blamed = true;
                    guest_error = Some(GuestErrorClass::Contract);
                }
                Outcome::Error { class, text }
            }
        },
    };
    let outcome = match (outcome, withdrawing) {
        (Outcome::Error { class, text }, Some(verdict)) => Outcome::Withdrew {
            class,
            text,
            verdict,
        },
        (outcome, _) => outcome,
    };
    let output = engine::decide(Input {
        spec: parent.spec,
        generation: parent.generation,
        paused: parent.paused,
        previous: parent.previous,
        now: parent.now,
        outcome,
        reported: parent.reported,
    });
    let output = match plan_facts {
        Some(facts) => engine::with_plan(
            parent.previous,
            parent.generation,
            parent.now,
            output,
            facts,
        ),
        // A pass that failed before its plan keeps what the status said of it.
        None if failed => engine::plans::keeping_plan(parent.previous, output),
        None => engine::plans::without_plan(parent.previous, output),
    };
    let after = output
        .requeue_after_seconds
        .map(|s| Duration::from_secs(u64::from(s)))
        .into_iter()
        .chain(host_requeue)
        .min();
    let done = if failed {
        Done::Failed {
            retry_before: asked_after,
        }
    } else if output.stalled {
        Done::Stalled {
            recheck_after: after,
        }
    } else {
        Done::Converged {
            requeue_after: after,
        }
    };
    Settled::Decided {
        output,
        done,
        blamed,
        guest_error,
    }
}

/// The status and Events of a pass that failed with `class` before any
/// guest verdict (a parent the host cannot read, a status write refused).
pub fn failed(parent: &Parent<'_>, class: ErrorClass, text: &str) -> Output {
    engine::decide(Input {
        spec: parent.spec,
        generation: parent.generation,
        paused: parent.paused,
        previous: parent.previous,
        now: parent.now,
        outcome: Outcome::Error {
            class,
            text: text.to_owned(),
        },
        reported: parent.reported,
    })
}

#[cfg(test)]
mod tests {
    use reconciler_conventions::engine::plans::{AWAITING_APPROVAL, CURRENT_PLAN_REF, DRIFTED};
    use reconciler_conventions::verdict::{ConditionStatus, Decision};

    use super::*;
    use crate::runtime::GuestErrorClass;

    fn spec() -> KindSpec {
        KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["WorkloadReady".into()],
            ..KindSpec::default()
        }
    }

    fn ready_verdict(requeue: Option<u32>) -> Verdict {
        Verdict {
            aspects: vec![Decision {
                type_: "WorkloadReady".into(),
                status: ConditionStatus::True,
                reason: "AsExpected".into(),
                message: String::new(),
            }],
            requeue_after_seconds: requeue,
            ..Verdict::default()
        }
    }

    fn happened(outcome: Result<Verdict, GuestError>) -> Happened<'static> {
        Happened {
            outcome,
            failed_read: None,
            withdrew: false,
            plan: None,
            changes: None,
            plan_facts: None,
            host_requeue: Vec::new(),
            not_settling: None,
        }
    }

    fn settled(previous: &Status, happened: Happened<'_>) -> Settled {
        let spec = spec();
        let reported = Reported::default();
        let parent = Parent {
            spec: &spec,
            generation: 2,
            paused: false,
            previous,
            now: "2026-12-03T10:00:00Z".parse().unwrap(),
            reported: &reported,
        };
        settle(&parent, happened)
    }

    fn decided(settled: Settled) -> (Output, Done, bool, Option<GuestErrorClass>) {
        match settled {
            Settled::Decided {
                output,
                done,
                blamed,
                guest_error,
            } => (output, done, blamed, guest_error),
            Settled::Retry => panic!("expected a decision, got a retry"),
        }
    }

    fn ready(output: &Output) -> (ConditionStatus, String) {
        let c = output.status.condition("Ready").expect("a Ready condition");
        (c.status, c.message.clone())
    }

    fn reasons(output: &Output) -> Vec<&str> {
        output.events.iter().map(|e| e.reason.as_str()).collect()
    }

    #[test]
    fn a_verdict_with_nothing_failed_converges_at_the_earliest_requeue_asked() {
        let mut h = happened(Ok(ready_verdict(Some(60))));
        h.host_requeue = vec![Duration::from_secs(5), Duration::from_secs(30)];
        let (output, done, blamed, guest_error) = decided(settled(&Status::default(), h));
        assert_eq!(ready(&output).0, ConditionStatus::True);
        assert!(output.changed, "a first status is written");
        assert_eq!(
            done,
            Done::Converged {
                requeue_after: Some(Duration::from_secs(5))
            }
        );
        assert!(!blamed && guest_error.is_none());
    }

    #[test]
    fn a_failed_read_fails_the_pass_whatever_the_verdict_and_retries_before_its_expiry() {
        let read = SourceError::PastCache {
            object: "Secret ns/creds".into(),
            why: "timed out".into(),
        };
        let mut h = happened(Ok(ready_verdict(Some(30))));
        h.failed_read = Some(&read);
        let (output, done, blamed, _) = decided(settled(&Status::default(), h));
        let (status, message) = ready(&output);
        assert_eq!(status, ConditionStatus::False);
        assert!(message.contains("Secret ns/creds"), "{message}");
        assert_eq!(
            reasons(&output),
            [ErrorClass::ReconciliationFailed.as_str()]
        );
        assert_eq!(
            done,
            Done::Failed {
                retry_before: Some(Duration::from_secs(30))
            }
        );
        assert!(!blamed, "a failed read is not the guest's fault");
    }

    #[test]
    fn an_object_the_host_cannot_decode_is_reported_as_such() {
        let read = SourceError::Undecodable {
            object: "ConfigMap ns/deep".into(),
            why: "nested deeper than 100 levels at .data".into(),
        };
        let mut h = happened(Ok(ready_verdict(None)));
        h.failed_read = Some(&read);
        let (output, ..) = decided(settled(&Status::default(), h));
        assert_eq!(reasons(&output), [ErrorClass::ObjectUndecodable.as_str()]);
    }

    #[test]
    fn a_conflict_on_the_plan_or_a_change_is_retried_and_reports_nothing() {
        let conflict = Failure {
            class: None,
            text: "plan p changed meanwhile".into(),
            guest: false,
        };
        let mut h = happened(Ok(ready_verdict(None)));
        h.plan = Some(conflict.clone());
        assert!(matches!(settled(&Status::default(), h), Settled::Retry));
        let mut h = happened(Ok(ready_verdict(None)));
        h.changes = Some(conflict);
        assert!(matches!(settled(&Status::default(), h), Settled::Retry));
    }

    #[test]
    fn a_plan_failure_outranks_a_change_failure() {
        let mut h = happened(Ok(ready_verdict(None)));
        h.plan = Some(Failure {
            class: Some(ErrorClass::ReconciliationFailed),
            text: "the plan was refused".into(),
            guest: false,
        });
        h.changes = Some(Failure {
            class: None,
            text: "a conflict".into(),
            guest: false,
        });
        let (output, done, ..) = decided(settled(&Status::default(), h));
        assert!(ready(&output).1.contains("the plan was refused"));
        assert_eq!(done, Done::Failed { retry_before: None });
    }

    #[test]
    fn a_change_the_contract_refuses_is_the_guests_fault() {
        let mut h = happened(Ok(ready_verdict(None)));
        h.changes = Some(Failure {
            class: Some(ErrorClass::ReconciliationFailed),
            text: "guest widget: it asked for a Secret outside its namespace".into(),
            guest: true,
        });
        let (output, done, blamed, guest_error) = decided(settled(&Status::default(), h));
        assert_eq!(ready(&output).0, ConditionStatus::False);
        assert_eq!(done, Done::Failed { retry_before: None });
        assert!(blamed);
        assert_eq!(guest_error, Some(GuestErrorClass::Contract));
    }

    #[test]
    fn a_guest_that_fails_is_blamed_and_its_class_counted() {
        let error = GuestError::new("widget", GuestErrorClass::Trap, "unreachable");
        let (output, done, blamed, guest_error) =
            decided(settled(&Status::default(), happened(Err(error))));
        assert_eq!(reasons(&output), [ErrorClass::GuestFailed.as_str()]);
        assert_eq!(done, Done::Failed { retry_before: None });
        assert!(blamed);
        assert_eq!(guest_error, Some(GuestErrorClass::Trap));
    }

    #[test]
    fn withdrawals_made_keep_the_verdicts_aspects_when_the_rest_fails() {
        let mut h = happened(Ok(ready_verdict(None)));
        h.withdrew = true;
        h.changes = Some(Failure {
            class: Some(ErrorClass::ReconciliationFailed),
            text: "deleting RoleBinding ns/x: forbidden".into(),
            guest: false,
        });
        let (output, ..) = decided(settled(&Status::default(), h));
        assert_eq!(ready(&output).0, ConditionStatus::False);
        let aspect = output
            .status
            .condition("WorkloadReady")
            .expect("the verdict's aspect");
        assert_eq!(aspect.status, ConditionStatus::True);
    }

    #[test]
    fn held_changes_say_so_and_a_failure_before_the_plan_keeps_what_the_status_said_of_it() {
        let facts = PlanFacts {
            plan: Some("widget-x2b4c".into()),
            pending: Some(
                "1 apply planned in ReconcilePlan widget-x2b4c, awaiting approval".into(),
            ),
            ..PlanFacts::default()
        };
        let mut h = happened(Ok(ready_verdict(None)));
        h.plan_facts = Some(&facts);
        let (held, done, ..) = decided(settled(&Status::default(), h));
        let ready_held = held.status.condition("Ready").expect("Ready");
        assert_eq!(
            (ready_held.status, ready_held.reason.as_str()),
            (ConditionStatus::False, AWAITING_APPROVAL)
        );
        assert!(held.status.condition(DRIFTED).is_some());
        assert!(held.status.fields.contains_key(CURRENT_PLAN_REF));
        assert!(matches!(done, Done::Converged { .. }), "{done:?}");

        // The next pass fails before its plan: Drifted and the plan's ref stay.
        let read = SourceError::PastCache {
            object: "Secret ns/creds".into(),
            why: "timed out".into(),
        };
        let mut h = happened(Ok(ready_verdict(None)));
        h.failed_read = Some(&read);
        let (kept, ..) = decided(settled(&held.status, h));
        assert!(kept.status.condition(DRIFTED).is_some());
        assert!(kept.status.fields.contains_key(CURRENT_PLAN_REF));

        // A pass that makes its changes directly drops them.
        let (direct, ..) = decided(settled(&held.status, happened(Ok(ready_verdict(None)))));
        assert!(direct.status.condition(DRIFTED).is_none());
        assert!(!direct.status.fields.contains_key(CURRENT_PLAN_REF));
    }
}
