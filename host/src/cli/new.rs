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
    /// A child the kind owns: each parent wants one, made from its spec,
    /// which the host applies, owns and keeps as asked; an aspect says
    /// whether it is made (what holds it, or why it was refused).
    #[arg(long, value_enum, value_name = "KIND")]
    child: Option<Child>,
}

/// The kinds of child `new --child` writes an example of.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Child {
    #[value(name = "Deployment")]
    Deployment,
    #[value(name = "ConfigMap")]
    ConfigMap,
    #[value(name = "CronJob")]
    CronJob,
}

impl Child {
    /// (group, version, kind, the child's name after its parent's, the
    /// spec's fields beyond the greeting, the child's body).
    fn parts(self) -> [&'static str; 6] {
        match self {
            Child::ConfigMap => ["", "v1", "ConfigMap", "-greeting", "", CONFIG_MAP_BODY],
            Child::Deployment => ["apps", "v1", "Deployment", "", IMAGE_FIELD, DEPLOYMENT_BODY],
            Child::CronJob => ["batch", "v1", "CronJob", "", CRON_JOB_FIELDS, CRON_JOB_BODY],
        }
    }
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
    let files = templates(kind, &lower, &args.group, &args.version, &sdk, args.child);
    for (path, text) in &files {
        let path = args.dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "created {} ({} files): a guest for {kind} ({}/{}){}; see its README.md",
        args.dir.display(),
        files.len(),
        args.group,
        args.version,
        args.child
            .map(|c| format!(" owning a {}", c.parts()[2]))
            .unwrap_or_default()
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
    child: Option<Child>,
) -> Vec<(String, String)> {
    let [child_group, child_version, child_kind, suffix, fields, body] =
        child.map(Child::parts).unwrap_or_default();
    let child_api_version = if child_group.is_empty() {
        child_version.to_owned()
    } else {
        format!("{child_group}/{child_version}")
    };
    // Fragments first: they hold placeholders of their own.
    let fill = |t: &str| {
        t.replace("{{child_fields}}", fields)
            .replace("{{child_body}}", body)
            .replace("{{Kind}}", kind)
            .replace("{{kind}}", lower)
            .replace("{{group}}", group)
            .replace("{{version}}", version)
            .replace("{{sdk}}", &sdk.display().to_string())
            .replace("{{child_group}}", child_group)
            .replace("{{child_version}}", child_version)
            .replace("{{child_api_version}}", &child_api_version)
            .replace("{{Child}}", child_kind)
            .replace("{{child_suffix}}", suffix)
    };
    let (lib, native, valid) = match child {
        None => (LIB_RS, NATIVE_RS, FIXTURE_VALID),
        Some(_) => (LIB_CHILD_RS, NATIVE_CHILD_RS, FIXTURE_CHILD_VALID),
    };
    [
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", lib),
        ("tests/native.rs", native),
        ("fixtures/valid.yaml", valid),
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

const LIB_CHILD_RS: &str = r##"//! The reconciler guest of `{{Kind}}` ({{group}}/{{version}}): its kind spec
//! (aspects, reasons, spec schema), and each pass's verdict and the child
//! it wants, a {{Child}} made from the spec, which the host applies (by
//! server-side apply), owns (the parent as its controller) and keeps as
//! asked (drift is applied again).

use reconciler_guest_sdk::change;
use reconciler_guest_sdk::configuration::CONFIGURATION_INVALID;
use reconciler_guest_sdk::ownership::{Parent, RESOURCE_NOT_OWNED};
use reconciler_guest_sdk::verdict::{fails, ok};
use reconciler_guest_sdk::{
    ApplyObject, Change, ConventionProfile, Evaluation, Facts, Guest, KindRef, KindSpec,
    Reconciliation, Verdict, VerdictBuilder, spec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

pub const GROUP: &str = "{{group}}";
pub const KIND: &str = "{{Kind}}";
/// The first aspect: the spec makes sense.
pub const CONFIGURATION_VALID: &str = "ConfigurationValid";
/// The second aspect: the {{Child}} is made as asked.
pub const CHILD_READY: &str = "ChildReady";
/// ConfigurationValid=False (and a stall): no greeting to say.
pub const GREETING_MISSING: &str = "GreetingMissing";
/// ChildReady=False: the API server refused the host's apply of the {{Child}}.
pub const CHILD_REFUSED: &str = "ChildRefused";

/// `.spec`: one type for both the CRD's schema (`spec::schema_of`, from
/// the field docs and `#[schemars]` bounds) and the parse (`input.spec`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct {{Kind}}Spec {
    /// What to say.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub greeting: String,
{{child_fields}}}

/// The kind of the child.
pub fn child_kind() -> KindRef {
    spec::kind_ref("{{child_group}}", "{{child_version}}", "{{Child}}")
}

/// The child's name: its parent's{{child_suffix}}.
pub fn child_name(parent: &str) -> String {
    format!("{parent}{{child_suffix}}")
}

/// The {{Child}} `name` a parent of `spec` wants: only the fields this
/// guest decides (the host adds the namespace, the owner and its label).
pub fn child_body(name: &str, spec: &{{Kind}}Spec) -> serde_json::Value {
{{child_body}}}

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
            aspects: vec![CONFIGURATION_VALID.into(), CHILD_READY.into()],
            advisory: vec![],
            reasons: spec::Registry::new("{{kind}}")
                .common(&[CONFIGURATION_INVALID, RESOURCE_NOT_OWNED])
                .owned(&[
                    (
                        GREETING_MISSING,
                        "ConfigurationValid=False (and Stalled=True): spec.greeting is empty.",
                    ),
                    (
                        CHILD_REFUSED,
                        "ChildReady=False: the API server refused the host's apply of the {{Child}}.",
                    ),
                ])
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

    /// The kinds it changes: the host watches them (a written kind is
    /// readable without declaring it in `reads`) and needs RBAC on them
    /// (`reconciler-host rbac`).
    fn writes() -> Vec<KindRef> {
        vec![child_kind()]
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let mut verdict = VerdictBuilder::new();
        let mut changes = Vec::new();
        if input.paused {
            return Reconciliation { verdict: verdict.build(), changes };
        }
        let spec = match input.spec::<{{Kind}}Spec>() {
            Ok(spec) => spec,
            Err(e) => {
                // The schema let it through (or no API server checked it):
                // the message names the field.
                verdict.aspect(fails(CONFIGURATION_VALID, CONFIGURATION_INVALID, e.message()));
                verdict.stall(CONFIGURATION_INVALID, e.message());
                return Reconciliation { verdict: verdict.build(), changes };
            }
        };
        if spec.greeting.is_empty() {
            let message = "spec.greeting is empty: say something";
            verdict.aspect(fails(CONFIGURATION_VALID, GREETING_MISSING, message));
            verdict.stall(GREETING_MISSING, message);
            return Reconciliation { verdict: verdict.build(), changes };
        }
        verdict.aspect(ok(CONFIGURATION_VALID, format!("Says {:?}", spec.greeting)));

        let meta = &input.parent.meta;
        let name = child_name(&meta.name);
        let what = format!("{{Child}} {name}");
        // An object of that name another controls is never taken over.
        let existing = facts.get(&child_kind(), &meta.namespace, &name).ok().flatten();
        let owner = Parent::of(KIND, meta);
        if let Some(why) = existing.and_then(|o| owner.refusal("{{Child}}", &name, &o.meta)) {
            verdict.aspect(fails(CHILD_READY, RESOURCE_NOT_OWNED, why));
            return Reconciliation { verdict: verdict.build(), changes };
        }
        changes.push(Change::Apply(ApplyObject {
            kind: child_kind(),
            name: name.clone(),
            body: child_body(&name, &spec).to_string(),
        }));
        // True only once the host made it: what holds it (a plan awaiting
        // approval, mode observe) or refused it says so instead.
        let state = facts.change_state(&child_kind(), &meta.namespace, &name);
        verdict.aspect(change::aspect(CHILD_READY, &what, state.as_ref(), CHILD_REFUSED, || {
            ok(CHILD_READY, format!("{what} is applied as asked"))
        }));
        Reconciliation { verdict: verdict.build(), changes }
    }
}

reconciler_guest_sdk::export_guest!({{Kind}});
"##;

/// `new --child ConfigMap`'s child.
const CONFIG_MAP_BODY: &str = r#"    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"greeting": spec.greeting},
    })
