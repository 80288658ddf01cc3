//! The compatibility gate a module passes before it replaces the running
//! one (or, at start, against its kind's golden lists: [`super::golden`]):
//! a kind's reasons and condition types are API (alerts, dashboards and
//! runbooks match on them), so a new module may only add to them.

use reconciler_conventions::kind::KindSpec;

use crate::fixture::format::Fixture;
use crate::fixture::golden;
use crate::fixture::runner::run_fixture;
use crate::runtime::{LoadError, Module};

/// The check a module failed; its `Display` is the `check` label of
/// `reconciler_swap_refusals_total` and of the refusal's log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// The module file cannot be read inside the guests directory.
    Read,
    /// The module cannot be compiled or its artifact cached.
    Load,
    /// Not a component of the contract: an import the host does not
    /// provide, or a world the host does not serve.
    Contract,
    /// Its `describe` failed.
    Describe,
    /// Its kind spec is inconsistent.
    Spec,
    /// Another kind, plural, scope or profile than the running module.
    Kind,
    /// A reason of the running module is missing.
    Reasons,
    /// An aspect removed, renamed or moved.
    Aspects,
    /// An advisory condition type removed or renamed.
    Advisory,
    /// A fixture beside the module does not pass through it.
    Fixtures,
    /// A second file claims a kind another file serves.
    Claimed,
    /// The kind's CustomResourceDefinition is not installed or served.
    Crd,
    /// It reads a kind the host cannot watch.
    Reads,
    /// Probing the API server failed.
    Probe,
    /// Shadowed on the kind's parents, it would turn one from Ready True
    /// to False or fail where the serving module does not
    /// (`--promotion auto`).
    Shadow,
}

impl Check {
    /// The label, as metrics and log lines spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Read => "read",
            Check::Load => "load",
            Check::Contract => "contract",
            Check::Describe => "describe",
            Check::Spec => "spec",
            Check::Kind => "kind",
            Check::Reasons => "reasons",
            Check::Aspects => "aspects",
            Check::Advisory => "advisory",
            Check::Fixtures => "fixtures",
            Check::Claimed => "claimed",
            Check::Crd => "crd",
            Check::Reads => "reads",
            Check::Probe => "probe",
            Check::Shadow => "shadow",
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a module was refused: the check that failed (a metric label) and
/// what it found (one log line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub check: Check,
    pub detail: String,
}

impl Refusal {
    pub fn new(check: Check, detail: impl Into<String>) -> Self {
        Refusal {
            check,
            detail: detail.into(),
        }
    }

    /// A module that did not load: not a component of the contract, an
    /// import the host does not provide, a world mismatch, a failing
    /// `describe`, or an inconsistent kind spec.
    pub(crate) fn from_load(e: &LoadError) -> Self {
        let check = match e {
            LoadError::Read { .. } | LoadError::Cache { .. } => Check::Load,
            LoadError::NotAComponent { .. }
            | LoadError::UnsupportedImport { .. }
            | LoadError::PoolLimit { .. }
            | LoadError::WorldMismatch { .. } => Check::Contract,
            LoadError::Describe { .. } => Check::Describe,
            LoadError::Spec { .. } => Check::Spec,
        };
        Refusal::new(check, e.to_string())
    }
}

