//! The inert WASI a guest gets, against a guest that tries to escape it
//! (guests/testing/escape): the wall clock is the pass's `now`, a sleep
//! returns at once, random replays per pass, no file, no socket, no name
//! lookup, no environment, a bounded stderr, and a sleeping loop still
//! meets the deadline.

use reconciler_host_harness::escape::{NOW, attempt, attempt_at};
use reconciler_host_harness::guests as support;

use std::time::Duration;

use reconciler_host::runtime::{GuestErrorClass, Limits, Module, Runtime, RuntimeConfig};
use serde_json::json;

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        limits: Limits {
            deadline: Duration::from_millis(100),
            memory_bytes: 64 << 20,
        },
        cache: None,
    })
    .expect("runtime")
}

fn escape(rt: &Runtime) -> Module {
    rt.load_file(&support::guest_wasm("escape-guest"))
        .expect("the escape guest loads")
}

#[test]
fn the_wall_clock_is_the_pass_s_now() {
    let rt = runtime();
    let m = escape(&rt);
    let now: jiff::Timestamp = NOW.parse().unwrap();
    assert_eq!(
        attempt(&m, json!({"attempt": "clock"})),
        format!("wall {}.000000000", now.as_second())
    );
    let later = attempt_at(
        &m,
        json!({"attempt": "clock"}),
        "1",
        "2030-01-01T00:00:00.5Z",
    )
    .unwrap();
    assert_eq!(later, "wall 1893456000.500000000");
}

#[test]
fn a_sleep_returns_at_once_and_never_blocks_past_the_deadline() {
    let rt = runtime();
    let m = escape(&rt);
    // The guest sees an hour pass on the virtual monotonic clock, and the
    // call returns: a sleep that held the host thread would hold this test
    // for the hour (no wall-clock bound here: CI shares its cores).
    let said = attempt(&m, json!({"attempt": "sleep", "seconds": 3600}));
    assert_eq!(said, "slept 3600s");
}

#[test]
fn a_loop_of_sleeps_meets_the_deadline() {
    let rt = runtime();
    let m = escape(&rt);
    // A loop of sleeps never ends by itself: the deadline ends it.
    let e = attempt_at(&m, json!({"attempt": "loop"}), "1", NOW).expect_err("interrupted");
    assert_eq!(e.class, GuestErrorClass::Deadline, "{e}");
}

#[test]
fn random_replays_per_pass_and_differs_between_passes() {
    let rt = runtime();
    let m = escape(&rt);
    let once = attempt(&m, json!({"attempt": "random"}));
    assert_eq!(
        once,
        attempt(&m, json!({"attempt": "random"})),
        "a pass replays"
    );
    let other_version = attempt_at(&m, json!({"attempt": "random"}), "2", NOW).unwrap();
    assert_ne!(once, other_version, "another object version draws others");
    let later = attempt_at(
        &m,
        json!({"attempt": "random"}),
        "1",
        "2026-11-29T12:00:01Z",
    )
    .unwrap();
    assert_ne!(once, later, "another instant draws others");
}

#[test]
fn no_file_can_be_read_nor_listed() {
    let rt = runtime();
    let m = escape(&rt);
    for path in ["/etc/passwd", "Cargo.toml", "."] {
        let said = attempt(&m, json!({"attempt": "read-file", "path": path}));
        assert!(said.starts_with("read refused"), "{path}: {said}");
    }
    let said = attempt(&m, json!({"attempt": "list-root"}));
    assert!(said.starts_with("list refused"), "{said}");
}

#[test]
fn no_socket_connects_and_no_name_resolves() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let rt = runtime();
    let m = escape(&rt);
    let said = attempt(&m, json!({"attempt": "connect", "address": address}));
    assert!(said.starts_with("connect refused"), "{said}");
    assert!(
        said.to_lowercase().contains("denied"),
        "access-denied: {said}"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing reached the listener"
    );
    let said = attempt(&m, json!({"attempt": "resolve", "host": "localhost"}));
    assert!(said.starts_with("resolve refused"), "{said}");
}

#[test]
fn the_environment_and_arguments_are_empty() {
    let rt = runtime();
    let m = escape(&rt);
    assert_eq!(attempt(&m, json!({"attempt": "env"})), "env [] args []");
}

#[test]
fn stderr_reaches_the_error_bounded() {
    let rt = runtime();
    let m = escape(&rt);
    let e =
        attempt_at(&m, json!({"attempt": "stderr", "bytes": 10}), "1", NOW).expect_err("it panics");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    assert!(e.detail.contains("eeeeeeeeee"), "{e}");
    assert!(e.detail.contains("after 10 bytes of stderr"), "{e}");
    let e = attempt_at(
        &m,
        json!({"attempt": "stderr", "bytes": 1_000_000}),
        "1",
        NOW,
    )
    .expect_err("it panics");
    assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    // No write is refused: the guest goes on to panic, and its message,
    // written last, is what the capture keeps.
    assert!(
        e.detail.contains("after 1000000 bytes of stderr"),
        "the panic message after a megabyte: {e}"
    );
    assert!(e.detail.contains("earlier bytes of stderr dropped"), "{e}");
    assert!(
        e.detail.len() < 4096 + 200,
        "at most the capture's 4 KiB of stderr: {} bytes",
        e.detail.len()
    );
}

#[test]
fn stdout_is_discarded_and_never_refused() {
    let rt = runtime();
    let m = escape(&rt);
    assert_eq!(
        attempt(&m, json!({"attempt": "stdout", "bytes": 1_000_000})),
        "stdout took 1000000 bytes: Ok(())"
    );
    let e = attempt_at(
        &m,
        json!({"attempt": "stdout", "bytes": 100, "panic": true}),
        "1",
        NOW,
    )
    .expect_err("it panics");
    assert!(e.detail.contains("after 100 bytes of stdout"), "{e}");
    assert!(!e.detail.contains("ooo"), "stdout is not captured: {e}");
}

#[test]
fn an_exit_ends_the_call_as_a_trap() {
    let rt = runtime();
    let m = escape(&rt);
    for code in [0, 3] {
        let e = attempt_at(&m, json!({"attempt": "exit", "code": code}), "1", NOW)
            .expect_err("no verdict");
        assert_eq!(e.class, GuestErrorClass::Trap, "{e}");
    }
    // The host and the next pass go on.
    assert_eq!(attempt(&m, json!({"attempt": "env"})), "env [] args []");
}
