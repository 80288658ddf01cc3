//! `describe`, `reasons`, `crd` and `rbac`: what guests declare.

use std::path::Path;
use std::process::ExitCode;

use reconciler_host::runtime::Runtime;

pub fn describe(runtime: &Runtime, guest: &Path) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    // A YAML comment: the output stays the kind spec, parseable as such.
    println!("# contract: reconciler:guest@{}", module.contract_version());
    print!("{}", serde_yaml::to_string(&**module.spec())?);
    Ok(ExitCode::SUCCESS)
}

pub fn reasons(runtime: &Runtime, guest: &Path) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    for entry in module.spec().registry() {
        println!("{}", entry.name);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn crd(runtime: &Runtime, guest: &Path) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    print!(
        "{}",
        serde_yaml::to_string(&reconciler_host::crd::render(module.spec()))?
    );
    Ok(ExitCode::SUCCESS)
}

pub fn rbac(
    runtime: &Runtime,
    guests: &[std::path::PathBuf],
    name: &str,
) -> anyhow::Result<ExitCode> {
    let modules = guests
        .iter()
        .map(|g| runtime.load_file(g))
        .collect::<Result<Vec<_>, _>>()?;
    let specs: Vec<_> = modules.iter().map(|m| &**m.spec()).collect();
    print!(
        "{}",
        serde_yaml::to_string(&reconciler_host::rbac::cluster_role(name, &specs))?
    );
    Ok(ExitCode::SUCCESS)
}
