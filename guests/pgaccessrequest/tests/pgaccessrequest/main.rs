//! The PgAccessRequest guest, natively, through mock facts.

mod common;
mod conventions;
mod deletions;
mod reasons;