/// Whether `new` may replace `old` for the same kind. Only additions pass:
///
/// - the kind, its plural, scope and profile are unchanged (`kind`);
/// - every reason of `old` is still registered (`reasons`);
/// - `old`'s aspects are a prefix of `new`'s (`aspects`): an aspect may be
///   appended, not removed, renamed or moved, since the order of aspects is
///   the order of the conditions written on every object and in the docs;
/// - every advisory condition type of `old` is still declared (`advisory`).
pub fn compatible(old: &KindSpec, new: &KindSpec) -> Result<(), Refusal> {
    if old.kind_ref() != new.kind_ref() {
        return Err(Refusal::new(
            Check::Kind,
            format!(
                "it declares kind {}; the running module serves {}",
                new.kind_ref(),
                old.kind_ref()
            ),
        ));
    }
    if old.plural != new.plural || old.namespaced != new.namespaced {
        return Err(Refusal::new(
            Check::Kind,
            format!(
                "it declares resource {:?} (namespaced: {}); the running module has {:?} (namespaced: {})",
                new.plural, new.namespaced, old.plural, old.namespaced
            ),
        ));
    }
    if old.profile != new.profile {
        return Err(Refusal::new(
            Check::Kind,
            format!(
                "it declares profile {:?}; the running module has {:?}",
                new.profile, old.profile
            ),
        ));
    }
    reasons_kept(
        old.reasons.iter().map(|r| r.name.as_str()),
        new,
        Baseline::Running,
    )?;
    aspects_kept(&old.aspects, new, Baseline::Running)?;
    for a in &old.advisory {
        if !new.advisory.contains(a) {
            return Err(Refusal::new(
                Check::Advisory,
                format!(
                    "advisory condition {a:?} was declared by the running module and is missing"
                ),
            ));
        }
    }
    Ok(())
}

/// What a module is compared to: the module serving its kind (hot swap),
/// or a golden list shipped beside it (start, [`super::golden`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Baseline<'a> {
    Running,
    /// The golden list's file name in the guests directory.
    Golden(&'a str),
}

impl Baseline<'_> {
    /// Why `what` (`reason "X"`, `aspect "Y"`) counts as missing from the
    /// new module.
    fn missing(self, what: &str) -> String {
        let verb = if what.starts_with("reason") {
            "registered"
        } else {
            "declared"
        };
        match self {
            Baseline::Running => format!("{what} was {verb} by the running module and is missing"),
            Baseline::Golden(file) => {
                format!("{what} is in the golden list {file} and is not {verb} by the module")
            }
        }
    }
}

/// Every reason of `baseline` is still registered for `new`, by it or by
/// the host (`reasons`; names are compared, so a rename counts as missing).
pub(crate) fn reasons_kept<'r>(
    reasons: impl IntoIterator<Item = &'r str>,
    new: &KindSpec,
    baseline: Baseline<'_>,
) -> Result<(), Refusal> {
    for r in reasons {
        if !new.is_registered(r) {
            return Err(Refusal::new(
                Check::Reasons,
                baseline.missing(&format!("reason {r:?}")),
            ));
        }
    }
    Ok(())
}

/// `aspects` are a prefix of `new`'s (`aspects`): an aspect may be
/// appended, not removed, renamed or moved.
pub(crate) fn aspects_kept(
    aspects: &[String],
    new: &KindSpec,
    baseline: Baseline<'_>,
) -> Result<(), Refusal> {
    for (i, a) in aspects.iter().enumerate() {
        match new.aspects.get(i) {
            Some(n) if n == a => {}
            _ if new.aspects.contains(a) => {
                return Err(Refusal::new(
                    Check::Aspects,
                    format!(
                        "aspect {a:?} moved from position {} to {}; aspects may only be appended",
                        i + 1,
                        new.aspects.iter().position(|n| n == a).unwrap_or(0) + 1
                    ),
                ));
            }
            _ => {
                return Err(Refusal::new(
                    Check::Aspects,
                    baseline.missing(&format!("aspect {a:?}")),
                ));
            }
        }
    }
    Ok(())
}

/// A fixture shipped beside a module: its name (as a refusal names it),
/// its YAML, and the text of its golden file (`<name>.golden`) if one is
/// shipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShippedFixture {
    pub name: String,
    pub text: String,
    pub golden: Option<String>,
}

impl ShippedFixture {
    /// The name of its golden file.
    pub fn golden_name(&self) -> String {
        let stem = self
            .name
            .strip_suffix(".yaml")
            .or_else(|| self.name.strip_suffix(".yml"))
            .unwrap_or(&self.name);
        format!("{stem}.golden")
    }
}

