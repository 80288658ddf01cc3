//! The guests the workspace bundles: the Makefile's `GUESTS`, the one list
//! `make docs` and `make deploy` work from, and `make fixtures` with the
//! test guests that have fixtures.

pub use crate::paths::workspace;

/// The bundled guests by directory name (`evidenceagent`, ...).
pub fn guests() -> Vec<String> {
    let text = std::fs::read_to_string(workspace().join("Makefile")).expect("the Makefile");
    text.lines()
        .find_map(|l| l.strip_prefix("GUESTS"))
        .and_then(|rest| rest.trim_start().strip_prefix(":="))
        .expect("the Makefile sets GUESTS :=")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}
