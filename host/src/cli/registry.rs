//! `push` and `pull`: guest modules through OCI registries, with the
//! golden lists and fixtures a guests directory keeps beside them, and
//! checked against a verification policy's signatures when pulled.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use reconciler_host::oci::cache::DEFAULT_MAX_BYTES;
use reconciler_host::oci::layout::Packaged;
use reconciler_host::oci::{Credentials, ModuleCache, Policy, Remote};
use reconciler_host::runtime::Runtime;

/// How registries are reached.
#[derive(clap::Args)]
pub(super) struct RegistryArgs {
    /// A registry reached over plain HTTP, `host:port` (a registry on
    /// loopback); every other one over HTTPS.
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    insecure: Vec<String>,
    /// A Docker config file with each registry's credentials (default:
    /// $DOCKER_CONFIG/config.json, else ~/.docker/config.json, if it
    /// exists); a registry it does not name is reached anonymously.
    #[arg(long = "registry-config", value_name = "FILE")]
    config: Option<PathBuf>,
}

impl RegistryArgs {
    /// The client these arguments describe.
    pub(super) fn remote(self) -> anyhow::Result<Remote> {
        let file = self
            .config
            .or_else(|| Credentials::default_file().filter(|f| f.exists()));
        let credentials = match file {
            Some(file) => Credentials::read(&file)?,
            None => Credentials::anonymous(),
        };
        Ok(Remote::new(self.insecure, credentials))
    }
}

/// `push`'s arguments.
#[derive(clap::Args)]
pub(super) struct PushArgs {
    /// The module (`<dir>/<stem>.wasm`); `<stem>.reasons`, `<stem>.aspects`
    /// and `<stem>.fixtures/*.yaml` beside it travel with it.
    guest: PathBuf,
    /// Where to push it: a tag, `registry/repository:tag`.
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `pull`'s arguments.
#[derive(clap::Args)]
pub(super) struct PullArgs {
    /// The module: `registry/repository@sha256:...`, or a tag, resolved
    /// once to the digest everything after reads.
    reference: String,
    /// The guests directory to place it in, with what it ships beside it.
    #[arg(long)]
    guests: PathBuf,
    /// The file's stem there (default: the repository's last segment).
    #[arg(long)]
    name: Option<String>,
    /// Where pulled modules are kept by digest (default:
    /// ~/.cache/reconciler-host/pulled).
    #[arg(long)]
    pulled_dir: Option<PathBuf>,
    /// The most the pulled modules take there, in MiB: past it, those
    /// read longest ago are removed.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_MAX_BYTES >> 20)]
    pulled_max_mib: u64,
    /// A verification policy (YAML): which cosign keys must have signed
    /// the module of each kind. Without one, signatures are not checked.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// Pushes a module the host serves (loaded first: what the host would
/// refuse is not published); prints the reference pinned to its digest.
pub(super) fn push(runtime: &Runtime, args: PushArgs) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(&args.guest)?;
    let packaged = Packaged::read(&args.guest)?;
    let remote = args.registry.remote()?;
    let pinned = tokio::runtime::Runtime::new()?.block_on(remote.push(
        &packaged,
        &module.spec().kind,
        &args.reference,
    ))?;
    eprintln!(
        "pushed guest {} (kind {}, {} file(s) beside it)",
        module.name(),
        module.spec().kind,
        packaged.files.len()
    );
    println!("{pinned}");
    Ok(ExitCode::SUCCESS)
}

/// Pulls a module by digest, loads it (a module the host would refuse is
/// not placed: the directory keeps what it had), and places it in the
/// guests directory, the module itself last.
pub(super) fn pull(runtime: &Runtime, args: PullArgs) -> anyhow::Result<ExitCode> {
    let cache = ModuleCache::new(
        args.pulled_dir
            .or_else(ModuleCache::default_dir)
            .context("no cache directory: give --pulled-dir")?,
    )
    .bounded(args.pulled_max_mib.saturating_mul(1 << 20));
    let policy = args.policy.as_deref().map(Policy::read).transpose()?;
    let remote = args.registry.remote()?;
    let pulled = tokio::runtime::Runtime::new()?.block_on(remote.pull(
        &args.reference,
        &cache,
        policy.as_ref(),
    ))?;
    let stem = args.name.unwrap_or_else(|| {
        let repository = pulled.pinned.repository();
        repository
            .rsplit('/')
            .next()
            .unwrap_or(repository)
            .to_owned()
    });
    anyhow::ensure!(
        !stem.is_empty() && !stem.starts_with('.') && !stem.contains(['/', '\\']),
        "--name {stem:?}: a file name in the guests directory (no path, not hidden)"
    );
    let module = runtime
        .load(&stem, &pulled.module.wasm)
        .with_context(|| format!("{} was pulled but is not placed", pulled.pinned))?;
    if let Some(published) = &pulled.kind {
        anyhow::ensure!(
            *published == module.spec().kind,
            "{} was published for kind {published} but its module serves {}: not placed",
            pulled.pinned,
            module.spec().kind
        );
    }
    let path = pulled.module.place(&args.guests, &stem)?;
    let signed = if pulled.signers.is_empty() {
        String::new()
    } else {
        format!(", signed by {}", pulled.signers.join(", "))
    };
    eprintln!(
        "pulled guest {} (kind {}{signed}){}",
        module.name(),
        module.spec().kind,
        if pulled.cached {
            ", from the local cache"
        } else {
            ""
        }
    );
    println!("{} {}", pulled.pinned, path.display());
    Ok(ExitCode::SUCCESS)
}
