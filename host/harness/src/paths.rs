//! Where things are: the workspace, the target directory the running test
//! or bench was built in, its scratch directory, and the host binary built
//! beside it.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the harness crate is in the workspace")
}

/// The profile directory of the running test or bench binary
/// (`<target>/debug` or `<target>/release`): cargo puts an integration
/// test's or bench's executable in its `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the running executable");
    exe.parent()
        .and_then(Path::parent)
        .expect("a test or bench executable lives in <target>/<profile>/deps")
        .to_path_buf()
}

/// The `reconciler-host` binary of the same build as the running test or
/// bench (cargo builds a package's binaries before its integration tests
/// and benches).
pub fn host_binary() -> PathBuf {
    profile_dir().join("reconciler-host")
}

/// A scratch directory for tests and benches (cargo's
/// `CARGO_TARGET_TMPDIR`: `<target>/tmp`).
pub fn target_tmpdir() -> PathBuf {
    let dir = profile_dir()
        .parent()
        .expect("<target>/<profile>")
        .join("tmp");
    std::fs::create_dir_all(&dir).expect("the target's tmp directory");
    dir
}
