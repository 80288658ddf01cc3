//! Guest modules through an OCI registry, and the shadow run that reviews
//! one before it serves (issue 33's figures), against the loopback
//! registry (`tests/registry`), the real cosign (`tests/cosign`) and the
//! local kube-apiserver of `tests/support`:
//!
//! 1. Each of the Rust and the JavaScript EvidenceAgent (about 13 MB) is
//!    pushed, signed with a cosign key, and pulled by digest under a
//!    verification policy naming that key: once cold (nothing cached:
//!    download, signatures checked, compiled, placed) and `BENCH_PULLS`
//!    times warm (kept by digest and compiled: the signatures are still
//!    read from the registry). The same module pushed unsigned must be
//!    refused.
//! 2. `BENCH_PARENTS` LegacyWidgets (default 1000) are shadowed: the 0.1
//!    module beside the 0.4 one serving, run by a user who may only get,
//!    list and watch. Every parent must be reported (each turns from Ready
//!    True to False) and nothing written: the parents' resourceVersions
//!    unchanged, no ConfigMap and no Event made.
//!
//! `make bench-modules`, or `cargo bench -p reconciler-host --bench
//! modules` after `make guests guests-js`. Environment: `BENCH_PARENTS`,
//! `BENCH_PULLS` (default 10), `RECONCILER_TEST_KUBECONFIG` (reuse a
//! running test apiserver).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ListParams;
use reconciler_host::runtime::{Runtime, RuntimeConfig};
use reconciler_host_harness::bench::{Table, env_num};
use reconciler_host_harness::cosign::KeyPair;
use reconciler_host_harness::guests::guest_wasm;
use reconciler_host_harness::registry::Registry;
use reconciler_host_harness::{identity, objects, paths};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const API_VERSION: &str = "testing.reconciler.dev/v1";
/// Requests in flight while creating parents.
const CREATING: usize = 32;

