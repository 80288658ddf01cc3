//! A start that serves what it can (issue 31, item 3), against the real
//! local API server: guest files the running host refuses with one warning
//! (an empty file, random bytes, a second module for a served kind) are
//! refused at start the same way, each with one WARN line, a count in
//! `reconciler_swap_refusals_total` and a `not served:` line on
//! `/readyz`, while the good module serves its kind; `--strict-start`
//! keeps the start that fails (exit 2) on the first.
//!
//! Its own test binary: the test writes into the binary's guests directory.

use std::process::Stdio;

use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;
use reconciler_testsupport::TestNamespace;

use harness::{
    Guests, Host, eventually, fixture_of, free_addr, http_get, install_crds, wait_healthy,
};
use objects::{CLUSTER, agent, agents, backup_setup, create, create_all};

const GUESTS: Guests = Guests {
    dir: "start-refusals-tests",
    crates: &["evidenceagent-guest"],
    settings: &[
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
    ],
    expected_warnings: &["at start: "],
};

#[tokio::test]
async fn bad_files_are_refused_at_start_and_the_good_module_is_served() {
    let f = fixture_of(&GUESTS);
    let ns = TestNamespace::new("start-refusals")
        .await
        .expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    let module = f.guests_dir.join("evidenceagent_guest.wasm");
    let bad = [
        ("empty.wasm", Vec::new()),
        (
            "random.wasm",
            (0..4096u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
        ("second.wasm", std::fs::read(&module).expect("the module")),
    ];
    for (name, bytes) in &bad {
        std::fs::write(f.guests_dir.join(name), bytes).expect("a bad file");
    }

    // Strict: the start fails on the first refusal, naming it.
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let out = harness::host_command(&kubeconfig, Stdio::piped())
        .args(["--namespaces", ns.name(), "--strict-start"])
        .output()
        .expect("the host runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("at start: ") && stderr.contains("(--strict-start)"),
        "{stderr}"
    );
    assert!(!stderr.contains("caches synced"), "{stderr}");

    // By default: the agent is served, each bad file said once.
    create_all(&client, ns.name(), backup_setup()).await;
    create(&client, ns.name(), agent("orders", CLUSTER)).await;
    let metrics = free_addr();
    let metrics_arg = metrics.to_string();
    let host = Host::start_in(ns.name(), &["--metrics-addr", &metrics_arg]).await;
    wait_healthy(&agents(&client, ns.name()), "orders").await;
    let warned: Vec<String> = host
        .log_text()
        .lines()
        .filter(|l| l.contains(" WARN ") && l.contains(" at start: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(warned.len(), 3, "{warned:#?}");
    for (words, check) in [
        ("refused guest empty (digest ", "check=\"contract\""),
        ("refused guest random (digest ", "check=\"contract\""),
        (
            "refused guest second (digest ",
            "it claims kind pgtoolbox.fyannk.dev/v1alpha1/EvidenceAgent, which guest evidenceagent_guest serves already",
        ),
    ] {
        assert!(
            warned
                .iter()
                .any(|l| l.contains(words) && l.contains(check)),
            "{words:?} {check:?} not in {warned:#?}"
        );
    }
    let (status, body) = eventually("ready", async || match http_get(metrics, "/readyz") {
        (s, b) if s.contains(" 200 ") => Ok((s, b)),
        other => Err(other),
    })
    .await;
    assert!(status.contains(" 200 "), "{status}");
    let unserved: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("not served: "))
        .collect();
    assert_eq!(unserved.len(), 3, "{body}");
    let (_, scraped) = http_get(metrics, "/metrics");
    let refusals: f64 = scraped
        .lines()
        .filter(|l| l.starts_with("reconciler_swap_refusals_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(refusals, 3.0, "{scraped}");

    // A refused file removed is no longer listed.
    std::fs::remove_file(f.guests_dir.join("second.wasm")).expect("removed");
    eventually("two left", async || {
        let (_, body) = http_get(metrics, "/readyz");
        match body
            .lines()
            .filter(|l| l.starts_with("not served: "))
            .count()
        {
            2 => Ok(()),
            n => Err(n),
        }
    })
    .await;
    host.finish();
    for (name, _) in &bad {
        let _ = std::fs::remove_file(f.guests_dir.join(name));
    }
}
