//! `test`: fixtures through a guest, with a readable report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reconciler_host::fixture::{Fixture, run_fixture};
use reconciler_host::runtime::Runtime;

pub fn run(runtime: &Runtime, guest: &Path, fixtures: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let module = runtime.load_file(guest)?;
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
        let report = run_fixture(&module, &fixture);
        if report.passed() {
            println!("ok   {}: {}", path.display(), report.name);
            passed += 1;
            continue;
        }
        println!("FAIL {}: {}", path.display(), report.name);
        for (step, mismatches) in &report.steps {
            for m in mismatches {
                if report.steps.len() > 1 {
                    println!("       [{step}] {m}");
                } else {
                    println!("       {m}");
                }
            }
        }
        failed += 1;
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
