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

/// Each command's `--help` lists the shared options only where they do
/// something (issue 35): `new` and `plan` run no guest, so neither the
/// runtime's limits and cache nor logging and traces; the inspecting
/// commands trace nothing; `run` has them all. Given before the command's
/// name or after it, they are still accepted.
#[test]
fn each_commands_help_lists_only_the_options_that_apply_to_it() {
    let help = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
            .args(args)
            .arg("--help")
            .output()
            .expect("the CLI runs");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let runtime = [
        "--deadline-ms",
        "--memory-mib",
        "--cache-dir",
        "--cache-max-mib",
        "--no-cache",
    ];
    let logging = ["--log-format", "--otlp-endpoint"];
    for command in [
        &["new"][..],
        &["plan"],
        &["plan", "show"],
        &["plan", "approve"],
    ] {
        let shown = help(command);
        for option in runtime.iter().chain(&logging) {
            assert!(
                !shown.contains(option),
                "{command:?} lists {option}:\n{shown}"
            );
        }
    }
    for command in ["describe", "reasons", "crd", "rbac", "docs", "push", "pull"] {
        let shown = help(&[command]);
        for option in runtime.iter().chain(&["--log-format"]) {
            assert!(shown.contains(option), "{command} lacks {option}:\n{shown}");
        }
        assert!(!shown.contains("--otlp-endpoint"), "{command}:\n{shown}");
    }
    for command in ["run", "test", "capture", "shadow"] {
        let shown = help(&[command]);
        for option in runtime.iter().chain(&logging) {
            assert!(shown.contains(option), "{command} lacks {option}:\n{shown}");
        }
    }
    let before = cli(&["--memory-mib", "0", "describe", "x.wasm"]);
    let after = cli(&["describe", "--memory-mib", "0", "x.wasm"]);
    assert!(
        before.contains("invalid value '0' for '--memory-mib <"),
        "{before}"
    );
    assert!(
        after.contains("invalid value '0' for '--memory-mib <"),
        "{after}"
    );
}
