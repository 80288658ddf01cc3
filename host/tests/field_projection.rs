//! A read that names its fields (contract 0.6.0, `read-decl.fields`), in
//! each language: the guest is served those fields only, and a fixture
//! whose verdict turns on a field its read does not declare fails, naming
//! the field and the read. The escape guests (Rust, JavaScript, Python)
//! declare their read of Services with `spec.ports` only, and on
//! `undeclared-field` read `spec.clusterIP`.

use std::path::Path;
use std::time::Duration;

use reconciler_host::fixture::{Fixture, run_fixture};
use reconciler_host::runtime::{Limits, Module, Runtime, RuntimeConfig};
use reconciler_host_harness::guests::{guest_wasm, polyglot};

/// A module in a runtime whose deadline outlasts a debug build's
/// JavaScript or Python pass on two shared cores.
fn load(path: &Path) -> Module {
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits {
            deadline: Duration::from_secs(1),
            ..Limits::default()
        },
        cache: None,
    })
    .expect("runtime");
    rt.load_file(path)
        .unwrap_or_else(|e| panic!("{} loads: {e}", path.display()))
}

/// A fixture of the escape guest of kind `kind` told to read the
/// undeclared field, beside a Service that has it: the guest says what
/// the operator serves it (the field absent), as the fixture expects.
fn fixture(kind: &str) -> Fixture {
    let yaml = format!(
        r#"
name: reads a field its read does not declare
parent:
  apiVersion: testing.reconciler.dev/v1
  kind: {kind}
  metadata: {{name: e, namespace: ns, uid: u-1, generation: 1}}
  spec: {{attempt: undeclared-field}}
objects:
- apiVersion: v1
  kind: Service
  metadata: {{name: db, namespace: ns}}
  spec:
    clusterIP: 10.96.0.10
    ports: [{{port: 5432}}]
expect:
  aspects:
    Escaped: {{status: 'True', reason: AsExpected, message: clusterIP absent}}
"#
    );
    Fixture::parse(&yaml, Path::new("undeclared-field.yaml")).expect("a valid fixture")
}

/// The step fails with exactly one mismatch, naming the field and the read.
fn fails_naming_the_field(module: &Module, kind: &str) {
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let report = rt.block_on(run_fixture(module, &fixture(kind)));
    assert!(!report.passed(), "the fixture fails: {report:?}");
    let (_, mismatches) = &report.steps[0];
    assert_eq!(
        mismatches,
        &[
            "the guest reads `spec.clusterIP` of v1/Service, a field its read of v1/Service does not \
             declare (it declares spec.ports): the operator serves the object without it, and the \
             pass comes to otherwise with it; add it to the read's fields"
                .to_owned()
        ],
        "only the undeclared read fails the step: the verdict, served as the operator serves it, \
         is what the fixture expects"
    );
}

#[test]
fn a_rust_guest_reading_an_undeclared_field_fails_its_fixture_naming_it() {
    fails_naming_the_field(&load(&guest_wasm("escape-guest")), "Escape");
}

#[test]
fn a_javascript_guest_reading_an_undeclared_field_fails_its_fixture_naming_it() {
    fails_naming_the_field(&load(&polyglot("escape_js.wasm")), "JsEscape");
}

#[test]
fn a_python_guest_reading_an_undeclared_field_fails_its_fixture_naming_it() {
    fails_naming_the_field(&load(&polyglot("escape_py.wasm")), "PyEscape");
}
