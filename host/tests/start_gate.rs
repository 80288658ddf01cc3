//! The gate at start, against the real local API server: a module is held
//! to its kind's golden list shipped beside it (`<stem>.reasons`, the
//! guest's checked-in `reasons.golden`). One lacking a golden reason fails
//! the start with an error naming the module, the reason and the file;
//! `--allow-golden-drift` (development only) serves it with one WARN line;
//! the golden list as checked in lets it start.
//!
//! Its own test binary: the test writes golden lists beside the module in
//! the binary's guests directory.

use std::path::Path;
use std::process::Stdio;

use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;
use reconciler_testsupport::TestNamespace;

use harness::{Guests, Host, fixture_of, install_crds, wait_healthy};
use objects::{CLUSTER, agent, agents, backup_setup, create, create_all};

const GUESTS: Guests = Guests {
    dir: "start-gate-tests",
    crates: &["evidenceagent-guest"],
    settings: &[
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
    ],
    expected_warnings: &["--allow-golden-drift is for development only"],
};

/// The golden list beside the module, as a ConfigMap would ship it.
const GOLDEN_FILE: &str = "evidenceagent_guest.reasons";

fn checked_in_golden() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guests/evidenceagent/reasons.golden");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn a_module_lacking_a_golden_reason_is_refused_at_start_unless_in_development() {
    let f = fixture_of(&GUESTS);
    let ns = TestNamespace::new("start-gate")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    let golden = f.guests_dir.join(GOLDEN_FILE);

    // A reason the module no longer registers (a guest that dropped
    // "BackupRetired", say): the host does not start.
    std::fs::write(&golden, checked_in_golden() + "BackupRetired\n").expect("the golden list");
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let out = harness::host_command(&kubeconfig, Stdio::piped())
        .args(["--namespaces", ns.name()])
        .output()
        .expect("the host runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    for part in [
        "refused guest evidenceagent_guest (digest ",
        "at start: reason \"BackupRetired\" is in the golden list evidenceagent_guest.reasons and is not registered by the module",
        &format!("(in {})", f.guests_dir.display()),
        "--allow-golden-drift",
    ] {
        assert!(error.contains(part), "{part:?} not in {error}");
    }
    assert!(
        !stderr.contains("caches synced"),
        "refused before serving anything:\n{stderr}"
    );

    // In development, the operator says otherwise: the module serves, and
    // the refusal is one WARN line.
    create_all(&client, ns.name(), backup_setup()).await;
    let agents = agents(&client, ns.name());
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let host = Host::start_in(ns.name(), &["--allow-golden-drift"]).await;
    wait_healthy(&agents, "orders").await;
    let warned: Vec<String> = host
        .log_text()
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains("--allow-golden-drift"))
        .map(str::to_owned)
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("serving guest evidenceagent_guest (digest ")
            && warned[0].contains(
                "reason \"BackupRetired\" is in the golden list evidenceagent_guest.reasons"
            ),
        "{}",
        warned[0]
    );
    host.finish();

    // The golden list as checked in: the module keeps every reason.
    std::fs::write(&golden, checked_in_golden()).expect("the golden list");
    let host = Host::start(ns.name()).await;
    wait_healthy(&agents, "orders").await;
    assert!(
        !host.log_text().contains("golden list"),
        "{}",
        host.log_text()
    );
    host.finish();
    std::fs::remove_file(&golden).expect("the golden list removed");
}
