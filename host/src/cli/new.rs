//! `new`: a guest crate for a new kind, from an empty directory, building
//! anywhere (its own workspace and guest profile): the SDK dependency, a
//! typed spec, a registry, one aspect, a native test, a fixture and a
//! README.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

/// `new`'s arguments.
#[derive(clap::Args)]
pub struct NewArgs {
    /// The kind, in UpperCamelCase (`Greeting`).
    kind: String,
    /// The directory to create (it must not exist, or be empty).
    dir: PathBuf,
    /// The kind's API group.
    #[arg(long, default_value = "example.com")]
    group: String,
    /// The kind's API version.
    #[arg(long, default_value = "v1alpha1")]
    version: String,
    /// The guest SDK's directory (`guests/sdk` of this repository): the SDK
    /// is not on a registry, so the crate depends on it by path.
    #[arg(long, value_name = "PATH")]
    sdk_path: PathBuf,
}

pub fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    let kind = &args.kind;
    if kind.is_empty()
        || !kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        bail!("kind {kind:?}: expected UpperCamelCase ASCII letters and digits, such as Greeting");
    }
    if args.group.is_empty() || !args.group.contains('.') {
        bail!(
            "--group {:?}: expected a DNS name such as example.com",
            args.group
        );
    }
    let sdk = std::fs::canonicalize(&args.sdk_path)
        .with_context(|| format!("--sdk-path {}", args.sdk_path.display()))?;
    if !sdk.join("Cargo.toml").is_file() {
        bail!(
            "--sdk-path {}: no Cargo.toml there (expected the repository's guests/sdk)",
            sdk.display()
        );
    }
    if args.dir.exists()
        && std::fs::read_dir(&args.dir)
            .with_context(|| format!("reading {}", args.dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} exists and is not empty: give a new directory",
            args.dir.display()
        );
    }
    let lower = kind.to_ascii_lowercase();
    let files = templates(kind, &lower, &args.group, &args.version, &sdk);
    for (path, text) in &files {
        let path = args.dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "created {} ({} files): a guest for {kind} ({}/{}); see its README.md",
        args.dir.display(),
        files.len(),
        args.group,
        args.version
    );
    Ok(ExitCode::SUCCESS)
}

/// The crate's files, by path relative to its directory.
fn templates(
    kind: &str,
    lower: &str,
    group: &str,
    version: &str,
    sdk: &Path,
) -> Vec<(String, String)> {
    let fill = |t: &str| {
        t.replace("{{Kind}}", kind)
            .replace("{{kind}}", lower)
            .replace("{{group}}", group)
            .replace("{{version}}", version)
            .replace("{{sdk}}", &sdk.display().to_string())
    };
    [
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", LIB_RS),
        ("tests/native.rs", NATIVE_RS),
        ("fixtures/valid.yaml", FIXTURE_VALID),
        ("fixtures/missing-greeting.yaml", FIXTURE_MISSING),
        ("README.md", README),
    ]
    .into_iter()
    .map(|(path, text)| (path.to_owned(), fill(text)))
    .collect()
}

const CARGO_TOML: &str = r#"[package]
name = "{{kind}}-guest"
description = "The reconciler guest of {{Kind}} ({{group}}/{{version}})"
edition = "2024"
version = "0.1.0"
publish = false

# A crate of its own, wherever it is created.
[workspace]

[lib]
crate-type = ["cdylib", "rlib"]

[dependencies]
reconciler-guest-sdk = { path = "{{sdk}}" }
schemars = { version = "1.2", default-features = false, features = ["derive", "std"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

# `cargo build --target wasm32-wasip2 --profile guest`: small, optimised
# whole-program, aborting on panic (a panic is a trap the host reports).
[profile.guest]
inherits = "release"
lto = true
codegen-units = 1
panic = "abort"
"#;

const LIB_RS: &str = r##"//! The reconciler guest of `{{Kind}}` ({{group}}/{{version}}): its kind spec
//! (aspects, reasons, spec schema) and its evaluation, one pass at a time.

use reconciler_guest_sdk::configuration::CONFIGURATION_INVALID;
use reconciler_guest_sdk::verdict::{fails, ok};
use reconciler_guest_sdk::{
    ConventionProfile, Evaluation, Facts, Guest, KindSpec, Verdict, VerdictBuilder, spec,
};
use schemars::JsonSchema;
use serde::Deserialize;

pub const GROUP: &str = "{{group}}";
pub const KIND: &str = "{{Kind}}";
/// The aspect: the spec makes sense.
pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
/// ConfigurationValid=False (and a stall): no greeting to say.
pub const GREETING_MISSING: &str = "GreetingMissing";

/// `.spec`: one type for both the CRD's schema (`spec::schema_of`, from
/// the field docs and `#[schemars]` bounds) and the parse (`input.spec`).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct {{Kind}}Spec {
    /// What to say.
    #[schemars(length(max = 256))]
    pub greeting: String,
}

pub struct {{Kind}};

impl Guest for {{Kind}} {
    fn describe() -> KindSpec {
        KindSpec {
            group: GROUP.into(),
            version: "{{version}}".into(),
            kind: KIND.into(),
            plural: "{{kind}}s".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec![CONFIGURATION_VALID.into()],
            advisory: vec![],
            reasons: spec::Registry::new("{{kind}}")
                .common(&[CONFIGURATION_INVALID])
                .owned(&[(
                    GREETING_MISSING,
                    "ConfigurationValid=False (and Stalled=True): spec.greeting is empty.",
                )])
                .build(),
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![spec::stalls(CONFIGURATION_INVALID), spec::stalls(GREETING_MISSING)],
            reads: vec![],
            pause: spec::pause("{{group}}/reconcile", "skip"),
            spec_schema: Some(spec::schema_of::<{{Kind}}Spec>()),
            printer_columns: vec![],
        }
    }

    fn evaluate(input: &Evaluation, _facts: &dyn Facts) -> Verdict {
        let mut verdict = VerdictBuilder::new();
        if input.paused {
            return verdict.build();
        }
        let spec = match input.spec::<{{Kind}}Spec>() {
            Ok(spec) => spec,
            Err(e) => {
                // The schema let it through (or no API server checked it):
                // the message names the field.
                verdict.aspect(fails(CONFIGURATION_VALID, CONFIGURATION_INVALID, e.message()));
                verdict.stall(CONFIGURATION_INVALID, e.message());
                return verdict.build();
            }
        };
        if spec.greeting.is_empty() {
            let message = "spec.greeting is empty: say something";
            verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message));
            verdict.stall(GREETING_MISSING, message);
        } else {
            verdict.aspect(ok(CONFIGURATION_VALID, format!("Says {:?}", spec.greeting)));
        }
        verdict.build()
    }
}

