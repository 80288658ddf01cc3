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
//! 3. `reconciler-host run --guest-modules` serves `BENCH_OBJECTS` Hostile
//!    parents (default 50); a GuestModule serving the kind is updated
//!    `BENCH_UPDATES` times (default 20), its signed source alternating
//!    between the plain module and the `variant-message` one (which
//!    prefixes every healthy message with `v2: `), promotion direct. Per
//!    update: the time from the write of the GuestModule to the first
//!    parent evaluated by the new module, and to every parent (lists every
//!    20 ms, so a figure is up to 20 ms and one list late); then every
//!    parent's spec changes, and each must end on the new module's
//!    rendering of its last message (no lost update). No guest error, no
//!    refusal and no rollback may be counted, and one swap per update.
//! 4. `reconciler-host run --guest-modules` serving the EvidenceAgent from
//!    the guests directory (the Rust guest); a GuestModule names the
//!    JavaScript EvidenceAgent (13 MB), signed: the time from its creation
//!    to Serving True (pull, signatures, compile, gate, swap), one swap
//!    counted, and an EvidenceAgent created after it evaluated by it (its
//!    status written) with no guest error.
//!
//! `make bench-modules`, or `cargo bench -p reconciler-host --bench
//! modules` after `make guests guests-js`. Environment: `BENCH_PARENTS`,
//! `BENCH_PULLS` (default 10), `BENCH_OBJECTS`, `BENCH_UPDATES`,
//! `RECONCILER_TEST_KUBECONFIG` (reuse a running test apiserver).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use reconciler_host::operator::guest_modules::kind as gm;
use reconciler_host::runtime::{ArtifactCache, Runtime, RuntimeConfig};
use reconciler_host_harness::bench::{HostProcess, Metrics, Table, env_num, free_port};
use reconciler_host_harness::cosign::KeyPair;
use reconciler_host_harness::guests::{guest_wasm, guest_wasm_with};
use reconciler_host_harness::registry::Registry;
use reconciler_host_harness::{identity, objects, paths};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

const API_VERSION: &str = "testing.reconciler.dev/v1";
/// Requests in flight while creating parents.
const CREATING: usize = 32;
/// How long one list of the parents may take.
const LIST_LIMIT: Duration = Duration::from_secs(30);
/// How long the parents may take to settle on a new module.
const SETTLE_LIMIT: Duration = Duration::from_secs(60);

fn main() {
    let parents: usize = env_num("BENCH_PARENTS").unwrap_or(1000);
    let pulls: usize = env_num("BENCH_PULLS").unwrap_or(10);
    let objects: usize = env_num("BENCH_OBJECTS").unwrap_or(50);
    let updates: usize = env_num("BENCH_UPDATES").unwrap_or(20);
    assert!(
        parents > 0 && pulls > 0 && objects > 0 && updates > 0,
        "BENCH_PARENTS, BENCH_PULLS, BENCH_OBJECTS and BENCH_UPDATES must be at least 1"
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
    let report = pulled(&mut out, pulls)
        .and_then(|()| rt.block_on(shadowed(&mut out, parents)))
        .and_then(|()| rt.block_on(updated(&mut out, objects, updates, &kubeconfig)))
        .and_then(|()| rt.block_on(served(&mut out, &kubeconfig)));
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
        cache: Some(ArtifactCache::new(compiled.clone())),
        ..RuntimeConfig::default()
    })?;
    let spec = runtime.load_file(&serving)?.spec().clone();
    let crd: CustomResourceDefinition =
        serde_json::from_value(reconciler_host::crd::render(&spec))?;

    let ns = TestNamespace::new("bench-shadow").await?;
    let client = ns.client();
    reconciler_testsupport::install_crd(&client, crd).await?;
    let setup = create_widgets(&client, ns.name(), parents).await?;

    let reviewer = "bench-shadow-reviewer";
    identity::read_only_reviewer(&client, ns.name(), reviewer).await;
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
    let (ran, took) = shadow_run(ShadowRun {
        kubeconfig: kubeconfig.clone(),
        guests: guests.clone(),
        compiled: compiled.clone(),
        review: review.clone(),
        candidate: candidate.clone(),
        namespace: ns.name().to_owned(),
    })
    .await?;
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

