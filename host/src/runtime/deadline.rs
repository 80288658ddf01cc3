//! A call's deadline: the CPU time its thread spends in the call, checked
//! at each epoch deadline, under a wall-time ceiling of ten deadlines.
//!
//! Wall time alone would fail a pass whose thread merely waited for a CPU
//! (on a loaded node, the bench saw 37 of 5,000 passes interrupted that
//! way); CPU time measures what the guest did. The ceiling still ends a
//! call that holds its instance slot for long, whatever the reason.

use std::time::{Duration, Instant};

use wasmtime::{Store, UpdateDeadline};

/// How long one call into a guest may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// CPU time of the calling thread.
    cpu: Duration,
    /// The engine's epoch tick: how often the deadline is checked.
    tick: Duration,
}

/// A call ended at its deadline (a [`GuestErrorClass::Deadline`] error).
///
/// [`GuestErrorClass::Deadline`]: super::GuestErrorClass::Deadline
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub(crate) enum DeadlineExceeded {
    #[error("interrupted after {used:?} of CPU time: its deadline is {deadline:?}")]
    Cpu { used: Duration, deadline: Duration },
    #[error(
        "interrupted after {elapsed:?} of wall time (ten times its deadline of {deadline:?} \
         of CPU time), having used {used:?} of CPU time: its thread waited the rest, as on a \
         node short of CPU"
    )]
    Wall {
        elapsed: Duration,
        used: Duration,
        deadline: Duration,
    },
}

impl Deadline {
    /// A deadline of `cpu` CPU time, checked every `tick` of wall time.
    pub fn new(cpu: Duration, tick: Duration) -> Self {
        Deadline { cpu, tick }
    }

    /// The CPU time a call may use.
    pub fn cpu(&self) -> Duration {
        self.cpu
    }

    /// The wall time after which a call ends whatever CPU it used.
    pub(crate) fn wall_ceiling(&self) -> Duration {
        self.cpu * 10
    }

    /// Epoch ticks in `d`, at least one.
    fn ticks(&self, d: Duration) -> u64 {
        let ticks = d.as_nanos() / self.tick.as_nanos().max(1);
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }

    /// Arms the deadline on a fresh store, from now, for a call made on
    /// this thread (calls into a guest are synchronous).
    pub(crate) fn arm<T: 'static>(&self, store: &mut Store<T>) {
        let deadline = *self;
        let started = Instant::now();
        let cpu_at_start = thread_cpu_time();
        store.set_epoch_deadline(deadline.ticks(deadline.cpu));
        store.epoch_deadline_callback(move |_| {
            let used = thread_cpu_time().saturating_sub(cpu_at_start);
            let elapsed = started.elapsed();
            if used >= deadline.cpu {
                return Err(DeadlineExceeded::Cpu {
                    used,
                    deadline: deadline.cpu,
                }
                .into());
            }
            if elapsed >= deadline.wall_ceiling() {
                return Err(DeadlineExceeded::Wall {
                    elapsed,
                    used,
                    deadline: deadline.cpu,
                }
                .into());
            }
            Ok(UpdateDeadline::Continue(
                deadline.ticks(deadline.cpu - used),
            ))
        });
    }
}

/// The CPU time the calling thread has used.
#[allow(unsafe_code)]
fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write to, and the thread CPU
    // clock is always present on the platforms the host builds for.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "the thread CPU clock is unavailable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use wasmtime::{Config, Engine, Linker, Module};

    use super::*;

    const TICK: Duration = Duration::from_millis(2);

    /// A module whose `run` calls the host's `wait` (off the CPU) or spins
    /// (on it) `n` times, each 10 ms.
    fn call(body: &str, n: i32, deadline: Duration) -> wasmtime::Result<()> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        let engine = Engine::new(&config)?;
        let ticker = super::super::ticker::EpochTicker::start(engine.clone(), TICK)?;
        let wat = format!(
            r#"(module
                 (import "host" "wait" (func $wait))
                 (import "host" "spin" (func $spin))
                 (func (export "run") (param $n i32)
                   (loop $again
                     {body}
                     (local.set $n (i32.sub (local.get $n) (i32.const 1)))
                     (br_if $again (i32.gt_s (local.get $n) (i32.const 0))))))"#
        );
        let module = Module::new(&engine, wat::parse_str(wat)?)?;
        let mut linker = Linker::new(&engine);
        linker.func_wrap("host", "wait", || {
            std::thread::sleep(Duration::from_millis(10))
        })?;
        linker.func_wrap("host", "spin", || {
            let start = thread_cpu_time();
            while thread_cpu_time() - start < Duration::from_millis(10) {}
        })?;
        let mut store = Store::new(&engine, ());
        Deadline::new(deadline, TICK).arm(&mut store);
        let run = linker
            .instantiate(&mut store, &module)?
            .get_typed_func::<i32, ()>(&mut store, "run")?;
        let outcome = run.call(&mut store, n);
        drop(ticker);
        outcome
    }

    fn exceeded(outcome: wasmtime::Result<()>) -> DeadlineExceeded {
        outcome
            .expect_err("the call ends at its deadline")
            .downcast::<DeadlineExceeded>()
            .expect("a DeadlineExceeded")
    }

    #[test]
    fn a_call_that_waits_past_its_deadline_on_the_wall_clock_completes() {
        // 200 ms of waiting, a deadline of 50 ms: the time is not the
        // guest's.
        call("(call $wait)", 20, Duration::from_millis(50)).expect("completes");
    }

    #[test]
    fn a_call_spending_its_deadline_of_cpu_time_is_interrupted() {
        let e = exceeded(call("(call $spin)", 100, Duration::from_millis(50)));
        let DeadlineExceeded::Cpu { used, deadline } = e else {
            panic!("{e}");
        };
        assert!(used >= deadline, "{used:?} of {deadline:?}");
        assert!(used < Duration::from_millis(500), "{used:?}: checked late");
    }

    #[test]
    fn a_call_waiting_past_the_wall_ceiling_is_interrupted() {
        // 2 s of waiting, a deadline of 20 ms: its ceiling is 200 ms.
        let e = exceeded(call("(call $wait)", 200, Duration::from_millis(20)));
        assert!(matches!(e, DeadlineExceeded::Wall { .. }), "{e}");
        assert!(e.to_string().contains("its thread waited the rest"), "{e}");
    }
}
