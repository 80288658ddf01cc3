//! A test guest that tries to reach outside the pass through the standard library's WASI, as the parent's `spec.attempt` says, and reports what it got in its one aspect's message.
//!
//! `clock`: the wall clock (`SystemTime::now`, seconds since the epoch);
//! `sleep`: sleeps `spec.seconds` and reports the monotonic time that
//! passed (`Instant`); `random`: 16 random bytes (`wasi:random`, through a
//! `HashMap`'s seed and directly); `read-file`: reads `spec.path`;
//! `list-root`: lists `/`; `connect`: a TCP connection to `spec.address`;
//! `resolve`: a name lookup of `spec.host`; `env`: the environment and
//! the arguments; `stderr`: writes `spec.bytes` bytes to stderr, then
//! panics; `stdout`: writes `spec.bytes` bytes to stdout and reports what
//! the writes said, then panics when `spec.panic` is true; `exit`: exits
//! the process with `spec.code`; `loop`: sleeps a second at a time,
//! forever; `undeclared-field`: reads `spec.clusterIP` of the first
//! Service of its namespace, a field its read of Services (which names
//! `spec.ports` only) does not declare.

use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reconciler_guest_sdk::verdict::ok;
use reconciler_guest_sdk::{
    ConventionProfile, Evaluation, Facts, Guest, KindRef, KindSpec, Verdict, VerdictBuilder, spec,
};

pub struct Escape;

fn service() -> KindRef {
    spec::kind_ref("", "v1", "Service")
}

impl Guest for Escape {
    fn describe() -> KindSpec {
        KindSpec {
            group: "testing.reconciler.dev".into(),
            version: "v1".into(),
            kind: "Escape".into(),
            plural: "escapes".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec!["Escaped".into()],
            advisory: vec![],
            reasons: vec![spec::owned(
                "escape",
                "Attempted",
                "The guest tried what it was told.",
            )],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: vec![spec::with_fields(spec::reads(service()), ["spec.ports"])],
            pause: None,
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        let parent = input.parent_json();
        let spec = &parent["spec"];
        let text = |k: &str| spec[k].as_str().unwrap_or_default().to_owned();
        let said = match spec["attempt"].as_str().unwrap_or_default() {
            "clock" => {
                let since = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                format!("wall {}.{:09}", since.as_secs(), since.subsec_nanos())
            }
            "sleep" => {
                let start = Instant::now();
                std::thread::sleep(Duration::from_secs(spec["seconds"].as_u64().unwrap_or(5)));
                format!("slept {:?}", start.elapsed())
            }
            "random" => {
                use std::hash::{BuildHasher, RandomState};
                let seeded = RandomState::new().hash_one(1u8);
                let mut bytes = [0u8; 16];
                for (i, b) in bytes.iter_mut().enumerate() {
                    *b = (RandomState::new().hash_one(i) >> 8) as u8;
                }
                format!("random {seeded:x} {bytes:02x?}")
            }
            "read-file" => match std::fs::read(text("path")) {
                Ok(bytes) => format!("read {} bytes", bytes.len()),
                Err(e) => format!("read refused: {e}"),
            },
            "list-root" => match std::fs::read_dir("/") {
                Ok(entries) => format!("listed {} entries", entries.count()),
                Err(e) => format!("list refused: {e}"),
            },
            "connect" => match std::net::TcpStream::connect(text("address")) {
                Ok(_) => "connected".to_owned(),
                Err(e) => format!("connect refused: {e}"),
            },
            "resolve" => {
                use std::net::ToSocketAddrs as _;
                match (text("host").as_str(), 443).to_socket_addrs() {
                    Ok(addrs) => format!("resolved {}", addrs.count()),
                    Err(e) => format!("resolve refused: {e}"),
                }
            }
            "env" => format!(
                "env {:?} args {:?}",
                std::env::vars().collect::<Vec<_>>(),
                std::env::args().collect::<Vec<_>>()
            ),
            "stderr" => {
                let n = spec["bytes"].as_u64().unwrap_or(100) as usize;
                let _ = std::io::stderr().write_all(&vec![b'e'; n]);
                panic!("after {n} bytes of stderr");
            }
            "stdout" => {
                let n = spec["bytes"].as_u64().unwrap_or(100) as usize;
                let mut out = std::io::stdout();
                let wrote = out.write_all(&vec![b'o'; n]).and_then(|()| out.flush());
                if spec["panic"].as_bool().unwrap_or(false) {
                    panic!("after {n} bytes of stdout");
                }
                format!("stdout took {n} bytes: {wrote:?}")
            }
            "exit" => std::process::exit(spec["code"].as_i64().unwrap_or(0) as i32),
            "loop" => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
            "undeclared-field" => {
                let namespace = parent["metadata"]["namespace"].as_str().unwrap_or_default();
                match facts.list(&service(), namespace, &[]) {
                    Ok(services) => services.first().map_or_else(
                        || "no Service".to_owned(),
                        |s| {
                            let service: serde_json::Value =
                                serde_json::from_str(&s.json).unwrap_or_default();
                            let ip = service["spec"]["clusterIP"].as_str().unwrap_or("absent");
                            format!("clusterIP {ip}")
                        },
                    ),
                    Err(e) => format!("list refused: {e:?}"),
                }
            }
            other => format!("nothing to attempt: {other:?}"),
        };
        let mut verdict = VerdictBuilder::new();
        verdict.aspect(ok("Escaped", said));
        verdict.build()
    }
}

reconciler_guest_sdk::export_guest!(Escape);