"#;

/// `new --child Deployment`'s spec field beyond the greeting.
const IMAGE_FIELD: &str = r#"    /// The greeter's container image.
    #[serde(default = "default_image")]
    pub image: String,
"#;

/// `new --child CronJob`'s spec fields beyond the greeting.
const CRON_JOB_FIELDS: &str = r#"    /// The greeter's container image.
    #[serde(default = "default_image")]
    pub image: String,
    /// When to say it (cron syntax).
    #[serde(default = "default_schedule")]
    pub schedule: String,
"#;

/// `new --child Deployment`'s child.
const DEPLOYMENT_BODY: &str = r#"    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/instance": name}},
                "spec": {"containers": [{
                    "name": "greeter",
                    "image": spec.image,
                    "command": ["sh", "-c", "echo \"$GREETING\"; sleep infinity"],
                    "env": [{"name": "GREETING", "value": spec.greeting}],
                }]},
            },
        },
    })
}

fn default_image() -> String {
    "busybox:1.36".into()
"#;

/// `new --child CronJob`'s child.
const CRON_JOB_BODY: &str = r#"    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": spec.schedule,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{
                    "name": "greeter",
                    "image": spec.image,
                    "command": ["sh", "-c", "echo \"$GREETING\""],
                    "env": [{"name": "GREETING", "value": spec.greeting}],
                }],
            }}}},
        },
    })
}

