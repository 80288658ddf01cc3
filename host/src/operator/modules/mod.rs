//! The guest modules: loaded from the guests directory at start, and hot
//! swapped while the host runs. The directory is polled ([`guests_dir`]);
//! a new or changed module is checked by the gate ([`gate`]) and swapped
//! in ([`reloader`]), or served as a new kind ([`new_kind`]); after a swap
//! it is on probation and rolled back above a failure rate
//! ([`probation`]). A kind's module, as hot swap sees it, is its
//! [`served::ServedModule`].

pub mod gate;
pub mod guests_dir;
pub mod new_kind;
pub mod probation;
pub mod reloader;
pub mod served;

use anyhow::Context;

use crate::runtime::{GuestModule, Runtime};
use guests_dir::{DirEvent, GuestsDir};

/// The first scan of the guests directory: every module, by file name.
pub fn load_dir(
    runtime: &Runtime,
    dir: &mut GuestsDir,
) -> anyhow::Result<Vec<(String, GuestModule)>> {
    let events = dir
        .scan()
        .with_context(|| format!("reading the guests directory {}", dir.path().display()))?;
    let mut modules: Vec<(String, GuestModule)> = Vec::new();
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
        modules.push((file.file, module));
    }
    anyhow::ensure!(
        !modules.is_empty(),
        "no guest (*.wasm) in {}",
        dir.path().display()
    );
    Ok(modules)
}
