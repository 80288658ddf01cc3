//! The kind's golden lists, shipped beside its module in the guests
//! directory: what the gate holds a module to at start, when no module
//! serves the kind yet to compare it with. `<stem>.reasons` is the guest's
//! checked-in `reasons.golden` (one reason a line: every one must be
//! registered) and `<stem>.aspects` the kind's aspects in order (one a
//! line: they must be the module's first aspects). Either may be absent;
//! blank lines and `#` comments are skipped.

use std::io;

use reconciler_conventions::kind::KindSpec;

use super::gate::{self, Baseline, Refusal};
use super::guests_dir::GuestsDir;

/// One golden list: its file name in the guests directory and its entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoldenList {
    pub file: String,
    pub entries: Vec<String>,
}

/// The golden lists shipped beside one module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Golden {
    pub reasons: Option<GoldenList>,
    pub aspects: Option<GoldenList>,
}

impl Golden {
    /// `<stem>.reasons` and `<stem>.aspects`, where they exist, read
    /// through the guests directory's handle (a symlink leading out of it
    /// fails as a module's does).
    pub fn read(dir: &GuestsDir, stem: &str) -> io::Result<Golden> {
        let list = |ext: &str| -> io::Result<Option<GoldenList>> {
            let file = format!("{stem}.{ext}");
            Ok(dir.read_beside(&file)?.map(|text| GoldenList {
                entries: parse(&text),
                file,
            }))
        };
        Ok(Golden {
            reasons: list("reasons")?,
            aspects: list("aspects")?,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.reasons.is_none() && self.aspects.is_none()
    }

    /// The gate's `reasons` and `aspects` checks against these lists.
    pub fn check(&self, spec: &KindSpec) -> Result<(), Refusal> {
        if let Some(reasons) = &self.reasons {
            gate::reasons_kept(
                reasons.entries.iter().map(String::as_str),
                spec,
                Baseline::Golden(&reasons.file),
            )?;
        }
        if let Some(aspects) = &self.aspects {
            gate::aspects_kept(&aspects.entries, spec, Baseline::Golden(&aspects.file))?;
        }
        Ok(())
    }
}

fn parse(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use reconciler_conventions::kind::ReasonEntry;

    use super::*;
    use crate::operator::hot_swap::gate::Check;

    fn spec() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["Configured".into(), "Serving".into()],
            reasons: ["AsExpected", "ClusterNotFound"]
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

    fn list(file: &str, text: &str) -> Option<GoldenList> {
        Some(GoldenList {
            file: file.into(),
            entries: parse(text),
        })
    }

    #[test]
    fn a_module_keeping_every_golden_entry_passes() {
        let golden = Golden {
            reasons: list("w.reasons", "# frozen\nAsExpected\n\nClusterNotFound\n"),
            aspects: list("w.aspects", "Configured\n"),
        };
        assert_eq!(golden.check(&spec()), Ok(()));
        assert_eq!(Golden::default().check(&spec()), Ok(()));
    }

    #[test]
    fn a_golden_reason_not_registered_is_refused_naming_the_file() {
        let golden = Golden {
            reasons: list("w.reasons", "AsExpected\nBackupRetired\n"),
            aspects: None,
        };
        let refusal = golden.check(&spec()).unwrap_err();
        assert_eq!(refusal.check, Check::Reasons);
        assert_eq!(
            refusal.detail,
            "reason \"BackupRetired\" is in the golden list w.reasons and is not registered by the module"
        );
    }

    #[test]
    fn a_golden_aspect_dropped_or_moved_is_refused() {
        let dropped = Golden {
            reasons: None,
            aspects: list("w.aspects", "Configured\nServing\nBacked\n"),
        };
        let refusal = dropped.check(&spec()).unwrap_err();
        assert_eq!(refusal.check, Check::Aspects);
        assert_eq!(
            refusal.detail,
            "aspect \"Backed\" is in the golden list w.aspects and is not declared by the module"
        );
        let moved = Golden {
            reasons: None,
            aspects: list("w.aspects", "Serving\n"),
        };
        assert_eq!(moved.check(&spec()).unwrap_err().check, Check::Aspects);
    }
}
