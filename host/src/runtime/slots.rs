//! Instance slots: how many guest instances may be alive at once.
//!
//! The runtime's engine allocates instances from wasmtime's pooling
//! allocator, which has a fixed number of slots (sized from the operator's
//! concurrency). Every call into a guest takes a slot here before it
//! creates its store and gives it back when the store is dropped, so the
//! pool itself is never asked for more than it holds: a call beyond the
//! pool's size waits for a slot (passes are CPU-bound; more of them at once
//! than the pool holds gains nothing), and one that waits longer than
//! [`InstanceSlots::wait`] fails with a host error naming the pool, rather than
//! with wasmtime's pool-exhaustion error.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A counting semaphore over the pool's instance slots.
#[derive(Debug)]
pub(crate) struct InstanceSlots {
    total: u32,
    free: Mutex<u32>,
    freed: Condvar,
    wait: Duration,
}

/// One slot, held for the lifetime of a store; given back on drop.
pub(crate) struct InstanceSlot<'a>(&'a InstanceSlots);

/// No slot came free in time.
#[derive(Debug, thiserror::Error)]
#[error(
    "no instance slot came free within {waited:?}: all {total} slots of the instance pool are in use (the pool is sized from --concurrency and the number of guests)"
)]
pub(crate) struct SlotsBusy {
    pub total: u32,
    pub waited: Duration,
}

impl InstanceSlots {
    /// `total` slots; a call waits at most `wait` for one.
    pub(crate) fn new(total: u32, wait: Duration) -> Self {
        InstanceSlots {
            total,
            free: Mutex::new(total),
            freed: Condvar::new(),
            wait,
        }
    }

    pub(crate) fn total(&self) -> u32 {
        self.total
    }

    /// Takes a slot, waiting up to the pool's wait for one.
    pub(crate) fn acquire(&self) -> Result<InstanceSlot<'_>, SlotsBusy> {
        let start = Instant::now();
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            let waited = start.elapsed();
            let Some(left) = self.wait.checked_sub(waited).filter(|d| !d.is_zero()) else {
                return Err(SlotsBusy {
                    total: self.total,
                    waited,
                });
            };
            free = self
                .freed
                .wait_timeout(free, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *free -= 1;
        Ok(InstanceSlot(self))
    }
}

impl Drop for InstanceSlot<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        drop(free);
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_call_beyond_the_pool_waits_for_a_slot_then_gives_up_naming_the_pool() {
        let slots = Arc::new(InstanceSlots::new(2, Duration::from_millis(50)));
        let a = slots.acquire().unwrap();
        let _b = slots.acquire().unwrap();
        let busy = slots.acquire().err().expect("no slot is free");
        assert!(busy.waited >= Duration::from_millis(50));
        assert!(busy.to_string().contains("all 2 slots"), "{busy}");
        // A slot given back while a call waits serves it.
        let waiter = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.acquire().map(|_| ()).is_ok())
        };
        std::thread::sleep(Duration::from_millis(10));
        drop(a);
        assert!(waiter.join().unwrap());
    }
}
