//! `run`: the operator, until SIGTERM or Ctrl-C.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use reconciler_host::operator::{self, OperatorConfig};
use reconciler_host::runtime::Runtime;

#[derive(Args)]
pub struct RunArgs {
    /// The directory of guest modules (*.wasm), one kind each.
    #[arg(long, env = "GUESTS_DIR")]
    guests: PathBuf,
    /// Namespaces to watch, comma-separated; empty: all.
    #[arg(
        long,
        env = "WATCH_NAMESPACES",
        value_delimiter = ',',
        default_value = ""
    )]
    namespaces: Vec<String>,
    /// A setting handed to a kind's guest: `<Kind>.<name>=<value>`.
    #[arg(long = "setting", value_name = "KIND.NAME=VALUE")]
    settings: Vec<String>,
    /// Passes of one kind at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Serve Prometheus metrics at http://<addr>/metrics.
    #[arg(long, env = "METRICS_ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
}

pub fn run(runtime: &Runtime, args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut settings: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for s in &args.settings {
        let (key, value) = s
            .split_once('=')
            .with_context(|| format!("--setting {s:?}: expected <Kind>.<name>=<value>"))?;
        let (kind, name) = key
            .split_once('.')
            .with_context(|| format!("--setting {s:?}: expected <Kind>.<name>=<value>"))?;
        settings
            .entry(kind.to_owned())
            .or_default()
            .push((name.to_owned(), value.to_owned()));
    }
    let config = OperatorConfig {
        guests_dir: args.guests,
        namespaces: args
            .namespaces
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect(),
        settings,
        concurrency: args.concurrency,
        metrics_addr: args.metrics_addr,
    };
    let tokio = tokio::runtime::Runtime::new()?;
    tokio.block_on(async {
        let client = kube::Client::try_default().await.context(
            "no Kubernetes client configuration (KUBECONFIG, ~/.kube/config or in-cluster)",
        )?;
        operator::run(client, runtime, config, shutdown_signal()).await
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler installs");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
