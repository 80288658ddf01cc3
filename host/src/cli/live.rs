//! What `capture` and `shadow` share: the operator's view of a live
//! cluster (its guests directory, namespaces and settings), and the
//! module serving a kind there.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use reconciler_host::capture;
use reconciler_host::operator::hot_swap::guests_dir::GuestsDir;
use reconciler_host::operator::hot_swap::load_dir;
use reconciler_host::operator::kinds::settings_of;
use reconciler_host::runtime::{Module, Runtime};

use super::operate::parse_settings;

/// The operator's view of the cluster, as `run` takes it.
#[derive(Args)]
pub(super) struct LiveArgs {
    /// The directory of guest modules (*.wasm), loaded as `run` loads it.
    #[arg(long, env = "GUESTS_DIR")]
    pub guests: PathBuf,
    /// The namespaces the operator watches (`run --namespaces`),
    /// comma-separated; empty: all. What the guest reads is listed there.
    #[arg(long, value_delimiter = ',', default_value = "")]
    namespaces: Vec<String>,
    /// A setting handed to the kind's guest, as `run` takes it:
    /// `<Kind>.<name>=<value>`.
    #[arg(long = "setting", value_name = "KIND.NAME=VALUE")]
    settings: Vec<String>,
    /// Development only: load a module the golden lists beside it refuse,
    /// as `run --allow-golden-drift` does.
    #[arg(long)]
    allow_golden_drift: bool,
}

impl LiveArgs {
    /// The module of the guests directory serving `kind` (a refused file
    /// fails the command: it runs the modules it names).
    pub(super) fn serving(&self, runtime: &Runtime, kind: &str) -> anyhow::Result<Module> {
        let mut dir = GuestsDir::open(&self.guests)
            .with_context(|| format!("opening the guests directory {}", self.guests.display()))?;
        let modules = load_dir(runtime, &mut dir, self.allow_golden_drift, true)?
            .modules
            .into_iter()
            .map(|(_, m)| m)
            .collect();
        Ok(capture::serving(modules, kind, &self.guests)?)
    }

    /// `kind`'s settings, each name once (the first value given).
    pub(super) fn settings(
        &self,
        kind: &str,
    ) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let by_kind = parse_settings(&self.settings)?;
        Ok(capture::settings_of(&settings_of(&by_kind, kind)))
    }

    /// The namespaces watched: `[""]` for all.
    pub(super) fn scopes(&self) -> Vec<String> {
        let scopes: Vec<String> = self
            .namespaces
            .iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .collect();
        if scopes.is_empty() {
            vec![String::new()]
        } else {
            scopes
        }
    }
}
