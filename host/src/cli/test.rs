//! `test`: fixtures through a guest, with a readable report, each checked
//! against its expectations and its golden file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use reconciler_host::fixture::golden::{self, Comparison};
use reconciler_host::fixture::{Fixture, run_fixture};
use reconciler_host::runtime::Runtime;

pub fn run(
    runtime: &Runtime,
    guest: &Path,
    fixtures: &[PathBuf],
    bless: bool,
) -> anyhow::Result<ExitCode> {
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
        let mut problems: Vec<String> = Vec::new();
        for (step, mismatches) in &report.steps {
            for m in mismatches {
                problems.push(if report.steps.len() > 1 {
                    format!("[{step}] {m}")
                } else {
                    m.clone()
                });
            }
        }
        let golden_path = golden::path_for(path);
        let produced = golden::render(&report.outcomes);
        if bless {
            std::fs::write(&golden_path, &produced)?;
        } else {
            match golden::compare(&golden_path, &produced) {
                Comparison::Same => {}
                Comparison::Missing => problems.push(format!(
                    "no golden file {}: run with --bless to record it",
                    golden_path.display()
                )),
                Comparison::Differs(diff) => problems.push(format!(
                    "differs from {} (run with --bless if the change is intended):\n{diff}",
                    golden_path.display()
                )),
            }
        }
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
