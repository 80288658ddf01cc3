//! The writer test guest's Widgets (`testing.reconciler.dev/v1`): an
//! object to create, and their API in a test namespace.

use kube::Api;
use kube::api::DynamicObject;
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use crate::objects;

pub const API_VERSION: &str = "testing.reconciler.dev/v1";

/// The Widget `name` with `spec`.
pub fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// The Widgets of `ns`.
pub fn widgets(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), API_VERSION, "Widget")
}
