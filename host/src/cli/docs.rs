//! `docs`: the conditions reference of guests, printed, or checked against
//! the committed page.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use reconciler_host::conditions_page::{REGENERATE, conditions_page, first_difference};
use reconciler_host::runtime::Runtime;

#[derive(Args)]
pub(super) struct DocsArgs {
    /// Guest modules (*.wasm), one kind each.
    #[arg(required = true)]
    guests: Vec<PathBuf>,
    /// Compare the page with this file instead of printing it; exits
    /// non-zero when the file differs.
    #[arg(long, value_name = "PATH")]
    check: Option<PathBuf>,
}

pub(super) fn run(runtime: &Runtime, args: DocsArgs) -> anyhow::Result<ExitCode> {
    let mut specs = Vec::with_capacity(args.guests.len());
    for guest in &args.guests {
        let module = runtime.load_file(guest)?;
        specs.push((**module.spec()).clone());
    }
    let page = conditions_page(&specs);
    let Some(path) = args.check else {
        print!("{page}");
        return Ok(ExitCode::SUCCESS);
    };
    let on_disk = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("{} does not exist: run {REGENERATE}", path.display());
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    match first_difference(&page, &on_disk) {
        None => {
            println!("{} is up to date", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Some(difference) => {
            eprintln!(
                "{} is out of date: run {REGENERATE} ({difference})",
                path.display()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
