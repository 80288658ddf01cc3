//! The command line: subcommands and the runtime options they share.

mod capture;
mod docs;
mod gates;
mod inspect;
mod live;
mod new;
mod operate;
mod plan;
mod registry;
mod review;
mod shadow;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use reconciler_host::runtime::{ArtifactCache, Limits, Runtime, RuntimeConfig, artifacts};

#[derive(Parser)]
#[command(
    name = "reconciler-host",
    version,
    about = "Runs kinds' WebAssembly guests as a Kubernetes operator"
)]
pub(crate) struct Cli {
    /// How log lines are written to stderr: `text` (colour only on a
    /// terminal) or `json` (one object a line, the pass's parent as
    /// `parent.kind`, `parent.namespace` and `parent.name`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "LOG_FORMAT")]
    pub log_format: LogFormat,
    /// Export traces over OTLP (HTTP, protobuf) to this collector,
    /// `http://host:4318`; unset: no traces, at no cost.
    #[arg(long, global = true, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(subcommand)]
    command: Command,
}

/// The format of log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Print a guest's kind spec (YAML).
    Describe { guest: PathBuf },
    /// Print a guest's reason registry, one reason per line, sorted.
    Reasons { guest: PathBuf },
    /// Run fixture files through a guest; exits non-zero on any failure.
    Test {
        guest: PathBuf,
        #[arg(required = true)]
        fixtures: Vec<PathBuf>,
        /// Rewrite each fixture's golden file with what the passes produced.
        #[arg(long, env = "BLESS", value_parser = clap::builder::FalseyValueParser::new())]
        bless: bool,
    },
    /// Print the CustomResourceDefinition of a guest's kind (YAML), or
    /// with --guest-modules the host's own GuestModule kind's.
    Crd {
        #[arg(
            required_unless_present = "guest_modules",
            conflicts_with = "guest_modules"
        )]
        guest: Option<PathBuf>,
        #[arg(long)]
        guest_modules: bool,
    },
    /// Print the RBAC the host needs to serve these guests (YAML): a
    /// ClusterRole, or with --namespaces a Role in each namespace (and a
    /// ClusterRole for the cluster-scoped kinds guests read); and each
    /// kind's plan approver role (`approve` on it), for its reviewers.
    Rbac(inspect::RbacArgs),
    /// Run the operator: serve every guest in a directory.
    Run(Box<operate::RunArgs>),
    /// Print the conditions reference of guests (Markdown), or check a file against it.
    Docs(docs::DocsArgs),
    /// Review a ReconcilePlan: show it, approve it or deny it, as the user
    /// the cluster authenticates you as (KUBECONFIG).
    Plan(plan::PlanArgs),
    /// Capture one live pass of a parent as a fixture and its golden: run
    /// as the operator runs it (KUBECONFIG), writing nothing to the
    /// cluster; `test` replays it offline.
    Capture(Box<capture::CaptureArgs>),
    /// Shadow a candidate module: evaluate it beside the module serving its
    /// kind on every live parent (KUBECONFIG), writing nothing; print what
    /// would differ (YAML). Exits 1 when a parent would turn from Ready True
    /// to False or the candidate fails where the serving module does not.
    Shadow(Box<shadow::ShadowArgs>),
    /// Create a guest for a new kind in an empty directory, in Rust,
    /// JavaScript or Python: the SDK by version, a spec, one aspect, a
    /// test, fixtures and a README; it builds outside this repository.
    New(new::NewArgs),
    /// Publish a guest module to an OCI registry (the CNCF TAG Runtime
    /// layout of a wasm artifact, its golden lists and fixtures beside it);
    /// prints the reference pinned to its digest.
    Push(registry::PushArgs),
    /// Pull a guest module from an OCI registry by digest (a tag is
    /// resolved once) into a guests directory, checked before it is placed.
    Pull(registry::PullArgs),
}

/// Limits and caching of the guest runtime.
#[derive(Args)]
struct RuntimeArgs {
    /// CPU-time deadline of one call into a guest, in milliseconds (1 to
    /// 60000); a call also ends at ten times it in wall time.
    #[arg(long, global = true, default_value_t = 100, env = "GUEST_DEADLINE_MS",
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    deadline_ms: u64,
    /// Linear-memory cap of a guest, in MiB (1 to 4096: a linear memory
    /// addresses at most 4 GiB).
    #[arg(long, global = true, default_value_t = 64, env = "GUEST_MEMORY_MIB",
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    memory_mib: u64,
    /// Where compiled guests are cached (default: ~/.cache/reconciler-host/modules).
    #[arg(long, global = true, env = "GUEST_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// The most the compiled guests' cache keeps, in MiB: past it, the
    /// artifacts loaded longest ago go first.
    #[arg(long, global = true, value_name = "MIB", env = "GUEST_CACHE_MAX_MIB",
          default_value_t = artifacts::DEFAULT_MAX_BYTES >> 20)]
    cache_max_mib: u64,
    /// Compile every guest afresh; keep no compiled artifacts.
    #[arg(long, global = true)]
    no_cache: bool,
}

