//! What differs between two passes of one parent, the serving module's and
//! the candidate's, each the operator's pass made as a dry run: per
//! condition type its status and reason, the guest's error, and the
//! changes each asks for; and where the serving module's pass does not
//! reproduce the live status, which conditions it misses. Pure: both
//! passes come in settled.

use std::collections::{BTreeMap, BTreeSet};

use reconciler_conventions::status::Status;
use serde::Serialize;
use serde_json::{Value, json};

use crate::contract::model::Change;
use crate::runtime::Evaluated;

/// A module's pass, as the comparison reads it.
pub struct Side<'a> {
    /// The status the pass would write.
    pub status: &'a Status,
    /// The guest's error, if it failed.
    pub error: Option<String>,
    /// The changes it asks for (none when it failed).
    pub changes: &'a [Change],
}

impl<'a> Side<'a> {
    /// The side of a pass whose guest's last evaluation was `evaluated`
    /// and that would write `status`.
    pub fn of(evaluated: &'a Evaluated, status: &'a Status) -> Self {
        Side {
            status,
            error: evaluated.outcome.as_ref().err().map(ToString::to_string),
            changes: &evaluated.changes,
        }
    }
}

/// What differs between `serving`'s pass of a parent and `candidate`'s,
/// and between either and its `live` status (the part the host owns, where
/// a pass settled on it for the parent as it is).
pub fn passes(live: Option<&Status>, serving: &Side<'_>, candidate: &Side<'_>) -> Difference {
    let mut out = compare(serving, candidate);
    if let Some(live) = live {
        // Live Ready True turned False is a regression whatever the
        // serving module's pass says.
        out.ready_turns_false |=
            ready_is(&conditions(live), "True") && ready_is(&conditions(candidate.status), "False");
        out.not_reproduced = unreproduced(live, serving.status);
    }
    out
}

/// The conditions whose status or reason `pass` does not reproduce of
/// `live` (of any type either has).
pub fn unreproduced(live: &Status, pass: &Status) -> Vec<Unreproduced> {
    differing(&conditions(live), &conditions(pass))
        .into_iter()
        .map(|(type_, live, pass)| Unreproduced {
            type_,
            live,
            serving: pass,
        })
        .collect()
}

/// A condition of the live status the serving module's pass does not
/// reproduce.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unreproduced {
    #[serde(rename = "type")]
    pub type_: String,
    /// `<status> (<reason>)` as the parent's status says, or `absent`.
    pub live: String,
    /// As the (serving module's) pass would write it.
    pub serving: String,
}

/// A condition whose status or reason differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConditionDiff {
    #[serde(rename = "type")]
    pub type_: String,
    /// `<status> (<reason>)` under the serving module, or `absent`.
    pub serving: String,
    pub candidate: String,
}

/// What would differ for one parent.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionDiff>,
    /// Changes the candidate asks for that the serving module does not
    /// (or asks for otherwise), each as `<op> <Kind> <name>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes_added: Vec<String>,
    /// Changes the serving module asks for that the candidate does not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes_dropped: Vec<String>,
    /// The candidate's guest error, where the serving module had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_guest_error: Option<String>,
    /// Ready True live or under the serving module, False under the
    /// candidate.
    pub ready_turns_false: bool,
    /// What the serving module's pass does not reproduce of the live
    /// status: the review cannot see this parent as the operator does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_reproduced: Vec<Unreproduced>,
}

impl Difference {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
            && self.changes_added.is_empty()
            && self.changes_dropped.is_empty()
            && self.new_guest_error.is_none()
    }
}

/// Each condition of `status`: its status and reason, by type.
fn conditions(status: &Status) -> BTreeMap<String, (String, String)> {
    status
        .conditions
        .iter()
        .map(|c| {
            (
                c.type_.clone(),
                (c.status.as_str().to_owned(), c.reason.clone()),
            )
        })
        .collect()
}

fn ready_is(side: &BTreeMap<String, (String, String)>, status: &str) -> bool {
    side.get("Ready").is_some_and(|(s, _)| s == status)
}

/// The condition types whose status or reason differs, each as
/// `<status> (<reason>)` (or `absent`) on either side.
fn differing(
    before: &BTreeMap<String, (String, String)>,
    after: &BTreeMap<String, (String, String)>,
) -> Vec<(String, String, String)> {
    let word = |c: Option<&(String, String)>| match c {
        Some((status, reason)) => format!("{status} ({reason})"),
        None => "absent".to_owned(),
    };
    let types: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    types
        .into_iter()
        .filter(|t| before.get(*t) != after.get(*t))
        .map(|t| (t.clone(), word(before.get(t)), word(after.get(t))))
        .collect()
}

