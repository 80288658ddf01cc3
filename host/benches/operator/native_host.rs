//! The native baseline's host process: the operator `reconciler-host run` runs, in this bench's own binary started again as a child, its EvidenceAgent passes evaluated by [`NativeEvidenceAgent`] instead of the wasm module.
//!
//! The bench starts it exactly as it starts the release host (the same
//! arguments, environment, log and metrics), with [`ROLE`] set: the same
//! watches, caches, queues, workers, plans, children, status writes and
//! Events, the module still loaded (its spec, hot swap, probation), and
//! only the guest call replaced by a direct call. Both binaries are built
//! by `cargo bench` with the same profile.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use reconciler_host::operator::replica::leadership::Shard;
use reconciler_host::operator::replica::metrics::Metrics;
use reconciler_host::operator::write::authority::AuthorityConfig;
use reconciler_host::operator::write::plans::PlanConfig;
use reconciler_host::operator::{self, OperatorConfig, RollbackPolicy};
use reconciler_host::runtime::{ArtifactCache, Runtime, RuntimeConfig};

use super::native::NativeEvidenceAgent;

/// Set (to any value) in the environment of the bench binary started as
/// the native host.
pub(crate) const ROLE: &str = "BENCH_OPERATOR_NATIVE_HOST";

/// The operator with the arguments the bench gives `reconciler-host`
/// (`--cache-dir D run --guests G --namespaces N --setting K.S=V...
/// [--concurrency C] --metrics-addr A`), the CLI's defaults for the rest.
pub(crate) fn main() -> Result<()> {
    logs();
    let mut args = std::env::args().skip(1);
    let (mut cache, mut guests, mut namespaces, mut metrics_addr) = (None, None, vec![], None);
    let mut settings: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut concurrency = 4usize;
    while let Some(arg) = args.next() {
        if arg == "run" {
            continue;
        }
        let value = args
            .next()
            .with_context(|| format!("{arg} without a value"))?;
        match arg.as_str() {
            "--cache-dir" => cache = Some(ArtifactCache::new(PathBuf::from(value))),
            "--guests" => guests = Some(PathBuf::from(value)),
            "--namespaces" => namespaces.push(value),
            "--metrics-addr" => metrics_addr = Some(value.parse()?),
            "--concurrency" => concurrency = value.parse()?,
            "--setting" => {
                let (kind, rest) = value.split_once('.').context("--setting K.NAME=VALUE")?;
                let (name, v) = rest.split_once('=').context("--setting K.NAME=VALUE")?;
                settings
                    .entry(kind.to_owned())
                    .or_default()
                    .push((name.to_owned(), v.to_owned()));
            }
            other => bail!("the native host does not take {other}"),
        }
    }
    let runtime = Runtime::with_instances(
        RuntimeConfig {
            cache,
            ..RuntimeConfig::default()
        },
        u32::try_from(concurrency + 4).unwrap_or(1024),
    )?;
    let config = OperatorConfig {
        guests_dir: guests.context("--guests")?,
        namespaces,
        settings,
        concurrency,
        metrics_addr,
        allow_golden_drift: false,
        strict_start: true,
        guests_poll: Some(Duration::from_secs(2)),
        promotion: Default::default(),
        rollback: RollbackPolicy {
            threshold: 0.5,
            window: 20,
        },
        resync: Some(Duration::from_secs(600)),
        watch_down_bound: Duration::from_secs(30),
        wedged_after: Duration::from_secs(300),
        leader: None,
        shard: Shard::default(),
        ring: false,
        ring_selection: Default::default(),
        authority: AuthorityConfig {
            namespace: String::new(),
            name: String::new(),
            validity: Duration::from_secs(90 * 24 * 3600),
        },
        plans: PlanConfig {
            replan_after: Duration::from_secs(60),
            ..PlanConfig::default()
        },
        metrics: Arc::new(Metrics::new()),
        guest_modules: None,
    };
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let mut config = config;
        let client = operator::replica::client::counted(
            &config.metrics,
            &operator::replica::fence::Fence::open(),
        )
        .await?;
        config.authority.namespace = client.default_namespace().to_owned();
        config.authority.name = reconciler_host::rbac::CA_SECRET.to_owned();
        let term = async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("a SIGTERM handler installs");
            term.recv().await;
        };
        operator::run_with(
            client,
            &runtime,
            config,
            Arc::new(NativeEvidenceAgent),
            term,
        )
        .await
    })
}

/// Log lines to stderr as the binary writes them (text, no colour,
/// `RUST_LOG`).
fn logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
}