/// The options every command accepts (before or after its name), and the
/// commands where they do nothing: their `--help` leaves them out.
const NOT_APPLYING: &[(&str, &[&str])] = &[
    ("new", &GUEST_OPTIONS),
    ("plan", &GUEST_OPTIONS),
    ("describe", &["otlp_endpoint"]),
    ("reasons", &["otlp_endpoint"]),
    ("crd", &["otlp_endpoint"]),
    ("rbac", &["otlp_endpoint"]),
    ("docs", &["otlp_endpoint"]),
    ("push", &["otlp_endpoint"]),
    ("pull", &["otlp_endpoint"]),
];

/// The shared options: logging, traces and the guest runtime's, which
/// `new` and `plan` (no guest runs) have no use for.
const GUEST_OPTIONS: [&str; 7] = [
    "log_format",
    "otlp_endpoint",
    "deadline_ms",
    "memory_mib",
    "cache_dir",
    "cache_max_mib",
    "no_cache",
];

impl Cli {
    /// The command line, parsed; each command's `--help` showing only the
    /// shared options that apply to it ([`NOT_APPLYING`]).
    pub(crate) fn parse_shown() -> Cli {
        let mut command = Cli::command();
        for (name, hidden) in NOT_APPLYING {
            let copies: Vec<clap::Arg> = command
                .get_arguments()
                .filter(|a| hidden.contains(&a.get_id().as_str()))
                .map(|a| a.clone().hide(true))
                .collect();
            assert_eq!(copies.len(), hidden.len(), "{name}: {hidden:?}");
            // A subcommand holding an argument of a shared option's id is
            // not given it again: the hidden copy stands in for it.
            command = command.mut_subcommand(name, |sub| sub.args(copies));
        }
        Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
    }
}

impl RuntimeArgs {
    /// The runtime, its instance pool holding `instances` guests at once.
    fn runtime(&self, instances: u32) -> anyhow::Result<Runtime> {
        Runtime::with_instances(
            RuntimeConfig {
                limits: Limits {
                    deadline: Duration::from_millis(self.deadline_ms),
                    memory_bytes: usize::try_from(self.memory_mib << 20)
                        .expect("at most 4 GiB fits a usize on a 64-bit host"),
                },
                cache: if self.no_cache {
                    None
                } else {
                    self.cache_dir
                        .clone()
                        .or_else(ArtifactCache::default_dir)
                        .map(|dir| {
                            ArtifactCache::new(dir)
                                .bounded(self.cache_max_mib.saturating_mul(1 << 20))
                        })
                },
            },
            instances,
        )
    }
}

pub(crate) fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let instances = match cli.command {
        // Plans are the cluster's: no guest runs.
        Command::Plan(args) => return plan::run(args),
        Command::New(args) => return new::run(args),
        Command::Run(ref args) => args.instances(),
        _ => Runtime::DEFAULT_INSTANCES,
    };
    let runtime = cli.runtime.runtime(instances)?;
    match cli.command {
        Command::Describe { guest } => inspect::describe(&runtime, &guest),
        Command::Reasons { guest } => inspect::reasons(&runtime, &guest),
        Command::Test {
            guest,
            fixtures,
            bless,
        } => test::run(&runtime, &guest, &fixtures, bless),
        Command::Crd {
            guest,
            guest_modules: _,
        } => inspect::crd(&runtime, guest.as_deref()),
        Command::Rbac(args) => inspect::rbac(&runtime, args),
        Command::Run(args) => operate::run(&runtime, *args),
        Command::Docs(args) => docs::run(&runtime, args),
        Command::Capture(args) => capture::run(&runtime, *args),
        Command::Shadow(args) => shadow::run(&runtime, *args),
        Command::Push(args) => registry::push(&runtime, args),
        Command::Pull(args) => registry::pull(&runtime, args),
        Command::Plan(_) | Command::New(_) => {
            unreachable!("dispatched before the runtime is built")
        }
    }
}
