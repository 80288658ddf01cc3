//! The guest modules: loaded from the guests directory at start, and hot
//! swapped while the host runs. The directory is polled ([`guests_dir`]);
//! a new or changed module is checked by the gate ([`gate`]) and swapped
//! in ([`reloader`]), or served as a new kind ([`new_kind`]); after a swap
//! it is on probation and rolled back above a failure rate
//! ([`probation`]). At start, each module is held to its kind's golden
//! lists shipped beside it ([`golden`]). A kind's module, as hot swap sees
//! it, is its [`served::ServedModule`].

pub mod gate;
pub mod golden;
pub mod guests_dir;
pub mod new_kind;
pub mod probation;
pub mod reloader;
pub mod served;

use anyhow::Context;

use crate::runtime::{GuestModule, Runtime};
use golden::Golden;
use guests_dir::{DirEvent, GuestFile, GuestsDir};
use probation::short;

/// The first scan of the guests directory: every module, by file name,
/// each held to the golden lists beside it ([`golden`]) unless
/// `allow_golden_drift` (development only) lets a refused one serve.
pub fn load_dir(
    runtime: &Runtime,
    dir: &mut GuestsDir,
    allow_golden_drift: bool,
) -> anyhow::Result<Vec<(GuestFile, GuestModule)>> {
    let events = dir
        .scan()
        .with_context(|| format!("reading the guests directory {}", dir.path().display()))?;
    let mut modules: Vec<(GuestFile, GuestModule)> = Vec::new();
    for event in events {
        let file = match event {
            DirEvent::Changed(file) => file,
            DirEvent::Unreadable { file, error } => {
                anyhow::bail!(
                    "cannot read guest file {file} in {}: {error}",
                    dir.path().display()
                )
            }
            DirEvent::Removed { .. } => continue,
        };
        let module = runtime.load(&file.stem, &file.bytes)?;
        held_to_golden(dir, &module, allow_golden_drift)?;
        if let Some((_, other)) = modules
            .iter()
            .find(|(_, m)| m.spec().kind_ref() == module.spec().kind_ref())
        {
            anyhow::bail!(
                "guest {} claims kind {}, which guest {} serves already",
                module.name(),
                module.spec().kind_ref(),
                other.name()
            );
        }
        tracing::info!(guest = module.name(), kind = %module.spec().kind_ref(), digest = module.digest(), "loaded guest");
        modules.push((file, module));
    }
    anyhow::ensure!(
        !modules.is_empty(),
        "no guest (*.wasm) in {}",
        dir.path().display()
    );
    Ok(modules)
}

/// The start's gate: `module` against its kind's golden lists. A refusal
/// fails the start, naming the module, what it dropped and the golden file,
/// unless `allow_golden_drift`, which serves it with one WARN line.
fn held_to_golden(
    dir: &GuestsDir,
    module: &GuestModule,
    allow_golden_drift: bool,
) -> anyhow::Result<()> {
    let golden = Golden::read(dir, module.name()).with_context(|| {
        format!(
            "cannot read the golden lists of guest {} in {}",
            module.name(),
            dir.path().display()
        )
    })?;
    if golden.is_empty() {
        tracing::info!(
            guest = module.name(),
            "no golden list beside guest {0} ({0}.reasons, {0}.aspects): its reasons and aspects are checked at hot swap only",
            module.name()
        );
        return Ok(());
    }
    let Err(refusal) = golden.check(module.spec()) else {
        return Ok(());
    };
    if allow_golden_drift {
        tracing::warn!(
            kind = %module.spec().kind_ref(),
            check = refusal.check.as_str(),
            "serving guest {} (digest {}…) although the gate refuses it: {}; --allow-golden-drift is for development only",
            module.name(),
            short(module.digest()),
            refusal.detail
        );
        return Ok(());
    }
    anyhow::bail!(
        "refused guest {} (digest {}…) at start: {} (in {}); reasons and aspects are frozen API, so ship the module that keeps them, or pass --allow-golden-drift in development",
        module.name(),
        short(module.digest()),
        refusal.detail,
        dir.path().display()
    )
}
