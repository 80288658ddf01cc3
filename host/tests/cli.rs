//! The CLI's output and error messages, held against golden files in
//! `tests/ui/` (`BLESS=1` rewrites them).

use reconciler_host_harness::guests as support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn ui(name: &str) -> PathBuf {
    Path::new("tests/ui").join(name)
}

/// Runs the CLI from the host crate's directory; returns stdout and stderr
/// together, with the exit code.
fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--no-cache"])
        .args(args)
        .env_remove("BLESS")
        .output()
        .expect("the CLI runs");
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check(golden: &str, produced: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ui(golden));
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, produced).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == produced,
        "{} differs (BLESS=1 cargo test -p reconciler-host --test cli to accept):\n{}",
        path.display(),
        similar::TextDiff::from_lines(&expected, produced).unified_diff()
    );
}

fn evidenceagent() -> String {
    let wasm = support::guest_wasm("evidenceagent-guest");
    // Copied under a stable name: the output names the guest by file stem.
    let dir = std::env::temp_dir().join(format!("reconciler-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("evidenceagent.wasm");
    std::fs::copy(wasm, &path).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn malformed_fixtures_are_named_with_the_field() {
    let guest = evidenceagent();
    let out = cli(&[
        "test",
        &guest,
        "tests/ui/bad-yaml.yaml",
        "tests/ui/missing-field.yaml",
        "tests/ui/no-parent-name.yaml",
    ]);
    check("malformed-fixtures.out", &out);
}

#[test]
fn a_wrong_expectation_prints_what_differs() {
    let guest = evidenceagent();
    check(
        "wrong-expectation.out",
        &cli(&["test", &guest, "tests/ui/wrong-expectation.yaml"]),
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused() {
    check(
        "not-a-component.out",
        &cli(&["describe", "tests/ui/not-a-component.wasm"]),
    );
}

#[test]
fn reasons_prints_the_golden_list_of_the_guest() {
    let guest = evidenceagent();
    let out = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
        .args(["--no-cache", "reasons", &guest])
        .output()
        .unwrap();
    assert!(out.status.success());
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../guests/evidenceagent/reasons.golden"),
    )
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), golden);
}

/// Limits of the runtime are checked when parsed, naming the flag, before
/// anything is loaded.
#[test]
fn runtime_limits_out_of_range_are_refused_naming_the_flag() {
    for (flag, value) in [
        ("--memory-mib", "0"),
        ("--memory-mib", "5000"),
        ("--deadline-ms", "0"),
    ] {
        let out = cli(&[flag, value, "describe", "tests/ui/not-a-component.wasm"]);
        assert!(out.starts_with("exit: 2\n"), "{flag} {value}: {out}");
        assert!(
            out.contains(&format!("invalid value '{value}' for '{flag} <")),
            "{flag} {value}: {out}"
        );
        assert!(!out.contains("not a WebAssembly component"), "{out}");
    }
}
