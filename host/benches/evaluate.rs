//! One guest evaluation through wasm against the same guest logic called
//! natively, over the same scenario, for two guests:
//!
//! - EvidenceAgent: the first pass of
//!   `guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml` (a
//!   healthy agent with its Cluster, ObjectStore, credentials Secret,
//!   serving-cert Secret, CA ConfigMap, Service, Deployment and Pod);
//! - PgToolBoxConsole: the first pass of
//!   `guests/pgtoolboxconsole/fixtures/instance-ca-bundle-full.yaml` (a
//!   healthy console published through a Route, with its NetworkPolicy,
//!   Node, Pod, ClusterRoles, four CloudNativePG Clusters and their CA
//!   Secrets): a guest that reads many facts.
//!
//! Per guest:
//! - wasm: `Runtime` + `Module::evaluate` (a pool slot, a fresh store
//!   and instance every call, facts derived and marshalled by the host from
//!   a `MemorySource` holding the fixture's objects, slimmed as the
//!   operator's cache slims them). "warm" is the steady state of the
//!   operator: the objects did not change since an earlier pass read them
//!   (the host derives every fact from their texts each pass; what stays
//!   warm is the processor's caches and the allocator); "cold" gives every
//!   pass objects no pass read before (a fresh copy of the source).
//! - native: `Guest::evaluate` through the SDK's `Guest` trait, against
//!   facts the host's own `FactServer` derived once from the same objects
//!   (converted to the SDK's types), so both paths see the very same facts
//!   and the comparison is of the evaluation alone.
//!
//! Both verdicts are asserted equal before anything is timed. Then the wasm
//! time is taken apart: a paused evaluation, the runtime's slot + store +
//! instance alone (`Module::instantiate_only`), a replica of the
//! runtime's store setup on wasmtime's default (on-demand) allocator, what
//! the runtime did before the pool, and the host's fact derivation replayed
//! natively, call by call, warm and cold.
//!
//! Then one pass of a kind in each language: the EvidenceAgent natively,
//! as the Rust guest and as the JavaScript one (guests/js/evidenceagent);
//! the SecretCheck natively, as its Rust twin (guests/testing/secretcheck)
//! and as the Python guest (guests/py/secretcheck), on its `keys-present`
//! fixture. The three verdicts of a kind are asserted equal first. Each
//! of those modules' size, its cold load (compiled by a runtime with no
//! artifact cache, once) and its warm load (deserialized from the artifact
//! cache, `BENCH_LOAD_ITERS` times, default 5) are printed after.
//!
//! `make bench` (or `cargo bench -p reconciler-host --bench evaluate`).
//! Iterations: `BENCH_NATIVE_ITERS` (default 20000), `BENCH_WASM_ITERS`
//! (default 5000); `BENCH_PROFILE_WASM=<n>` only runs `n` wasm passes of
//! each guest (for `perf record`).

use reconciler_host_harness::guests as support;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use evidenceagent_guest::EvidenceAgent;
use pgtoolboxconsole_guest::PgToolBoxConsole;
use reconciler_conventions::kind::KindRef;
use reconciler_conventions::verdict::{ConditionStatus, EventType, Verdict};
use reconciler_guest_sdk as sdk;
use reconciler_guest_sdk::Facts;
use reconciler_host::contract::convert;
use reconciler_host::contract::current::{Guest as GuestWorld, GuestPre};
use reconciler_host::contract::exports as wit_rec;
use reconciler_host::contract::facts::{self as hf, Host as _};
use reconciler_host::contract::types as ht;
use reconciler_host::facts::meta::object_meta;
use reconciler_host::facts::{
    Availability, Cached, FactServer, MemorySource, ObjectSource, Selector, SourceError,
};
use reconciler_host::fixture::Fixture;
use reconciler_host::fixture::format::DEFAULT_NOW;
use reconciler_host::operator::cluster::cache::slim;
use reconciler_host::runtime::limits::MemoryLimiter;
use reconciler_host::runtime::sandbox::{self, Sandbox};
use reconciler_host::runtime::{
    ArtifactCache, EvaluateRequest, Limits, Module, Runtime, RuntimeConfig,
};
use secretcheck_guest::SecretCheck;
use serde_json::Value;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtxView, WasiView};

/// A guest of the bench: its crate, its fixture, its native logic.
struct Case {
    kind: &'static str,
    crate_name: &'static str,
    fixture: &'static str,
    native: fn(&sdk::Evaluation, &dyn Facts) -> sdk::Verdict,
}

const CASES: [Case; 2] = [
    Case {
        kind: "EvidenceAgent",
        crate_name: "evidenceagent-guest",
        fixture: "guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml",
        native: <EvidenceAgent as sdk::Guest>::evaluate,
    },
    Case {
        kind: "PgToolBoxConsole",
        crate_name: "pgtoolboxconsole-guest",
        fixture: "guests/pgtoolboxconsole/fixtures/instance-ca-bundle-full.yaml",
        native: <PgToolBoxConsole as sdk::Guest>::evaluate,
    },
];

/// The headline figures of one guest.
struct Headline {
    kind: &'static str,
    native: Stats,
    wasm: Stats,
    cold: Stats,
    instantiate: Stats,
    derivation: Stats,
}

