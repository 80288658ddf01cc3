//! The PgToolBoxConsole guest, natively, through mock facts.

mod common;
mod conventions;
mod exposure;
mod golden;
mod hostname;
mod instance_ca;
mod reasons;
mod render;