/// What differs between the serving module's pass and the candidate's.
pub fn compare(serving: &Side<'_>, candidate: &Side<'_>) -> Difference {
    let (before, after) = (conditions(serving.status), conditions(candidate.status));
    let mut out = Difference {
        conditions: differing(&before, &after)
            .into_iter()
            .map(|(type_, serving, candidate)| ConditionDiff {
                type_,
                serving,
                candidate,
            })
            .collect(),
        ready_turns_false: ready_is(&before, "True") && ready_is(&after, "False"),
        ..Difference::default()
    };
    if serving.error.is_none() {
        out.new_guest_error = candidate.error.clone();
    }
    let (b, a) = (described(serving.changes), described(candidate.changes));
    out.changes_added = a.difference(&b).map(|(label, _)| label.clone()).collect();
    out.changes_dropped = b.difference(&a).map(|(label, _)| label.clone()).collect();
    out
}

/// Each change as its label and what it asks for, comparable.
fn described(changes: &[Change]) -> BTreeSet<(String, String)> {
    changes
        .iter()
        .map(|change| {
            let (label, detail): (String, Value) = match change {
                Change::Apply { kind, name, body } => {
                    (format!("apply {} {name}", kind.kind), body.clone())
                }
                Change::Delete { kind, name, uid } => {
                    (format!("delete {} {name}", kind.kind), json!(uid))
                }
                Change::Generate { name, keys } => (format!("generate Secret {name}"), json!(keys)),
                Change::Certificate { name, dns_names } => {
                    (format!("certificate Secret {name}"), json!(dns_names))
                }
                Change::Bundle {
                    name,
                    key,
                    sources,
                    labels,
                } => (
                    format!("bundle ConfigMap {name}"),
                    json!([key, sources, labels]),
                ),
            };
            (label, detail.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_conventions::kind::KindRef;

    fn status(conditions: &[(&str, &str, &str)]) -> Status {
        Status::from_json(
            &json!({"conditions": conditions.iter().map(|(t, s, r)| json!({
            "type": t, "status": s, "reason": r, "message": "",
            "lastTransitionTime": "2026-12-03T00:00:00Z", "observedGeneration": 1
        })).collect::<Vec<_>>()}),
        )
        .unwrap()
    }

    fn config_map(data: &str) -> Change {
        Change::Apply {
            kind: KindRef {
                group: String::new(),
                version: "v1".into(),
                kind: "ConfigMap".into(),
            },
            name: "w-config".into(),
            body: json!({"data": {"k": data}}),
        }
    }

    #[test]
    fn the_same_pass_differs_in_nothing() {
        let s = status(&[("Ready", "True", "AsExpected")]);
        let changes = [config_map("a")];
        let side = || Side {
            status: &s,
            error: None,
            changes: &changes,
        };
        let d = compare(&side(), &side());
        assert!(d.is_empty(), "{d:?}");
        assert!(!d.ready_turns_false);
    }

    #[test]
    fn a_ready_turning_false_its_reasons_and_changes_are_named() {
        let (before, after) = (
            status(&[
                ("Ready", "True", "AsExpected"),
                ("Applied", "True", "AsExpected"),
            ]),
            status(&[
                ("Ready", "False", "WorkloadMissing"),
                ("WorkloadReady", "False", "WorkloadMissing"),
            ]),
        );
        let (old, new) = ([config_map("a")], [config_map("b")]);
        let d = compare(
            &Side {
                status: &before,
                error: None,
                changes: &old,
            },
            &Side {
                status: &after,
                error: Some("guest trapped".into()),
                changes: &new,
            },
        );
        assert!(d.ready_turns_false);
        assert_eq!(
            d.conditions,
            [
                ConditionDiff {
                    type_: "Applied".into(),
                    serving: "True (AsExpected)".into(),
                    candidate: "absent".into()
                },
                ConditionDiff {
                    type_: "Ready".into(),
                    serving: "True (AsExpected)".into(),
                    candidate: "False (WorkloadMissing)".into()
                },
                ConditionDiff {
                    type_: "WorkloadReady".into(),
                    serving: "absent".into(),
                    candidate: "False (WorkloadMissing)".into()
                },
            ]
        );
        assert_eq!(d.changes_added, ["apply ConfigMap w-config"]);
        assert_eq!(d.changes_dropped, ["apply ConfigMap w-config"]);
        assert_eq!(d.new_guest_error.as_deref(), Some("guest trapped"));
    }
}