fn main() {
    let parents: usize = env_num("BENCH_PARENTS").unwrap_or(1000);
    let pulls: usize = env_num("BENCH_PULLS").unwrap_or(10);
    assert!(
        parents > 0 && pulls > 0,
        "BENCH_PARENTS and BENCH_PULLS must be at least 1"
    );
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    eprintln!("bench: apiserver kubeconfig {}", kubeconfig.display());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut out = Table::default();
    out.title(format!(
        "guest modules: pulled by digest under a verification policy, and a shadow run of {parents} parents; {} host, {} CPUs",
        if cfg!(debug_assertions) { "dev" } else { "release" },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    let report = pulled(&mut out, pulls).and_then(|()| rt.block_on(shadowed(&mut out, parents)));
    match report {
        Ok(()) => print!("{}", out.finish()),
        Err(e) => {
            print!("{}", out.finish());
            eprintln!("bench-modules FAILED: {e:#}");
            std::process::exit(1);
        }
    }
}

/// A scratch directory of the bench, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = paths::target_tmpdir().join("bench-modules").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// `reconciler-host <args>` with its compiled modules in `compiled`.
fn host(compiled: &Path, env: &[(&str, String)], args: &[&str]) -> Output {
    let mut command = Command::new(paths::host_binary());
    command
        .env("NO_COLOR", "1")
        .env("DOCKER_CONFIG", compiled.join("no-docker-config"))
        .arg("--cache-dir")
        .arg(compiled)
        .args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("the host binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JavaScript EvidenceAgent, as `make guests-js` builds it.
fn javascript_agent() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| paths::workspace().join("target"));
    target.join("polyglot").join("evidenceagent_js.wasm")
}

/// The p-quantile of sorted `times`, in ms.
fn quantile(times: &[Duration], q: f64) -> String {
    let idx = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1;
    format!("{:.0} ms", times[idx].as_secs_f64() * 1e3)
}

/// Part 1: each module pushed, signed, pulled cold and warm, and an
/// unsigned push refused.
fn pulled(out: &mut Table, pulls: usize) -> Result<()> {
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("pull");
    let key = KeyPair::generate(&dir, "release");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "kinds:\n  EvidenceAgent:\n    allOf: [release.pub]\n",
    )?;
    let insecure = ["--insecure-registry", address.as_str()];
    let javascript = javascript_agent();
    ensure!(
        javascript.is_file(),
        "{} is not built: run `make guests-js` (make bench-modules does)",
        javascript.display()
    );
    for (label, source, stem) in [
        ("Rust", guest_wasm("evidenceagent-guest"), "rust"),
        ("JavaScript", javascript, "js"),
    ] {
        let module = dir.join(format!("{stem}.wasm"));
        std::fs::copy(&source, &module).with_context(|| format!("copying {}", source.display()))?;
        let bytes = std::fs::metadata(&module)?.len();
        // Pushed and compiled with the cache the push uses, apart from the
        // pulls' caches.
        let compiled = dir.join(format!("{stem}-push-compiled"));
        let push = |created: u32, tag: &str| -> Result<(String, Duration)> {
            let reference = format!("{address}/guests/evidenceagent-{stem}:{tag}");
            let started = Instant::now();
            let pushed = host(
                &compiled,
                &[("SOURCE_DATE_EPOCH", created.to_string())],
                &[
                    &["push", module.to_str().unwrap(), &reference][..],
                    &insecure,
                ]
                .concat(),
            );
            let took = started.elapsed();
            ensure!(pushed.status.success(), "push: {}", text(&pushed.stderr));
            Ok((text(&pushed.stdout).trim().to_owned(), took))
        };
        let (signed, push_took) = push(1, "signed")?;
        key.sign(&signed);
        let (unsigned, _) = push(2, "unsigned")?;

        let guests = dir.join(format!("{stem}-guests"));
        std::fs::create_dir_all(&guests)?;
        let (pulled_dir, compiled) = (
            dir.join(format!("{stem}-pulled")),
            dir.join(format!("{stem}-compiled")),
        );
        let pull = |reference: &str, name: &str| {
            let started = Instant::now();
            let out = host(
                &compiled,
                &[],
                &[
                    &[
                        "pull",
                        reference,
                        "--guests",
                        guests.to_str().unwrap(),
                        "--name",
                        name,
                        "--pulled-dir",
                        pulled_dir.to_str().unwrap(),
                        "--policy",
                        policy.to_str().unwrap(),
                    ][..],
                    &insecure,
                ]
                .concat(),
            );
            (out, started.elapsed())
        };
        let (cold, cold_took) = pull(&signed, "evidenceagent");
        ensure!(cold.status.success(), "cold pull: {}", text(&cold.stderr));
        ensure!(
            text(&cold.stderr).contains("signed by release.pub"),
            "the cold pull did not report its signer: {}",
            text(&cold.stderr)
        );
        let mut warm = Vec::with_capacity(pulls);
        for _ in 0..pulls {
            let (again, took) = pull(&signed, "evidenceagent");
            ensure!(again.status.success(), "warm pull: {}", text(&again.stderr));
            warm.push(took);
        }
        warm.sort();
        let (refused, _) = pull(&unsigned, "unsigned");
        let refused_right = refused.status.code() == Some(2)
            && text(&refused.stderr).contains("it carries no cosign signature")
            && !guests.join("unsigned.wasm").exists();

        out.section(&format!(
            "the {label} EvidenceAgent ({:.1} MB), pushed, signed with a cosign key, pulled by digest under the policy",
            bytes as f64 / 1e6
        ));
        out.row(
            "push (loaded, then uploaded)",
            format!("{:.0} ms", push_took.as_secs_f64() * 1e3),
        );
        out.row(
            "pull cold (download, signatures, compile, place)",
            format!("{:.0} ms", cold_took.as_secs_f64() * 1e3),
        );
        out.row(
            &format!("pull warm, {pulls} times (signatures read again)"),
            format!("p50 {}, max {}", quantile(&warm, 0.5), quantile(&warm, 1.0)),
        );
        out.row(
            "the same module unsigned: refused, nothing placed",
            if refused_right { "yes" } else { "NO" },
        );
        if !refused_right {
            bail!(
                "the unsigned module was not refused: {}",
                text(&refused.stderr)
            );
        }
    }
    Ok(())
}

/// Part 2: `parents` LegacyWidgets shadowed, the 0.1 module beside the
/// 0.4 one, by a user who may only read.
async fn shadowed(out: &mut Table, parents: usize) -> Result<()> {
    let dir = scratch("shadow");
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests)?;
    let serving = guests.join("legacy_v0_4_guest.wasm");
    std::fs::copy(guest_wasm("legacy-v0_4-guest"), &serving)?;
    let compiled = dir.join("compiled");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(compiled.clone()),
        ..RuntimeConfig::default()
    })?;
    let spec = runtime.load_file(&serving)?.spec().clone();
    let crd: CustomResourceDefinition =
        serde_json::from_value(reconciler_host::crd::render(&spec))?;

    let ns = TestNamespace::new("bench-shadow").await?;
    let client = ns.client();
    reconciler_testsupport::install_crd(&client, crd).await?;
    let started = Instant::now();
    let created: Vec<Result<()>> = stream::iter(0..parents)
        .map(|i| {
            let client = client.clone();
            let ns = ns.name().to_owned();
            async move {
                objects::create(
                    &client,
                    &ns,
                    json!({"apiVersion": API_VERSION, "kind": "LegacyWidget",
                           "metadata": {"name": format!("w-{i:05}")},
                           "spec": {"message": "hello"}}),
                )
                .await;
                Ok(())
            }
        })
        .buffer_unordered(CREATING)
        .collect()
        .await;
    created.into_iter().collect::<Result<Vec<()>>>()?;
    let setup = started.elapsed();

    let reviewer = "bench-shadow-reviewer";
    identity::apply_rbac(
        &client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "reader", "namespace": ns.name()},
               "rules": [{"apiGroups": ["*"], "resources": ["*"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    identity::apply_rbac(
        &client,
        identity::role_binding(ns.name(), "reader", "Role", "reader", reviewer),
    )
    .await;
    identity::apply_rbac(
        &client,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "bench-shadow-clusterrole-reader"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                          "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    identity::apply_rbac(
        &client,
        identity::cluster_role_binding("bench-shadow-clusterrole-reader", reviewer),
    )
    .await;
    let kubeconfig = identity::kubeconfig_as(reviewer, &dir);

    let versions = async |api_version: &str, kind: &str| -> Result<Vec<(String, String)>> {
        let listed = objects::api(&client, ns.name(), api_version, kind)
            .list(&ListParams::default())
            .await?;
        Ok(listed
            .items
            .into_iter()
            .map(|o| {
                (
                    o.metadata.name.unwrap_or_default(),
                    o.metadata.resource_version.unwrap_or_default(),
                )
            })
            .collect())
    };
    let before = versions(API_VERSION, "LegacyWidget").await?;
    let review = dir.join("review.yaml");
    let candidate = guest_wasm("legacy-v0_1-guest");
    let (ran, took) = {
        let (kubeconfig, guests, compiled, review, candidate, namespace) = (
            kubeconfig.clone(),
            guests.clone(),
            compiled.clone(),
            review.clone(),
            candidate.clone(),
            ns.name().to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let out = Command::new(paths::host_binary())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", std::env::var_os("HOME").unwrap_or_default())
                .env("KUBECONFIG", &kubeconfig)
                .env("NO_COLOR", "1")
                .arg("--cache-dir")
                .arg(&compiled)
                .arg("shadow")
                .arg(&candidate)
                .arg("--guests")
                .arg(&guests)
                .args(["--namespaces", &namespace, "-o"])
                .arg(&review)
                .output()
                .expect("the host binary runs");
            (out, started.elapsed())
        })
        .await?
    };
    ensure!(
        ran.status.code() == Some(1),
        "the shadow run should hold the 0.1 module (exit 1): {}",
        text(&ran.stderr)
    );
    let review: Value = serde_yaml::from_str(&std::fs::read_to_string(&review)?)?;
    let after = versions(API_VERSION, "LegacyWidget").await?;
    let config_maps = versions("v1", "ConfigMap")
        .await?
        .iter()
        .filter(|(name, _)| name.ends_with("-legacy"))
        .count();
    let events = versions("events.k8s.io/v1", "Event").await?.len();
    let written = before.iter().zip(&after).filter(|(b, a)| b != a).count()
        + before.len().abs_diff(after.len())
        + config_maps
        + events;

    out.section(&format!(
        "shadow: the 0.1 LegacyWidget module beside the 0.4 one serving, on {parents} parents, as a user who may only read"
    ));
    out.row(
        "setup: parents created (not measured)",
        format!("{parents} in {:.2} s", setup.as_secs_f64()),
    );
    out.row(
        "shadow run (watch, list, two passes a parent, review)",
        format!(
            "{:.2} s, {:.2} ms a parent",
            took.as_secs_f64(),
            took.as_secs_f64() * 1e3 / parents as f64
        ),
    );
    out.row(
        "parents shadowed / differ / turn Ready True to False",
        format!(
            "{} / {} / {}",
            review["parents"], review["differ"], review["readyTurnsFalse"]
        ),
    );
    out.row("objects written during the shadow run", written);
    ensure!(
        review["parents"] == json!(parents) && review["readyTurnsFalse"] == json!(parents),
        "every parent should be shadowed and turn Ready True to False: {}",
        text(&ran.stderr)
    );
    ensure!(written == 0, "the shadow run wrote {written} object(s)");
    ns.cleanup().await?;
    Ok(())
}
