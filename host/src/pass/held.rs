//! What holds a parent's changes other than its withdrawals (which no gate
//! holds back, contract 0.5.0), in the words a record of withdrawals keeps.

use crate::facts::SourceError;
use crate::plan::gates::{GateError, Gates};

/// What holds the changes: the pause, gates other than apply/auto (or the
/// gates' own error), a read that failed; "nothing held them" otherwise.
pub fn held_by(
    paused: bool,
    gates: &Result<Gates, GateError>,
    failed_read: Option<&SourceError>,
) -> String {
    let mut held = Vec::new();
    if paused {
        held.push("the parent is paused".to_owned());
    }
    match gates {
        Ok(gates) if gates.is_direct() => {}
        Ok(gates) => held.push(format!(
            "mode {}, approval {}",
            gates.mode.as_str(),
            gates.approval.as_str()
        )),
        Err(e) => held.push(e.to_string()),
    }
    if let Some(read) = failed_read {
        held.push(format!("a read failed: {read}"));
    }
    if held.is_empty() {
        "nothing held them".to_owned()
    } else {
        held.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::digest::Mode;
    use crate::plan::gates::Approval;

    #[test]
    fn each_gate_in_force_is_named_and_none_says_nothing_held_them() {
        let direct = Ok(Gates {
            mode: Mode::Apply,
            approval: Approval::Auto,
        });
        assert_eq!(held_by(false, &direct, None), "nothing held them");
        let manual = Ok(Gates {
            mode: Mode::Apply,
            approval: Approval::Manual,
        });
        let read = SourceError::PastCache {
            object: "Secret ns/x".into(),
            why: "timed out".into(),
        };
        assert_eq!(
            held_by(true, &manual, Some(&read)),
            format!("the parent is paused; mode apply, approval manual; a read failed: {read}")
        );
    }
}
