//! The runtime against hostile guests: every misbehaviour is a typed error
//! naming the guest and the class, and the same runtime goes on serving.

use reconciler_host_harness::guests as support;

use std::sync::Arc;
use std::time::Duration;

use reconciler_host::facts::MemorySource;
use reconciler_host::runtime::{
    ArtifactCache, Blame, EvaluateRequest, GuestErrorClass, Limits, LoadError, Module, Runtime,
    RuntimeConfig,
};
use serde_json::{Value, json};

fn runtime() -> Runtime {
    runtime_with_deadline(Duration::from_millis(100))
}

fn runtime_with_deadline(deadline: Duration) -> Runtime {
    Runtime::new(RuntimeConfig {
        limits: Limits {
            deadline,
            memory_bytes: 64 << 20,
        },
        cache: None,
    })
    .expect("runtime")
}

fn hostile(rt: &Runtime) -> Module {
    rt.load_file(&support::guest_wasm("hostile-guest"))
        .expect("the hostile guest loads")
}

fn parent(behavior: &str) -> Value {
    json!({
        "apiVersion": "testing.reconciler.dev/v1", "kind": "Hostile",
        "metadata": {"name": "h", "namespace": "ns", "generation": 1},
        "spec": {"behavior": behavior}
    })
}

fn evaluate(module: &Module, behavior: &str) -> reconciler_host::runtime::Evaluated {
    module.evaluate(EvaluateRequest {
        parent: &parent(behavior),
        paused: false,
        settings: &[],
        source: Arc::new(MemorySource::new()),
        now: "2026-11-29T12:00:00Z".parse().unwrap(),
    })
}

fn class_of(module: &Module, behavior: &str) -> (GuestErrorClass, String) {
    let e = evaluate(module, behavior)
        .outcome
        .expect_err("the guest misbehaves");
    assert_eq!(e.guest, "hostile_guest", "the error names the guest");
    assert_eq!(e.blame(), Blame::Guest);
    (e.class, e.to_string())
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let rt = runtime();
    let (class, text) = class_of(&hostile(&rt), "loop");
    assert_eq!(class, GuestErrorClass::Deadline, "{text}");
}

#[test]
fn unbounded_allocation_hits_the_memory_cap() {
    // A deadline far beyond what filling 64 MiB takes on a loaded machine:
    // only the memory cap may stop this guest.
    let rt = runtime_with_deadline(Duration::from_secs(30));
    let (class, text) = class_of(&hostile(&rt), "allocate");
    assert_eq!(class, GuestErrorClass::MemoryLimit, "{text}");
    assert!(text.contains("cap"), "{text}");
}

#[test]
fn panic_is_a_trap_carrying_the_panic_message() {
    let rt = runtime();
    let (class, text) = class_of(&hostile(&rt), "panic");
    assert_eq!(class, GuestErrorClass::Trap, "{text}");
    assert!(text.contains("told to panic"), "{text}");
}

#[test]
fn the_same_runtime_serves_a_good_guest_after_every_misbehaviour() {
    let rt = runtime();
    let module = hostile(&rt);
    for bad in ["loop", "allocate", "panic"] {
        assert!(evaluate(&module, bad).outcome.is_err());
        let good = evaluate(&module, "ok")
            .outcome
            .expect("a fresh store serves again");
        assert_eq!(good.aspects[0].reason, "AsExpected");
    }
}

#[test]
fn undeclared_read_is_refused_and_named() {
    let rt = runtime();
    let verdict = evaluate(&hostile(&rt), "undeclared-read")
        .outcome
        .expect("the read fails, not the pass");
    let message = &verdict.aspects[0].message;
    assert!(message.contains("NotDeclared"), "{message}");
    assert!(message.contains("v1/Secret"), "{message}");
}

#[test]
fn a_core_module_is_refused_with_a_hint() {
    let rt = runtime();
    let core = b"\0asm\x01\0\0\0";
    let e = rt.load("core", core).err().expect("refused");
    assert!(matches!(e, LoadError::NotAComponent { .. }), "{e}");
    assert!(e.to_string().contains("wasm32-wasip2"), "{e}");
}

#[test]
fn garbage_is_refused_as_not_a_component() {
    let rt = runtime();
    let e = rt
        .load("garbage", b"not wasm at all")
        .err()
        .expect("refused");
    assert!(
        matches!(e, LoadError::NotAComponent { ref guest, .. } if guest == "garbage"),
        "{e}"
    );
}

