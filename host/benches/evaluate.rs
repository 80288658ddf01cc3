//! One EvidenceAgent evaluation through wasm against the same guest logic
//! called natively, over the same scenario: the first pass of
//! `guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml` (a
//! healthy agent with its Cluster, ObjectStore, credentials Secret,
//! serving-cert Secret, CA ConfigMap, Service, Deployment and Pod).
//!
//! - wasm: `Runtime` + `GuestModule::evaluate` (a fresh store from the
//!   `InstancePre` every call, facts derived and marshalled by the host
//!   from a `MemorySource` holding the fixture's objects);
//! - native: `EvidenceAgent::evaluate` through the SDK's `Guest` trait,
//!   against facts the host's own `FactServer` derived once from the same
//!   objects (converted to the SDK's types), so both paths see the very
//!   same facts and the comparison is of the evaluation alone.
//!
//! Both verdicts are asserted equal before anything is timed. Then the wasm
//! time is taken apart: a paused evaluation (store, instantiation and the
//! call, no read), a replica of the runtime's store setup built from the
//! host's public pieces (store only, instantiation only), and the host's
//! fact derivation replayed natively, call by call.
//!
//! `make bench` (or `cargo bench -p reconciler-host --bench evaluate`).
//! Iterations: `BENCH_NATIVE_ITERS` (default 20000), `BENCH_WASM_ITERS`
//! (default 5000); `BENCH_POOL_KEEP_RESIDENT_KIB` (default 0) sizes the
//! linear memory the pooling replica keeps resident between instances.

#[path = "../tests/support/mod.rs"]
mod support;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use evidenceagent_guest::EvidenceAgent;
use reconciler_conventions::kind::KindRef;
use reconciler_conventions::verdict::{ConditionStatus, EventType, Verdict};
use reconciler_guest_sdk as sdk;
use reconciler_guest_sdk::{Facts, Guest as _};
use reconciler_host::bindings::v0_2::exports::reconciler::guest0_2_0::reconciler as wit_rec;
use reconciler_host::bindings::v0_2::reconciler::guest0_2_0::facts::{self as hf, Host as _};
use reconciler_host::bindings::v0_2::reconciler::guest0_2_0::types as ht;
use reconciler_host::bindings::v0_2::{Guest as GuestWorld, GuestPre};
use reconciler_host::facts::meta::object_meta;
use reconciler_host::facts::{
    Availability, FactServer, MemorySource, ObjectSource, Selector, SourceError,
};
use reconciler_host::fixture::Fixture;
use reconciler_host::fixture::format::DEFAULT_NOW;
use reconciler_host::runtime::limits::MemoryLimiter;
use reconciler_host::runtime::sandbox::{self, Sandbox};
use reconciler_host::runtime::{EvaluateRequest, GuestModule, Limits, Runtime, RuntimeConfig};
use serde_json::Value;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtxView, WasiView};

const FIXTURE: &str = "guests/evidenceagent/fixtures/healthy-and-certificate-issued.yaml";

