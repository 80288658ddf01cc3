//! The WASI surface a guest gets: every interface the wasip2 toolchains of
//! Rust, JavaScript (componentize-js) and Python (componentize-py) import,
//! each made inert so a pass stays a pure function of its input.
//!
//! A guest built for `wasm32-wasip2`, `componentize-js` or `componentize-py`
//! imports `wasi:cli`, `wasi:io`, `wasi:clocks`, `wasi:random`,
//! `wasi:filesystem` and (Python) `wasi:sockets` even when it does no I/O.
//! The host links them all ([`PROVIDED`]), and none of them reaches the
//! world outside the pass:
//!
//! - `wasi:cli`: no arguments, no environment, stdin empty, stdout
//!   discarded, stderr captured, its last 4 KiB kept, so a guest's panic,
//!   exception or traceback can be reported (no write is ever refused: a
//!   chatty guest is not failed for it); `exit` ends the call (a trap).
//! - `wasi:clocks/wall-clock`: the pass's `now`, the same instant
//!   `facts.now` answers (the clock stays a fact: a fixture's `now`).
//! - `wasi:clocks/monotonic-clock`: a virtual clock starting at 0 that
//!   moves only when the guest waits: a sleep or a pollable returns at
//!   once, the clock advanced by what it asked for. Nothing blocks the
//!   host thread, so the deadline (epoch interruption, in guest code)
//!   stays the only bound on a pass.
//! - `wasi:random`: a ChaCha generator seeded from what the pass is about
//!   ([`Seed`]: the parent's uid, namespace, name, resourceVersion and the
//!   pass's `now`), so a fixture replays identically. Not secret: a guest
//!   that needs a secret asks the host for a generated Secret.
//! - `wasi:filesystem`: linked with no preopened directory, so a guest
//!   holds no descriptor and no path can be opened.
//! - `wasi:sockets`: linked so a toolchain's component instantiates; TCP
//!   and UDP sockets and name lookups are refused (`access-denied`) before
//!   any socket exists.
//!
//! [`check_imports`] refuses a component importing anything else, before
//! it is compiled, naming every refused import.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use sha2::{Digest as _, Sha256};
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{HostMonotonicClock, HostWallClock, WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, io, random, sockets, sync};
use wasmtime_wasi::p2::{
    DynPollable, OutputStream, Pollable, SocketError, StreamResult, subscribe,
};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The most bytes of a guest's stderr kept for an error report: the last
/// ones written (a panic message, an exception or a traceback comes last).
pub(crate) const STDERR_CAPTURE_BYTES: usize = 4096;

/// The most bytes one `get-random-bytes` call returns (wasmtime's default
/// is 64 MiB, allocated on the host before the guest's cap applies).
pub(crate) const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// The WASI interfaces the host links, without their version: a component
/// may import any `0.2.x` of each (wasmtime's linker resolves a
/// semver-compatible version to the 0.2 it implements).
pub(crate) const PROVIDED: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:sockets/ip-name-lookup",
];

/// Whether `import` (`wasi:io/poll@0.2.12`) is a WASI interface the host
/// links: one of [`PROVIDED`], at a 0.2 version.
pub fn provides(import: &str) -> bool {
    let Some((name, version)) = import.split_once('@') else {
        return false;
    };
    PROVIDED.contains(&name) && (version == "0.2.0" || version.starts_with("0.2."))
}

/// What a pass is about, for the random generator's seed: the same pass
/// (a fixture replayed, a pass retried on the same object version at the
/// same instant) draws the same numbers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seed<'a> {
    pub uid: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub resource_version: &'a str,
}

impl Seed<'_> {
    fn digest(&self, now: jiff::Timestamp) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"reconciler-host wasi:random v1\0");
        for part in [self.uid, self.namespace, self.name, self.resource_version] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(now.as_second().to_le_bytes());
        h.update(now.subsec_nanosecond().to_le_bytes());
        h.finalize().into()
    }
}

/// One pass's WASI state.
pub struct Sandbox {
    ctx: WasiCtx,
    table: ResourceTable,
    stderr: StderrCapture,
    /// The virtual monotonic clock, in nanoseconds.
    monotonic: u64,
}

impl Sandbox {
    /// The sandbox of a pass at `now` about `seed`.
    pub fn new(now: jiff::Timestamp, seed: Seed<'_>) -> Self {
        let stderr = StderrCapture::default();
        let digest = seed.digest(now);
        let mut insecure = digest;
        insecure[0] ^= 0x5a;
        let insecure_seed = u128::from_le_bytes(digest[16..].try_into().unwrap_or_default());
        let wall = u64::try_from(now.as_nanosecond()).map_or(Duration::ZERO, Duration::from_nanos);
        let ctx = WasiCtx::builder()
            .stderr(stderr.clone())
            .wall_clock(PinnedWallClock(wall))
            .monotonic_clock(FrozenMonotonicClock)
            .secure_random(StdRng::from_seed(digest))
            .insecure_random(StdRng::from_seed(insecure))
            .insecure_random_seed(insecure_seed)
            .max_random_size(MAX_RANDOM_BYTES)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        Sandbox {
            ctx,
            table: ResourceTable::new(),
            stderr,
            monotonic: 0,
        }
    }

