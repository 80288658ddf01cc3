//! The per-parent write bound: the writes each parent's passes made in the
//! last minute, and when its next pass may run once it reached the bound.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The most writes one parent's passes make in a minute (children made or
/// deleted, its status, its Events); past it, its passes wait.
pub const WRITES_PER_MINUTE: usize = 120;

/// The window the bound counts over.
pub const WINDOW: Duration = Duration::from_secs(60);

/// When one parent's last writes were made, within [`WINDOW`].
#[derive(Debug, Default)]
pub struct Writes {
    at: VecDeque<Instant>,
}

impl Writes {
    /// Records `count` writes made at `now`; whether the parent is at the
    /// bound with them (its next pass waits).
    pub fn made(&mut self, count: usize, now: Instant) -> bool {
        self.expire(now);
        self.at
            .extend(std::iter::repeat_n(now, count.min(WRITES_PER_MINUTE)));
        while self.at.len() > WRITES_PER_MINUTE {
            self.at.pop_front();
        }
        count > 0 && self.at.len() >= WRITES_PER_MINUTE
    }

    /// The earliest time the parent may pass again: `at`, or later when
    /// it made [`WRITES_PER_MINUTE`] writes in the window.
    pub fn not_before(&self, at: Instant) -> Instant {
        if self.at.len() < WRITES_PER_MINUTE {
            return at;
        }
        self.at
            .front()
            .map_or(at, |oldest| at.max(*oldest + WINDOW))
    }

    /// Whether no write is left in the window at `now`.
    pub fn is_empty(&mut self, now: Instant) -> bool {
        self.expire(now);
        self.at.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        while self.at.front().is_some_and(|t| *t + WINDOW <= now) {
            self.at.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_at_the_bound_waits_until_its_oldest_write_leaves_the_window() {
        let start = Instant::now();
        let mut w = Writes::default();
        assert!(!w.made(WRITES_PER_MINUTE - 1, start));
        assert_eq!(w.not_before(start), start, "under the bound: at once");
        let later = start + Duration::from_secs(10);
        assert!(w.made(1, later), "the bound reached");
        assert_eq!(w.not_before(later), start + WINDOW);
        assert!(w.made(3, later), "past it: still delayed");
        assert_eq!(w.not_before(later), start + WINDOW);
        assert!(!w.made(0, later), "no write: not counted again");
        assert!(!w.is_empty(later));
        assert!(w.is_empty(later + WINDOW));
        assert_eq!(w.not_before(later + WINDOW), later + WINDOW);
        assert!(!w.made(1, later + WINDOW), "a fresh window");
    }
}
