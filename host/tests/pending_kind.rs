//! A kind whose required API is missing at start is held pending while the
//! other kinds are served (issue 20), as a module dropped in while the host
//! runs is: the host starts without the CloudNativePG CRDs, serves the
//! PgToolBoxConsole, holds the EvidenceAgent (it must read Clusters) with
//! one clear line and `reconciler_modules_pending` 1, leaves its parents'
//! status untouched, and serves it once the CRDs are applied. Its own test
//! binary (its own API server): CRDs are cluster-wide.

use reconciler_host_harness::bench::{Metrics, free_port};
use reconciler_host_harness::console_objects::{self, console, consoles};
use reconciler_host_harness::objects::{agent, agents, create};
use reconciler_host_harness::operator::{
    Guests, Host, condition, eventually, fixture, fixture_of, get, settle,
};
use reconciler_testsupport::TestNamespace;
use serde_json::json;

const GUESTS: Guests = Guests {
    dir: "pending-kind-tests",
    crates: &["pgtoolboxconsole-guest", "evidenceagent-guest"],
    settings: &[
        "PgToolBoxConsole.defaultConsoleImage=ghcr.io/fyannk/pgtoolbox-console:1.0",
        "PgToolBoxConsole.allowedImageRepositories=ghcr.io/fyannk/",
        "PgToolBoxConsole.allowedHostSuffixes=.apps.example.com",
        "EvidenceAgent.defaultImage=ghcr.io/fyannk/evidence-agent:1.0",
        "EvidenceAgent.allowedImageRepositories=ghcr.io/fyannk/",
    ],
    expected_warnings: &[
        "optional API not served: the feature is off until the next start",
        "held pending: it reads postgresql.cnpg.io/v1/Cluster, which this cluster does not serve",
        "refused guest evidenceagent_guest",
    ],
};

fn is_cnpg(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> bool {
    crd.spec.group.ends_with("cnpg.io")
}

#[tokio::test]
async fn a_kind_missing_an_api_is_held_pending_and_served_once_it_appears() {
    fixture_of(&GUESTS);
    let ns = TestNamespace::new("pending-kind")
        .await
        .expect("a namespace");
    let client = ns.client();
    let (cnpg, guests): (Vec<_>, Vec<_>) = fixture().crds.iter().cloned().partition(is_cnpg);
    for crd in guests {
        reconciler_testsupport::install_crd(&client, crd)
            .await
            .expect("a guest's CRD");
    }
    let addr = free_port().expect("a port");
    let addr_arg = addr.to_string();
    let host = Host::start_in(ns.name(), &["--metrics-addr", &addr_arg]).await;
    assert!(
        host.log_text().contains(
            "guest evidenceagent_guest held pending: it reads postgresql.cnpg.io/v1/Cluster"
        ),
        "one clear line at start:\n{}",
        host.log_text()
    );
    let pending = Metrics::scrape(addr).await.expect("metrics");
    assert_eq!(pending.counter("reconciler_modules_pending"), 1.0);

    // The console is served.
    create(
        &client,
        ns.name(),
        console("c", json!({"image": console_objects::IMAGE})),
    )
    .await;
    let api = consoles(&client, ns.name());
    eventually("the console has a status", async || {
        let c = get(&api, "c").await;
        condition(&c, "Ready").ok_or(c)
    })
    .await;
    // The agent is not: its status stays untouched.
    create(&client, ns.name(), agent("a", "db")).await;
    settle().await;
    let a = get(&agents(&client, ns.name()), "a").await;
    assert!(a.get("status").is_none_or(|s| s.is_null()), "{a}");

    // The CloudNativePG CRDs appear: the agent's kind is served.
    for crd in cnpg {
        reconciler_testsupport::install_crd(&client, crd)
            .await
            .expect("a CloudNativePG CRD");
    }
    eventually("the agent has a status", async || {
        let a = get(&agents(&client, ns.name()), "a").await;
        condition(&a, "Ready").ok_or(a)
    })
    .await;
    let served = Metrics::scrape(addr).await.expect("metrics");
    assert_eq!(served.counter("reconciler_modules_pending"), 0.0);
    host.finish();
}
