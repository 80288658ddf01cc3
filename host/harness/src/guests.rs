//! The guest components the tests load, built on demand.

use std::path::PathBuf;
use std::process::Command;

/// Builds `crate_name` for wasm32-wasip2 with the `guest` profile (a no-op
/// when it is fresh) and returns the component's path.
pub fn guest_wasm(crate_name: &str) -> PathBuf {
    guest_wasm_with(crate_name, None)
}

/// The same, with a cargo `feature` of the guest enabled. Every feature set
/// builds to the same path: read the file before building another.
pub fn guest_wasm_with(crate_name: &str, feature: Option<&str>) -> PathBuf {
    let workspace = crate::paths::workspace();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.current_dir(&workspace).args([
        "build",
        "--quiet",
        "--profile",
        "guest",
        "--target",
        "wasm32-wasip2",
        "-p",
        crate_name,
    ]);
    if let Some(f) = feature {
        command.args(["--features", f]);
    }
    let status = command.status().expect("cargo runs");
    assert!(
        status.success(),
        "building guest {crate_name} ({feature:?}) failed"
    );
    let path = target_dir
        .join("wasm32-wasip2/guest")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}