fn main() {
    let native_iters = iterations("BENCH_NATIVE_ITERS", 20_000);
    let wasm_iters = iterations("BENCH_WASM_ITERS", 5_000);
    let profile = std::env::var("BENCH_PROFILE_WASM")
        .ok()
        .and_then(|n| n.parse::<usize>().ok());
    let runtime = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: None,
    })
    .expect("runtime");
    println!();
    println!(
        "runtime: pooling allocator, {} instance slots, {} MiB memory cap, {:?} deadline",
        runtime.instances(),
        runtime.limits().memory_bytes >> 20,
        runtime.limits().deadline
    );
    let mut headlines = Vec::new();
    for case in &CASES {
        if let Some(h) = bench(case, &runtime, native_iters, wasm_iters, profile) {
            headlines.push(h);
        }
    }
    if headlines.is_empty() {
        return;
    }
    let languages = languages(&runtime, native_iters, wasm_iters);
    println!();
    println!(
        "summary (p50; load average at the end: {}, {} CPUs)",
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into()),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "{:<18} {:>10} {:>12} {:>7} {:>12} {:>7} {:>13} {:>12}",
        "guest",
        "native",
        "wasm (warm)",
        "ratio",
        "wasm (cold)",
        "ratio",
        "instantiate",
        "host facts"
    );
    for h in &headlines {
        let ratio = |s: &Stats| format!("{:.1}x", s.p50.as_secs_f64() / h.native.p50.as_secs_f64());
        println!(
            "{:<18} {:>10} {:>12} {:>7} {:>12} {:>7} {:>13} {:>12}",
            h.kind,
            micros(h.native.p50),
            micros(h.wasm.p50),
            ratio(&h.wasm),
            micros(h.cold.p50),
            ratio(&h.cold),
            micros(h.instantiate.p50),
            micros(h.derivation.p50),
        );
    }
    if !languages.is_empty() {
        println!();
        println!(
            "one pass of a kind in each language (p50, warm; ratio to the kind's native Rust logic and to its Rust guest)"
        );
        println!(
            "{:<36} {:>10} {:>10} {:>12} {:>13}",
            "guest", "pass", "vs native", "vs Rust wasm", "instantiate"
        );
        let ratio =
            |a: &Stats, b: &Stats| format!("{:.1}x", a.p50.as_secs_f64() / b.p50.as_secs_f64());
        for l in &languages {
            println!(
                "{:<36} {:>10} {:>10} {:>12} {:>13}",
                l.name,
                micros(l.pass.p50),
                ratio(&l.pass, &l.native),
                l.rust_wasm
                    .as_ref()
                    .map_or_else(|| "-".into(), |r| ratio(&l.pass, r)),
                l.instantiate
                    .as_ref()
                    .map_or_else(|| "-".into(), |i| micros(i.p50)),
            );
        }
        println!();
        println!(
            "each language's module: its size, a cold load (compiled, no artifact cache; one) and a warm load (from the artifact cache; p50)"
        );
        println!(
            "{:<36} {:>10} {:>12} {:>10}",
            "guest", "size", "cold load", "warm load"
        );
        for l in &languages {
            if let Some(load) = &l.loading {
                println!(
                    "{:<36} {:>7.1} MB {:>10.2} s {:>7.1} ms",
                    l.name,
                    load.bytes as f64 / 1e6,
                    load.cold.as_secs_f64(),
                    load.warm.p50.as_secs_f64() * 1e3,
                );
            }
        }
    }
}

/// A module's size and what loading it costs, compiled or from the
/// artifact cache.
struct Loading {
    bytes: u64,
    /// One load by a runtime with no artifact cache: compiled.
    cold: Duration,
    /// Loads by a runtime whose artifact cache holds the module's artifact.
    warm: Stats,
}

/// The module at `path` loaded once by `runtime` (which has no artifact
/// cache) and `BENCH_LOAD_ITERS` times by `cached`, whose cache is primed
/// by one load first.
fn loading(path: &Path, runtime: &Runtime, cached: &Runtime) -> Loading {
    let bytes = std::fs::metadata(path).expect("the module").len();
    let started = Instant::now();
    black_box(runtime.load_file(path).expect("loads"));
    let cold = started.elapsed();
    cached.load_file(path).expect("loads and primes the cache");
    let n = iterations("BENCH_LOAD_ITERS", 5);
    let warm = time(n, 0, || {
        black_box(cached.load_file(path).expect("loads from the cache"));
    });
    Loading { bytes, cold, warm }
}

/// One language's pass in the summary.
struct Language {
    name: String,
    pass: Stats,
    instantiate: Option<Stats>,
    native: Stats,
    rust_wasm: Option<Stats>,
    /// The module's size and load times (none for native code).
    loading: Option<Loading>,
}

/// The kinds of the languages summary: each with its native Rust logic,
/// its Rust guest, and the same kind in another language, built by `make
/// guests-js guests-py` (`make bench` does).
const LANGUAGE_CASES: [(Case, &str, &str); 2] = [
    (
        Case {
            kind: "EvidenceAgent",
            crate_name: "evidenceagent-guest",
            fixture: "guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml",
            native: <EvidenceAgent as sdk::Guest>::evaluate,
        },
        "JavaScript",
        "evidenceagent_js.wasm",
    ),
    (
        Case {
            kind: "SecretCheck",
            crate_name: "secretcheck-guest",
            fixture: "guests/py/secretcheck/fixtures/keys-present.yaml",
            native: <SecretCheck as sdk::Guest>::evaluate,
        },
        "Python",
        "secretcheck_py.wasm",
    ),
];

/// A pass of each kind of [`LANGUAGE_CASES`] natively, through its Rust
/// guest and through the guest in the other language, the three verdicts
/// asserted equal first; a language whose guest was not built is skipped
/// with a note.
fn languages(runtime: &Runtime, native_iters: usize, wasm_iters: usize) -> Vec<Language> {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let polyglot = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("polyglot");
    let artifacts = std::env::temp_dir().join(format!("bench-artifacts-{}", std::process::id()));
    let cached = Runtime::new(RuntimeConfig {
        limits: runtime.limits(),
        cache: Some(ArtifactCache::new(&artifacts)),
    })
    .expect("runtime");
    let mut out = Vec::new();
    for (case, language, file) in &LANGUAGE_CASES {
        let path = polyglot.join(file);
        if !path.is_file() {
            println!();
            println!(
                "languages: {} missing (make guests-js guests-py): {language} skipped",
                path.display()
            );
            continue;
        }
        let fixture = Fixture::load(&workspace.join(case.fixture)).expect("the fixture loads");
        let scenario = Scenario::new(&fixture);
        let source: Arc<dyn ObjectSource> = Arc::new(scenario.source.clone());
        let rust = runtime
            .load_file(&support::guest_wasm(case.crate_name))
            .expect("the Rust guest loads");
        let other = runtime
            .load_file(&path)
            .unwrap_or_else(|e| panic!("the {language} guest loads: {e}"));
        let recorder = Recorder::new(&scenario, &rust);
        let native_verdict = (case.native)(&scenario.input, &recorder);
        let (derived, _) = recorder.finish();
        let rust_verdict = scenario.wasm(&rust, source.clone(), false).expect("Rust");
        let other_verdict = scenario
            .wasm(&other, source.clone(), false)
            .unwrap_or_else(|e| panic!("{language}: {e}"));
        assert_eq!(
            summary_host(&rust_verdict),
            summary_host(&other_verdict),
            "the {language} {}'s verdict is the Rust one's",
            case.kind
        );
        assert_eq!(
            summary_host(&rust_verdict),
            summary_sdk(&native_verdict),
            "the Rust {}'s verdict natively and in wasm",
            case.kind
        );
        let native = time(native_iters, native_iters / 10, || {
            black_box((case.native)(
                black_box(&scenario.input),
                black_box(&derived),
            ));
        });
        let pass = |module: &Module, n: usize| {
            time(n, n / 10, || {
                black_box(scenario.wasm(module, source.clone(), false).unwrap());
            })
        };
        let instantiate = |module: &Module, n: usize| {
            time(n, n / 10, || {
                module.instantiate_only().expect("instantiates")
            })
        };
        let slow_iters = (wasm_iters / 10).max(10);
        let rust_pass = pass(&rust, wasm_iters);
        out.push(Language {
            name: format!("{}, native Rust", case.kind),
            pass: native.clone(),
            instantiate: None,
            native: native.clone(),
            rust_wasm: None,
            loading: None,
        });
        out.push(Language {
            name: format!("{}, Rust wasm", case.kind),
            pass: rust_pass.clone(),
            instantiate: Some(instantiate(&rust, wasm_iters)),
            native: native.clone(),
            rust_wasm: Some(rust_pass.clone()),
            loading: Some(loading(
                &support::guest_wasm(case.crate_name),
                runtime,
                &cached,
            )),
        });
        out.push(Language {
            name: format!("{}, {language} wasm", case.kind),
            pass: pass(&other, slow_iters),
            instantiate: Some(instantiate(&other, slow_iters)),
            native,
            rust_wasm: Some(rust_pass),
            loading: Some(loading(&path, runtime, &cached)),
        });
    }
    let _ = std::fs::remove_dir_all(&artifacts);
    out
}