fn main() {
    let native_iters = iterations("BENCH_NATIVE_ITERS", 20_000);
    let wasm_iters = iterations("BENCH_WASM_ITERS", 5_000);
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixture = Fixture::load(&workspace.join(FIXTURE)).expect("the fixture loads");
    let scenario = Scenario::new(&fixture);

    let wasm_path = support::guest_wasm("evidenceagent-guest");
    let runtime = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache_dir: None,
    })
    .expect("runtime");
    let module = runtime.load_file(&wasm_path).expect("the guest loads");

    // Both paths, once, compared before anything is timed.
    let counting = Arc::new(Counting::new(scenario.source.clone()));
    let wasm_verdict = scenario
        .wasm(&module, counting.clone(), false)
        .expect("the wasm evaluation succeeds");
    let source_reads = counting.total();
    let recorder = Recorder::new(&scenario, &module);
    let native_first = EvidenceAgent::evaluate(&scenario.input, &recorder);
    let (derived, calls) = recorder.finish();
    let native_verdict = EvidenceAgent::evaluate(&scenario.input, &derived);
    assert_eq!(
        summary_sdk(&native_first),
        summary_sdk(&native_verdict),
        "the native verdict is the same from derived facts as from the recorder"
    );
    let agreed = assert_same(&wasm_verdict, &native_verdict);

    // Native.
    let native = time(native_iters, native_iters / 10, || {
        black_box(EvidenceAgent::evaluate(
            black_box(&scenario.input),
            black_box(&derived),
        ));
    });
    // Through wasm, the host's way.
    let source: Arc<dyn ObjectSource> = Arc::new(scenario.source.clone());
    let wasm = time(wasm_iters, wasm_iters / 10, || {
        black_box(scenario.wasm(&module, source.clone(), false).unwrap());
    });

    // Where the wasm time goes.
    let breakdown_iters = wasm_iters;
    let paused = time(breakdown_iters, breakdown_iters / 10, || {
        black_box(scenario.wasm(&module, source.clone(), true).unwrap());
    });
    let replica = Replica::new(&wasm_path, &module, false).expect("the replica links");
    let store_only = time(breakdown_iters, breakdown_iters / 10, || {
        black_box(replica.store(&scenario, source.clone()));
    });
    let instantiate = time(breakdown_iters, breakdown_iters / 10, || {
        let mut store = replica.store(&scenario, source.clone());
        black_box(replica.pre.instantiate(&mut store).unwrap());
    });
    let replica_full = time(breakdown_iters, breakdown_iters / 10, || {
        black_box(replica.evaluate(&scenario, source.clone()));
    });
    let warm = {
        let mut store = replica.store(&scenario, source.clone());
        let guest = replica.pre.instantiate(&mut store).expect("instantiates");
        let input = scenario.wit_input();
        time(breakdown_iters, breakdown_iters / 10, || {
            black_box(
                guest
                    .reconciler_guest0_2_0_reconciler()
                    .call_evaluate(&mut store, &input)
                    .expect("evaluates"),
            );
        })
    };
    let pooled = Replica::new(&wasm_path, &module, true).map(|pooled| {
        let instantiate = time(breakdown_iters, breakdown_iters / 10, || {
            let mut store = pooled.store(&scenario, source.clone());
            black_box(pooled.pre.instantiate(&mut store).unwrap());
        });
        let full = time(breakdown_iters, breakdown_iters / 10, || {
            black_box(pooled.evaluate(&scenario, source.clone()));
        });
        (instantiate, full)
    });
    let parent_marshal = time(native_iters, native_iters / 10, || {
        black_box(scenario.parent_object());
    });
    let declared: Vec<KindRef> = module.spec().reads.iter().map(|r| r.kind.clone()).collect();
    let derivation = time(native_iters, native_iters / 10, || {
        let mut server = FactServer::new(source.clone(), declared.iter().cloned(), scenario.now);
        for call in &calls {
            call.replay(&mut server);
        }
        black_box(server.into_reads());
    });
    let mut per_call: Vec<(String, Stats)> = Vec::new();
    let server_only = time(native_iters, native_iters / 10, || {
        black_box(FactServer::new(
            source.clone(),
            declared.iter().cloned(),
            scenario.now,
        ));
    });
    for call in dedup(&calls) {
        let mut server = FactServer::new(source.clone(), declared.iter().cloned(), scenario.now);
        let stats = time(native_iters, native_iters / 10, || {
            call.replay(&mut server);
        });
        let repeats = calls.iter().filter(|c| **c == call).count();
        per_call.push((format!("{call} (x{repeats})"), stats));
    }

    // The report.
    println!();
    println!("EvidenceAgent evaluation: {FIXTURE}, first pass");
    println!(
        "load average at the end: {} ({} CPUs)",
        std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into()),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("verdict (both paths, asserted equal): {agreed}");
    println!(
        "facts per evaluation: {} guest calls ({}), {} object-source reads",
        calls.len(),
        call_counts(&calls),
        source_reads
    );
    println!();
    header();
    row("native  EvidenceAgent::evaluate", &native);
    row("wasm    GuestModule::evaluate", &wasm);
    println!(
        "{:<54} {:>9} {:>10} {:>10}",
        "ratio wasm/native",
        format!("{:.1}x", wasm.p50.as_secs_f64() / native.p50.as_secs_f64()),
        format!("{:.1}x", wasm.p99.as_secs_f64() / native.p99.as_secs_f64()),
        format!(
            "{:.1}x",
            wasm.mean.as_secs_f64() / native.mean.as_secs_f64()
        ),
    );
    println!();
    println!("where the wasm time goes (per evaluation)");
    header();
    row(
        "wasm, paused (store + instantiate + call, no read)",
        &paused,
    );
    row("replica: fresh store only", &store_only);
    row("replica: fresh store + instantiate", &instantiate);
    row("replica: store + instantiate + evaluate", &replica_full);
    row("replica: evaluate again, same warm instance", &warm);
    match &pooled {
        Ok((instantiate, full)) => {
            row(
                &format!(
                    "replica, pooling ({} KiB resident): + instantiate",
                    pool_keep_resident() >> 10
                ),
                instantiate,
            );
            row(
                &format!(
                    "replica, pooling ({} KiB resident): + evaluate",
                    pool_keep_resident() >> 10
                ),
                full,
            );
        }
        Err(e) => println!("replica, pooling allocator: unavailable ({e})"),
    }
    row(
        "host: parent marshalling (meta + JSON text)",
        &parent_marshal,
    );
    row(
        &format!("host: fact derivation, {} calls replayed", calls.len()),
        &derivation,
    );
    row("  FactServer::new alone (once per pass)", &server_only);
    for (name, stats) in &per_call {
        row(&format!("  {name}"), stats);
    }
    let guest_in_wasm = wasm.mean.saturating_sub(instantiate.mean + derivation.mean);
    println!();
    println!(
        "mean split: instantiate {} + host facts {} + guest logic and marshalling in wasm {} (native guest logic: {})",
        micros(instantiate.mean),
        micros(derivation.mean),
        micros(guest_in_wasm),
        micros(native.mean),
    );
    println!(
        "(replica = the runtime's store setup rebuilt from the host's public pieces: \
         Sandbox, MemoryLimiter, FactServer, GuestPre; the runtime itself does not \
         expose instantiation alone)"
    );
}

