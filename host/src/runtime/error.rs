//! Errors of loading and running guests. Every one names the guest, and
//! every pass error says whom to blame: the guest or the host.

use std::path::PathBuf;

use reconciler_conventions::engine::ContractError;
use reconciler_conventions::kind::SpecError;

/// Who is at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Blame {
    /// The guest's code or its output: fix the module.
    Guest,
    /// The host or its environment: the module may be fine.
    Host,
}

/// How a pass through a guest failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuestErrorClass {
    /// The guest trapped (a panic, an `unreachable`, a bad memory access).
    Trap,
    /// The guest ran past its deadline and was interrupted.
    Deadline,
    /// The guest tried to grow its memory past the cap.
    MemoryLimit,
    /// The guest returned something the contract does not allow.
    Contract,
    /// The host could not run the guest (instantiation, resources).
    Host,
}

impl GuestErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            GuestErrorClass::Trap => "trap",
            GuestErrorClass::Deadline => "deadline",
            GuestErrorClass::MemoryLimit => "memory-limit",
            GuestErrorClass::Contract => "contract",
            GuestErrorClass::Host => "host",
        }
    }

    pub fn blame(self) -> Blame {
        match self {
            GuestErrorClass::Host => Blame::Host,
            _ => Blame::Guest,
        }
    }
}

impl std::fmt::Display for GuestErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pass through a guest failed. None of these is retried at once: a
/// guest is deterministic, so the same input fails the same way; the
/// operator retries with backoff in case the input or the module changes.
#[derive(Debug, Clone, thiserror::Error)]
#[error("guest {guest}: {class} ({blame:?} fault): {detail}", blame = class.blame())]
pub struct GuestError {
    pub guest: String,
    pub class: GuestErrorClass,
    pub detail: String,
}

impl GuestError {
    /// The error, its detail (which may carry what the guest wrote to its
    /// stderr) on one line with no control character, so that it cannot
    /// forge or colour log lines.
    pub fn new(guest: &str, class: GuestErrorClass, detail: impl Into<String>) -> Self {
        GuestError {
            guest: guest.to_owned(),
            class,
            detail: reconciler_conventions::message::sanitize(&detail.into()),
        }
    }

    pub fn contract(guest: &str, e: &ContractError) -> Self {
        GuestError::new(guest, GuestErrorClass::Contract, e.to_string())
    }

    pub fn blame(&self) -> Blame {
        self.class.blame()
    }
}

/// A module was refused at load. The running host is unaffected.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read the module: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("guest {guest}: not a WebAssembly component: {detail}")]
    NotAComponent { guest: String, detail: String },
    /// Every import the host does not link, comma-separated, found before
    /// the module was compiled.
    #[error(
        "guest {guest}: imports {import}, which the host does not provide (guests get the contract's facts and an inert WASI: cli, io, clocks, random, filesystem and sockets 0.2)"
    )]
    UnsupportedImport { guest: String, import: String },
    /// The component needs more of the instance pool than a guest may
    /// take (core instances, memories, tables, instance size).
    #[error("guest {guest}: does not fit the host's instance pool: {detail}")]
    PoolLimit { guest: String, detail: String },
    #[error("guest {guest}: does not implement the reconciler:guest world: {detail}")]
    WorldMismatch { guest: String, detail: String },
    #[error("guest {guest}: describe failed: {source}")]
    Describe { guest: String, source: GuestError },
    #[error("guest {guest}: kind spec refused: {source}")]
    Spec { guest: String, source: SpecError },
    #[error("guest {guest}: compiled artifact cache: {detail}")]
    Cache { guest: String, detail: String },
}

impl LoadError {
    pub fn blame(&self) -> Blame {
        match self {
            LoadError::Read { .. } | LoadError::Cache { .. } => Blame::Host,
            LoadError::Describe { source, .. } => source.blame(),
            _ => Blame::Guest,
        }
    }
}
