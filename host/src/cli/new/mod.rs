//! `new`: a guest for a new kind, from an empty directory, building anywhere, in Rust (its own workspace and
//! guest profile), JavaScript or Python: the SDK dependency by version, a spec, a registry, one aspect, a test,
//! fixtures and a README.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

/// `new`'s arguments.
#[derive(clap::Args)]
pub(super) struct NewArgs {
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
    /// The guest's language.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    lang: Lang,
    /// A local guest SDK instead of the registry's, for an unreleased SDK
    /// or working offline: Rust, the crate's directory (`guests/sdk`) or
    /// the `.crate` `cargo package` makes (unpacked into the guest's
    /// `sdk/`), as a `[patch.crates-io]` override; JavaScript, its directory or the
    /// tarball `npm pack` makes (a `file:` dependency); Python, its
    /// directory or the wheel `pip wheel` makes (what the README installs).
    #[arg(long, value_name = "PATH")]
    sdk_path: Option<PathBuf>,
    /// A child the kind owns: each parent wants one,
    /// made from its spec, which the host applies, owns and keeps as asked;
    /// an aspect says whether it is made (what holds it, or why it was
    /// refused).
    #[arg(long, value_enum, value_name = "KIND")]
    child: Option<Child>,
}

/// The languages `new` writes a guest in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Lang {
    Rust,
    Js,
    Python,
}

impl Lang {
    /// What a local SDK of this language is: a directory holding this
    /// manifest (naming the package), or a file with this extension.
    fn sdk(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Lang::Rust => ("Cargo.toml", "name = \"reconciler-guest-sdk\"", ".crate"),
            Lang::Js => ("package.json", "\"@reconciler-host/guest-sdk\"", ".tgz"),
            Lang::Python => (
                "pyproject.toml",
                "name = \"reconciler-host-guest-sdk\"",
                ".whl",
            ),
        }
    }
}

/// The componentize-py a Python guest is built with: the Makefile's
/// `COMPONENTIZE_PY_VERSION` (host/tests/new_guest.rs holds them equal).
pub(super) const COMPONENTIZE_PY: &str = "0.25.1";

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
    /// (group, version, kind, the child's name after its parent's).
    fn parts(self) -> [&'static str; 4] {
        match self {
            Child::ConfigMap => ["", "v1", "ConfigMap", "-greeting"],
            Child::Deployment => ["apps", "v1", "Deployment", ""],
            Child::CronJob => ["batch", "v1", "CronJob", ""],
        }
    }

    /// (the spec's fields beyond the greeting, the child's body) in `lang`.
    fn fragments(self, lang: Lang) -> [&'static str; 2] {
        match (lang, self) {
            (Lang::Rust, Child::ConfigMap) => ["", CONFIG_MAP_BODY],
            (Lang::Rust, Child::Deployment) => [IMAGE_FIELD, DEPLOYMENT_BODY],
            (Lang::Rust, Child::CronJob) => [CRON_JOB_FIELDS, CRON_JOB_BODY],
            (Lang::Js, Child::ConfigMap) => ["", JS_CONFIG_MAP_BODY],
            (Lang::Js, Child::Deployment) => [JS_IMAGE_FIELD, JS_DEPLOYMENT_BODY],
            (Lang::Js, Child::CronJob) => [JS_CRON_JOB_FIELDS, JS_CRON_JOB_BODY],
            (Lang::Python, Child::ConfigMap) => ["", PY_CONFIG_MAP_BODY],
            (Lang::Python, Child::Deployment) => [PY_IMAGE_FIELD, PY_DEPLOYMENT_BODY],
            (Lang::Python, Child::CronJob) => [PY_CRON_JOB_FIELDS, PY_CRON_JOB_BODY],
        }
    }
}

/// `text` with the placeholders of `child` (in `lang`) filled, none when
/// there is no child: its fragments first, since they hold placeholders of
/// their own (filled here, or by the caller: `{{Kind}}`...).
fn fill_child(text: &str, child: Option<Child>, lang: Lang) -> String {
    let [group, version, kind, suffix] = child.map(Child::parts).unwrap_or_default();
    let [fields, body] = child.map(|c| c.fragments(lang)).unwrap_or_default();
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    text.replace("{{child_fields}}", fields)
        .replace("{{child_body}}", body)
        .replace("{{child_group}}", group)
        .replace("{{child_version}}", version)
        .replace("{{child_api_version}}", &api_version)
        .replace("{{Child}}", kind)
        .replace("{{child_suffix}}", suffix)
}

