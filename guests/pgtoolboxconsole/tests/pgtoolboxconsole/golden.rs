//! The registry held against `reasons.golden`: reasons are only ever added.
//!
//! A golden reason missing from the registry (a removal or a rename) fails.
//! A registered reason missing from the golden file fails too, until the
//! developer runs with `BLESS=1` to append it (the file is rewritten sorted).

use std::collections::BTreeSet;

use pgtoolboxconsole_guest::PgToolBoxConsole;
use reconciler_guest_sdk::Guest;

pub use reconciler_guest_sdk::spec::HOST_REASONS;

fn golden_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reasons.golden")
}

#[test]
fn the_registry_only_ever_grows() {
    let registered: BTreeSet<String> = PgToolBoxConsole::describe()
        .reasons
        .into_iter()
        .map(|r| r.name)
        .chain(HOST_REASONS.iter().map(|r| (*r).to_owned()))
        .collect();
    let text = std::fs::read_to_string(golden_path()).unwrap_or_default();
    let golden: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();

    let removed: Vec<&String> = golden.difference(&registered).collect();
    assert!(
        removed.is_empty(),
        "reasons are frozen API, never removed or renamed: {removed:?} are in reasons.golden but not registered"
    );
    let added: Vec<&String> = registered.difference(&golden).collect();
    if added.is_empty() {
        return;
    }
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        let all: Vec<&str> = golden.union(&registered).map(String::as_str).collect();
        std::fs::write(golden_path(), all.join("\n") + "\n").expect("write reasons.golden");
    } else {
        panic!(
            "registered reasons missing from reasons.golden: {added:?}; run `BLESS=1 cargo test -p pgtoolboxconsole-guest` to append them"
        );
    }
}