#[test]
fn the_compiled_artifact_is_cached_by_digest() {
    let dir = std::env::temp_dir().join(format!("reconciler-cache-test-{}", std::process::id()));
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: Some(ArtifactCache::new(dir.clone())),
    })
    .unwrap();
    let path = support::guest_wasm("hostile-guest");
    let first = rt.load_file(&path).unwrap();
    let second = rt.load_file(&path).unwrap();
    assert!(!first.from_cache(), "the first load compiles");
    assert!(second.from_cache(), "the second load uses the artifact");
    assert_eq!(first.digest(), second.digest());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_component_missing_the_export_is_refused_naming_it() {
    let rt = runtime();
    let empty = wat::parse_str("(component)").unwrap();
    let e = rt.load("empty", &empty).err().expect("refused");
    assert!(matches!(e, LoadError::WorldMismatch { .. }), "{e}");
    assert!(e.to_string().contains("reconciler:guest/reconciler"), "{e}");
}

#[test]
fn a_component_importing_what_the_host_does_not_link_is_refused_before_compiling_naming_every_import()
 {
    let dir = std::env::temp_dir().join(format!("reconciler-refused-{}", std::process::id()));
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits::default(),
        cache: Some(ArtifactCache::new(dir.clone())),
    })
    .unwrap();
    // Linked (inert): the filesystem and sockets of 0.2.x. Not linked:
    // HTTP, a key-value store, WASI 0.3.
    let component = wat::parse_str(
        r#"(component
            (import "wasi:filesystem/types@0.2.9" (instance))
            (import "wasi:sockets/tcp@0.2.12" (instance))
            (import "wasi:http/outgoing-handler@0.2.6" (instance))
            (import "wasi:keyvalue/store@0.2.0-draft" (instance))
            (import "wasi:clocks/monotonic-clock@0.3.0" (instance)))"#,
    )
    .unwrap();
    let e = rt.load("reaching", &component).err().expect("refused");
    assert!(
        matches!(e, LoadError::UnsupportedImport { ref import, .. }
            if import == "wasi:http/outgoing-handler@0.2.6, wasi:keyvalue/store@0.2.0-draft, wasi:clocks/monotonic-clock@0.3.0"),
        "{e}"
    );
    assert!(
        std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_none()),
        "a refused module leaves no compiled artifact"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_component_larger_than_the_pool_allows_is_refused_as_such() {
    let rt = runtime();
    // 65 instances of an empty core module: more than a guest may take.
    let instances: String = (0..65)
        .map(|i| format!("(core instance $i{i} (instantiate $m))"))
        .collect();
    let component = wat::parse_str(format!("(component (core module $m) {instances})")).unwrap();
    let e = rt.load("sprawling", &component).err().expect("refused");
    assert!(matches!(e, LoadError::PoolLimit { .. }), "{e}");
    assert!(e.to_string().contains("instance pool"), "{e}");
    assert!(e.to_string().contains("65 core module instances"), "{e}");
}

#[test]
fn one_pool_slot_reused_after_every_misbehaviour_serves_a_fresh_instance() {
    // A single slot: every pass reuses the instance memory the last one
    // left (filled to the cap, trapped, interrupted), reset in place.
    let rt = Runtime::with_instances(
        RuntimeConfig {
            limits: Limits {
                deadline: Duration::from_secs(30),
                memory_bytes: 64 << 20,
            },
            cache: None,
        },
        1,
    )
    .expect("runtime");
    assert_eq!(rt.instances(), 1);
    let module = hostile(&rt);
    for bad in ["allocate", "panic", "allocate"] {
        let e = evaluate(&module, bad).outcome.expect_err("misbehaves");
        let want = if bad == "allocate" {
            GuestErrorClass::MemoryLimit
        } else {
            GuestErrorClass::Trap
        };
        assert_eq!(e.class, want, "{e}");
        let good = evaluate(&module, "ok").outcome.expect("a fresh instance");
        assert_eq!(good.aspects[0].reason, "AsExpected");
    }
}

#[test]
fn more_passes_at_once_than_pool_slots_wait_for_one_and_all_succeed() {
    let rt = Runtime::with_instances(
        RuntimeConfig {
            limits: Limits::default(),
            cache: None,
        },
        2,
    )
    .expect("runtime");
    let module = hostile(&rt);
    std::thread::scope(|s| {
        let passes: Vec<_> = (0..8)
            .map(|_| s.spawn(|| (0..20).all(|_| evaluate(&module, "ok").outcome.is_ok())))
            .collect();
        for p in passes {
            assert!(p.join().unwrap(), "every pass got a slot");
        }
    });
}