pub(super) fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
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
    let sdk = match &args.sdk_path {
        None => None,
        Some(path) => Some(local_sdk(args.lang, path)?),
    };
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
    let sdk = match sdk {
        Some(file) if args.lang == Lang::Rust && file.is_file() => {
            Some(unpack_crate(&file, &args.dir)?)
        }
        other => other,
    };
    let lower = kind.to_ascii_lowercase();
    let files = match args.lang {
        Lang::Rust => templates(
            kind,
            &lower,
            &args.group,
            &args.version,
            sdk.as_deref(),
            args.child,
        ),
        Lang::Js | Lang::Python => other_language(
            args.lang,
            kind,
            &lower,
            &args.group,
            &args.version,
            sdk.as_deref(),
            args.child,
        ),
    };
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
    if sdk.is_none() {
        // Until the SDKs are published under these names by this project,
        // whoever publishes a package of that name first would be what the
        // guest builds with.
        let (registry, package) = match args.lang {
            Lang::Rust => ("crates.io", "reconciler-guest-sdk"),
            Lang::Js => ("npm", "@reconciler-host/guest-sdk"),
            Lang::Python => ("PyPI", "reconciler-host-guest-sdk"),
        };
        eprintln!(
            "note: it depends on {package} {} from {registry}, where this project has not \
             published it yet: build with the SDK `make sdks` packages in the host's repository \
             (`reconciler-host new --sdk-path <it>`), not with a package of that name from elsewhere",
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` as a local SDK of `lang`, made absolute; or why it is not one.
fn local_sdk(lang: Lang, path: &Path) -> anyhow::Result<PathBuf> {
    let sdk =
        std::fs::canonicalize(path).with_context(|| format!("--sdk-path {}", path.display()))?;
    let (manifest, name, packaged) = lang.sdk();
    if sdk.is_file() {
        if !sdk.to_string_lossy().ends_with(packaged) {
            bail!(
                "--sdk-path {}: a file, but not a packaged SDK ({packaged}) of --lang {lang:?}",
                sdk.display()
            );
        }
        return Ok(sdk);
    }
    let text = std::fs::read_to_string(sdk.join(manifest)).with_context(|| {
        format!(
            "--sdk-path {}: no {manifest} there (expected the SDK of --lang {lang:?}, or its {packaged})",
            sdk.display()
        )
    })?;
    if !text.contains(name) {
        bail!(
            "--sdk-path {}: its {manifest} does not name the package {name}",
            sdk.display()
        );
    }
    Ok(sdk)
}

/// The `.crate` `crate_file` unpacked under `dir/sdk/` (cargo's path
/// dependencies take a directory); its path relative to `dir`, as the
/// guest's `[patch.crates-io]` names it.
fn unpack_crate(crate_file: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let at = || format!("--sdk-path {}", crate_file.display());
    let file = std::fs::File::open(crate_file).with_context(at)?;
    let into = dir.join("sdk");
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(&into)
        .with_context(|| format!("{}: unpacking it into {}", at(), into.display()))?;
    // A .crate holds one directory, `<name>-<version>`, as its file is named.
    let stem = crate_file
        .file_stem()
        .map(PathBuf::from)
        .unwrap_or_default();
    let (manifest, name, _) = Lang::Rust.sdk();
    let text = std::fs::read_to_string(into.join(&stem).join(manifest)).with_context(|| {
        format!(
            "{}: no {}/{manifest} in it (a .crate holds <name>-<version>/, as its file is named)",
            at(),
            stem.display()
        )
    })?;
    if !text.contains(name) {
        bail!("{}: its {manifest} does not name the package {name}", at());
    }
    Ok(Path::new("sdk").join(stem))
}

/// A JavaScript or Python guest's files, by path relative to its directory
/// (JavaScript: owning `child`, if any).
fn other_language(
    lang: Lang,
    kind: &str,
    lower: &str,
    group: &str,
    version: &str,
    sdk: Option<&Path>,
    child: Option<Child>,
) -> Vec<(String, String)> {
    let release = env!("CARGO_PKG_VERSION");
    let (sdk_dependency, sdk_requirement) = match sdk {
        Some(path) => (
            format!("file:{}", path.display()),
            path.display().to_string(),
        ),
        None => (
            release.to_owned(),
            format!("reconciler-host-guest-sdk=={release}"),
        ),
    };
    let fill = |t: &str| {
        fill_child(t, child, lang)
            .replace("{{Kind}}", kind)
            .replace("{{kind}}", lower)
            .replace("{{group}}", group)
            .replace("{{version}}", version)
            .replace("{{sdk_dependency}}", &sdk_dependency)
            .replace("{{sdk_requirement}}", &sdk_requirement)
            .replace("{{componentize_py}}", COMPONENTIZE_PY)
    };
    // A child's guest, its tests and its fixture are the Rust child's twins;
    // the rest is the same with or without one.
    let (guest, test, valid) = match (lang, child) {
        (Lang::Python, None) => (PY_APP, PY_TEST, FIXTURE_VALID),
        (Lang::Python, Some(_)) => (PY_CHILD_APP, PY_CHILD_TEST, FIXTURE_CHILD_VALID),
        (_, None) => (JS_GUEST, JS_TEST, FIXTURE_VALID),
        (_, Some(_)) => (JS_CHILD_GUEST, JS_CHILD_TEST, FIXTURE_CHILD_VALID),
    };
    let files = match lang {
        Lang::Js => vec![
            ("package.json", include_str!("templates/js/package.json")),
            ("src/main.js", include_str!("templates/js/src/main.js")),
            ("src/guest.js", guest),
            ("test/guest.test.js", test),
            ("README.md", include_str!("templates/js/README.md")),
            (".gitignore", "node_modules/\ndist/\n*.wasm\n"),
            ("fixtures/valid.yaml", valid),
        ],
        _ => vec![
            ("app.py", guest),
            ("test_app.py", test),
            ("README.md", include_str!("templates/python/README.md")),
            (".gitignore", ".venv/\ndeps/\n__pycache__/\n*.wasm\n"),
            ("fixtures/valid.yaml", valid),
        ],
    };
    files
        .into_iter()
        .chain([("fixtures/missing-greeting.yaml", FIXTURE_MISSING)])
        .map(|(path, text)| (path.to_owned(), fill(text)))
        .collect()
}

/// The crate's files, by path relative to its directory.
fn templates(
    kind: &str,
    lower: &str,
    group: &str,
    version: &str,
    sdk: Option<&Path>,
    child: Option<Child>,
) -> Vec<(String, String)> {
    let sdk_override = match sdk {
        Some(path) => format!(
            "# A local SDK instead of the registry's (`reconciler-host new --sdk-path`):\n\
             # an unreleased SDK, or working offline. Remove this section to build\n\
             # with the released one.\n\
             [patch.crates-io]\n\
             reconciler-guest-sdk = {{ path = {:?} }}\n",
            path.display().to_string()
        ),
        None => "# To build with a local SDK (unreleased, or offline), override it:\n\
                 # [patch.crates-io]\n\
                 # reconciler-guest-sdk = { path = \"<the host's repository>/guests/sdk\" }\n"
            .to_owned(),
    };
    let fill = |t: &str| {
        fill_child(t, child, Lang::Rust)
            .replace("{{Kind}}", kind)
            .replace("{{kind}}", lower)
            .replace("{{group}}", group)
            .replace("{{version}}", version)
            .replace("{{sdk_version}}", env!("CARGO_PKG_VERSION"))
            .replace("{{sdk_override}}", &sdk_override)
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

const CARGO_TOML: &str = include_str!("templates/rust/Cargo.toml");

const LIB_RS: &str = include_str!("templates/rust/lib.rs.tmpl");

const NATIVE_RS: &str = include_str!("templates/rust/native.rs.tmpl");

const FIXTURE_VALID: &str = include_str!("templates/rust/valid.yaml");

const FIXTURE_MISSING: &str = include_str!("templates/rust/missing-greeting.yaml");

const README: &str = include_str!("templates/rust/README.md");

const LIB_CHILD_RS: &str = include_str!("templates/rust/child/lib.rs.tmpl");

/// `new --child ConfigMap`'s child.
const CONFIG_MAP_BODY: &str = include_str!("templates/rust/child/config-map-body.rs.tmpl");

/// `new --child Deployment`'s spec field beyond the greeting.
const IMAGE_FIELD: &str = include_str!("templates/rust/child/image-field.rs.tmpl");

/// `new --child CronJob`'s spec fields beyond the greeting.
const CRON_JOB_FIELDS: &str = include_str!("templates/rust/child/cron-job-fields.rs.tmpl");

/// `new --child Deployment`'s child.
const DEPLOYMENT_BODY: &str = include_str!("templates/rust/child/deployment-body.rs.tmpl");

/// `new --child CronJob`'s child.
const CRON_JOB_BODY: &str = include_str!("templates/rust/child/cron-job-body.rs.tmpl");

const NATIVE_CHILD_RS: &str = include_str!("templates/rust/child/native.rs.tmpl");

const FIXTURE_CHILD_VALID: &str = include_str!("templates/rust/child/valid.yaml");

const JS_GUEST: &str = include_str!("templates/js/src/guest.js");

const JS_TEST: &str = include_str!("templates/js/test/guest.test.js");

/// `new --lang js --child`'s guest: the Rust child's (`LIB_CHILD_RS`) twin.
const JS_CHILD_GUEST: &str = include_str!("templates/js/child/guest.js");

/// `new --lang js --child`'s tests: the Rust child's (`NATIVE_CHILD_RS`) twin.
const JS_CHILD_TEST: &str = include_str!("templates/js/child/guest.test.js");

/// `new --lang js --child ConfigMap`'s child.
const JS_CONFIG_MAP_BODY: &str = include_str!("templates/js/child/config-map-body.js");

/// `new --lang js --child Deployment`'s spec field beyond the greeting.
const JS_IMAGE_FIELD: &str = include_str!("templates/js/child/image-field.js");

/// `new --lang js --child CronJob`'s spec fields beyond the greeting.
const JS_CRON_JOB_FIELDS: &str = include_str!("templates/js/child/cron-job-fields.js");

/// `new --lang js --child Deployment`'s child.
const JS_DEPLOYMENT_BODY: &str = include_str!("templates/js/child/deployment-body.js");

/// `new --lang js --child CronJob`'s child.
const JS_CRON_JOB_BODY: &str = include_str!("templates/js/child/cron-job-body.js");

/// The Python guest and its unit tests (the SDK's native mock).
const PY_APP: &str = include_str!("templates/python/app.py");
const PY_TEST: &str = include_str!("templates/python/test_app.py");
/// The Python guest owning a child, the JavaScript one's twin.
const PY_CHILD_APP: &str = include_str!("templates/python/child/app.py");
const PY_CHILD_TEST: &str = include_str!("templates/python/child/test_app.py");
/// Its children's bodies and spec fields, in Python.
const PY_CONFIG_MAP_BODY: &str = include_str!("templates/python/child/config_map_body.py");
const PY_IMAGE_FIELD: &str = include_str!("templates/python/child/image_field.py");
const PY_CRON_JOB_FIELDS: &str = include_str!("templates/python/child/cron_job_fields.py");
const PY_DEPLOYMENT_BODY: &str = include_str!("templates/python/child/deployment_body.py");
const PY_CRON_JOB_BODY: &str = include_str!("templates/python/child/cron_job_body.py");

#[cfg(test)]
mod tests {
    use super::*;

    const CHILDREN: [Option<Child>; 4] = [
        None,
        Some(Child::ConfigMap),
        Some(Child::Deployment),
        Some(Child::CronJob),
    ];

    #[test]
    fn every_placeholder_of_another_language_is_filled() {
        for (lang, children) in [(Lang::Js, &CHILDREN[..]), (Lang::Python, &CHILDREN[..])] {
            for &child in children {
                for sdk in [None, Some(Path::new("/sdk"))] {
                    for (path, text) in other_language(
                        lang,
                        "Greeting",
                        "greeting",
                        "example.com",
                        "v1",
                        sdk,
                        child,
                    ) {
                        assert!(
                            !text.contains("{{"),
                            "{lang:?} {child:?}: {path} keeps a placeholder"
                        );
                    }
                }
            }
        }
    }

    /// A JavaScript or Python guest owning a child is the Rust one's twin:
    /// the same kind of child, of the same name, and the same fixtures.
    #[test]
    fn a_javascript_or_python_child_is_the_rust_ones_twin() {
        for child in CHILDREN.into_iter().flatten() {
            let files = |lang: Option<Lang>| {
                let files = match lang {
                    None => templates(
                        "Greeting",
                        "greeting",
                        "example.com",
                        "v1",
                        None,
                        Some(child),
                    ),
                    Some(lang) => other_language(
                        lang,
                        "Greeting",
                        "greeting",
                        "example.com",
                        "v1",
                        None,
                        Some(child),
                    ),
                };
                files
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>()
            };
            let rust = files(None);
            let [group, version, kind, suffix] = child.parts();
            let twins = [
                (
                    Lang::Js,
                    "src/guest.js",
                    [
                        format!("kindRef('{group}', '{version}', '{kind}')"),
                        format!("`${{parent}}{suffix}`"),
                        format!("kind: '{kind}',"),
                    ],
                ),
                (
                    Lang::Python,
                    "app.py",
                    [
                        format!("sdk.kind_ref(\"{group}\", \"{version}\", \"{kind}\")"),
                        format!("f\"{{parent}}{suffix}\""),
                        format!("\"kind\": \"{kind}\","),
                    ],
                ),
            ];
            for (lang, guest, says) in twins {
                let other = files(Some(lang));
                for fixture in ["fixtures/valid.yaml", "fixtures/missing-greeting.yaml"] {
                    assert_eq!(
                        other[fixture], rust[fixture],
                        "{lang:?} {child:?}: {fixture}"
                    );
                }
                let guest = &other[guest];
                for said in says {
                    assert!(guest.contains(&said), "{lang:?} {child:?}: {said}\n{guest}");
                }
            }
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        for child in CHILDREN {
            for (path, text) in templates(
                "Greeting",
                "greeting",
                "example.com",
                "v1",
                Some(Path::new("/sdk")),
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
