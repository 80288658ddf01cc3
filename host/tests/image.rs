//! The host's container image as `make image` assembles it (issue 36):
//! `tools/image` (go-containerregistry) puts a static binary and the CA
//! certificates on an empty base, as the numeric non-root user, with no
//! shell and the OCI annotations, into an OCI image layout tarball, the
//! same digest for the same inputs; it refuses a dynamically linked
//! binary; it pushes the image to a registry (one on loopback) and prints
//! the reference pinned to the digest the chart then deploys; it takes the
//! entrypoint back out, checked static.
//!
//! The payload here is a static stand-in, the image tool's own build with
//! cgo off (the host's static build takes the musl target, a release build
//! of its own, 15 minutes cold on two cores: `make image-check` builds it
//! and runs `make run`'s examples with the binary taken out of the image;
//! its figures are in deploy/README.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use reconciler_host_harness::makefile::workspace;
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::registry::Registry;
use serde_json::Value;

/// `tools/image` built into `out`, with cgo on or off (off: a static ELF).
fn go_build(out: &Path, cgo: bool) {
    let status = Command::new("go")
        .current_dir(workspace().join("tools/image"))
        .env("CGO_ENABLED", if cgo { "1" } else { "0" })
        .args(["build", "-trimpath", "-buildvcs=false", "-o"])
        .arg(out)
        .arg(".")
        .status()
        .expect("go runs");
    assert!(status.success(), "building tools/image");
}

