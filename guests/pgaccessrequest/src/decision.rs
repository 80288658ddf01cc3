//! Where a request stands: the approver's decision and revocation as recorded in its status, the clock against `spec.expiresAt`, and four eyes, to one phase; a terminal phase once written stays.

use reconciler_guest_sdk::Timestamp;
use serde_json::Value;

use crate::spec::{AccessSpec, SubjectKind};
use crate::time::{reached, rfc3339};

/// `status.phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Approved,
    Denied,
    Expired,
    Revoked,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Approved => "Approved",
            Phase::Denied => "Denied",
            Phase::Expired => "Expired",
            Phase::Revoked => "Revoked",
        }
    }

    fn parse(s: &str) -> Option<Phase> {
        [
            Phase::Pending,
            Phase::Approved,
            Phase::Denied,
            Phase::Expired,
            Phase::Revoked,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }

    /// Nothing is ever bound again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Denied | Phase::Expired | Phase::Revoked)
    }
}

/// Who wrote a decision or revocation, as the admission policy stamped it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub username: String,
    pub groups: Vec<String>,
}

impl Identity {
    fn read(v: &Value) -> Identity {
        Identity {
            username: v["username"].as_str().unwrap_or_default().to_owned(),
            groups: v["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        }
    }

    /// `alice`, or `someone` when the record names nobody.
    pub fn name(&self) -> &str {
        if self.username.is_empty() {
            "someone"
        } else {
            &self.username
        }
    }
}

/// Why the request is where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// No decision recorded (or one that is not a decision: the note says
    /// why).
    Undecided(Option<String>),
    Approved(Identity),
    Denied(Identity),
    /// `spec.expiresAt` passed; `at_creation` when it was not after the
    /// request's creation.
    Expired {
        at_creation: bool,
    },
    Revoked(Identity),
    /// The recorded approver is the subject (or one of the subject's
    /// Group): the operator revokes.
    SelfApproved(Identity),
}

/// The phase and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    pub phase: Phase,
    pub why: Why,
}

/// Where the request stands at `now`. A decision is `status.decision`
/// (`outcome` Approved or Denied, `decidedBy`), a revocation
/// `status.revocation` (`revokedBy`); both written by approvers, once.
/// In order: a denial; a revocation; an approval recorded by the subject
/// itself (revoked, four eyes); `spec.expiresAt` reached (or unreadable:
/// fail closed); an approval; else pending. A terminal phase the status
/// already says is kept: a later revocation does not turn an expired
/// request into a revoked one.
pub fn standing(
    parent: &Value,
    spec: &AccessSpec,
    created: Option<&Timestamp>,
    now: &Timestamp,
) -> Standing {
    let status = &parent["status"];
    let decision = &status["decision"];
    let decided_by = Identity::read(&decision["decidedBy"]);
    let revocation = &status["revocation"];
    let computed = match decision["outcome"].as_str() {
        _ if decision.is_null() => None,
        Some("Denied") => Some(Standing {
            phase: Phase::Denied,
            why: Why::Denied(decided_by.clone()),
        }),
        Some("Approved") if decided_by.username.is_empty() => None,
        Some("Approved") => Some(Standing {
            phase: Phase::Approved,
            why: Why::Approved(decided_by.clone()),
        }),
        _ => None,
    };
    let revoked = (!revocation.is_null()).then(|| Standing {
        phase: Phase::Revoked,
        why: Why::Revoked(Identity::read(&revocation["revokedBy"])),
    });
    let expired = expiry(spec, created, now);
    let undecided = Standing {
        phase: Phase::Pending,
        why: Why::Undecided(not_a_decision(decision, &decided_by)),
    };
    let now_standing = match (computed, revoked, expired) {
        (
            Some(
                denied @ Standing {
                    phase: Phase::Denied,
                    ..
                },
            ),
            _,
            _,
        ) => denied,
        (_, Some(revoked), _) => revoked,
        (
            Some(Standing {
                why: Why::Approved(by),
                ..
            }),
            None,
            _,
        ) if is_subject(&by, spec) => Standing {
            phase: Phase::Revoked,
            why: Why::SelfApproved(by),
        },
        (_, None, Some(expired)) => expired,
        (Some(approved), None, None) => approved,
        (None, None, None) => undecided,
    };
    let written = status["phase"].as_str().and_then(Phase::parse);
    match written {
        Some(p) if p.is_terminal() && p != now_standing.phase => kept(p, parent, spec, created),
        _ => now_standing,
    }
}

