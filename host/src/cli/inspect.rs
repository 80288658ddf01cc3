//! `describe`, `reasons`, `crd` and `rbac`: what guests declare.

use std::path::Path;
use std::process::ExitCode;

use reconciler_host::runtime::Runtime;

pub(super) fn describe(runtime: &Runtime, guest: &Path) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    // A YAML comment: the output stays the kind spec, parseable as such.
    println!("# contract: reconciler:guest@{}", module.contract_version());
    print!("{}", serde_yaml::to_string(&**module.spec())?);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn reasons(runtime: &Runtime, guest: &Path) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    for entry in module.spec().registry() {
        println!("{}", entry.name);
    }
    Ok(ExitCode::SUCCESS)
}

/// The CRD of `guest`'s kind, or without one the GuestModule kind's.
pub(super) fn crd(runtime: &Runtime, guest: Option<&Path>) -> anyhow::Result<ExitCode> {
    let crd = match guest {
        Some(guest) => reconciler_host::crd::render(runtime.load_file(guest)?.spec()),
        None => reconciler_host::operator::guest_modules::kind::crd(),
    };
    print!("{}", serde_yaml::to_string(&crd)?);
    Ok(ExitCode::SUCCESS)
}

/// `rbac`'s arguments.
#[derive(clap::Args)]
pub(super) struct RbacArgs {
    #[arg(required = true)]
    guests: Vec<std::path::PathBuf>,
    /// The roles' name.
    #[arg(long, default_value = "reconciler-host")]
    name: String,
    /// The namespaces the host will watch (`run --namespaces`),
    /// comma-separated: a Role in each instead of one ClusterRole.
    #[arg(long, value_delimiter = ',')]
    namespaces: Vec<String>,
    /// Ask the cluster's discovery (KUBECONFIG) for each kind's plural and
    /// scope, rather than deriving them from its name (a kind the cluster
    /// does not serve is still derived, and named on stderr).
    #[arg(long)]
    discover: bool,
    /// Only the ClusterRole a ring member (`run --ring`) needs beside the
    /// host's: `patch` on each parent kind, whose labels assign it, and
    /// `assign` on it and on the kinds it writes (deploy/ring-admission.yaml).
    #[arg(long, conflicts_with_all = ["namespaces", "discover"])]
    ring: bool,
}

pub(super) fn rbac(runtime: &Runtime, args: RbacArgs) -> anyhow::Result<ExitCode> {
    use reconciler_host::rbac::{Resource, offline};
    let modules = args
        .guests
        .iter()
        .map(|g| runtime.load_file(g))
        .collect::<Result<Vec<_>, _>>()?;
    let specs: Vec<_> = modules.iter().map(|m| &**m.spec()).collect();
    if args.ring {
        let role = reconciler_host::rbac::ring_role(&args.name, &specs, &offline);
        print!("{}", serde_yaml::to_string(&role)?);
        return Ok(ExitCode::SUCCESS);
    }
    let discovered: std::collections::BTreeMap<_, Resource> = if args.discover {
        discover(&specs)?
    } else {
        Default::default()
    };
    let resource_of = |kind: &reconciler_conventions::kind::KindRef| {
        discovered
            .get(kind)
            .cloned()
            .unwrap_or_else(|| offline(kind))
    };
    let namespaces: Vec<String> = args
        .namespaces
        .into_iter()
        .filter(|n| !n.is_empty())
        .collect();
    let documents = reconciler_host::rbac::documents(&args.name, &specs, &namespaces, &resource_of);
    print!("{}", reconciler_host::rbac::yaml(&documents)?);
    Ok(ExitCode::SUCCESS)
}

/// Each read kind's plural and scope, from the cluster's discovery.
fn discover(
    specs: &[&reconciler_conventions::kind::KindSpec],
) -> anyhow::Result<
    std::collections::BTreeMap<
        reconciler_conventions::kind::KindRef,
        reconciler_host::rbac::Resource,
    >,
> {
    use anyhow::Context as _;
    let kinds: std::collections::BTreeSet<_> = specs
        .iter()
        .flat_map(|s| s.reads.iter().map(|r| r.kind.clone()))
        .collect();
    tokio::runtime::Runtime::new()?.block_on(async {
        let client = kube::Client::try_default()
            .await
            .context("--discover needs a cluster (KUBECONFIG, ~/.kube/config or in-cluster)")?;
        let mut found = std::collections::BTreeMap::new();
        for kind in kinds {
            let Some(resolved) =
                reconciler_host::operator::cluster::probe::resolve(&client, &kind).await?
            else {
                // An optional API this cluster does not serve: its grant
                // is derived from its name, for when it is installed.
                eprintln!("rbac: {kind} is not served by this cluster; its plural is derived from its name");
                continue;
            };
            found.insert(
                kind,
                reconciler_host::rbac::Resource {
                    plural: resolved.resource.plural,
                    namespaced: resolved.namespaced,
                },
            );
        }
        Ok(found)
    })
}