/// Runs the fixtures shipped beside a module exactly as `reconciler-host
/// test` does ([`golden::problems`]): the first that does not load, does
/// not meet its expectations, or whose outcomes are not its golden file's
/// (or has none) refuses the module.
pub async fn fixtures(module: &Module, fixtures: &[ShippedFixture]) -> Result<(), Refusal> {
    for shipped in fixtures {
        let name = &shipped.name;
        let fixture: Fixture = serde_yaml::from_str(&shipped.text)
            .map_err(|e| Refusal::new(Check::Fixtures, format!("fixture {name}: {e}")))?;
        if fixture.expect.is_none() && fixture.steps.is_empty() {
            return Err(Refusal::new(
                Check::Fixtures,
                format!("fixture {name}: missing field `expect` (or `steps`)"),
            ));
        }
        let report = run_fixture(module, &fixture).await;
        let problems = golden::problems(&report, shipped.golden.as_deref(), &shipped.golden_name());
        if let Some(first) = problems.first() {
            return Err(Refusal::new(
                Check::Fixtures,
                format!("fixture {name}: {first}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use reconciler_conventions::kind::{Profile, ReasonEntry};

    use super::*;

    fn spec() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["Configured".into(), "Serving".into()],
            advisory: vec!["Tidy".into()],
            reasons: ["ClusterNotFound", "ImageRefused"]
                .iter()
                .map(|r| ReasonEntry {
                    name: (*r).into(),
                    owner: "widget".into(),
                    meaning: String::new(),
                })
                .collect(),
            ..KindSpec::default()
        }
    }

    fn check(new: KindSpec) -> Result<(), Check> {
        compatible(&spec(), &new).map_err(|r| r.check)
    }

    #[test]
    fn the_same_spec_and_additions_pass() {
        assert_eq!(check(spec()), Ok(()));
        let mut more = spec();
        more.aspects.push("Backed".into());
        more.advisory.insert(0, "Fresh".into());
        more.reasons.push(ReasonEntry {
            name: "NewReason".into(),
            owner: "widget".into(),
            meaning: "new".into(),
        });
        more.reasons.reverse();
        assert_eq!(check(more), Ok(()));
    }

    #[test]
    fn a_dropped_or_renamed_reason_is_refused() {
        let mut dropped = spec();
        dropped.reasons.retain(|r| r.name != "ClusterNotFound");
        let refusal = compatible(&spec(), &dropped).unwrap_err();
        assert_eq!(refusal.check, Check::Reasons);
        assert_eq!(
            refusal.detail,
            "reason \"ClusterNotFound\" was registered by the running module and is missing"
        );
        let mut renamed = spec();
        renamed.reasons[1].name = "ImageRejected".into();
        assert_eq!(check(renamed), Err(Check::Reasons));
    }

    #[test]
    fn aspects_may_only_be_appended() {
        let mut removed = spec();
        removed.aspects.pop();
        assert_eq!(check(removed), Err(Check::Aspects));
        let mut renamed = spec();
        renamed.aspects[0] = "Configuration".into();
        assert_eq!(check(renamed), Err(Check::Aspects));
        let mut reordered = spec();
        reordered.aspects.reverse();
        let refusal = compatible(&spec(), &reordered).unwrap_err();
        assert_eq!(refusal.check, Check::Aspects);
        assert!(refusal.detail.contains("moved"), "{}", refusal.detail);
        let mut inserted = spec();
        inserted.aspects.insert(0, "First".into());
        assert_eq!(check(inserted), Err(Check::Aspects));
    }

    #[test]
    fn a_dropped_advisory_condition_is_refused() {
        let mut dropped = spec();
        dropped.advisory.clear();
        assert_eq!(check(dropped), Err(Check::Advisory));
    }

    #[test]
    fn another_kind_resource_or_profile_is_refused() {
        let mut kind = spec();
        kind.kind = "Gadget".into();
        assert_eq!(check(kind), Err(Check::Kind));
        let mut version = spec();
        version.version = "v2".into();
        assert_eq!(check(version), Err(Check::Kind));
        let mut plural = spec();
        plural.plural = "widgetz".into();
        assert_eq!(check(plural), Err(Check::Kind));
        let mut profile = spec();
        profile.profile = Profile::Kstatus;
        assert_eq!(check(profile), Err(Check::Kind));
    }
}
