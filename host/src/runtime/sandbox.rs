//! The WASI surface a guest gets, and nothing more.
//!
//! Guests are built for `wasm32-wasip2`, whose standard library imports 13
//! `wasi:cli` and `wasi:io` interfaces even when it does no I/O. The host
//! links exactly those, backed by an empty context: no arguments, no
//! environment, stdin empty, stdout discarded, and stderr captured into a
//! small bounded buffer so a guest's panic message can be reported. It
//! links no `wasi:filesystem`, `wasi:sockets`, `wasi:clocks` or
//! `wasi:random`: a guest that imports one is refused at load, naming it.
//! The only clock is `facts.now`.

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::p2::bindings::{cli, io, sync};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The most bytes of a guest's stderr kept for an error report.
pub const STDERR_CAPTURE_BYTES: usize = 4096;

/// One pass's WASI state.
pub struct Sandbox {
    ctx: WasiCtx,
    table: ResourceTable,
    stderr: MemoryOutputPipe,
}

impl Sandbox {
    pub fn new() -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE_BYTES);
        let ctx = WasiCtx::builder().stderr(stderr.clone()).build();
        Sandbox {
            ctx,
            table: ResourceTable::new(),
            stderr,
        }
    }

    /// The WASI view of this sandbox, for the store data's `WasiView`.
    pub fn view(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }

    /// What the guest wrote to stderr (its panic message, if it panicked).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.contents())
            .trim()
            .to_owned()
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the 13 `wasi:cli` and `wasi:io` interfaces a wasip2 guest imports.
pub fn add_to_linker<T: WasiView + 'static>(l: &mut Linker<T>) -> wasmtime::Result<()> {
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
    Ok(())
}