/// Linear memory the pooling replica keeps resident between instances
/// (`BENCH_POOL_KEEP_RESIDENT_KIB`, default 0: released with madvise).
fn pool_keep_resident() -> usize {
    std::env::var("BENCH_POOL_KEEP_RESIDENT_KIB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
        << 10
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
    source: MemorySource,
    /// The native path's input: what the wasm guest receives.
    input: sdk::Evaluation,
}

impl Scenario {
    fn new(fixture: &Fixture) -> Self {
        assert!(fixture.unavailable.is_empty(), "the scenario has every API");
        let settings: Vec<(String, String)> = fixture
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let now = fixture
            .now
            .unwrap_or_else(|| DEFAULT_NOW.parse().expect("the default clock"));
        let mut source = MemorySource::new();
        for o in &fixture.objects {
            source.insert(o.clone());
        }
        let mut scenario = Scenario {
            parent: fixture.parent.clone(),
            settings: settings.clone(),
            now,
            source,
            input: sdk::Evaluation {
                parent: sdk::Object {
                    meta: sdk_meta(object_meta(&fixture.parent)),
                    json: String::new(),
                },
                paused: false,
                settings,
            },
        };
        scenario.input.parent.json = scenario.parent.to_string();
        scenario
    }

    fn wasm(
        &self,
        module: &GuestModule,
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
        }
    }

    /// The same call against the host's fact server, natively.
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
}

/// Facts served by the host's `FactServer`, natively, converted to the
/// SDK's types; every call and answer is recorded.
struct Recorder {
    server: RefCell<FactServer>,
    calls: RefCell<Vec<Call>>,
    answers: RefCell<HashMap<Call, Answer>>,
}

impl Recorder {
    fn new(scenario: &Scenario, module: &GuestModule) -> Self {
        let declared = module.spec().reads.iter().map(|r| r.kind.clone());
        Recorder {
            server: RefCell::new(FactServer::new(
                Arc::new(scenario.source.clone()),
                declared,
                scenario.now,
            )),
            calls: RefCell::new(Vec::new()),
            answers: RefCell::new(HashMap::new()),
        }
    }

