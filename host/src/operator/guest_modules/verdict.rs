//! What the serving replica knows of a GuestModule, as a verdict of its
//! kind: each check the module went through an aspect, in the order it
//! goes through them; pure, the engine derives the status from it.

use reconciler_conventions::engine::{AS_EXPECTED, INITIALIZING};
use reconciler_conventions::verdict::{ConditionStatus, Decision, Stall, Verdict};
use serde_json::json;

use super::kind::*;
use super::stage::{Staged, Unstaged};
use crate::operator::hot_swap::gate::Check;
use crate::operator::hot_swap::offers::Offered;
use crate::pass::review::Review;

/// A registry that could not be read is tried again this often.
pub(crate) const PULL_RETRY_SECONDS: u32 = 30;

/// The module its kind serves on this replica, against the staged one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Served {
    /// The staged module serves the kind.
    This,
    /// Another module does.
    Other,
}

/// What the serving replica knows of one GuestModule.
pub(crate) struct Known<'a> {
    pub kind: &'a str,
    pub staged: &'a Result<Staged, Unstaged>,
    /// What became of the offer to the reloader; `None`: not offered yet.
    pub offered: Option<&'a Offered>,
    /// The promotion in force (the floor of its kind, if it raised it).
    pub promotion: InForce,
    /// The reviewer's decision the object records, if any (under manual
    /// promotion; one on another digest is superseded).
    pub approval: Option<&'a ModuleApproval>,
    /// The review of its shadow run, if it was shadowed.
    pub review: Option<&'a Review>,
    pub served: Served,
}

/// The verdict: every aspect up to the first that is not True.
pub(crate) fn verdict(known: &Known<'_>) -> Verdict {
    let mut v = Verdict::default();
    let staged = match known.staged {
        Ok(staged) => staged,
        Err(unstaged) => return not_staged(v, unstaged),
    };
    pulled_and_verified(&mut v, known, staged);
    let Some(offered) = known.offered else {
        v.aspects.push(Decision {
            type_: COMPATIBLE.into(),
            status: ConditionStatus::Unknown,
            reason: INITIALIZING.into(),
            message: "Not offered to the hot-swap gate yet".into(),
        });
        return v;
    };
    match offered {
        Offered::Pending(r) => {
            v.aspects.push(bad(COMPATIBLE, AWAITING_API, &r.detail));
            return v;
        }
        Offered::Refused(r) if r.check != Check::Shadow => {
            let m = format!("The gate's {} check refuses it: {}", r.check, r.detail);
            v.aspects.push(bad(COMPATIBLE, INCOMPATIBLE, &m));
            return stalled(v, INCOMPATIBLE, &m);
        }
        Offered::Refused(_) | Offered::Serving | Offered::Checked => {
            v.aspects.push(good(
                COMPATIBLE,
                "Passed the hot-swap gate: the contract, the kind, its frozen reasons and aspects, the fixtures it ships",
            ));
        }
    }
    if let Offered::Refused(r) = offered {
        let m = format!("Held, the serving module stays: {}", r.detail);
        v.aspects.push(bad(SHADOWED, REGRESSION, &m));
        return stalled(v, REGRESSION, &m);
    }
    // Shadowed True says a shadow ran only when one did: its review.
    let said = in_force(known);
    v.aspects.push(shadowed(known, &said));
    if *offered == Offered::Checked {
        return awaiting_decision(v, known, staged, &said);
    }
    serving(v, known, staged)
}

/// The verdict on a module not staged: Pulled False (retried, or stalled
/// on what is not a module), or Verified False on a refused signature.
fn not_staged(mut v: Verdict, unstaged: &Unstaged) -> Verdict {
    match unstaged {
        Unstaged::Unreachable(m) => {
            v.aspects.push(bad(PULLED, PULL_FAILED, m));
            v.requeue_after_seconds = Some(PULL_RETRY_SECONDS);
            v
        }
        Unstaged::NotAModule(m) => {
            v.aspects.push(bad(PULLED, NOT_A_MODULE, m));
            stalled(v, NOT_A_MODULE, m)
        }
        Unstaged::Refused(m) => {
            v.aspects.push(good(
                PULLED,
                "Read the module's source (its manifest, or its ConfigMap)",
            ));
            v.aspects.push(bad(VERIFIED, SIGNATURE_REFUSED, m));
            stalled(v, SIGNATURE_REFUSED, m)
        }
    }
}

/// The status fields of a staged module, and its Pulled and Verified
/// aspects (both True).
fn pulled_and_verified(v: &mut Verdict, known: &Known<'_>, staged: &Staged) {
    v.status_fields
        .insert("digest".into(), json!(staged.digest));
    v.status_fields
        .insert("pinned".into(), json!(staged.pinned));
    v.status_fields.insert(
        "promotion".into(),
        json!(known.promotion.promotion.as_str()),
    );
    if let Some(review) = known.review {
        v.status_fields.insert(SHADOW.into(), json!(review));
    }
    v.aspects
        .push(good(PULLED, &format!("Pulled {}", staged.pinned)));
    let verified = if staged.signers.is_empty() {
        format!(
            "The verification policy serves kind {} unsigned",
            known.kind
        )
    } else {
        format!(
            "Signed by {}, as the verification policy asks for kind {}",
            staged.signers.join(", "),
            known.kind
        )
    };
    v.aspects.push(good(VERIFIED, &verified));
}