    /// The WASI view of this sandbox, for the store data's `WasiView`.
    pub fn view(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }

    /// What the guest wrote to stderr (its panic message, if it
    /// panicked): the last [`STDERR_CAPTURE_BYTES`], after a note of how
    /// many came before them.
    pub fn stderr(&self) -> String {
        self.stderr.report()
    }
}

/// The guest's stderr: every write accepted (a guest is never failed for
/// writing), the last [`STDERR_CAPTURE_BYTES`] kept, the earlier ones
/// counted and dropped.
#[derive(Clone, Default)]
struct StderrCapture(Arc<Mutex<Tail>>);

#[derive(Default)]
struct Tail {
    kept: VecDeque<u8>,
    dropped: u64,
}

impl StderrCapture {
    fn append(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = match bytes.len().checked_sub(STDERR_CAPTURE_BYTES) {
            Some(skip) if skip > 0 => {
                tail.dropped += skip as u64;
                &bytes[skip..]
            }
            _ => bytes,
        };
        let over = (tail.kept.len() + bytes.len()).saturating_sub(STDERR_CAPTURE_BYTES);
        tail.kept.drain(..over);
        tail.dropped += over as u64;
        tail.kept.extend(bytes);
    }

    fn report(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = tail.kept.as_slices();
        let mut kept = [a, b].concat();
        let mut dropped = tail.dropped;
        if dropped > 0 {
            // Start at a character's first byte.
            let start = kept
                .iter()
                .position(|b| b & 0xc0 != 0x80)
                .unwrap_or(kept.len());
            kept.drain(..start);
            dropped += start as u64;
        }
        let text = String::from_utf8_lossy(&kept);
        let text = text.trim();
        if dropped == 0 {
            text.to_owned()
        } else {
            format!("[{dropped} earlier bytes of stderr dropped] {text}")
        }
    }
}

impl IsTerminal for StderrCapture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrCapture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// How much a guest may write in one `write` (it asks with `check-write`):
/// any amount is accepted, this only sizes the guest's chunks.
const STDERR_WRITE_PERMIT: usize = 64 << 10;

impl OutputStream for StderrCapture {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(STDERR_WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrCapture {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for StderrCapture {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.append(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// The store data of a call: a WASI view and its sandbox.
pub trait SandboxView: WasiView {
    fn sandbox(&mut self) -> &mut Sandbox;
}

/// The wall clock: the pass's `now`, whatever the host's clock says.
struct PinnedWallClock(Duration);

impl HostWallClock for PinnedWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }
    fn now(&self) -> Duration {
        self.0
    }
}

/// The context's own monotonic clock (for what wasmtime-wasi reads of it
/// outside `wasi:clocks/monotonic-clock`, which [`InertMonotonic`] serves).
struct FrozenMonotonicClock;

impl HostMonotonicClock for FrozenMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        0
    }
}

/// `wasi:clocks/monotonic-clock` over the sandbox's virtual clock.
struct InertMonotonic;

impl HasData for InertMonotonic {
    type Data<'a> = MonotonicView<'a>;
}

struct MonotonicView<'a> {
    now: &'a mut u64,
    table: &'a mut ResourceTable,
}

/// A pollable that is ready at once: what every sleep gives.
struct Elapsed;

#[wasmtime_wasi::async_trait]
impl Pollable for Elapsed {
    async fn ready(&mut self) {}
}

impl MonotonicView<'_> {
    fn elapsed(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let r = self.table.push(Elapsed)?;
        subscribe(self.table, r)
    }
}

impl clocks::monotonic_clock::Host for MonotonicView<'_> {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(*self.now)
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(1)
    }

    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<DynPollable>> {
        *self.now = (*self.now).max(when);
        self.elapsed()
    }

    fn subscribe_duration(&mut self, duration: u64) -> wasmtime::Result<Resource<DynPollable>> {
        *self.now = self.now.saturating_add(duration);
        self.elapsed()
    }
}

/// `wasi:sockets/ip-name-lookup`: every lookup refused.
struct NoLookup;

impl HasData for NoLookup {
    type Data<'a> = NoLookupView<'a>;
}

struct NoLookupView<'a> {
    table: &'a mut ResourceTable,
}

use sockets::ip_name_lookup::{ErrorCode, IpAddress, Network, ResolveAddressStream};

/// What the lookup's errors need to reach the guest as an `error-code`.
impl sockets::network::Host for NoLookupView<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        error.downcast()
    }

    fn network_error_code(
        &mut self,
        _err: Resource<sockets::network::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        Ok(None)
    }
}

impl sockets::network::HostNetwork for NoLookupView<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        self.table.delete(network)?;
        Ok(())
    }
}