    fn answer(&self, call: Call) -> Answer {
        self.calls.borrow_mut().push(call.clone());
        let mut server = self.server.borrow_mut();
        let answer = match &call {
            Call::Now => Answer::Now(sdk_time(server.now())),
            Call::Workload(ns, n) => Answer::Workload(
                server
                    .workload(ns.clone(), n.clone())
                    .map(|w| w.map(sdk_workload))
                    .map_err(sdk_error),
            ),
            Call::Secret(ns, n) => Answer::Secret(
                server
                    .secret(ns.clone(), n.clone())
                    .map(|s| {
                        s.map(|s| sdk::SecretFact {
                            meta: sdk_meta(s.meta),
                            type_: s.type_,
                            keys: s.keys,
                        })
                    })
                    .map_err(sdk_error),
            ),
            Call::ConfigMap(ns, n) => Answer::ConfigMap(
                server
                    .config_map(ns.clone(), n.clone())
                    .map(|c| {
                        c.map(|c| sdk::ConfigMapFact {
                            meta: sdk_meta(c.meta),
                            keys: c.keys,
                        })
                    })
                    .map_err(sdk_error),
            ),
            Call::Get(k, ns, n) => Answer::Get(
                server
                    .get(host_kind(k), ns.clone(), n.clone())
                    .map(|o| o.map(sdk_object))
                    .map_err(sdk_error),
            ),
            Call::List(k, ns, s) => Answer::List(
                server
                    .list(host_kind(k), ns.clone(), s.clone())
                    .map(|os| os.into_iter().map(sdk_object).collect())
                    .map_err(sdk_error),
            ),
            Call::Availability(k, ns) => {
                Answer::Availability(match server.api_availability(host_kind(k), ns.clone()) {
                    hf::Availability::Available => sdk::Availability::Available,
                    hf::Availability::NotServed => sdk::Availability::NotServed,
                    hf::Availability::Forbidden => sdk::Availability::Forbidden,
                })
            }
        };
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

            // The facts of contract 0.2 the EvidenceAgent does not read:
            // a guest of the bench that reads them needs them recorded first.
            fn network_policies(
                &self,
                _namespace: &str,
            ) -> Result<Vec<sdk::NetworkPolicyFact>, sdk::ReadError> {
                not_recorded("network-policies")
            }

            fn node_pod_cidrs(&self) -> sdk::NodePodCidrsFact {
                not_recorded("node-pod-cidrs")
            }

            fn exposure(
                &self,
                _kind: sdk::ExposureKind,
                _namespace: &str,
                _name: &str,
            ) -> Result<Option<sdk::ExposureFact>, sdk::ReadError> {
                not_recorded("exposure")
            }

            fn cluster_role(&self, _name: &str) -> Result<Option<sdk::ObjectMeta>, sdk::ReadError> {
                not_recorded("cluster-role")
            }

            fn secret_certificates(
                &self,
                _namespace: &str,
                _name: &str,
                _key: &str,
            ) -> Result<Option<sdk::CertificateBundleFact>, sdk::ReadError> {
                not_recorded("secret-certificates")
            }

            fn last_apply(
                &self,
                _kind: &sdk::KindRef,
                _namespace: &str,
                _name: &str,
            ) -> Option<sdk::ApplyOutcome> {
                not_recorded("last-apply")
            }
        }
    };
}

fn not_recorded(fact: &str) -> ! {
    panic!("the bench records no facts.{fact}: the EvidenceAgent does not read it")
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

fn sdk_time(t: ht::Timestamp) -> sdk::Timestamp {
    sdk::Timestamp {
        seconds: t.seconds,
        nanos: t.nanos,
    }
}

fn sdk_meta(m: ht::ObjectMeta) -> sdk::ObjectMeta {
    sdk::ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        generation: m.generation,
        labels: m.labels,
        annotations: m.annotations,
        controller: m.controller.map(|c| sdk::ControllerRef {
            api_version: c.api_version,
            kind: c.kind,
            name: c.name,
            uid: c.uid,
        }),
        creation: m.creation.map(sdk_time),
        deletion: m.deletion.map(sdk_time),
    }
}

fn sdk_object(o: ht::Object) -> sdk::Object {
    sdk::Object {
        meta: sdk_meta(o.meta),
        json: o.json,
    }
}

fn sdk_error(e: hf::ReadError) -> sdk::ReadError {
    match e {
        hf::ReadError::NotDeclared(t) => sdk::ReadError::NotDeclared(t),
        hf::ReadError::NotServed(t) => sdk::ReadError::NotServed(t),
        hf::ReadError::Forbidden(t) => sdk::ReadError::Forbidden(t),
        hf::ReadError::Failed(t) => sdk::ReadError::Failed(t),
    }
}

