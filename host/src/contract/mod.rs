//! The contract seam: the WIT bindings (the only `bindgen!`) and the
//! versions the host serves. The `facts` import of each version is
//! implemented in [`crate::facts`]'s `import` module.
//!
//! The host serves every released contract version. [`v0_6`] is the current
//! one (`wit/reconciler.wit`), named [`current`] everywhere outside this
//! folder; [`v0_5`], [`v0_4`], [`v0_3`], [`v0_2`] and [`v0_1`] are the
//! released 0.5.0, 0.4.0, 0.3.0, 0.2.0 and 0.1.0, kept under `wit/deps/`. All derive serde's traits: a version keeps every type
//! of the one before with the same names and shape, so an older value
//! converts to its current twin (and back) through [`convert`], without a
//! hand-written conversion per type.
//!
//! - [`version`]: which versions are served, and which one a component
//!   implements;
//! - [`model`]: the current contract's kind spec and verdict as the
//!   conventions engine's model.

pub mod model;
pub mod version;

pub use version::ContractVersion;

/// The current contract's `reconciler` interface (what a guest exports).
pub use current::exports::reconciler::guest0_6_0::reconciler as exports;
/// The current contract's `facts` interface (the imports a guest calls).
pub use current::reconciler::guest0_6_0::facts;
/// The current contract's shared `types`.
pub use current::reconciler::guest0_6_0::types;
/// The current contract version's bindings.
pub use v0_6 as current;

/// `reconciler:guest@0.6.0`, the current contract.
pub mod v0_6 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.6.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// `reconciler:guest@0.5.0`, the released fifth contract.
pub mod v0_5 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.5.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// `reconciler:guest@0.4.0`, the released fourth contract.
pub mod v0_4 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.4.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// `reconciler:guest@0.3.0`, the released third contract.
pub mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.3.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// `reconciler:guest@0.2.0`, the released second contract.
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.2.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// `reconciler:guest@0.1.0`, the released first contract.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "reconciler:guest/guest@0.1.0",
        additional_derives: [serde::Serialize, serde::Deserialize],
    });
}

/// A value of one contract version as its twin of another: same names,
/// same shape (a 0.1 type and its 0.2 namesake), through serde.
///
/// # Panics
/// When the two types differ in shape: a host defect, which the tests of
/// `facts::import::v0_1` rule out for every type the host converts.
pub fn convert<A: serde::Serialize, B: serde::de::DeserializeOwned>(value: A) -> B {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .expect("the contract versions give this type the same shape")
}

/// An older version's kind spec as the current one: [`convert`], each read
/// declared in the parent's namespace only (`read-decl.cross-namespace`,
/// which 0.4.0 added to the record, is false).
pub(crate) fn older_kind_spec<A: serde::Serialize>(spec: A) -> exports::KindSpec {
    let mut json = serde_json::to_value(spec).expect("a kind spec serializes");
    if let Some(reads) = json["reads"].as_array_mut() {
        for read in reads {
            read["cross_namespace"] = serde_json::Value::Bool(false);
        }
    }
    json["printer_columns"] = serde_json::Value::Array(Vec::new());
    serde_json::from_value(json)
        .expect("an older kind spec has the current shape but the read flag and the columns")
}