reconciler_guest_sdk::export_guest!({{Kind}});
"##;

const NATIVE_RS: &str = r#"//! The guest's logic natively, with mock facts: no host, no cluster.

use reconciler_guest_sdk::mock::{MockFacts, evaluation};
use reconciler_guest_sdk::testing::keeps_contract;
use reconciler_guest_sdk::{ConditionStatus, Guest};
use serde_json::json;
use {{kind}}_guest::{CONFIGURATION_VALID, GREETING_MISSING, {{Kind}}};

fn parent(spec: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "{{group}}/{{version}}", "kind": "{{Kind}}",
           "metadata": {"name": "hello", "namespace": "default", "generation": 1},
           "spec": spec})
}

#[test]
fn a_greeting_is_valid() {
    let verdict = {{Kind}}::evaluate(&evaluation(parent(json!({"greeting": "hi"})), &[]), &MockFacts::at(0));
    keeps_contract(&{{Kind}}::describe(), &verdict, false);
    let c = &verdict.aspects[0];
    assert_eq!(c.type_, CONFIGURATION_VALID);
    assert_eq!(c.status, ConditionStatus::True);
    assert!(verdict.stall.is_none());
}

#[test]
fn a_greeting_that_is_not_text_is_named() {
    let verdict = {{Kind}}::evaluate(&evaluation(parent(json!({"greeting": 5})), &[]), &MockFacts::at(0));
    keeps_contract(&{{Kind}}::describe(), &verdict, false);
    assert_eq!(verdict.aspects[0].reason, "ConfigurationInvalid");
    assert!(verdict.aspects[0].message.contains("spec.greeting"), "{}", verdict.aspects[0].message);
}

#[test]
fn no_greeting_stalls() {
    let verdict = {{Kind}}::evaluate(&evaluation(parent(json!({})), &[]), &MockFacts::at(0));
    keeps_contract(&{{Kind}}::describe(), &verdict, false);
    assert_eq!(verdict.aspects[0].reason, GREETING_MISSING);
    assert_eq!(verdict.stall.as_ref().map(|s| s.reason.as_str()), Some(GREETING_MISSING));
}
"#;

const FIXTURE_VALID: &str = r#"# A {{Kind}} with a greeting: ConfigurationValid True, so Ready True.
name: a greeting is valid
now: '2026-01-01T00:00:00Z'
parent:
  apiVersion: {{group}}/{{version}}
  kind: {{Kind}}
  metadata:
    name: hello
    namespace: default
    uid: 00000000-0000-4000-8000-000000000001
    generation: 1
  spec:
    greeting: hi
expect:
  conditions:
    Ready:
      status: 'True'
      reason: AsExpected
    ConfigurationValid:
      status: 'True'
      reason: AsExpected
"#;

const FIXTURE_MISSING: &str = r#"# No greeting: ConfigurationValid False with GreetingMissing, a stall.
name: no greeting stalls
now: '2026-01-01T00:00:00Z'
parent:
  apiVersion: {{group}}/{{version}}
  kind: {{Kind}}
  metadata:
    name: hello
    namespace: default
    uid: 00000000-0000-4000-8000-000000000001
    generation: 1
  spec: {}
expect:
  conditions:
    ConfigurationValid:
      status: 'False'
      reason: GreetingMissing
    Stalled:
      status: 'True'
      reason: GreetingMissing
"#;

const README: &str = r#"# {{Kind}} guest

The reconciler guest of `{{Kind}}` (`{{group}}/{{version}}`), made by
`reconciler-host new`. Its logic is `src/lib.rs`: `describe` declares the
kind (aspects, reasons, spec schema, pause annotation), `evaluate` decides
one pass from the parent and its facts.

```sh
cargo test                                                # the logic, natively (tests/native.rs)
cargo build --target wasm32-wasip2 --profile guest        # the component
WASM=$(cargo metadata --format-version 1 | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/wasm32-wasip2/guest/{{kind}}_guest.wasm
reconciler-host test --bless $WASM fixtures/*.yaml        # first time: write the goldens, then read them
reconciler-host test $WASM fixtures/*.yaml                # every change: the fixtures against their goldens
reconciler-host crd $WASM | kubectl apply -f -            # the CRD
reconciler-host reasons $WASM > {{kind}}_guest.reasons    # the golden list shipped beside the module
cp $WASM {{kind}}_guest.reasons <the host's --guests directory>   # served at the next poll
```

`rustup target add wasm32-wasip2` once. The SDK's guide is `docs/guests.md`
of the host's repository.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        for (path, text) in templates(
            "Greeting",
            "greeting",
            "example.com",
            "v1",
            Path::new("/sdk"),
        ) {
            assert!(!text.contains("{{"), "{path} keeps a placeholder");
        }
    }
}