fn bench(
    case: &Case,
    runtime: &Runtime,
    native_iters: usize,
    wasm_iters: usize,
    profile: Option<usize>,
) -> Option<Headline> {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixture = Fixture::load(&workspace.join(case.fixture)).expect("the fixture loads");
    let scenario = Scenario::new(&fixture);
    let wasm_path = support::guest_wasm(case.crate_name);
    let module = runtime.load_file(&wasm_path).expect("the guest loads");

    // Both paths, once, compared before anything is timed.
    let agreement = agree(case, &scenario, &module);

    // The operator's steady state: the cache's objects, read before.
    let source: Arc<dyn ObjectSource> = Arc::new(scenario.source.clone());
    if let Some(n) = profile {
        for _ in 0..n {
            black_box(scenario.wasm(&module, source.clone(), false).unwrap());
        }
        return None;
    }

    let passes = time_passes(
        case,
        &scenario,
        &module,
        &source,
        &agreement,
        native_iters,
        wasm_iters,
    );
    // Where the wasm time goes.
    let wasm_parts = time_wasm_parts(&scenario, &module, &wasm_path, &source, wasm_iters);
    let host_parts = time_host_parts(&scenario, &module, &source, &agreement.calls, native_iters);

    // The report.
    report(case, &agreement, &passes, &wasm_parts, &host_parts);
    Some(Headline {
        kind: case.kind,
        native: passes.native,
        wasm: passes.wasm,
        cold: passes.cold,
        instantiate: wasm_parts.instantiate,
        derivation: host_parts.derivation,
    })
}

/// What both paths agreed on, and what the native one needs to run again.
struct Agreement {
    /// The facts the host derived, as the native path reads them.
    derived: Derived,
    /// The guest's fact calls, in order.
    calls: Vec<Call>,
    /// The verdict both paths gave.
    agreed: String,
    /// How many reads of the object source one wasm evaluation makes.
    source_reads: usize,
}

/// Both paths, once: the wasm verdict and the native one (from the
/// recorder and from the facts it derived) asserted equal.
fn agree(case: &Case, scenario: &Scenario, module: &Module) -> Agreement {
    let native_eval = case.native;
    let counting = Arc::new(Counting::new(scenario.fresh_source()));
    let wasm_verdict = scenario
        .wasm(module, counting.clone(), false)
        .expect("the wasm evaluation succeeds");
    let source_reads = counting.total();
    let recorder = Recorder::new(scenario, module);
    let native_first = native_eval(&scenario.input, &recorder);
    let (derived, calls) = recorder.finish();
    let native_verdict = native_eval(&scenario.input, &derived);
    assert_eq!(
        summary_sdk(&native_first),
        summary_sdk(&native_verdict),
        "the native verdict is the same from derived facts as from the recorder"
    );
    let agreed = assert_same(&wasm_verdict, &native_verdict);

    Agreement {
        derived,
        calls,
        agreed,
        source_reads,
    }
}

/// A whole pass: native, and through wasm warm and cold.
struct Passes {
    native: Stats,
    wasm: Stats,
    cold: Stats,
}

fn time_passes(
    case: &Case,
    scenario: &Scenario,
    module: &Module,
    source: &Arc<dyn ObjectSource>,
    agreement: &Agreement,
    native_iters: usize,
    wasm_iters: usize,
) -> Passes {
    let native_eval = case.native;
    let derived = &agreement.derived;
    // Native.
    let native = time(native_iters, native_iters / 10, || {
        black_box(native_eval(black_box(&scenario.input), black_box(derived)));
    });
    // Through wasm, the host's way.
    let wasm = time(wasm_iters, wasm_iters / 10, || {
        black_box(scenario.wasm(module, source.clone(), false).unwrap());
    });
    // Every object new to the pass: a fresh copy of the source each pass.
    let cold_iters = (wasm_iters / 5).max(1);
    let mut fresh = (0..cold_iters + cold_iters / 10)
        .map(|_| -> Arc<dyn ObjectSource> { Arc::new(scenario.fresh_source()) })
        .collect::<Vec<_>>()
        .into_iter();
    let cold = time(cold_iters, cold_iters / 10, || {
        let source = fresh.next().expect("a fresh source per pass");
        black_box(scenario.wasm(module, source, false).unwrap());
    });
    Passes { native, wasm, cold }
}

/// The wasm pass taken apart: the runtime's slot, store and instance, and
/// the same on wasmtime's on-demand allocator.
struct WasmParts {
    paused: Stats,
    instantiate: Stats,
    replica_instantiate: Stats,
    replica_full: Stats,
    warm: Stats,
}

