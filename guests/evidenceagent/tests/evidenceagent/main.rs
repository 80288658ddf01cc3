//! The EvidenceAgent guest, natively, through mock facts.

mod common;
mod conventions;
mod golden;
mod reasons;
