//! The module serving a kind, as hot swap sees it: serving or removed, and
//! on probation after a swap, with the module it replaced to fall back to.

use std::time::Instant;

use crate::runtime::Module;

/// When a swapped-in module is rolled back: more than `threshold` of its
/// first `window` passes failed by the guest's fault (a trap, a deadline,
/// the memory cap, a contract violation). Decided as soon as the count of
/// failures makes the rate certain, so a module failing every pass is
/// rolled back after `threshold × window` failures, not after `window`.
#[derive(Clone, Copy, Debug)]
pub struct RollbackPolicy {
    pub threshold: f64,
    pub window: u32,
}

impl Default for RollbackPolicy {
    fn default() -> Self {
        RollbackPolicy {
            threshold: 0.5,
            window: 20,
        }
    }
}

/// The module a kind is served by.
pub struct ServedModule {
    /// The module serving the kind, or, when `serving` is false, the last
    /// one that did (the gate compares a returning module with it).
    pub module: Module,
    /// False once the module's file was removed: no pass runs.
    pub serving: bool,
    /// Set after a swap, until the rollback window has passed.
    pub probation: Option<Probation>,
}

/// A swapped-in module's first passes, counted against its policy.
pub struct Probation {
    pub previous: Module,
    pub policy: RollbackPolicy,
    pub passes: u32,
    pub failures: u32,
    pub swapped_at: Instant,
}

impl ServedModule {
    pub fn new(module: Module) -> Self {
        ServedModule {
            module,
            serving: true,
            probation: None,
        }
    }

    /// The module serving the kind, if its file was not removed.
    pub fn serving(&self) -> Option<Module> {
        self.serving.then(|| self.module.clone())
    }
}