impl sockets::ip_name_lookup::Host for NoLookupView<'_> {
    fn resolve_addresses(
        &mut self,
        _network: Resource<Network>,
        _name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        Err(ErrorCode::AccessDenied.into())
    }
}

impl sockets::ip_name_lookup::HostResolveAddressStream for NoLookupView<'_> {
    fn resolve_next_address(
        &mut self,
        _stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        Err(ErrorCode::AccessDenied.into())
    }

    fn subscribe(
        &mut self,
        _stream: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        wasmtime::bail!("no name lookup stream exists in the sandbox")
    }

    fn drop(&mut self, _stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        Ok(())
    }
}

struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links every interface of [`PROVIDED`], each inert as the module says.
pub fn add_to_linker<T: SandboxView + 'static>(l: &mut Linker<T>) -> wasmtime::Result<()> {
    cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    io::error::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    sync::io::poll::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    sync::io::streams::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?;
    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, InertMonotonic>(l, |t| {
        let sandbox = t.sandbox();
        MonotonicView {
            now: &mut sandbox.monotonic,
            table: &mut sandbox.table,
        }
    })?;
    random::random::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())?;
    filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?;
    sync::filesystem::types::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?;
    sockets::network::add_to_linker::<T, WasiSockets>(l, &Default::default(), T::sockets)?;
    sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::ip_name_lookup::add_to_linker::<T, NoLookup>(l, |t| NoLookupView {
        table: t.ctx().table,
    })?;
    Ok(())
}

/// Every top-level import of a component's binary, read without compiling
/// it (nested components' and modules' imports are satisfied inside it).
pub fn imports(bytes: &[u8]) -> Result<Vec<String>, wasmparser::BinaryReaderError> {
    Ok(top_level(bytes)?.0)
}

/// The names a component exports at its top level.
pub fn exports(bytes: &[u8]) -> Result<Vec<String>, wasmparser::BinaryReaderError> {
    Ok(top_level(bytes)?.1)
}

/// The names a component imports and exports at its top level (not those
/// of the modules and components nested in it).
fn top_level(bytes: &[u8]) -> Result<(Vec<String>, Vec<String>), wasmparser::BinaryReaderError> {
    use wasmparser::{Parser, Payload};
    let mut depth = 0usize;
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    imports.push(import?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    exports.push(export?.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_the_last_bytes_and_counts_the_rest_never_refusing_a_write() {
        let mut capture = StderrCapture::default();
        OutputStream::write(&mut capture, bytes::Bytes::from_static(b"  short  ")).unwrap();
        assert_eq!(capture.report(), "short");
        let mut capture = StderrCapture::default();
        for _ in 0..100 {
            OutputStream::write(&mut capture, bytes::Bytes::from(vec![b'e'; 1000])).unwrap();
            assert_eq!(capture.check_write().unwrap(), STDERR_WRITE_PERMIT);
        }
        OutputStream::write(&mut capture, bytes::Bytes::from(vec![b'x'; 10_000])).unwrap();
        OutputStream::write(&mut capture, bytes::Bytes::from_static(b"\nthe end")).unwrap();
        let report = capture.report();
        assert!(report.ends_with("x\nthe end"), "{report}");
        let dropped = 100 * 1000 + 10_000 + 8 - STDERR_CAPTURE_BYTES;
        assert!(
            report.starts_with(&format!("[{dropped} earlier bytes of stderr dropped] xxx")),
            "{report}"
        );
        // A character cut by the bound is dropped whole.
        let capture = StderrCapture::default();
        capture.append("é".repeat(STDERR_CAPTURE_BYTES).as_bytes());
        let report = capture.report();
        assert!(!report.contains('\u{fffd}'), "{report}");
        assert!(report.starts_with(&format!(
            "[{} earlier bytes of stderr dropped] éé",
            STDERR_CAPTURE_BYTES
        )));
    }

    #[test]
    fn every_0_2_version_of_a_provided_interface_is_provided_and_nothing_else() {
        assert!(provides("wasi:io/poll@0.2.0"));
        assert!(provides("wasi:clocks/wall-clock@0.2.12"));
        assert!(provides("wasi:sockets/tcp@0.2.9"));
        assert!(!provides("wasi:io/poll@0.3.0"));
        assert!(!provides("wasi:io/poll"));
        assert!(!provides("wasi:http/outgoing-handler@0.2.6"));
        assert!(!provides("wasi:clocks/timezone@0.2.12"));
    }

    #[test]
    fn the_seed_is_the_pass_and_nothing_else() {
        let now = jiff::Timestamp::from_second(1_796_000_000).unwrap();
        let a = Seed {
            uid: "u",
            namespace: "ns",
            name: "a",
            resource_version: "7",
        };
        assert_eq!(a.digest(now), a.digest(now));
        let later = jiff::Timestamp::from_second(1_796_000_001).unwrap();
        assert_ne!(a.digest(now), a.digest(later));
        let b = Seed {
            resource_version: "8",
            ..a
        };
        assert_ne!(a.digest(now), b.digest(now));
    }
}
