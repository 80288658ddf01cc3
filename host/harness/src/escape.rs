//! What the escape tests share: one pass of an escape guest (Rust, JavaScript or Python) trying one way out of the sandbox, and the message it reports.

use std::sync::Arc;

use reconciler_host::facts::MemorySource;
use reconciler_host::runtime::{EvaluateRequest, GuestError, Module};
use serde_json::{Value, json};

/// The pass's `now` when a test does not give one.
pub const NOW: &str = "2026-11-29T12:00:00Z";

/// One pass of an `Escape` whose spec names the attempt, at `now`; the
/// first aspect's message (what the attempt found), or the guest error.
pub fn attempt_at(
    module: &Module,
    spec: Value,
    resource_version: &str,
    now: &str,
) -> Result<String, GuestError> {
    let parent = json!({
        "apiVersion": "testing.reconciler.dev/v1", "kind": "Escape",
        "metadata": {"name": "e", "namespace": "ns", "uid": "u-1", "generation": 1,
                     "resourceVersion": resource_version},
        "spec": spec
    });
    module
        .evaluate(EvaluateRequest {
            parent: &parent,
            paused: false,
            settings: &[],
            source: Arc::new(MemorySource::new()),
            now: now.parse().expect("a timestamp"),
        })
        .outcome
        .map(|v| v.aspects[0].message.clone())
}

/// [`attempt_at`] at [`NOW`], which must return a verdict.
pub fn attempt(module: &Module, spec: Value) -> String {
    attempt_at(module, spec, "1", NOW).expect("the attempt returns a verdict")
}
