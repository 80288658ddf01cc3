//! `docs/conditions.md` is generated from the guests' registries: it must
//! be what the guests describe today, and it must name every reason.

use reconciler_host_harness::guests as support;
use reconciler_host_harness::makefile;

use std::path::PathBuf;

use reconciler_conventions::kind::KindSpec;
use reconciler_host::conditions_page::{conditions_page, first_difference};
use reconciler_host::runtime::{Runtime, RuntimeConfig};

fn specs() -> Vec<KindSpec> {
    let runtime = Runtime::new(RuntimeConfig {
        cache: None,
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    makefile::guests()
        .iter()
        .map(|g| format!("{g}-guest"))
        .map(|g| {
            let module = runtime
                .load_file(&support::guest_wasm(&g))
                .unwrap_or_else(|e| panic!("{g} loads: {e}"));
            (**module.spec()).clone()
        })
        .collect()
}

fn committed_page() -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate is in the workspace")
        .join("docs/conditions.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run `make docs` to generate it",
            path.display()
        )
    });
    (path, text)
}

#[test]
fn conditions_page_is_up_to_date() {
    let page = conditions_page(&specs());
    let (path, on_disk) = committed_page();
    if let Some(difference) = first_difference(&page, &on_disk) {
        panic!(
            "{} is out of date: run `make docs` ({difference})",
            path.display()
        );
    }
}

#[test]
fn every_registered_reason_is_on_the_page() {
    let specs = specs();
    let page = conditions_page(&specs);
    let (_, on_disk) = committed_page();
    for spec in &specs {
        let registry = spec.registry();
        assert!(!registry.is_empty(), "{} registers no reason", spec.kind);
        for entry in registry {
            // The row of the Reasons table: the name, then its owner.
            let row = format!("| `{}` | {}", entry.name, entry.owner);
            assert!(
                page.contains(&row),
                "reason {} of {} has no row on the generated page",
                entry.name,
                spec.kind
            );
            assert!(
                on_disk.contains(&row),
                "reason {} of {} is missing from docs/conditions.md: run `make docs`",
                entry.name,
                spec.kind
            );
        }
    }
}
