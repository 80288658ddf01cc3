//! The guest runtime: one wasmtime engine, modules compiled once, and a
//! fresh, limited store for every call into a guest, its instance taken
//! from a pool of slots whose linear memory stays mapped between calls.

pub mod artifacts;
pub mod deadline;
pub mod error;
pub mod limits;
pub mod module;
pub mod sandbox;
pub mod slots;
mod ticker;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use crate::contract::ContractVersion;
pub use artifacts::ArtifactCache;
pub use error::{Blame, GuestError, GuestErrorClass, LoadError};
pub use limits::Limits;
pub use module::{EvaluateRequest, Evaluated, Module, PassState};

use crate::contract::{v0_1, v0_2, v0_3, v0_4, v0_5, v0_6};
use crate::facts::FactServer;
use deadline::Deadline;
use slots::InstanceSlots;
use ticker::EpochTicker;

/// The largest guest module the host reads (a JavaScript or Python guest
/// is 12 to 20 MB; a Rust one well under 1 MB).
pub(crate) const MAX_MODULE_BYTES: u64 = 64 << 20;

/// How the runtime is set up.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    pub limits: Limits,
    /// Where compiled artifacts are kept, and how many bytes of them;
    /// `None` compiles every load.
    pub cache: Option<ArtifactCache>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            limits: Limits::default(),
            cache: ArtifactCache::default_dir().map(ArtifactCache::new),
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
    slots: Arc<InstanceSlots>,
    _ticker: EpochTicker,
}

/// What one guest instance may take from the pool. A component built by
/// `cargo build --target wasm32-wasip2` instantiates 3 core modules (its
/// own and two shims), one by componentize-js 0.23 4, one by
/// componentize-py 0.25 14 (the interpreter and its shared libraries,
/// each a core instance), its `--stub-wasi` output 38; each 1 memory and
/// 2 tables. A module needing more is refused at load as
/// `LoadError::PoolLimit`, naming the limit.
///
/// Core instances cost no reservation: the pool counts them, and each
/// live one mallocs its `VMContext` (a few KiB; wasmtime bounds each at
/// `max_core_instance_size`, 1 MiB by default), so 64 instead of 16 only
/// lets a guest that needs them use them. Memories and tables are what
/// the pool reserves (address space per slot, see `MEMORY_KEEP_RESIDENT`).
const CORE_INSTANCES_PER_GUEST: u32 = 64;
const MEMORIES_PER_GUEST: u32 = 2;
const TABLES_PER_GUEST: u32 = 8;

/// Linear memory a pool slot keeps mapped between instances: reset in
/// place (only the pages the last instance dirtied, found with Linux's
/// `PAGEMAP_SCAN` where the kernel has it, 6.7 and later) rather than
/// unmapped and faulted in again. The guests here touch about 1.1 MiB per
/// pass; what a guest uses above this is released with `madvise` as before.
const MEMORY_KEEP_RESIDENT: usize = 4 << 20;
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Whether the kernel has `PAGEMAP_SCAN` (Linux 6.7+). Without it, keeping
/// memory resident means a `memset` of all of it per instance, which costs
/// more (32 µs for 4 MiB) than the page faults `madvise` leaves.
fn pagemap_scan() -> bool {
    let Ok(release) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 7)
}

impl Runtime {
    /// Instance slots when the caller does not size the pool: four passes
    /// of each of the two bundled kinds, and headroom for loads and the
    /// hot-swap gate's fixtures.
    pub const DEFAULT_INSTANCES: u32 = 16;

    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        Self::with_instances(config, Self::DEFAULT_INSTANCES)
    }

    /// A runtime whose pool holds `instances` guest instances at once
    /// (passes beyond that wait for a slot; see [`slots`]).
    pub fn with_instances(config: RuntimeConfig, instances: u32) -> anyhow::Result<Self> {
        let instances = instances.max(1);
        let mut wasm = Config::new();
        wasm.epoch_interruption(true);
        wasm.wasm_component_model(true);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(instances)
            .max_core_instances_per_component(CORE_INSTANCES_PER_GUEST)
            .total_core_instances(instances * CORE_INSTANCES_PER_GUEST)
            .max_memories_per_component(MEMORIES_PER_GUEST)
            .total_memories(instances * MEMORIES_PER_GUEST)
            .max_tables_per_component(TABLES_PER_GUEST)
            .total_tables(instances * TABLES_PER_GUEST)
            // The cap is enforced (and typed) by the store's limiter first;
            // the pool's slots are never larger than it.
            .max_memory_size(config.limits.memory_bytes)
            .linear_memory_keep_resident(if pagemap_scan() {
                MEMORY_KEEP_RESIDENT
            } else {
                0
            })
            .table_keep_resident(TABLE_KEEP_RESIDENT)
            .max_unused_warm_slots(instances)
            .pagemap_scan(Enabled::Auto);
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm)?;
        let mut linker = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)?;
        // Every served contract version: a component imports the `facts`
        // of the version it was built against.
        v0_6::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_5::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_4::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_3::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_2::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        v0_1::Guest::add_to_linker::<PassState, HasSelf<FactServer>>(&mut linker, |state| {
            &mut state.facts
        })?;
        let epoch_tick = (config.limits.deadline / 10)
            .clamp(Duration::from_millis(1), Duration::from_millis(10));
        let ticker = EpochTicker::start(engine.clone(), epoch_tick)?;
        // A call waits for a slot about as long as ten calls at their
        // deadline take, and at least a second.
        let wait = (config.limits.deadline * 10).max(Duration::from_secs(1));
        Ok(Runtime {
            engine,
            linker,
            limits: config.limits,
            epoch_tick,
            cache: config.cache,
            slots: Arc::new(InstanceSlots::new(instances, wait)),
            _ticker: ticker,
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// How many guest instances the pool holds at once.
    pub fn instances(&self) -> u32 {
        self.slots.total()
    }

    /// Loads a guest module from a file; the guest is named by the file stem.
    pub fn load_file(&self, path: &Path) -> Result<Module, LoadError> {
        let read = || -> std::io::Result<Vec<u8>> {
            let len = std::fs::metadata(path)?.len();
            if len > MAX_MODULE_BYTES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "it is {len} bytes, more than the {} MiB a guest module may be",
                        MAX_MODULE_BYTES >> 20
                    ),
                ));
            }
            std::fs::read(path)
        };
        let bytes = read().map_err(|source| LoadError::Read {
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
    pub fn load(&self, name: &str, bytes: &[u8]) -> Result<Module, LoadError> {
        module::load(self, name, bytes)
    }

    /// The deadline of a call, checked at every epoch tick.
    fn deadline(&self) -> Deadline {
        Deadline::new(self.limits.deadline, self.epoch_tick)
    }
}
