//! The plan gates a command is given as `run` takes them: each kind's mode
//! and approval, and how long a denial holds the same changes.

use std::time::Duration;

use clap::Args;
use reconciler_host::plan::digest::Mode;
use reconciler_host::plan::gates::{Approval, KindGates};

use super::operate::parse_duration;

#[derive(Args)]
pub struct GateArgs {
    /// A kind's mode, `<Kind>=observe|apply` (default apply): observe plans
    /// the changes and makes none. A parent's `spec.mode`, when its schema
    /// has one, or its annotation `reconciler.dev/mode` overrides it.
    #[arg(long = "mode", value_name = "KIND=MODE", value_parser = parse_mode)]
    pub modes: Vec<(String, Mode)>,
    /// A kind's approval, `<Kind>=auto|manual` (default auto): manual waits
    /// for a reviewer's decision on each plan. A parent's `spec.approval`,
    /// when its schema has one, overrides it; its annotation
    /// `reconciler.dev/approval` can only ask for manual.
    #[arg(long = "approval", value_name = "KIND=APPROVAL", value_parser = parse_approval)]
    pub approvals: Vec<(String, Approval)>,
    /// After a plan is denied, how long before the same changes are
    /// planned again (changed ones are planned at once).
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub replan_after: Duration,
}

impl GateArgs {
    /// The gates given for `kind` (any case; the last one given wins, as
    /// `run` keeps it).
    pub fn of(&self, kind: &str) -> KindGates {
        fn last<T: Copy>(given: &[(String, T)], kind: &str) -> Option<T> {
            given
                .iter()
                .rfind(|(k, _)| k.eq_ignore_ascii_case(kind))
                .map(|(_, v)| *v)
        }
        KindGates {
            mode: last(&self.modes, kind),
            approval: last(&self.approvals, kind),
        }
    }
}

fn kind_and<T>(
    s: &str,
    what: &str,
    parse: fn(&str) -> Option<T>,
    allowed: &str,
) -> Result<(String, T), String> {
    let (kind, value) = s
        .split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("{s:?}: expected <Kind>={allowed}"))?;
    let value = parse(value).ok_or_else(|| format!("{s:?}: the {what} must be {allowed}"))?;
    Ok((kind.to_owned(), value))
}

fn parse_mode(s: &str) -> Result<(String, Mode), String> {
    kind_and(s, "mode", Mode::parse, "observe|apply")
}

fn parse_approval(s: &str) -> Result<(String, Approval), String> {
    kind_and(s, "approval", Approval::parse, "auto|manual")
}