/// Runs the image tool: (success, stdout, stderr).
fn image(tool: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(tool)
        .args(args)
        .output()
        .expect("the image tool runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(path: PathBuf) -> Value {
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("JSON")
}

/// The blob `digest` (`sha256:...`) of the layout unpacked in `dir`.
fn blob(dir: &Path, digest: &str) -> PathBuf {
    dir.join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

#[test]
fn the_image_is_a_static_binary_on_an_empty_base_as_a_non_root_user() {
    let dir = target_tmpdir().join(format!("image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tool = dir.join("image-tool");
    go_build(&tool, true);
    let payload = dir.join("static-payload");
    go_build(&payload, false);
    let build = |out: &Path, binary: &Path| build_image(&tool, out, binary);

    // A dynamically linked binary is refused, naming why.
    let (ok, _, err) = build(&dir.join("dynamic.tar"), &tool);
    assert!(!ok);
    assert!(err.contains("is not a static ELF binary"), "{err}");
    assert!(!dir.join("dynamic.tar").exists());

    let tarball = dir.join("image.oci.tar");
    let (ok, digest, err) = build(&tarball, &payload);
    assert!(ok, "{err}");
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert!(err.contains("MB compressed"), "the size is printed: {err}");
    let (ok, again, _) = build(&dir.join("again.oci.tar"), &payload);
    assert!(ok);
    assert_eq!(again, digest, "the same inputs make the same image");

    // An OCI image layout: oci-layout, index.json, blobs/.
    let (layout, manifest) = an_oci_layout(&dir, &tarball, &digest);

    // One layer: the binary, the CA certificates, the user's writable
    // directories; no shell, nothing else to run.
    one_layer_and_no_shell(&layout, &manifest);

    // The entrypoint taken back out (what `make image-check` runs as the
    // host): the payload, byte for byte, executable.
    the_entrypoint_taken_back_out(&tool, &dir, &tarball, &payload);

    // Pushed to a registry: the reference pinned to the same digest.
    pushed_pinned_to_its_digest(&tool, &tarball, &digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `image build` of `binary` into `out`, with the version, revision and
/// creation time the test checks.
fn build_image(tool: &Path, out: &Path, binary: &Path) -> (bool, String, String) {
    image(
        tool,
        &[
            "build",
            "--binary",
            binary.to_str().unwrap(),
            "--version",
            "0.1.0",
            "--revision",
            "0123abc",
            "--created",
            "2026-12-01T00:00:00Z",
            "--out",
            out.to_str().unwrap(),
        ],
    )
}

/// The tarball unpacked into `dir/layout`: an OCI image layout of one
/// manifest, `digest`, its config for linux/amd64 as the numeric non-root
/// user with the host's entrypoint and the OCI annotations. The layout's
/// directory and the manifest.
fn an_oci_layout(dir: &Path, tarball: &Path, digest: &str) -> (PathBuf, Value) {
    let layout = dir.join("layout");
    std::fs::create_dir_all(&layout).unwrap();
    let status = Command::new("tar")
        .arg("xf")
        .arg(tarball)
        .arg("-C")
        .arg(&layout)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        json(layout.join("oci-layout"))["imageLayoutVersion"],
        "1.0.0"
    );
    let index = json(layout.join("index.json"));
    let manifests = index["manifests"].as_array().expect("manifests");
    assert_eq!(manifests.len(), 1);
    assert_eq!(manifests[0]["digest"], digest);
    assert_eq!(
        manifests[0]["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let manifest = json(blob(&layout, digest));
    let config = json(blob(
        &layout,
        manifest["config"]["digest"].as_str().unwrap(),
    ));
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");
    let c = &config["config"];
    assert_eq!(c["User"], "65532:65532", "a numeric non-root user");
    assert_eq!(c["Entrypoint"], serde_json::json!(["/reconciler-host"]));
    assert_eq!(
        c["Cmd"],
        serde_json::json!(["run", "--guests=/guests", "--cache-dir=/cache"])
    );
    for (label, value) in [
        (
            "org.opencontainers.image.source",
            "https://github.com/fyannk/reconciler-host",
        ),
        ("org.opencontainers.image.version", "0.1.0"),
        ("org.opencontainers.image.revision", "0123abc"),
        ("org.opencontainers.image.created", "2026-12-01T00:00:00Z"),
        ("org.opencontainers.image.licenses", "Apache-2.0"),
    ] {
        assert_eq!(c["Labels"][label], value, "{label}");
        assert_eq!(
            manifest["annotations"][label], value,
            "{label} on the manifest"
        );
    }
    (layout, manifest)
}

/// One layer: the binary, the CA certificates, the user's writable
/// directories; no shell, nothing else to run.
fn one_layer_and_no_shell(layout: &Path, manifest: &Value) {
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "an empty base: one layer");
    let listing = Command::new("tar")
        .args(["-tzv", "--numeric-owner", "-f"])
        .arg(blob(layout, layers[0]["digest"].as_str().unwrap()))
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let entry = |path: &str| {
        listing
            .lines()
            .find(|l| l.ends_with(&format!(" {path}")))
            .unwrap_or_else(|| panic!("{path} not in the layer:\n{listing}"))
            .to_owned()
    };
    assert!(
        entry("reconciler-host").starts_with("-rwxr-xr-x 0/0"),
        "{listing}"
    );
    assert!(entry("etc/ssl/certs/ca-certificates.crt").starts_with("-rw-r--r-- 0/0"));
    for writable in ["guests/", "cache/"] {
        assert!(
            entry(writable).starts_with("drwxr-xr-x 65532/65532"),
            "{writable} is the user's: {listing}"
        );
    }
    for shell in ["bin/sh", "bin/bash", "bin/busybox"] {
        assert!(!listing.contains(shell), "{shell} in the image:\n{listing}");
    }
    let files = listing.lines().filter(|l| l.starts_with('-')).count();
    assert_eq!(
        files, 4,
        "the binary, the CA bundle, passwd, group:\n{listing}"
    );
}

/// The entrypoint taken back out of the layout: the payload, byte for
/// byte, executable; a file that is no layout refused.
fn the_entrypoint_taken_back_out(tool: &Path, dir: &Path, tarball: &Path, payload: &Path) {
    let extract = |layout: &Path, out: &Path| {
        image(
            tool,
            &[
                "extract",
                "--layout",
                layout.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        )
    };
    let extracted = dir.join("extracted");
    let (ok, _, err) = extract(tarball, &extracted);
    assert!(ok, "{err}");
    assert!(err.contains("a static executable"), "{err}");
    assert_eq!(
        std::fs::read(&extracted).unwrap(),
        std::fs::read(payload).unwrap()
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&extracted).unwrap().permissions().mode() & 0o111,
        0o111
    );
    let (ok, _, err) = extract(payload, &dir.join("nothing"));
    assert!(!ok, "a file that is no layout");
    assert!(err.starts_with("image extract: reading "), "{err}");
}

/// Pushed to a registry on loopback: the reference printed pinned to
/// `digest`, which the registry serves for the tag.
fn pushed_pinned_to_its_digest(tool: &Path, tarball: &Path, digest: &str) {
    let registry = Registry::start();
    let reference = format!("{}/team/reconciler-host:0.1.0", registry.address);
    let (ok, pinned, err) = image(
        tool,
        &[
            "push",
            "--layout",
            tarball.to_str().unwrap(),
            "--ref",
            &reference,
            "--insecure",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        pinned,
        format!("{}/team/reconciler-host@{digest}", registry.address)
    );
    let served = Command::new("curl")
        .args([
            "-sf",
            "-H",
            "Accept: application/vnd.oci.image.manifest.v1+json",
            "-o",
            "/dev/null",
            "-w",
            "%header{docker-content-digest}",
        ])
        .arg(format!(
            "http://{}/v2/team/reconciler-host/manifests/0.1.0",
            registry.address
        ))
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&served.stdout),
        digest,
        "the registry serves the digest pushed"
    );
}