fn time_wasm_parts(
    scenario: &Scenario,
    module: &Module,
    wasm_path: &std::path::Path,
    source: &Arc<dyn ObjectSource>,
    wasm_iters: usize,
) -> WasmParts {
    let breakdown_iters = wasm_iters;
    let paused = time(breakdown_iters, breakdown_iters / 10, || {
        black_box(scenario.wasm(module, source.clone(), true).unwrap());
    });
    let instantiate = time(breakdown_iters, breakdown_iters / 10, || {
        module.instantiate_only().expect("instantiates");
    });
    let replica = Replica::new(wasm_path, module).expect("the replica links");
    let replica_instantiate = time(breakdown_iters, breakdown_iters / 10, || {
        let mut store = replica.store(scenario, source.clone());
        black_box(replica.pre.instantiate(&mut store).unwrap());
    });
    let replica_full = time(breakdown_iters, breakdown_iters / 10, || {
        black_box(replica.evaluate(scenario, source.clone()));
    });
    let warm = {
        let mut store = replica.store(scenario, source.clone());
        let guest = replica.pre.instantiate(&mut store).expect("instantiates");
        let input = scenario.wit_input();
        time(breakdown_iters, breakdown_iters / 10, || {
            // A fresh fact server each call: the instance is reused, the
            // facts are not remembered by the pass.
            store.data_mut().facts = FactServer::new(
                source.clone(),
                replica.declared.iter().cloned(),
                scenario.now,
            );
            black_box(
                guest
                    .reconciler_guest0_6_0_reconciler()
                    .call_evaluate(&mut store, &input)
                    .expect("evaluates"),
            );
        })
    };
    WasmParts {
        paused,
        instantiate,
        replica_instantiate,
        replica_full,
        warm,
    }
}

/// The host's share of a pass: the parent's marshalling and the fact
/// derivation replayed natively, whole and call by call.
struct HostParts {
    parent_marshal: Stats,
    derivation: Stats,
    cold_derivation: Stats,
    server_only: Stats,
    per_call: Vec<(String, Stats)>,
}

fn time_host_parts(
    scenario: &Scenario,
    module: &Module,
    source: &Arc<dyn ObjectSource>,
    calls: &[Call],
    native_iters: usize,
) -> HostParts {
    let parent_marshal = time(native_iters, native_iters / 10, || {
        black_box(scenario.parent_object());
    });
    let declared: Vec<KindRef> = module.spec().readable().cloned().collect();
    let replay = |source: Arc<dyn ObjectSource>| {
        let mut server = FactServer::new(source, declared.iter().cloned(), scenario.now);
        for call in calls {
            call.replay(&mut server);
        }
        black_box(server.into_reads());
    };
    let derivation = time(native_iters, native_iters / 10, || replay(source.clone()));
    let cold_derivation_iters = (native_iters / 10).max(1);
    let mut fresh = (0..cold_derivation_iters + cold_derivation_iters / 10)
        .map(|_| -> Arc<dyn ObjectSource> { Arc::new(scenario.fresh_source()) })
        .collect::<Vec<_>>()
        .into_iter();
    let cold_derivation = time(cold_derivation_iters, cold_derivation_iters / 10, || {
        replay(fresh.next().expect("a fresh source per replay"))
    });
    let server_only = time(native_iters, native_iters / 10, || {
        black_box(FactServer::new(
            source.clone(),
            declared.iter().cloned(),
            scenario.now,
        ));
    });
    let mut per_call: Vec<(String, Stats)> = Vec::new();
    for call in dedup(calls) {
        let stats = time(native_iters / 4, native_iters / 40, || {
            let mut server =
                FactServer::new(source.clone(), declared.iter().cloned(), scenario.now);
            call.replay(&mut server);
        });
        let repeats = calls.iter().filter(|c| **c == call).count();
        per_call.push((format!("{call} (x{repeats})"), stats));
    }
    HostParts {
        parent_marshal,
        derivation,
        cold_derivation,
        server_only,
        per_call,
    }
}

fn report(
    case: &Case,
    agreement: &Agreement,
    passes: &Passes,
    wasm_parts: &WasmParts,
    host_parts: &HostParts,
) {
    let Agreement {
        calls,
        agreed,
        source_reads,
        ..
    } = agreement;
    let Passes { native, wasm, cold } = passes;
    let WasmParts {
        paused,
        instantiate,
        replica_instantiate,
        replica_full,
        warm,
    } = wasm_parts;
    let HostParts {
        parent_marshal,
        derivation,
        cold_derivation,
        server_only,
        per_call,
    } = host_parts;
    println!();
    println!("{} evaluation: {}, first pass", case.kind, case.fixture);
    println!("verdict (both paths, asserted equal): {agreed}");
    println!(
        "facts per evaluation: {} guest calls ({}), {} object-source reads",
        calls.len(),
        call_counts(calls),
        source_reads
    );
    println!();
    header();
    row(&format!("native  {}::evaluate", case.kind), native);
    row("wasm    Module::evaluate, warm", wasm);
    row("wasm    Module::evaluate, cold", cold);
    for (name, s) in [("warm", &wasm), ("cold", &cold)] {
        println!(
            "{:<58} {:>9} {:>10} {:>10}",
            format!("ratio wasm/native, {name}"),
            format!("{:.1}x", s.p50.as_secs_f64() / native.p50.as_secs_f64()),
            format!("{:.1}x", s.p99.as_secs_f64() / native.p99.as_secs_f64()),
            format!("{:.1}x", s.mean.as_secs_f64() / native.mean.as_secs_f64()),
        );
    }
    println!();
    println!("where the wasm time goes (per evaluation)");
    header();
    row("wasm, paused (slot + store + instantiate + call)", paused);
    row(
        "runtime: slot + fresh store + instantiate + drop",
        instantiate,
    );
    row(
        "on-demand allocator: fresh store + instantiate",
        replica_instantiate,
    );
    row(
        "on-demand allocator: + evaluate (the runtime before)",
        replica_full,
    );
    row("evaluate again, same warm instance, fresh facts", warm);
    row(
        "host: parent marshalling (meta + JSON text)",
        parent_marshal,
    );
    row(
        &format!("host: fact derivation, {} calls, warm", calls.len()),
        derivation,
    );
    row(
        &format!("host: fact derivation, {} calls, cold", calls.len()),
        cold_derivation,
    );
    row("  FactServer::new alone (once per pass)", server_only);
    for (name, stats) in per_call {
        row(&format!("  {name}, warm, + FactServer::new"), stats);
    }
    let guest_in_wasm = wasm
        .mean
        .saturating_sub(instantiate.mean + derivation.mean + parent_marshal.mean);
    println!();
    println!(
        "mean split, warm: slot + store + instance {} + host facts {} + parent {} + guest logic, copies and teardown {} (native guest logic: {})",
        micros(instantiate.mean),
        micros(derivation.mean),
        micros(parent_marshal.mean),
        micros(guest_in_wasm),
        micros(native.mean),
    );
}