/// The expiry, if reached at `now` (or at creation).
fn expiry(spec: &AccessSpec, created: Option<&Timestamp>, now: &Timestamp) -> Option<Standing> {
    let Some(at) = &spec.expires_at else {
        return Some(Standing {
            phase: Phase::Expired,
            why: Why::Expired { at_creation: true },
        });
    };
    let at_creation = created.is_some_and(|c| reached(c, at));
    (at_creation || reached(now, at)).then_some(Standing {
        phase: Phase::Expired,
        why: Why::Expired { at_creation },
    })
}

/// A terminal phase the status says, with the reason the inputs give it.
fn kept(phase: Phase, parent: &Value, spec: &AccessSpec, created: Option<&Timestamp>) -> Standing {
    let status = &parent["status"];
    let why = match phase {
        Phase::Denied => Why::Denied(Identity::read(&status["decision"]["decidedBy"])),
        Phase::Revoked if status["revocation"].is_null() => {
            Why::SelfApproved(Identity::read(&status["decision"]["decidedBy"]))
        }
        Phase::Revoked => Why::Revoked(Identity::read(&status["revocation"]["revokedBy"])),
        _ => Why::Expired {
            at_creation: match (&spec.expires_at, created) {
                (Some(at), Some(c)) => reached(c, at),
                (None, _) => true,
                (Some(_), None) => false,
            },
        },
    };
    Standing { phase, why }
}

/// Why a recorded `status.decision` is not one.
fn not_a_decision(decision: &Value, by: &Identity) -> Option<String> {
    if decision.is_null() {
        return None;
    }
    match decision["outcome"].as_str() {
        Some("Approved") if by.username.is_empty() => {
            Some("status.decision approves without decidedBy.username: not an approval".to_owned())
        }
        Some("Approved" | "Denied") => None,
        other => Some(format!(
            "status.decision.outcome {} is neither Approved nor Denied: not a decision",
            other.map_or_else(|| "(missing)".to_owned(), |o| format!("{o:?}"))
        )),
    }
}

/// The identity is the request's subject: the same user, the
/// ServiceAccount's user, or a member of the subject Group.
pub fn is_subject(by: &Identity, spec: &AccessSpec) -> bool {
    let subject = &spec.subject;
    match &subject.kind {
        SubjectKind::User => by.username == subject.name,
        SubjectKind::ServiceAccount => {
            by.username
                == format!(
                    "system:serviceaccount:{}:{}",
                    subject.namespace, subject.name
                )
        }
        SubjectKind::Group => by.groups.contains(&subject.name),
        SubjectKind::Unknown(_) => false,
    }
}

