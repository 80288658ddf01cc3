//! The pure core of a pass, shared by the operator, `reconciler-host test`,
//! `capture` and `shadow`: from what the guest said and what became of the changes
//! it asked for, the status to write, the Events, and when to pass again.
//! No I/O and no clock: the clock, the previous status and every outcome
//! come in; the caller carries out what comes back.
//!
//! - [`settle`]: a pass's status, Events and next time, from what happened;
//! - [`held_by`]: what holds a parent's changes, as a record of its
//!   withdrawals says it;
//! - [`compare`]: what differs between two modules' passes of a parent;
//! - [`review`]: a shadow run's review, parent by parent, and its counts.

pub mod compare;
mod held;
pub mod review;
mod settle;

pub use held::held_by;
pub use settle::{Done, Failure, Happened, Parent, Settled, failed, settle};