fn iterations(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// The fixture's first pass, in the shapes both paths need.
struct Scenario {
    parent: Value,
    settings: Vec<(String, String)>,
    now: jiff::Timestamp,
    /// The fixture's objects, slimmed as the operator's cache slims them.
    objects: Vec<Value>,
    source: MemorySource,
    /// The native path's input: what the wasm guest receives.
    input: sdk::Evaluation,
}

impl Scenario {
    fn new(fixture: &Fixture) -> Self {
        assert!(fixture.unavailable.is_empty(), "the scenario has every API");
        assert!(
            fixture.last_applies.is_empty(),
            "the scenario has no applies"
        );
        let settings: Vec<(String, String)> = fixture
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let now = fixture
            .now
            .unwrap_or_else(|| DEFAULT_NOW.parse().expect("the default clock"));
        let objects: Vec<Value> = fixture.objects.iter().cloned().map(slim).collect();
        let mut scenario = Scenario {
            parent: fixture.parent.clone(),
            settings: settings.clone(),
            now,
            source: MemorySource::new(),
            objects,
            input: sdk::Evaluation {
                parent: sdk::Object {
                    meta: convert(object_meta(&fixture.parent)),
                    json: String::new(),
                },
                paused: false,
                settings,
            },
        };
        scenario.source = scenario.fresh_source();
        scenario.input.parent.json = scenario.parent.to_string();
        scenario
    }

    /// The objects in a new source: nothing derived from them yet.
    fn fresh_source(&self) -> MemorySource {
        let mut source = MemorySource::new();
        for o in &self.objects {
            source.insert(o.clone());
        }
        source
    }

    fn wasm(
        &self,
        module: &Module,
        source: Arc<dyn ObjectSource>,
        paused: bool,
    ) -> Result<Verdict, String> {
        module
            .evaluate(EvaluateRequest {
                parent: &self.parent,
                paused,
                settings: &self.settings,
                source,
                now: self.now,
            })
            .outcome
            .map_err(|e| e.to_string())
    }

    /// The runtime's input to `evaluate`, in the host's contract types.
    fn wit_input(&self) -> wit_rec::Evaluation {
        wit_rec::Evaluation {
            parent: self.parent_object(),
            paused: false,
            settings: self.settings.clone(),
        }
    }

    /// What the runtime hands the guest as the parent.
    fn parent_object(&self) -> ht::Object {
        ht::Object {
            meta: object_meta(&self.parent),
            json: self.parent.to_string(),
        }
    }
}

// ---------------------------------------------------------------------------
// Native facts: the host's own derivation, recorded once, served by clone.

/// One call of the `facts` interface, as the guest made it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Call {
    Now,
    Workload(String, String),
    Secret(String, String),
    ConfigMap(String, String),
    Get([String; 3], String, String),
    List([String; 3], String, Vec<(String, String)>),
    Availability([String; 3], String),
    NetworkPolicies(String),
    NodePodCidrs,
    Exposure(u8, String, String),
    ClusterRole(String),
    SecretCertificates(String, String, String),
    LastApply([String; 3], String, String),
    Children([String; 3]),
    LastApplyTime([String; 3], String, String),
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Now => write!(f, "now"),
            Call::Workload(ns, n) => write!(f, "workload {ns}/{n}"),
            Call::Secret(ns, n) => write!(f, "secret {ns}/{n}"),
            Call::ConfigMap(ns, n) => write!(f, "config-map {ns}/{n}"),
            Call::Get(k, ns, n) => write!(f, "get {} {ns}/{n}", k[2]),
            Call::List(k, ns, s) => write!(f, "list {} {ns} {s:?}", k[2]),
            Call::Availability(k, ns) => write!(f, "api-availability {} {ns}", k[2]),
            Call::NetworkPolicies(ns) => write!(f, "network-policies {ns}"),
            Call::NodePodCidrs => write!(f, "node-pod-cidrs"),
            Call::Exposure(k, ns, n) => write!(f, "exposure {:?} {ns}/{n}", host_exposure(*k)),
            Call::ClusterRole(n) => write!(f, "cluster-role {n}"),
            Call::SecretCertificates(ns, n, k) => write!(f, "secret-certificates {ns}/{n} {k}"),
            Call::LastApply(k, ns, n) => write!(f, "last-apply {} {ns}/{n}", k[2]),
            Call::Children(k) => write!(f, "children {}", k[2]),
            Call::LastApplyTime(k, ns, n) => write!(f, "last-apply-time {} {ns}/{n}", k[2]),
        }
    }
}

