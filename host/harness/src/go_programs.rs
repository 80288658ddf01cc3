//! The Go programs under `tests/` that tests run (kstatus, the registry, promtool),
//! built with the Go toolchain from the module proxy.

use std::path::PathBuf;
use std::process::Command;

use crate::paths;

/// Builds `tests/<name>` (a relink once the Go build cache is warm) into
/// the target's scratch directory, placed atomically: another test binary
/// may be running it. Returns its path.
pub fn build(name: &str) -> PathBuf {
    build_package(name, ".")
}

/// Builds `package` as the module `tests/<name>` requires it (a tool its
/// `go.mod` names, such as promtool), as [`build`] does.
pub fn build_package(name: &str, package: &str) -> PathBuf {
    let dir = paths::target_tmpdir().join(name);
    std::fs::create_dir_all(&dir).expect("the program's directory");
    let built = dir.join(format!(".{name}.{}", std::process::id()));
    let status = Command::new("go")
        .current_dir(paths::workspace().join("tests").join(name))
        .args(["build", "-trimpath", "-buildvcs=false", "-o"])
        .arg(&built)
        .arg(package)
        .status()
        .unwrap_or_else(|e| panic!("go runs (Go >= 1.26 builds tests/{name}): {e}"));
    assert!(status.success(), "building tests/{name} failed");
    let program = dir.join(name);
    std::fs::rename(&built, &program).expect("placing the program");
    program
}