/// The Shadowed aspect of a module past the gate (`said`: the promotion
/// in force as messages say it): True, skipped or with its review.
fn shadowed(known: &Known<'_>, said: &str) -> Decision {
    match (known.promotion.promotion, known.review) {
        (PromotionName::Direct, _) => {
            skipped(&format!("Not shadowed: {said} swaps it in on probation"))
        }
        (_, None) => skipped(&format!(
            "Not shadowed ({said}): no module served kind {} to compare it with",
            known.kind
        )),
        (_, Some(review)) => good(
            SHADOWED,
            &format!(
                "Shadowed on {} live parent(s) beside the module serving ({said}): no parent turns from Ready True to False, no new guest error",
                review.parents
            ),
        ),
    }
}

/// The verdict on a checked module: Serving False, stalled on a denial of
/// its digest, else awaiting a reviewer's decision.
fn awaiting_decision(mut v: Verdict, known: &Known<'_>, staged: &Staged, said: &str) -> Verdict {
    let decision = known.approval.filter(|a| a.digest == staged.digest);
    match decision {
        Some(a) if a.decision == super::kind::ModuleDecision::Denied => {
            let m = format!(
                "{} denied promoting {}; the serving module stays",
                a.decided_by.username, staged.digest
            );
            v.aspects.push(bad(SERVING, PROMOTION_DENIED, &m));
            stalled(v, PROMOTION_DENIED, &m)
        }
        _ => {
            v.aspects.push(bad(
                SERVING,
                AWAITING_APPROVAL,
                &format!(
                    "{}: awaiting a reviewer's decision on {} in status.approval",
                    capitalized(said),
                    staged.digest
                ),
            ));
            v
        }
    }
}

/// The Serving aspect of a module swapped in: True while it serves, else
/// False and stalled, its probation failed and rolled back.
fn serving(mut v: Verdict, known: &Known<'_>, staged: &Staged) -> Verdict {
    match known.served {
        Served::This => v.aspects.push(good(
            SERVING,
            &format!("Serving kind {} from {}", known.kind, staged.pinned),
        )),
        Served::Other => {
            let m = format!(
                "It served kind {}, failed its probation and the module before it serves again",
                known.kind
            );
            v.aspects.push(bad(SERVING, PROBATION_FAILED, &m));
            v.advisory.push(Decision {
                type_: ROLLED_BACK.into(),
                status: ConditionStatus::True,
                reason: PROBATION_FAILED.into(),
                message: m.clone(),
            });
            return stalled(v, PROBATION_FAILED, &m);
        }
    }
    v
}