/// `parents` LegacyWidgets created; how long it took.
async fn create_widgets(
    client: &kube::Client,
    namespace: &str,
    parents: usize,
) -> Result<Duration> {
    let started = Instant::now();
    let created: Vec<Result<()>> = stream::iter(0..parents)
        .map(|i| {
            let client = client.clone();
            let ns = namespace.to_owned();
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
    Ok(started.elapsed())
}

/// What `reconciler-host shadow` is given.
struct ShadowRun {
    kubeconfig: PathBuf,
    guests: PathBuf,
    compiled: PathBuf,
    review: PathBuf,
    candidate: PathBuf,
    namespace: String,
}

/// `reconciler-host shadow` of the candidate beside the guests directory,
/// as the kubeconfig's user; its output and how long it ran.
async fn shadow_run(run: ShadowRun) -> Result<(Output, Duration)> {
    let ShadowRun {
        kubeconfig,
        guests,
        compiled,
        review,
        candidate,
        namespace,
    } = run;
    Ok(tokio::task::spawn_blocking(move || {
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
    .await?)
}

/// The Behaving message of each Hostile parent evaluated at its
/// generation, by name.
async fn behaving(api: &kube::Api<DynamicObject>) -> Result<BTreeMap<String, String>> {
    let listed = tokio::time::timeout(LIST_LIMIT, api.list(&ListParams::default()))
        .await
        .map_err(|_| anyhow!("listing the parents took over {LIST_LIMIT:?}"))??;
    Ok(listed
        .items
        .into_iter()
        .filter_map(|o| {
            let o = serde_json::to_value(o).ok()?;
            let generation = o["metadata"]["generation"].as_i64()?;
            let b = o["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Behaving")?;
            (b["status"] == "True" && b["observedGeneration"].as_i64() == Some(generation))
                .then(|| {
                    Some((
                        o["metadata"]["name"].as_str()?.to_owned(),
                        b["message"].as_str()?.to_owned(),
                    ))
                })
                .flatten()
        })
        .collect())
}

/// Lists the parents every 20 ms until every one shows `want(name)`: when
/// the first and when the last did, from `from`.
async fn until_all(
    api: &kube::Api<DynamicObject>,
    names: &[String],
    want: impl Fn(&str) -> String,
    from: Instant,
) -> Result<(Duration, Duration)> {
    let mut first = None;
    loop {
        let shown = behaving(api).await?;
        let done = names
            .iter()
            .filter(|n| shown.get(*n) == Some(&want(n)))
            .count();
        if done > 0 && first.is_none() {
            first = Some(from.elapsed());
        }
        if done == names.len() {
            return Ok((first.unwrap_or_default(), from.elapsed()));
        }
        if from.elapsed() > SETTLE_LIMIT {
            let wrong = names.iter().find(|n| shown.get(*n) != Some(&want(n)));
            bail!(
                "{} of {} parents not on the new module after {SETTLE_LIMIT:?}; first: {wrong:?} shows {:?}, want {:?}",
                names.len() - done,
                names.len(),
                wrong.and_then(|n| shown.get(n)),
                wrong.map(|n| want(n))
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Part 3: a GuestModule updated `updates` times while the host serves
/// `objects` Hostile parents, alternating between two signed modules.
async fn updated(out: &mut Table, objects: usize, updates: usize, kubeconfig: &Path) -> Result<()> {
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("update");
    let key = KeyPair::generate(&dir, "release");
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, "kinds:\n  Hostile:\n    allOf: [release.pub]\n")?;
    // The variant first: the plain guest is left in place for the test
    // binaries.
    let message = std::fs::read(guest_wasm_with("hostile-guest", Some("variant-message")))?;
    let plain = std::fs::read(guest_wasm_with("hostile-guest", None))?;
    let pinned = push_signed(&dir, &key, &address, [&plain, &message])?;
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests)?;
    std::fs::write(guests.join("hostile_guest.wasm"), &plain)?;
    let runtime = Runtime::new(RuntimeConfig {
        cache: Some(ArtifactCache::new(dir.join("compiled"))),
        ..RuntimeConfig::default()
    })?;
    let spec = runtime.load("hostile_guest", &plain)?.spec().clone();
    let crd: CustomResourceDefinition =
        serde_json::from_value(reconciler_host::crd::render(&spec))?;
    let ns = TestNamespace::new("bench-gm").await?;
    let client = ns.client();
    reconciler_testsupport::install_crd(&client, crd).await?;
    reconciler_testsupport::install_crd(&client, serde_json::from_value(gm::crd())?).await?;

    let (mut served, metrics) =
        serve_guest_modules(kubeconfig, &dir, &guests, &ns, &policy, &address).await?;

    let hostile = objects::api(&client, ns.name(), "testing.reconciler.dev/v1", "Hostile");
    let names: Vec<String> = (0..objects).map(|i| format!("h{i:04}")).collect();
    create_hostile(&client, ns.name(), &names).await?;
    let modules = guest_modules(&client);
    let name = format!("bench-hostile-{}", ns.name());
    modules
        .create(
            &PostParams::default(),
            &guest_module(&name, &ns, "Hostile", &pinned[0])?,
        )
        .await
        .context("creating the GuestModule")?;
    // Serving the plain module, as the guests directory did.
    until_module_ready(&modules, &name).await?;
    let swaps_before = Metrics::scrape(metrics)
        .await?
        .counter("reconciler_swaps_total");

    let rounds = update_rounds(&modules, &name, &hostile, &names, &pinned, updates).await?;
    let last = |n: &str| {
        let text = said(n, updates);
        if updates % 2 == 1 {
            format!("v2: {text}")
        } else {
            text
        }
    };
    let shown = behaving(&hostile).await?;
    let lost = names
        .iter()
        .filter(|n| shown.get(*n) != Some(&last(n)))
        .count();
    let after = Metrics::scrape(metrics).await?;
    let swaps = after.counter("reconciler_swaps_total") - swaps_before;
    let (errors, refusals, rollbacks) = (
        after.counter("reconciler_guest_errors_total"),
        after.counter("reconciler_swap_refusals_total"),
        after.counter("reconciler_rollbacks_total"),
    );
    served.stop();

    let counted = Counted {
        swaps,
        lost,
        errors,
        refusals,
        rollbacks,
    };
    report_updates(out, objects, updates, &rounds, &counted)?;
    modules.delete(&name, &Default::default()).await?;
    ns.cleanup().await?;
    drop(registry);
    Ok(())
}

/// The plain and the message Hostile modules pushed to the registry and
/// signed with `key`; their references, pinned by digest, in that order.
fn push_signed(
    dir: &Path,
    key: &KeyPair,
    address: &str,
    modules: [&Vec<u8>; 2],
) -> Result<Vec<String>> {
    let [plain, message] = modules;
    let compiled = dir.join("push-compiled");
    let mut pinned = Vec::new();
    for (bytes, tag) in [(&plain, "plain"), (&message, "message")] {
        let module = dir.join(tag).join("hostile_guest.wasm");
        std::fs::create_dir_all(module.parent().unwrap())?;
        std::fs::write(&module, bytes)?;
        let pushed = host(
            &compiled,
            &[],
            &[
                "push",
                module.to_str().unwrap(),
                &format!("{address}/guests/hostile:{tag}"),
                "--insecure-registry",
                address,
            ],
        );
        ensure!(pushed.status.success(), "push: {}", text(&pushed.stderr));
        let reference = text(&pushed.stdout).trim().to_owned();
        key.sign(&reference);
        pinned.push(reference);
    }
    Ok(pinned)
}

/// A Hostile parent for each name, saying round 0, each evaluated.
async fn create_hostile(client: &kube::Client, namespace: &str, names: &[String]) -> Result<()> {
    let hostile = objects::api(client, namespace, "testing.reconciler.dev/v1", "Hostile");
    stream::iter(names)
        .map(|name| {
            let (client, ns) = (client.clone(), namespace.to_owned());
            async move {
                objects::create(
                    &client,
                    &ns,
                    json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "Hostile",
                           "metadata": {"name": name}, "spec": {"message": said(name, 0)}}),
                )
                .await
            }
        })
        .buffer_unordered(CREATING)
        .collect::<Vec<()>>()
        .await;
    until_all(&hostile, names, |n| said(n, 0), Instant::now()).await?;

    Ok(())
}

/// Waits for the GuestModule `name` to be Ready.
async fn until_module_ready(modules: &kube::Api<DynamicObject>, name: &str) -> Result<()> {
    let since = Instant::now();
    loop {
        let o = serde_json::to_value(modules.get(name).await?)?;
        let ready = o["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if ready {
            break;
        }
        ensure!(
            since.elapsed() < SETTLE_LIMIT,
            "the GuestModule is not Ready after {SETTLE_LIMIT:?}: {}",
            o["status"]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// How long the updates took to reach the parents: the first update (cold)
/// to the first parent, and each later one to the first and to every
/// parent, sorted.
struct Rounds {
    cold: Option<Duration>,
    first: Vec<Duration>,
    every: Vec<Duration>,
}

/// `updates` updates of the GuestModule, alternating between the pinned
/// modules, each followed by a spec change on every parent that must end
/// on the new module's rendering of it.
async fn update_rounds(
    modules: &kube::Api<DynamicObject>,
    name: &str,
    hostile: &kube::Api<DynamicObject>,
    names: &[String],
    pinned: &[String],
    updates: usize,
) -> Result<Rounds> {
    let (mut first, mut every) = (Vec::new(), Vec::new());
    let mut cold = None;
    for update in 1..=updates {
        let variant = update % 2 == 1;
        let rendered = move |text: String| if variant { format!("v2: {text}") } else { text };
        let written = Instant::now();
        modules
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"source": {"oci": pinned[usize::from(variant)]}}})),
            )
            .await
            .context("updating the GuestModule")?;
        let (to_first, to_every) =
            until_all(hostile, names, |n| rendered(said(n, update - 1)), written).await?;
        if update == 1 {
            cold = Some(to_first);
        } else {
            first.push(to_first);
            every.push(to_every);
        }
        // A spec change on every parent right after the swap: each must
        // end on the new module's rendering of it.
        stream::iter(names)
            .map(|n| objects::merge(hostile, n, json!({"spec": {"message": said(n, update)}})))
            .buffer_unordered(CREATING)
            .collect::<Vec<()>>()
            .await;
        until_all(
            hostile,
            names,
            |n| rendered(said(n, update)),
            Instant::now(),
        )
        .await?;
    }
    first.sort();
    every.sort();
    Ok(Rounds { cold, first, every })
}

/// What the host counted over the updates, and the parents not on their
/// last spec.
struct Counted {
    swaps: f64,
    lost: usize,
    errors: f64,
    refusals: f64,
    rollbacks: f64,
}

/// The updates' rows of the table, and the checks that they passed cleanly.
fn report_updates(
    out: &mut Table,
    objects: usize,
    updates: usize,
    rounds: &Rounds,
    counted: &Counted,
) -> Result<()> {
    let Rounds { cold, first, every } = rounds;
    let &Counted {
        swaps,
        lost,
        errors,
        refusals,
        rollbacks,
    } = counted;
    out.section(&format!(
        "a GuestModule updated {updates} times, the signed plain and v2 Hostile modules alternating, promotion direct, {objects} parents served"
    ));
    out.row(
        "first update (pull, signatures, compile, swap) to the first parent on it",
        format!("{:.0} ms", cold.unwrap_or_default().as_secs_f64() * 1e3),
    );
    if !first.is_empty() {
        out.row(
            &format!(
                "update to the first parent on the new module ({} updates, kept by digest)",
                first.len()
            ),
            format!(
                "p50 {}, p99 {}",
                quantile(first, 0.5),
                quantile(first, 0.99)
            ),
        );
        out.row(
            &format!("update to every parent on it ({objects} parents)"),
            format!(
                "p50 {}, p99 {}",
                quantile(every, 0.5),
                quantile(every, 0.99)
            ),
        );
    }
    out.row(
        "swaps counted (one an update)",
        format!("{swaps} of {updates}"),
    );
    out.row("lost updates (a spec change after each swap)", lost);
    out.row(
        "guest errors / refusals / rollbacks during the updates",
        format!("{errors} / {refusals} / {rollbacks}"),
    );
    ensure!(lost == 0, "{lost} parent(s) not on their last spec");
    ensure!(
        swaps == updates as f64,
        "{swaps} swaps counted for {updates} updates"
    );
    ensure!(
        errors == 0.0 && refusals == 0.0 && rollbacks == 0.0,
        "guest errors {errors}, refusals {refusals}, rollbacks {rollbacks}: the updates should pass cleanly"
    );
    Ok(())
}

/// What a Hostile parent says in a round.
fn said(name: &str, round: usize) -> String {
    format!("{name} round {round}")
}

/// Part 4: the JavaScript EvidenceAgent served by a running host from a
/// GuestModule, in place of the Rust one the guests directory serves.
async fn served(out: &mut Table, kubeconfig: &Path) -> Result<()> {
    let registry = Registry::start();
    let address = registry.address.clone();
    let dir = scratch("served");
    let key = KeyPair::generate(&dir, "release");
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "kinds:\n  EvidenceAgent:\n    allOf: [release.pub]\n",
    )?;
    let module = dir.join("evidenceagent_js.wasm");
    std::fs::copy(javascript_agent(), &module)?;
    let bytes = std::fs::metadata(&module)?.len();
    let pushed = host(
        &dir.join("push-compiled"),
        &[],
        &[
            "push",
            module.to_str().unwrap(),
            &format!("{address}/guests/evidenceagent-js:bench"),
            "--insecure-registry",
            &address,
        ],
    );
    ensure!(pushed.status.success(), "push: {}", text(&pushed.stderr));
    let reference = text(&pushed.stdout).trim().to_owned();
    key.sign(&reference);
    let guests = dir.join("guests");
    std::fs::create_dir_all(&guests)?;
    std::fs::copy(
        guest_wasm("evidenceagent-guest"),
        guests.join("evidenceagent_guest.wasm"),
    )?;

    let ns = TestNamespace::new("bench-js").await?;
    let client = ns.client();
    reconciler_host_harness::operator::install_crds(&client).await;
    reconciler_testsupport::install_crd(&client, serde_json::from_value(gm::crd())?).await?;
    let (mut host_process, metrics) =
        serve_guest_modules(kubeconfig, &dir, &guests, &ns, &policy, &address).await?;

    let modules = guest_modules(&client);
    let name = format!("bench-js-{}", ns.name());
    let started = Instant::now();
    modules
        .create(
            &PostParams::default(),
            &guest_module(&name, &ns, "EvidenceAgent", &reference)?,
        )
        .await
        .context("creating the GuestModule")?;
    let serving = loop {
        let o = serde_json::to_value(modules.get(&name).await?)?;
        let serving = o["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Serving" && c["status"] == "True")
        });
        if serving {
            break started.elapsed();
        }
        ensure!(
            started.elapsed() < Duration::from_secs(180),
            "the JavaScript EvidenceAgent does not serve after 180 s: {}",
            o["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // A parent created now is evaluated by the JavaScript module.
    let api_version = "pgtoolbox.fyannk.dev/v1alpha1";
    let agents = objects::api(&client, ns.name(), api_version, "EvidenceAgent");
    let evaluated_from = Instant::now();
    objects::create(
        &client,
        ns.name(),
        json!({"apiVersion": api_version, "kind": "EvidenceAgent",
               "metadata": {"name": "agent"}, "spec": {"cluster": {"name": "pg"}}}),
    )
    .await;
    let evaluated = loop {
        let o = serde_json::to_value(agents.get("agent").await?)?;
        if o["status"]["conditions"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            break evaluated_from.elapsed();
        }
        ensure!(
            evaluated_from.elapsed() < Duration::from_secs(60),
            "the EvidenceAgent is not evaluated after 60 s: {}",
            o["status"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let after = Metrics::scrape(metrics).await?;
    let (swaps, errors) = (
        after.counter("reconciler_swaps_total"),
        after.counter("reconciler_guest_errors_total"),
    );
    host_process.stop();

    out.section(&format!(
        "the JavaScript EvidenceAgent ({:.1} MB) served by a running host from a signed GuestModule, in place of the Rust one",
        bytes as f64 / 1e6
    ));
    out.row(
        "GuestModule created to Serving True (pull, signatures, compile, gate, swap)",
        format!("{:.1} s", serving.as_secs_f64()),
    );
    out.row(
        "an EvidenceAgent created after, to its status written by it",
        format!("{:.0} ms", evaluated.as_secs_f64() * 1e3),
    );
    out.row(
        "swaps counted / guest errors",
        format!("{swaps} / {errors}"),
    );
    ensure!(swaps == 1.0, "{swaps} swaps counted for one GuestModule");
    ensure!(errors == 0.0, "{errors} guest errors");
    modules.delete(&name, &Default::default()).await?;
    ns.cleanup().await?;
    drop(registry);
    Ok(())
}

/// `reconciler-host run --guest-modules` serving `guests` in `ns`'s
/// namespace and its GuestModules (labelled for it) under `policy`,
/// promotion direct, synced; and its metrics address.
async fn serve_guest_modules(
    kubeconfig: &Path,
    dir: &Path,
    guests: &Path,
    ns: &TestNamespace,
    policy: &Path,
    registry: &str,
) -> Result<(HostProcess, std::net::SocketAddr)> {
    let label = format!("reconciler.dev/bench={}", ns.name());
    let metrics = free_port()?;
    let (compiled, pulled) = (dir.join("compiled"), dir.join("pulled"));
    let args: Vec<&OsStr> = [
        "--cache-dir",
        compiled.to_str().unwrap(),
        "run",
        "--guests",
        guests.to_str().unwrap(),
        "--guests-poll",
        "200ms",
        "--namespaces",
        ns.name(),
        "--guest-modules",
        "--guest-modules-selector",
        &label,
        "--verification-policy",
        policy.to_str().unwrap(),
        "--insecure-registry",
        registry,
        "--pulled-dir",
        pulled.to_str().unwrap(),
        "--promotion",
        "direct",
    ]
    .map(OsStr::new)
    .to_vec();
    let mut host = HostProcess::start(kubeconfig, dir.join("host.log"), metrics, &args)?;
    host.wait_synced(Duration::from_secs(120)).await?;
    Ok((host, metrics))
}

/// GuestModules, as admin writes them.
fn guest_modules(client: &kube::Client) -> kube::Api<DynamicObject> {
    kube::Api::all_with(
        client.clone(),
        &objects::resource_of(&format!("{}/{}", gm::GROUP, gm::VERSION), gm::KIND),
    )
}

/// The GuestModule `name` serving `kind` from `oci`, promotion direct,
/// labelled for `ns`'s host.
fn guest_module(name: &str, ns: &TestNamespace, kind: &str, oci: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": format!("{}/{}", gm::GROUP, gm::VERSION),
        "kind": gm::KIND,
        "metadata": {"name": name, "labels": {"reconciler.dev/bench": ns.name()}},
        "spec": {"kind": kind, "source": {"oci": oci}, "promotion": "direct"},
    }))?)
}
