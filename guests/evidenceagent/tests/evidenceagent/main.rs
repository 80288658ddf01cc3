//! The EvidenceAgent guest, natively, through mock facts.

mod changes;
mod common;
mod conventions;
mod golden;
mod issuer;
mod reasons;