/// `2026-11-29T12:00:00Z` for the message, or the text as written.
pub fn expiry_text(spec: &AccessSpec) -> String {
    spec.expires_at
        .as_ref()
        .map_or_else(|| spec.expires_at_text.clone(), rfc3339)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;
    use serde_json::json;

    const NOW: i64 = 1_795_953_600;

    fn at(seconds: i64) -> Timestamp {
        Timestamp { seconds, nanos: 0 }
    }

    fn request(status: Value) -> Value {
        json!({
            "spec": {
                "cluster": {"name": "orders"}, "clusterRole": "pg-reader",
                "subject": {"kind": "User", "name": "dave"},
                "expiresAt": "2026-11-29T13:00:00Z",
            },
            "status": status,
        })
    }

    fn phase_of(status: Value, now: i64) -> Standing {
        let parent = request(status);
        let spec = parse(&parent, "team-a");
        standing(&parent, &spec, Some(&at(NOW - 60)), &at(now))
    }

    fn by(user: &str) -> Value {
        json!({"username": user, "groups": ["system:authenticated"]})
    }

    #[test]
    fn pending_approved_denied_revoked_expired() {
        assert_eq!(phase_of(json!({}), NOW).phase, Phase::Pending);
        let approved = json!({"decision": {"outcome": "Approved", "decidedBy": by("carol")}});
        assert_eq!(phase_of(approved.clone(), NOW).phase, Phase::Approved);
        assert_eq!(phase_of(approved, NOW + 3_600).phase, Phase::Expired);
        let denied = json!({"decision": {"outcome": "Denied", "decidedBy": by("carol")}});
        assert_eq!(phase_of(denied, NOW + 3_600).phase, Phase::Denied);
        let revoked = json!({
            "decision": {"outcome": "Approved", "decidedBy": by("carol")},
            "revocation": {"revokedBy": by("erin")},
        });
        assert_eq!(
            phase_of(revoked, NOW).why,
            Why::Revoked(Identity {
                username: "erin".into(),
                groups: vec!["system:authenticated".into()]
            })
        );
    }

    #[test]
    fn an_approval_by_the_subject_or_its_group_is_revoked() {
        let self_approved = json!({"decision": {"outcome": "Approved", "decidedBy": by("dave")}});
        let s = phase_of(self_approved, NOW);
        assert_eq!(s.phase, Phase::Revoked);
        assert!(matches!(s.why, Why::SelfApproved(_)));
        let mut spec = parse(&request(json!({})), "team-a");
        spec.subject.kind = SubjectKind::Group;
        spec.subject.name = "dbas".into();
        let member = Identity {
            username: "carol".into(),
            groups: vec!["dbas".into()],
        };
        assert!(is_subject(&member, &spec));
        spec.subject.kind = SubjectKind::ServiceAccount;
        spec.subject.namespace = "team-a".into();
        spec.subject.name = "ci".into();
        let sa = Identity {
            username: "system:serviceaccount:team-a:ci".into(),
            groups: vec![],
        };
        assert!(is_subject(&sa, &spec));
        assert!(!is_subject(&member, &spec));
    }

    #[test]
    fn what_is_not_a_decision_leaves_the_request_pending() {
        for (decision, note) in [
            (json!({"outcome": "Approved"}), "without decidedBy.username"),
            (
                json!({"outcome": "Maybe", "decidedBy": by("carol")}),
                "\"Maybe\"",
            ),
        ] {
            let s = phase_of(json!({ "decision": decision }), NOW);
            assert_eq!(s.phase, Phase::Pending);
            assert!(
                matches!(&s.why, Why::Undecided(Some(n)) if n.contains(note)),
                "{s:?}"
            );
        }
    }

    #[test]
    fn an_expiry_at_creation_or_unreadable_expires_at_once() {
        let parent = request(json!({}));
        let spec = parse(&parent, "team-a");
        let s = standing(&parent, &spec, Some(&at(NOW + 7_200)), &at(NOW + 7_200));
        assert_eq!(s.why, Why::Expired { at_creation: true });
        let mut unreadable = parent.clone();
        unreadable["spec"]["expiresAt"] = json!("soon");
        let spec = parse(&unreadable, "team-a");
        assert_eq!(
            standing(&unreadable, &spec, None, &at(NOW)).phase,
            Phase::Expired
        );
    }

    #[test]
    fn a_terminal_phase_written_is_kept() {
        let revoked_after_expiry = json!({
            "phase": "Expired",
            "decision": {"outcome": "Approved", "decidedBy": by("carol")},
            "revocation": {"revokedBy": by("erin")},
        });
        assert_eq!(
            phase_of(revoked_after_expiry, NOW + 3_600).why,
            Why::Expired { at_creation: false }
        );
        let forged_back = json!({"phase": "Approved"});
        assert_eq!(phase_of(forged_back, NOW + 3_600).phase, Phase::Expired);
    }
}
