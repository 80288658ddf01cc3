//! The guest runtime: one wasmtime engine, modules compiled once, and a
//! fresh, limited store for every call into a guest.

pub mod cache;
pub mod contract;
mod convert;
pub mod error;
mod legacy;
pub mod limits;
pub mod module;
pub mod sandbox;
mod ticker;

use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine};

pub use cache::ArtifactCache;
pub use contract::ContractVersion;
pub use error::{Blame, GuestError, GuestErrorClass, LoadError};
pub use limits::Limits;
pub use module::{EvaluateRequest, Evaluated, GuestModule, PassState};

use crate::bindings::{v0_1, v0_2};
use crate::facts::FactServer;
use ticker::EpochTicker;

/// How the runtime is set up.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    pub limits: Limits,
    /// Where compiled artifacts are kept; `None` compiles every load.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            limits: Limits::default(),
            cache_dir: ArtifactCache::default_dir(),
        }
    }
}

/// The wasmtime engine and linker every guest module runs on.
pub struct Runtime {
    engine: Engine,
    linker: Linker<PassState>,
    limits: Limits,
    epoch_tick: Duration,
    cache: Option<ArtifactCache>,
    _ticker: EpochTicker,
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let mut wasm = Config::new();
        wasm.epoch_interruption(true);
        wasm.wasm_component_model(true);
        let engine = Engine::new(&wasm)?;
        let mut linker = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)?;
        // Every served contract version: a component imports the `facts`
        // of the version it was built against.
        v0_2::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_1::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        let epoch_tick = (config.limits.deadline / 10)
            .clamp(Duration::from_millis(1), Duration::from_millis(10));
        let ticker = EpochTicker::start(engine.clone(), epoch_tick)?;
        Ok(Runtime {
            engine,
            linker,
            limits: config.limits,
            epoch_tick,
            cache: config.cache_dir.map(ArtifactCache::new),
            _ticker: ticker,
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Loads a guest module from a file; the guest is named by the file stem.
    pub fn load_file(&self, path: &Path) -> Result<GuestModule, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        self.load(&name, &bytes)
    }

    /// Compiles (or loads from the cache), links, and describes a module.
    pub fn load(&self, name: &str, bytes: &[u8]) -> Result<GuestModule, LoadError> {
        module::load(self, name, bytes)
    }

    /// Epoch ticks that make up the deadline.
    fn deadline_ticks(&self) -> u64 {
        let ticks = self.limits.deadline.as_nanos() / self.epoch_tick.as_nanos().max(1);
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }
}