impl Call {
    fn kind(&self) -> &'static str {
        match self {
            Call::Now => "now",
            Call::Workload(..) => "workload",
            Call::Secret(..) => "secret",
            Call::ConfigMap(..) => "config-map",
            Call::Get(..) => "get",
            Call::List(..) => "list",
            Call::Availability(..) => "api-availability",
            Call::NetworkPolicies(..) => "network-policies",
            Call::NodePodCidrs => "node-pod-cidrs",
            Call::Exposure(..) => "exposure",
            Call::ClusterRole(..) => "cluster-role",
            Call::SecretCertificates(..) => "secret-certificates",
            Call::LastApply(..) => "last-apply",
            Call::Children(..) => "children",
            Call::LastApplyTime(..) => "last-apply-time",
        }
    }

    /// The same call against the host's fact server, natively, converted
    /// to the SDK's types (the same WIT types on both sides: `convert`).
    fn answer(&self, server: &mut FactServer) -> Answer {
        match self {
            Call::Now => Answer::Now(convert(server.now())),
            Call::Workload(ns, n) => {
                Answer::Workload(convert(server.workload(ns.clone(), n.clone())))
            }
            Call::Secret(ns, n) => Answer::Secret(convert(server.secret(ns.clone(), n.clone()))),
            Call::ConfigMap(ns, n) => {
                Answer::ConfigMap(convert(server.config_map(ns.clone(), n.clone())))
            }
            Call::Get(k, ns, n) => {
                Answer::Get(convert(server.get(host_kind(k), ns.clone(), n.clone())))
            }
            Call::List(k, ns, s) => {
                Answer::List(convert(server.list(host_kind(k), ns.clone(), s.clone())))
            }
            Call::Availability(k, ns) => {
                Answer::Availability(convert(server.api_availability(host_kind(k), ns.clone())))
            }
            Call::NetworkPolicies(ns) => {
                Answer::NetworkPolicies(convert(server.network_policies(ns.clone())))
            }
            Call::NodePodCidrs => Answer::NodePodCidrs(convert(server.node_pod_cidrs())),
            Call::Exposure(k, ns, n) => Answer::Exposure(convert(server.exposure(
                host_exposure(*k),
                ns.clone(),
                n.clone(),
            ))),
            Call::ClusterRole(n) => Answer::ClusterRole(convert(server.cluster_role(n.clone()))),
            Call::SecretCertificates(ns, n, k) => Answer::SecretCertificates(convert(
                server.secret_certificates(ns.clone(), n.clone(), k.clone()),
            )),
            Call::LastApply(k, ns, n) => Answer::LastApply(convert(server.last_apply(
                host_kind(k),
                ns.clone(),
                n.clone(),
            ))),
            Call::Children(k) => Answer::Children(convert(server.children(host_kind(k)))),
            Call::LastApplyTime(k, ns, n) => Answer::LastApplyTime(convert(
                server.last_apply_time(host_kind(k), ns.clone(), n.clone()),
            )),
        }
    }

    /// The same call against the host's fact server, natively, as the
    /// host's types (what the runtime lowers into the guest).
    fn replay(&self, server: &mut FactServer) {
        match self {
            Call::Now => {
                black_box(server.now());
            }
            Call::Workload(ns, n) => {
                black_box(server.workload(ns.clone(), n.clone())).ok();
            }
            Call::Secret(ns, n) => {
                black_box(server.secret(ns.clone(), n.clone())).ok();
            }
            Call::ConfigMap(ns, n) => {
                black_box(server.config_map(ns.clone(), n.clone())).ok();
            }
            Call::Get(k, ns, n) => {
                black_box(server.get(host_kind(k), ns.clone(), n.clone())).ok();
            }
            Call::List(k, ns, s) => {
                black_box(server.list(host_kind(k), ns.clone(), s.clone())).ok();
            }
            Call::Availability(k, ns) => {
                black_box(server.api_availability(host_kind(k), ns.clone()));
            }
            Call::NetworkPolicies(ns) => {
                black_box(server.network_policies(ns.clone())).ok();
            }
            Call::NodePodCidrs => {
                black_box(server.node_pod_cidrs());
            }
            Call::Exposure(k, ns, n) => {
                black_box(server.exposure(host_exposure(*k), ns.clone(), n.clone())).ok();
            }
            Call::ClusterRole(n) => {
                black_box(server.cluster_role(n.clone())).ok();
            }
            Call::SecretCertificates(ns, n, k) => {
                black_box(server.secret_certificates(ns.clone(), n.clone(), k.clone())).ok();
            }
            Call::LastApply(k, ns, n) => {
                black_box(server.last_apply(host_kind(k), ns.clone(), n.clone()));
            }
            Call::Children(k) => {
                black_box(server.children(host_kind(k))).ok();
            }
            Call::LastApplyTime(k, ns, n) => {
                black_box(server.last_apply_time(host_kind(k), ns.clone(), n.clone()));
            }
        }
    }
}

fn key(kind: &sdk::KindRef) -> [String; 3] {
    [kind.group.clone(), kind.version.clone(), kind.kind.clone()]
}

fn host_kind(k: &[String; 3]) -> ht::KindRef {
    ht::KindRef {
        group: k[0].clone(),
        version: k[1].clone(),
        kind: k[2].clone(),
    }
}

fn exposure_index(k: sdk::ExposureKind) -> u8 {
    match k {
        sdk::ExposureKind::Route => 0,
        sdk::ExposureKind::Ingress => 1,
        sdk::ExposureKind::HttpRoute => 2,
    }
}

fn host_exposure(k: u8) -> hf::ExposureKind {
    match k {
        0 => hf::ExposureKind::Route,
        1 => hf::ExposureKind::Ingress,
        _ => hf::ExposureKind::HttpRoute,
    }
}

/// One answer of the `facts` interface, in the SDK's types.
#[derive(Clone)]
enum Answer {
    Now(sdk::Timestamp),
    Workload(Result<Option<sdk::WorkloadFact>, sdk::ReadError>),
    Secret(Result<Option<sdk::SecretFact>, sdk::ReadError>),
    ConfigMap(Result<Option<sdk::ConfigMapFact>, sdk::ReadError>),
    Get(Result<Option<sdk::Object>, sdk::ReadError>),
    List(Result<Vec<sdk::Object>, sdk::ReadError>),
    Availability(sdk::Availability),
    NetworkPolicies(Result<Vec<sdk::NetworkPolicyFact>, sdk::ReadError>),
    NodePodCidrs(sdk::NodePodCidrsFact),
    Exposure(Result<Option<sdk::ExposureFact>, sdk::ReadError>),
    ClusterRole(Result<Option<sdk::ObjectMeta>, sdk::ReadError>),
    SecretCertificates(Result<Option<sdk::CertificateBundleFact>, sdk::ReadError>),
    LastApply(Option<sdk::ApplyOutcome>),
    Children(Result<Vec<sdk::Object>, sdk::ReadError>),
    LastApplyTime(Option<sdk::Timestamp>),
}

/// Facts served by the host's `FactServer`, natively, converted to the
/// SDK's types; every call and answer is recorded.
struct Recorder {
    server: RefCell<FactServer>,
    calls: RefCell<Vec<Call>>,
    answers: RefCell<HashMap<Call, Answer>>,
}

impl Recorder {
    fn new(scenario: &Scenario, module: &Module) -> Self {
        // What the runtime's FactServer allows: the kinds read and written.
        let declared = module.spec().readable().cloned();
        Recorder {
            server: RefCell::new(FactServer::new(
                Arc::new(scenario.fresh_source()),
                declared,
                scenario.now,
            )),
            calls: RefCell::new(Vec::new()),
            answers: RefCell::new(HashMap::new()),
        }
    }

    fn answer(&self, call: Call) -> Answer {
        self.calls.borrow_mut().push(call.clone());
        let answer = call.answer(&mut self.server.borrow_mut());
        self.answers.borrow_mut().insert(call, answer.clone());
        answer
    }

    fn finish(self) -> (Derived, Vec<Call>) {
        (
            Derived {
                answers: self.answers.into_inner(),
            },
            self.calls.into_inner(),
        )
    }
}

/// The recorded answers, served by clone (as `MockFacts` serves its facts).
struct Derived {
    answers: HashMap<Call, Answer>,
}

