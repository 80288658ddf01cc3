//! Per-call resource limits: the deadline and the linear-memory cap.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// How long and how much memory one call into a guest may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU time of one call (describe or evaluate), checked at epoch ticks;
    /// a call also ends at ten times this in wall time (see [`super::deadline`]).
    pub deadline: Duration,
    /// The most bytes of linear memory the guest may hold.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_millis(100),
            memory_bytes: 64 << 20,
        }
    }
}

/// The error a guest's memory growth past the cap traps with.
#[derive(Debug, thiserror::Error)]
#[error("memory growth to {desired} bytes refused: the cap is {cap} bytes")]
pub(crate) struct MemoryCapExceeded {
    pub desired: usize,
    pub cap: usize,
}

/// Refuses memory growth past the cap with a trap the host can classify.
pub struct MemoryLimiter {
    cap: usize,
}

impl MemoryLimiter {
    pub fn new(cap: usize) -> Self {
        MemoryLimiter { cap }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            return Err(MemoryCapExceeded {
                desired,
                cap: self.cap,
            }
            .into());
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}
