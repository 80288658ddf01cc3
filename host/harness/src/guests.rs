//! The guest components the tests load, built on demand.

use std::path::PathBuf;
use std::process::Command;

/// Builds `crate_name` for wasm32-wasip2 with the `guest` profile (a no-op
/// when it is fresh) and returns the component's path.
pub fn guest_wasm(crate_name: &str) -> PathBuf {
    guest_wasm_with(crate_name, None)
}

/// Builds and snapshots one guest at a time in this process: cargo relinks
/// a guest in place when another build of it had other features unified
/// (`make guests` builds every guest together), and a test thread reading
/// the file then could read half of it.
static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The same, with a cargo `feature` of the guest enabled: a snapshot of the
/// built component (its own path per crate and feature, replaced whole),
/// which no later build rewrites under a reader.
pub fn guest_wasm_with(crate_name: &str, feature: Option<&str>) -> PathBuf {
    let _building = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
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
    let snapshots = target_dir.join("wasm32-wasip2/guest/snapshots");
    std::fs::create_dir_all(&snapshots).expect("the snapshots directory");
    let stem = crate_name.replace('-', "_");
    let name = match feature {
        Some(f) => format!("{stem}.{f}.wasm"),
        None => format!("{stem}.wasm"),
    };
    let snapshot = snapshots.join(name);
    let tmp = snapshots.join(format!(".{stem}.{}", std::process::id()));
    std::fs::copy(&path, &tmp).expect("copying the guest");
    std::fs::rename(&tmp, &snapshot).expect("placing the guest's snapshot");
    snapshot
}

/// A JavaScript or Python guest (`evidenceagent_js.wasm`), built once per
/// test process by the Makefile's `guests-js` and `guests-py` (which
/// rebuild only what changed) into the target directory's `polyglot/`.
pub fn polyglot(file: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let workspace = crate::paths::workspace();
        let status = Command::new(std::env::var("MAKE").unwrap_or_else(|_| "make".into()))
            .current_dir(&workspace)
            .args(["-s", "guests-js", "guests-py"])
            .status()
            .expect("make runs");
        assert!(status.success(), "make guests-js guests-py failed");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("target"));
        target.join("polyglot")
    });
    let path = dir.join(file);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}
