//! The plan gates a command is given as `run` takes them: each kind's mode
//! and approval, and how long a denial holds the same changes.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;
use reconciler_host::plan::digest::Mode;
use reconciler_host::plan::gates::{Approval, KindGates};

use super::operate::parse_duration;

#[derive(Args)]
pub(super) struct GateArgs {
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
    /// The gates given, by kind name in lower case (a kind is named in any
    /// case; for each of its gates the last one given wins): what `run`'s
    /// planner and `capture` both read.
    pub(super) fn kinds(&self) -> BTreeMap<String, KindGates> {
        let mut kinds: BTreeMap<String, KindGates> = BTreeMap::new();
        for (kind, mode) in &self.modes {
            kinds.entry(kind.to_lowercase()).or_default().mode = Some(*mode);
        }
        for (kind, approval) in &self.approvals {
            kinds.entry(kind.to_lowercase()).or_default().approval = Some(*approval);
        }
        kinds
    }

    /// The gates given for `kind` (any case).
    pub(super) fn of(&self, kind: &str) -> KindGates {
        self.kinds()
            .remove(&kind.to_lowercase())
            .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind named in two cases is one kind: its gates are not split
    /// between them, and the last one given of each wins.
    #[test]
    fn a_kind_named_in_any_case_has_one_set_of_gates() {
        let gates = GateArgs {
            modes: vec![
                ("Widget".into(), Mode::Observe),
                ("WIDGET".into(), Mode::Apply),
            ],
            approvals: vec![("widget".into(), Approval::Manual)],
            replan_after: Duration::from_secs(60),
        };
        let want = KindGates {
            mode: Some(Mode::Apply),
            approval: Some(Approval::Manual),
        };
        assert_eq!(gates.of("Widget"), want);
        assert_eq!(gates.kinds().len(), 1);
        assert_eq!(gates.of("Gadget"), KindGates::default());
    }
}
