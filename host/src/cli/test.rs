//! `test`: fixtures through a guest, with a readable report, each checked
//! against its expectations and its golden file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reconciler_host::fixture::golden;
use reconciler_host::fixture::{Fixture, run_fixture};
use reconciler_host::runtime::Runtime;

pub(super) fn run(
    runtime: &Runtime,
    guest: &Path,
    fixtures: &[PathBuf],
    bless: bool,
) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
    // Each pass is the operator's, whose guest evaluates on a blocking
    // thread.
    let tokio = tokio::runtime::Runtime::new()?;
    let (mut passed, mut failed) = (0usize, 0usize);
    for path in fixtures {
        let fixture = match Fixture::load(path) {
            Ok(f) => f,
            Err(e) => {
                println!("FAIL {e}");
                failed += 1;
                continue;
            }
        };
        let report = tokio.block_on(run_fixture(&module, &fixture));
        let golden_path = golden::path_for(path);
        if bless {
            std::fs::write(&golden_path, golden::render(&report.outcomes))?;
        }
        let golden_text = std::fs::read_to_string(&golden_path).ok();
        let problems = golden::problems(
            &report,
            golden_text.as_deref(),
            &golden_path.display().to_string(),
        );
        if problems.is_empty() {
            println!("ok   {}: {}", path.display(), report.name);
            passed += 1;
        } else {
            println!("FAIL {}: {}", path.display(), report.name);
            for p in problems {
                for line in p.lines() {
                    println!("       {line}");
                }
            }
            failed += 1;
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