/// The promotion in force as messages say it, naming the floor that
/// raised it: `promotion manual, the floor of kind X (direct asked)`.
fn in_force(known: &Known<'_>) -> String {
    let promotion = known.promotion.promotion.as_str();
    match known.promotion.raised_from {
        Some(asked) => format!(
            "promotion {promotion}, the floor of kind {} ({} asked)",
            known.kind,
            asked.as_str()
        ),
        None => format!("promotion {promotion}"),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Shadowed True, saying that no shadow ran.
fn skipped(message: &str) -> Decision {
    Decision {
        type_: SHADOWED.into(),
        status: ConditionStatus::True,
        reason: SHADOW_SKIPPED.into(),
        message: message.into(),
    }
}

fn good(type_: &str, message: &str) -> Decision {
    Decision {
        type_: type_.into(),
        status: ConditionStatus::True,
        reason: AS_EXPECTED.into(),
        message: message.into(),
    }
}

fn bad(type_: &str, reason: &str, message: &str) -> Decision {
    Decision {
        type_: type_.into(),
        status: ConditionStatus::False,
        reason: reason.into(),
        message: message.into(),
    }
}

fn stalled(mut v: Verdict, reason: &str, message: &str) -> Verdict {
    v.stall = Some(Stall {
        reason: reason.into(),
        message: message.into(),
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::hot_swap::guests_dir::GuestFile;

    fn staged(digest: &str) -> Result<Staged, Unstaged> {
        Ok(Staged {
            pinned: format!("registry.test/hostile@{digest}"),
            digest: digest.into(),
            signers: vec!["release".into()],
            file: GuestFile {
                file: "hostile.wasm".into(),
                stem: "hostile".into(),
                bytes: Vec::new(),
                digest: String::new(),
                fixtures: Vec::new(),
            },
        })
    }

    fn approval(digest: &str, decision: super::super::kind::ModuleDecision) -> ModuleApproval {
        ModuleApproval {
            digest: digest.into(),
            decision,
            decided_by: DecidedBy {
                username: "reviewer".into(),
            },
        }
    }

    /// The verdict on a checked candidate (digest `sha256:b`) under
    /// manual promotion, the decision `approval` recorded.
    fn checked(approval: Option<&ModuleApproval>) -> Verdict {
        verdict(&Known {
            kind: "Hostile",
            staged: &staged("sha256:b"),
            offered: Some(&Offered::Checked),
            promotion: InForce {
                promotion: PromotionName::Manual,
                raised_from: None,
            },
            approval,
            review: None,
            served: Served::Other,
        })
    }

    /// The last aspect (the first that is not True, or Serving) as
    /// (type, status, reason), and the stall's reason.
    fn outcome(
        approval: Option<&ModuleApproval>,
    ) -> ((String, ConditionStatus, String), Option<String>) {
        let v = checked(approval);
        let last = v.aspects.last().unwrap();
        (
            (last.type_.clone(), last.status, last.reason.clone()),
            v.stall.map(|s| s.reason),
        )
    }

    /// Under manual promotion a checked candidate waits (Serving False
    /// AwaitingApproval, not stalled: a gate holds it) until a decision on
    /// its own digest; one on another digest is superseded.
    #[test]
    fn a_checked_candidate_awaits_a_decision_on_its_own_digest() {
        use super::super::kind::ModuleDecision::*;
        let waiting = (
            (
                SERVING.to_owned(),
                ConditionStatus::False,
                AWAITING_APPROVAL.to_owned(),
            ),
            None,
        );
        assert_eq!(outcome(None), waiting);
        assert_eq!(outcome(Some(&approval("sha256:a", Denied))), waiting);
        assert_eq!(outcome(Some(&approval("sha256:a", Approved))), waiting);
        // Approved, it is offered again to be swapped in: until the
        // reloader answers it still waits.
        assert_eq!(outcome(Some(&approval("sha256:b", Approved))), waiting);
    }

    /// A denial of its digest: Serving False PromotionDenied, Stalled (a
    /// person's decision, not retried), naming who denied it.
    #[test]
    fn a_denied_candidate_is_stalled_naming_the_reviewer() {
        let denied = approval("sha256:b", super::super::kind::ModuleDecision::Denied);
        assert_eq!(
            outcome(Some(&denied)),
            (
                (
                    SERVING.to_owned(),
                    ConditionStatus::False,
                    PROMOTION_DENIED.to_owned()
                ),
                Some(PROMOTION_DENIED.to_owned()),
            )
        );
        let stall = checked(Some(&denied)).stall.unwrap();
        assert!(stall.message.starts_with("reviewer denied"), "{stall:?}");
    }

    fn aspect(v: &Verdict, type_: &str) -> (ConditionStatus, String, String) {
        let d = v.aspects.iter().find(|d| d.type_ == type_).unwrap();
        (d.status, d.reason.clone(), d.message.clone())
    }

    /// Direct promotion runs no shadow: Shadowed True says so
    /// (ShadowSkipped), never AsExpected, and the module serves.
    #[test]
    fn a_module_not_shadowed_is_never_said_shadowed() {
        let direct = verdict(&Known {
            kind: "Hostile",
            staged: &staged("sha256:b"),
            offered: Some(&Offered::Serving),
            promotion: InForce {
                promotion: PromotionName::Direct,
                raised_from: None,
            },
            approval: None,
            review: None,
            served: Served::This,
        });
        let (status, reason, message) = aspect(&direct, SHADOWED);
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::True, SHADOW_SKIPPED)
        );
        assert!(message.contains("promotion direct"), "{message}");
        assert_eq!(aspect(&direct, SERVING).0, ConditionStatus::True);
        assert_eq!(direct.status_fields["promotion"], "direct");
    }

    /// A spec asking less than its kind's floor is served as the floor, and
    /// the status says so: status.promotion, and the messages naming the
    /// floor and what was asked.
    #[test]
    fn a_promotion_raised_to_the_floor_is_said() {
        let review = Review::new(
            "Hostile",
            crate::pass::review::ReviewedModule {
                guest: "hostile".into(),
                digest: "sha256:a".into(),
            },
            crate::pass::review::ReviewedModule {
                guest: "hostile".into(),
                digest: "sha256:b".into(),
            },
            Vec::new(),
        );
        let raised = verdict(&Known {
            kind: "Hostile",
            staged: &staged("sha256:b"),
            offered: Some(&Offered::Checked),
            promotion: InForce {
                promotion: PromotionName::Manual,
                raised_from: Some(PromotionName::Direct),
            },
            approval: None,
            review: Some(&review),
            served: Served::Other,
        });
        assert_eq!(raised.status_fields["promotion"], "manual");
        let (status, reason, message) = aspect(&raised, SHADOWED);
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::True, AS_EXPECTED)
        );
        assert!(
            message.contains("Shadowed on 0 live parent(s)"),
            "{message}"
        );
        let (status, reason, message) = aspect(&raised, SERVING);
        assert_eq!(
            (status, reason.as_str()),
            (ConditionStatus::False, AWAITING_APPROVAL)
        );
        assert!(
            message.starts_with(
                "Promotion manual, the floor of kind Hostile (direct asked): awaiting a reviewer's decision on sha256:b"
            ),
            "{message}"
        );
    }
}