fn sdk_workload(w: hf::WorkloadFact) -> sdk::WorkloadFact {
    use hf::WorkloadState as H;
    use sdk::WorkloadState as S;
    sdk::WorkloadFact {
        meta: sdk_meta(w.meta),
        generation_observed: w.generation_observed,
        desired_replicas: w.desired_replicas,
        updated_replicas: w.updated_replicas,
        ready_replicas: w.ready_replicas,
        available_replicas: w.available_replicas,
        progress_deadline_exceeded: w.progress_deadline_exceeded,
        replica_failure: w.replica_failure,
        pods: w
            .pods
            .into_iter()
            .map(|p| sdk::PodFact {
                meta: sdk_meta(p.meta),
                phase: p.phase,
                ready: p.ready,
                waiting: p.waiting.map(|c| sdk::ContainerWaiting {
                    container: c.container,
                    reason: c.reason,
                    message: c.message,
                }),
                unschedulable: p.unschedulable,
                restart_count: p.restart_count,
                pod_ip: p.pod_ip,
                node_name: p.node_name,
            })
            .collect(),
        state: match w.state {
            H::Ready => S::Ready,
            H::ReplicaFailure(m) => S::ReplicaFailure(m),
            H::SecretNotFound(m) => S::SecretNotFound(m),
            H::SecretKeyMissing(m) => S::SecretKeyMissing(m),
            H::ConfigMapNotFound(m) => S::ConfigMapNotFound(m),
            H::PodUnschedulable(m) => S::PodUnschedulable(m),
            H::ImagePullFailed(m) => S::ImagePullFailed(m),
            H::CrashLoopBackOff(m) => S::CrashLoopBackOff(m),
            H::RolloutStuck(m) => S::RolloutStuck(m),
            H::RolloutInProgress(m) => S::RolloutInProgress(m),
            H::PodNotReady(m) => S::PodNotReady(m),
        },
    }
}

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
        "wasm and native aspects differ (type, status, reason)"
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
// A replica of the runtime's per-call store, from the host's public pieces,
// to time what the runtime does not expose alone (store, instantiation).

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

struct Replica {
    engine: Engine,
    pre: GuestPre<ReplicaState>,
    declared: Vec<KindRef>,
    memory_bytes: usize,
}

impl Replica {
    /// The runtime's engine configuration, linker and pre-instantiation;
    /// `pooling`: wasmtime's pooling allocator, a few slots whose linear
    /// memory stays resident between instances (the runtime does not use it).
    fn new(wasm: &std::path::Path, module: &GuestModule, pooling: bool) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        if pooling {
            let mut pool = PoolingAllocationConfig::default();
            pool.total_component_instances(4)
                .total_core_instances(64)
                .total_memories(16)
                .total_tables(32)
                .max_memory_size(Limits::default().memory_bytes)
                .linear_memory_keep_resident(pool_keep_resident())
                .table_keep_resident(64 << 10);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config)?;
        let mut linker = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)?;
        GuestWorld::add_to_linker::<ReplicaState, HasSelf<FactServer>>(&mut linker, |s| {
            &mut s.facts
        })?;
        let component = Component::from_file(&engine, wasm)?;
        let pre = GuestPre::new(linker.instantiate_pre(&component)?)?;
        // One instance, to fail here rather than in a timed loop.
        let probe = Replica {
            engine: engine.clone(),
            pre: pre.clone(),
            declared: Vec::new(),
            memory_bytes: Limits::default().memory_bytes,
        };
        let mut store = Store::new(
            &probe.engine,
            ReplicaState {
                facts: FactServer::new(
                    Arc::new(MemorySource::new()),
                    [],
                    jiff::Timestamp::UNIX_EPOCH,
                ),
                limiter: MemoryLimiter::new(probe.memory_bytes),
                sandbox: Sandbox::new(),
            },
        );
        store.set_epoch_deadline(1 << 40);
        probe.pre.instantiate(&mut store)?;
        Ok(Replica {
            engine,
            pre,
            declared: module.spec().reads.iter().map(|r| r.kind.clone()).collect(),
            memory_bytes: Limits::default().memory_bytes,
        })
    }

    fn store(&self, scenario: &Scenario, source: Arc<dyn ObjectSource>) -> Store<ReplicaState> {
        let mut store = Store::new(
            &self.engine,
            ReplicaState {
                facts: FactServer::new(source, self.declared.iter().cloned(), scenario.now),
                limiter: MemoryLimiter::new(self.memory_bytes),
                sandbox: Sandbox::new(),
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
            .reconciler_guest0_2_0_reconciler()
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
    ) -> Result<Option<Arc<Value>>, SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.get(kind, namespace, name)
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<Value>>, SourceError> {
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
        "{:<54} {:>9} {:>10} {:>10} {:>7}",
        "", "p50", "p99", "mean", "iters"
    );
}

fn row(name: &str, s: &Stats) {
    println!(
        "{:<54} {:>9} {:>10} {:>10} {:>7}",
        name,
        micros(s.p50),
        micros(s.p99),
        micros(s.mean),
        s.iterations
    );
}