impl Derived {
    fn answer(&self, call: Call) -> Answer {
        self.answers
            .get(&call)
            .cloned()
            .unwrap_or_else(|| panic!("{call} was not recorded: the guest is not deterministic"))
    }
}

/// The `Facts` of both: each answers a call by `answer`.
macro_rules! facts_by_answer {
    ($t:ty) => {
        impl Facts for $t {
            fn now(&self) -> sdk::Timestamp {
                match self.answer(Call::Now) {
                    Answer::Now(t) => t,
                    _ => unreachable!(),
                }
            }

            fn workload(
                &self,
                namespace: &str,
                name: &str,
            ) -> Result<Option<sdk::WorkloadFact>, sdk::ReadError> {
                match self.answer(Call::Workload(namespace.into(), name.into())) {
                    Answer::Workload(w) => w,
                    _ => unreachable!(),
                }
            }

            fn secret(
                &self,
                namespace: &str,
                name: &str,
            ) -> Result<Option<sdk::SecretFact>, sdk::ReadError> {
                match self.answer(Call::Secret(namespace.into(), name.into())) {
                    Answer::Secret(s) => s,
                    _ => unreachable!(),
                }
            }

            fn config_map(
                &self,
                namespace: &str,
                name: &str,
            ) -> Result<Option<sdk::ConfigMapFact>, sdk::ReadError> {
                match self.answer(Call::ConfigMap(namespace.into(), name.into())) {
                    Answer::ConfigMap(c) => c,
                    _ => unreachable!(),
                }
            }

            fn get(
                &self,
                kind: &sdk::KindRef,
                namespace: &str,
                name: &str,
            ) -> Result<Option<sdk::Object>, sdk::ReadError> {
                match self.answer(Call::Get(key(kind), namespace.into(), name.into())) {
                    Answer::Get(o) => o,
                    _ => unreachable!(),
                }
            }

            fn list(
                &self,
                kind: &sdk::KindRef,
                namespace: &str,
                selector: &[(String, String)],
            ) -> Result<Vec<sdk::Object>, sdk::ReadError> {
                match self.answer(Call::List(key(kind), namespace.into(), selector.to_vec())) {
                    Answer::List(o) => o,
                    _ => unreachable!(),
                }
            }

            fn api_availability(&self, kind: &sdk::KindRef, namespace: &str) -> sdk::Availability {
                match self.answer(Call::Availability(key(kind), namespace.into())) {
                    Answer::Availability(a) => a,
                    _ => unreachable!(),
                }
            }

            fn network_policies(
                &self,
                namespace: &str,
            ) -> Result<Vec<sdk::NetworkPolicyFact>, sdk::ReadError> {
                match self.answer(Call::NetworkPolicies(namespace.into())) {
                    Answer::NetworkPolicies(p) => p,
                    _ => unreachable!(),
                }
            }

            fn node_pod_cidrs(&self) -> sdk::NodePodCidrsFact {
                match self.answer(Call::NodePodCidrs) {
                    Answer::NodePodCidrs(n) => n,
                    _ => unreachable!(),
                }
            }

            fn exposure(
                &self,
                kind: sdk::ExposureKind,
                namespace: &str,
                name: &str,
            ) -> Result<Option<sdk::ExposureFact>, sdk::ReadError> {
                match self.answer(Call::Exposure(
                    exposure_index(kind),
                    namespace.into(),
                    name.into(),
                )) {
                    Answer::Exposure(e) => e,
                    _ => unreachable!(),
                }
            }

            fn cluster_role(&self, name: &str) -> Result<Option<sdk::ObjectMeta>, sdk::ReadError> {
                match self.answer(Call::ClusterRole(name.into())) {
                    Answer::ClusterRole(m) => m,
                    _ => unreachable!(),
                }
            }

            fn secret_certificates(
                &self,
                namespace: &str,
                name: &str,
                key: &str,
            ) -> Result<Option<sdk::CertificateBundleFact>, sdk::ReadError> {
                match self.answer(Call::SecretCertificates(
                    namespace.into(),
                    name.into(),
                    key.into(),
                )) {
                    Answer::SecretCertificates(b) => b,
                    _ => unreachable!(),
                }
            }

            fn last_apply(
                &self,
                kind: &sdk::KindRef,
                namespace: &str,
                name: &str,
            ) -> Option<sdk::ApplyOutcome> {
                match self.answer(Call::LastApply(key(kind), namespace.into(), name.into())) {
                    Answer::LastApply(o) => o,
                    _ => unreachable!(),
                }
            }

            fn children(&self, kind: &sdk::KindRef) -> Result<Vec<sdk::Object>, sdk::ReadError> {
                match self.answer(Call::Children(key(kind))) {
                    Answer::Children(c) => c,
                    _ => unreachable!(),
                }
            }

            fn last_apply_time(
                &self,
                kind: &sdk::KindRef,
                namespace: &str,
                name: &str,
            ) -> Option<sdk::Timestamp> {
                match self.answer(Call::LastApplyTime(
                    key(kind),
                    namespace.into(),
                    name.into(),
                )) {
                    Answer::LastApplyTime(t) => t,
                    _ => unreachable!(),
                }
            }
        }
    };
}

facts_by_answer!(Recorder);
facts_by_answer!(Derived);