fn default_image() -> String {
    "busybox:1.36".into()
}

fn default_schedule() -> String {
    "*/5 * * * *".into()
"#;

const NATIVE_CHILD_RS: &str = r#"//! The guest's logic natively, with mock facts: no host, no cluster.

use reconciler_guest_sdk::mock::{MockFacts, evaluation};
use reconciler_guest_sdk::testing::keeps_contract;
use reconciler_guest_sdk::{Change, ChangeOutcome, ConditionStatus, Guest};
use serde_json::json;
use {{kind}}_guest::{CHILD_READY, GREETING_MISSING, {{Kind}}, child_kind, child_name};

fn parent(spec: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "{{group}}/{{version}}", "kind": "{{Kind}}",
           "metadata": {"name": "hello", "namespace": "default", "uid": "u1", "generation": 1},
           "spec": spec})
}

#[test]
fn a_greeting_asks_for_the_child_and_is_ready_once_it_is_made() {
    let input = evaluation(parent(json!({"greeting": "hi"})), &[]);
    // The host has not acted on the change yet.
    let before = MockFacts::at(0).with_change_state(&child_kind(), "default", &child_name("hello"), None);
    let asked = {{Kind}}::reconcile(&input, &before);
    keeps_contract(&{{Kind}}::describe(), &asked.verdict, false);
    let [Change::Apply(apply)] = &asked.changes[..] else {
        panic!("one apply: {:?}", asked.changes)
    };
    assert_eq!((&apply.kind, apply.name.as_str()), (&child_kind(), child_name("hello").as_str()));
    let body: serde_json::Value = serde_json::from_str(&apply.body).unwrap();
    assert_eq!(body["kind"], "{{Child}}");
    assert!(body.to_string().contains("\"hi\""), "{body}");
    // Not made yet: ChildReady says it is asked for, not that it is there.
    assert_eq!(asked.verdict.aspects[1].status, ConditionStatus::Unknown);

    let made = MockFacts::at(0).with_change_state(
        &child_kind(),
        "default",
        &child_name("hello"),
        Some(ChangeOutcome::Made),
    );
    let verdict = {{Kind}}::reconcile(&input, &made).verdict;
    keeps_contract(&{{Kind}}::describe(), &verdict, false);
    assert_eq!(verdict.aspects[1].type_, CHILD_READY);
    assert_eq!(verdict.aspects[1].status, ConditionStatus::True);
}

#[test]
fn a_child_another_object_controls_is_not_taken_over() {
    let theirs = MockFacts::at(0).with_object(
        &child_kind(),
        json!({"metadata": {"name": child_name("hello"), "namespace": "default", "uid": "c1",
               "ownerReferences": [{"apiVersion": "v1", "kind": "Other", "name": "x",
                                    "uid": "someone-else", "controller": true}]}}),
    );
    let input = evaluation(parent(json!({"greeting": "hi"})), &[]);
    let r = {{Kind}}::reconcile(&input, &theirs);
    keeps_contract(&{{Kind}}::describe(), &r.verdict, false);
    assert!(r.changes.is_empty(), "{:?}", r.changes);
    assert_eq!(r.verdict.aspects[1].reason, "ResourceNotOwned");
}

#[test]
fn no_greeting_stalls_and_asks_for_nothing() {
    let r = {{Kind}}::reconcile(&evaluation(parent(json!({})), &[]), &MockFacts::at(0));
    keeps_contract(&{{Kind}}::describe(), &r.verdict, false);
    assert!(r.changes.is_empty());
    assert_eq!(r.verdict.aspects[0].reason, GREETING_MISSING);
    assert_eq!(r.verdict.stall.as_ref().map(|s| s.reason.as_str()), Some(GREETING_MISSING));
}
"#;

const FIXTURE_CHILD_VALID: &str = r#"# A {{Kind}} with a greeting: ConfigurationValid True; the {{Child}} hello{{child_suffix}} is
# asked for and made in the pass (no plans here: changes are made directly), so ChildReady
# True and Ready True.
name: a greeting is valid and its child made
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
  writes: true
  held: null
  aspects:
    ConfigurationValid:
      status: 'True'
      reason: AsExpected
    ChildReady:
      status: 'True'
      reason: AsExpected
  conditions:
    Ready:
      status: 'True'
      reason: AsExpected
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        for child in [
            None,
            Some(Child::ConfigMap),
            Some(Child::Deployment),
            Some(Child::CronJob),
        ] {
            for (path, text) in templates(
                "Greeting",
                "greeting",
                "example.com",
                "v1",
                Path::new("/sdk"),
                child,
            ) {
                assert!(
                    !text.contains("{{"),
                    "{child:?}: {path} keeps a placeholder"
                );
            }
        }
    }
}