fn dedup(calls: &[Call]) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    for c in calls {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

fn call_counts(calls: &[Call]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in calls {
        *counts.entry(c.kind()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------
// The host's contract types to the SDK's (both generated from `wit/`).

// ---------------------------------------------------------------------------
// Both verdicts, compared.

/// A verdict as comparable text: aspects, advisory, stall, events, status
/// fields and requeue.
#[derive(Debug, PartialEq)]
struct Summary {
    aspects: Vec<(String, String, String)>,
    messages: Vec<String>,
    advisory: Vec<(String, String, String, String)>,
    stall: Option<(String, String)>,
    events: Vec<(String, String, String)>,
    status_fields: Value,
    requeue_after_seconds: Option<u32>,
}

fn summary_host(v: &Verdict) -> Summary {
    let status = |s: ConditionStatus| match s {
        ConditionStatus::True => "True",
        ConditionStatus::False => "False",
        ConditionStatus::Unknown => "Unknown",
    };
    Summary {
        aspects: v
            .aspects
            .iter()
            .map(|c| (c.type_.clone(), status(c.status).into(), c.reason.clone()))
            .collect(),
        messages: v.aspects.iter().map(|c| c.message.clone()).collect(),
        advisory: v
            .advisory
            .iter()
            .map(|c| {
                (
                    c.type_.clone(),
                    status(c.status).into(),
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect(),
        stall: v
            .stall
            .as_ref()
            .map(|s| (s.reason.clone(), s.message.clone())),
        events: v
            .events
            .iter()
            .map(|e| {
                let t = match e.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                };
                (t.into(), e.reason.clone(), e.message.clone())
            })
            .collect(),
        status_fields: Value::Object(v.status_fields.clone()),
        requeue_after_seconds: v.requeue_after_seconds,
    }
}

fn summary_sdk(v: &sdk::Verdict) -> Summary {
    let status = |s: &sdk::ConditionStatus| match s {
        sdk::ConditionStatus::True => "True",
        sdk::ConditionStatus::False => "False",
        sdk::ConditionStatus::Unknown => "Unknown",
    };
    Summary {
        aspects: v
            .aspects
            .iter()
            .map(|c| (c.type_.clone(), status(&c.status).into(), c.reason.clone()))
            .collect(),
        messages: v.aspects.iter().map(|c| c.message.clone()).collect(),
        advisory: v
            .advisory
            .iter()
            .map(|c| {
                (
                    c.type_.clone(),
                    status(&c.status).into(),
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect(),
        stall: v
            .stall
            .as_ref()
            .map(|s| (s.reason.clone(), s.message.clone())),
        events: v
            .events
            .iter()
            .map(|e| {
                let t = match e.type_ {
                    sdk::EventType::Normal => "Normal",
                    sdk::EventType::Warning => "Warning",
                };
                (t.into(), e.reason.clone(), e.message.clone())
            })
            .collect(),
        status_fields: v.fields(),
        requeue_after_seconds: v.requeue_after_seconds,
    }
}

/// Both paths decided the same, and the scenario is the healthy one (every
/// aspect True/AsExpected, no stall): returns the aspects as text.
fn assert_same(wasm: &Verdict, native: &sdk::Verdict) -> String {
    let (w, n) = (summary_host(wasm), summary_sdk(native));
    assert_eq!(
        w.aspects, n.aspects,
        "wasm and native aspects differ (type, status, reason): {:?}",
        native.aspects
    );
    assert_eq!(w, n, "wasm and native verdicts differ");
    assert!(
        w.aspects.len() == 3
            && w.aspects
                .iter()
                .all(|(_, s, r)| s == "True" && r == "AsExpected")
            && w.stall.is_none(),
        "the scenario is not the healthy one: {:?}",
        w.aspects
    );
    w.aspects
        .iter()
        .map(|(t, s, r)| format!("{t}={s}/{r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------
// A replica of the runtime's per-call store on wasmtime's default
// (on-demand) allocator, from the host's public pieces: what the runtime
// did before the pool, and a warm instance to call again.

struct ReplicaState {
    facts: FactServer,
    limiter: MemoryLimiter,
    sandbox: Sandbox,
}

impl WasiView for ReplicaState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        self.sandbox.view()
    }
}

impl sandbox::SandboxView for ReplicaState {
    fn sandbox(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }
}

struct Replica {
    engine: Engine,
    pre: GuestPre<ReplicaState>,
    declared: Vec<KindRef>,
    memory_bytes: usize,
}

impl Replica {
    /// The runtime's engine configuration before the pool, its linker and
    /// pre-instantiation.
    fn new(wasm: &std::path::Path, module: &Module) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        let engine = Engine::new(&config)?;
        let mut linker = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)?;
        GuestWorld::add_to_linker::<ReplicaState, HasSelf<FactServer>>(&mut linker, |s| {
            &mut s.facts
        })?;
        let component = Component::from_file(&engine, wasm)?;
        let pre = GuestPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Replica {
            engine,
            pre,
            declared: module.spec().readable().cloned().collect(),
            memory_bytes: Limits::default().memory_bytes,
        })
    }

    fn store(&self, scenario: &Scenario, source: Arc<dyn ObjectSource>) -> Store<ReplicaState> {
        let mut store = Store::new(
            &self.engine,
            ReplicaState {
                facts: FactServer::new(source, self.declared.iter().cloned(), scenario.now),
                limiter: MemoryLimiter::new(self.memory_bytes),
                sandbox: Sandbox::new(scenario.now, sandbox::Seed::default()),
            },
        );
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(1 << 40);
        store.epoch_deadline_trap();
        store
    }

    fn evaluate(&self, scenario: &Scenario, source: Arc<dyn ObjectSource>) -> wit_rec::Verdict {
        let mut store = self.store(scenario, source);
        let input = scenario.wit_input();
        let guest = self.pre.instantiate(&mut store).expect("instantiates");
        guest
            .reconciler_guest0_6_0_reconciler()
            .call_evaluate(&mut store, &input)
            .expect("evaluates")
    }
}

// ---------------------------------------------------------------------------
// An object source that counts what the host reads from it.

struct Counting {
    inner: MemorySource,
    reads: AtomicUsize,
}

impl Counting {
    fn new(inner: MemorySource) -> Self {
        Counting {
            inner,
            reads: AtomicUsize::new(0),
        }
    }

    fn total(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }
}

impl ObjectSource for Counting {
    fn get(
        &self,
        kind: &KindRef,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Cached>>, SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get(kind, namespace, name)
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Cached>>, SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.list(kind, namespace, selector)
    }

    fn availability(&self, kind: &KindRef, namespace: &str) -> Availability {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.availability(kind, namespace)
    }
}

// ---------------------------------------------------------------------------
// Timing.

#[derive(Clone, Default)]
struct Stats {
    iterations: usize,
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

/// `warmup` untimed runs, then `iterations` timed one by one.
fn time(iterations: usize, warmup: usize, mut f: impl FnMut()) -> Stats {
    for _ in 0..warmup {
        f();
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        f();
        samples.push(start.elapsed());
    }
    let total: Duration = samples.iter().sum();
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Stats {
        iterations,
        p50: at(0.50),
        p99: at(0.99),
        mean: total / u32::try_from(iterations).expect("iterations fit in u32"),
    }
}

fn micros(d: Duration) -> String {
    format!("{:.2} us", d.as_secs_f64() * 1e6)
}

fn header() {
    println!(
        "{:<58} {:>9} {:>10} {:>10} {:>7}",
        "", "p50", "p99", "mean", "iters"
    );
}

fn row(name: &str, s: &Stats) {
    println!(
        "{:<58} {:>9} {:>10} {:>10} {:>7}",
        name,
        micros(s.p50),
        micros(s.p99),
        micros(s.mean),
        s.iterations
    );
}
