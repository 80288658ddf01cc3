//! Test support for a kind's guest (std only): the contract every verdict keeps, the `reasons.golden` check, and assertions on a kind's spec and conditions.

use std::collections::BTreeSet;
use std::path::Path;

use crate::read::RETRY_SECONDS;
use crate::spec::{COMMON, HOST_REASONS};
use crate::verdict::{AS_EXPECTED, RECONCILING, RESERVED_STATUS_FIELDS};
use crate::{Condition, ConditionStatus, KindSpec, Verdict};

/// The aspect every ConfigurationValid=False stalls with.
const CONFIGURATION_VALID: &str = "ConfigurationValid";

/// What the host checks of a verdict: every aspect once in declared order
/// up to the first that is not True, the later ones given or left out (not
/// evaluated; when `paused`, the ones given, in that order), registered
/// reasons (the kind's, or the host's own, [`HOST_REASONS`], which every
/// kind may use) with a message, declared advisory conditions and stalls,
/// no reserved status field. `paused` is the evaluation's own
/// (`input.paused`): a paused pass may give fewer aspects.
///
/// ```
/// use reconciler_guest_sdk::testing::keeps_contract;
/// use reconciler_guest_sdk::verdict::{VerdictBuilder, ok};
/// use reconciler_guest_sdk::{ConventionProfile, KindSpec};
///
/// let spec = KindSpec {
///     group: "example.com".into(), version: "v1".into(), kind: "Widget".into(),
///     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
///     aspects: vec!["Serving".into()], advisory: vec![], reasons: vec![],
///     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![], reads: vec![],
///     pause: None, spec_schema: None, printer_columns: vec![],
/// };
/// let mut verdict = VerdictBuilder::new();
/// verdict.aspect(ok("Serving", "fine")); // AsExpected: the host's, usable by every kind
/// keeps_contract(&spec, &verdict.build(), false);
/// ```
pub fn keeps_contract(spec: &KindSpec, verdict: &Verdict, paused: bool) {
    let types: Vec<&str> = verdict.aspects.iter().map(|c| c.type_.as_str()).collect();
    let declared: Vec<&str> = spec
        .aspects
        .iter()
        .map(String::as_str)
        .filter(|a| types.contains(a))
        .collect();
    assert_eq!(types, declared, "aspects in declared order");
    if !paused {
        let deciding = verdict
            .aspects
            .iter()
            .position(|c| c.status != ConditionStatus::True)
            .map_or(spec.aspects.len(), |i| i + 1);
        assert_eq!(
            types[..deciding.min(types.len())],
            spec.aspects[..deciding],
            "every aspect up to the first not True"
        );
    }
    let registered =
        |r: &str| HOST_REASONS.contains(&r) || spec.reasons.iter().any(|e| e.name == r);
    for c in verdict.aspects.iter().chain(&verdict.advisory) {
        assert!(registered(&c.reason), "unregistered reason {}", c.reason);
        assert!(!c.message.is_empty(), "{} has no message", c.type_);
    }
    for c in &verdict.advisory {
        assert!(
            spec.advisory.contains(&c.type_),
            "{} is not advisory",
            c.type_
        );
    }
    for e in &verdict.events {
        assert!(registered(&e.reason), "unregistered event {}", e.reason);
    }
    let fields = verdict.fields();
    for reserved in RESERVED_STATUS_FIELDS {
        assert!(fields.get(*reserved).is_none(), "{reserved} is the host's");
    }
    if let Some(stall) = &verdict.stall {
        assert!(
            spec.stalls.iter().any(|s| s.reason == stall.reason),
            "stall {} not declared",
            stall.reason
        );
    }
}

/// The rule of seed 000's kinds whose only stalls are configuration
/// problems (not the host's: a kind may stall on another aspect, or never):
/// ConfigurationValid=False always stalls with its reason, and every stall
/// is ConfigurationValid=False's.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, testing::stalls_only_on_invalid_configuration, verdict::fails};
/// let mut v = VerdictBuilder::new();
/// v.aspect(fails("ConfigurationValid", "SecretNotFound", "Secret oidc does not exist"))
///     .stall("SecretNotFound", "Secret oidc does not exist");
/// stalls_only_on_invalid_configuration(&v.build());
/// ```
pub fn stalls_only_on_invalid_configuration(verdict: &Verdict) {
    if let Some(config) = verdict.aspect(CONFIGURATION_VALID) {
        match (&config.status, &verdict.stall) {
            (ConditionStatus::False, Some(stall)) => assert_eq!(stall.reason, config.reason),
            (ConditionStatus::False, None) => panic!("ConfigurationValid=False without a stall"),
            (_, Some(stall)) => panic!("stall {} without ConfigurationValid=False", stall.reason),
            (_, None) => {}
        }
    }
}

/// The registry held against the file `golden`: reasons are only ever
/// added. A golden reason missing from the registry (a removal or a rename)
/// fails; a registered reason missing from the file fails too, until the
/// developer runs `BLESS=1 cargo test -p <package>` to append it (the file
/// is rewritten sorted). The file lists every reason, the host's
/// included, one per line (`reconciler-host reasons <guest.wasm>` prints
/// the same). Keep it beside the crate and call this from a test:
///
/// ```no_run
/// # use reconciler_guest_sdk::Guest;
/// # struct MyKind;
/// # impl Guest for MyKind {
/// #     fn describe() -> reconciler_guest_sdk::KindSpec { unimplemented!() }
/// #     fn evaluate(_: &reconciler_guest_sdk::Evaluation, _: &dyn reconciler_guest_sdk::Facts) -> reconciler_guest_sdk::Verdict { unimplemented!() }
/// # }
/// #[test]
/// fn reasons_are_only_added() {
///     let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reasons.golden");
///     reconciler_guest_sdk::testing::reasons_golden(&MyKind::describe(), &golden, env!("CARGO_PKG_NAME"));
/// }
/// ```
pub fn reasons_golden(spec: &KindSpec, golden: &Path, package: &str) {
    let registered: BTreeSet<String> = spec
        .reasons
        .iter()
        .map(|r| r.name.clone())
        .chain(HOST_REASONS.iter().map(|r| (*r).to_owned()))
        .collect();
    let text = std::fs::read_to_string(golden).unwrap_or_default();
    let frozen: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();

    let removed: Vec<&String> = frozen.difference(&registered).collect();
    assert!(
        removed.is_empty(),
        "reasons are frozen API, never removed or renamed: {removed:?} are in reasons.golden but not registered"
    );
    let added: Vec<&String> = registered.difference(&frozen).collect();
    if added.is_empty() {
        return;
    }
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        let all: Vec<&str> = frozen.union(&registered).map(String::as_str).collect();
        std::fs::write(golden, all.join("\n") + "\n").expect("write reasons.golden");
    } else {
        panic!(
            "registered reasons missing from reasons.golden: {added:?}; run `BLESS=1 cargo test -p {package}` to append them"
        );
    }
}

/// The schema of `.spec` the guest ships, the file `golden`, is
/// [`schema_of::<T>()`](crate::spec::schema_of), `T` the guest's spec type
/// (compared as JSON). A guest may call `schema_of` in `describe`: it
/// works in wasm, but puts schemars' generator and the derived code in the
/// component (over 100 kB); generated natively into a file beside the crate
/// that `describe` includes, the type stays the one source and the
/// component carries only the text (`reconciler-host crd` and the host
/// read the same). A file that differs (or is missing)
/// fails, until the developer runs `BLESS=1 cargo test -p <package>` to
/// rewrite it; review its diff as the CRD's.
///
/// ```no_run
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] pub struct GreetingSpec { pub greeting: String }
/// // In describe: `spec_schema: Some(include_str!("spec-schema.json").into())` (in src/).
/// #[test]
/// fn the_shipped_schema_is_the_spec_types() {
///     let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/spec-schema.json");
///     reconciler_guest_sdk::testing::schema_golden::<GreetingSpec>(&golden, env!("CARGO_PKG_NAME"));
/// }
/// ```
pub fn schema_golden<T: schemars::JsonSchema>(golden: &Path, package: &str) {
    let derived = crate::spec::schema_value_of::<T>();
    let shipped: Option<serde_json::Value> = std::fs::read_to_string(golden)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    if shipped.as_ref() == Some(&derived) {
        return;
    }
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&derived).expect("a schema is JSON") + "\n";
        std::fs::write(golden, text).expect("write the schema file");
        return;
    }
    let at = shipped.as_ref().map_or_else(
        || "the file is missing or not JSON".to_owned(),
        |s| format!("first difference at {}", first_difference(s, &derived, "")),
    );
    panic!(
        "{} is not the schema of {} ({at}); run `BLESS=1 cargo test -p {package}` to rewrite it",
        golden.display(),
        std::any::type_name::<T>()
    );
}

/// The JSON pointer of the first place `a` and `b` differ.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> String {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(a), Object(b)) => a
            .keys()
            .chain(b.keys())
            .find(|k| a.get(*k) != b.get(*k))
            .map_or_else(
                || at.to_owned(),
                |k| match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => first_difference(x, y, &format!("{at}/{k}")),
                    _ => format!("{at}/{k}"),
                },
            ),
        (Array(a), Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).position(|(x, y)| x != y).map_or_else(
                || at.to_owned(),
                |i| first_difference(&a[i], &b[i], &format!("{at}/{i}")),
            )
        }
        _ => at.to_owned(),
    }
}

/// The kind's group, version, kind and plural are these.
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// reconciler_guest_sdk::testing::assert_kind(&spec, ["example.dev", "v1", "Widget", "widgets"]);
/// ```
pub fn assert_kind(spec: &KindSpec, [group, version, kind, plural]: [&str; 4]) {
    assert_eq!(
        (
            spec.group.as_str(),
            spec.version.as_str(),
            spec.kind.as_str(),
            spec.plural.as_str()
        ),
        (group, version, kind, plural)
    );
}

/// The kind pauses on the annotation `key: value`.
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// reconciler_guest_sdk::testing::assert_pause(&spec, "example.dev/reconcile", "skip");
/// ```
pub fn assert_pause(spec: &KindSpec, key: &str, value: &str) {
    let pause = spec.pause.as_ref().expect("pause annotation");
    assert_eq!((pause.key.as_str(), pause.value.as_str()), (key, value));
}

/// Every registered reason is unique, not one the host registers itself,
/// has a meaning, and is owned by `common` or one of `owners`.
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// reconciler_guest_sdk::testing::assert_registry(&spec, &["widget"]);
/// ```
pub fn assert_registry(spec: &KindSpec, owners: &[&str]) {
    let mut names: Vec<&str> = spec.reasons.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), spec.reasons.len(), "unique");
    for r in &spec.reasons {
        assert!(
            !HOST_REASONS.contains(&r.name.as_str()),
            "{} is the host's",
            r.name
        );
        assert!(
            r.owner == COMMON || owners.contains(&r.owner.as_str()),
            "{r:?}"
        );
        assert!(!r.meaning.is_empty(), "{} has no meaning", r.name);
    }
}

/// The owner of the registered reason `name`.
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// use reconciler_guest_sdk::testing::owner;
/// assert_eq!((owner(&spec, "SecretNotFound"), owner(&spec, "WidgetBroken")), ("common", "widget"));
/// ```
pub fn owner<'a>(spec: &'a KindSpec, name: &str) -> &'a str {
    spec.reasons
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} registered"))
        .owner
        .as_str()
}

/// The kinds the spec declares it reads, `group/version/kind` with
/// whether each is optional; the core group is empty, so a core kind
/// starts with `/` (`/v1/Secret`).
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// assert_eq!(
///     reconciler_guest_sdk::testing::declared_reads(&spec),
///     [("/v1/Secret".to_owned(), false), ("route.openshift.io/v1/Route".to_owned(), true)]
/// );
/// ```
pub fn declared_reads(spec: &KindSpec) -> Vec<(String, bool)> {
    spec.reads
        .iter()
        .map(|r| {
            (
                format!("{}/{}/{}", r.kind.group, r.kind.version, r.kind.kind),
                r.optional,
            )
        })
        .collect()
}

/// Each of `expected` is declared: `(key, optional)`, the key
/// `group/version/kind` as [`declared_reads`] writes it (`/v1/Secret` for
/// a core kind: the group is empty), `optional` as declared
/// ([`spec::reads_optional`](crate::spec::reads_optional)). Other
/// declared reads are allowed.
///
/// ```
/// # use reconciler_guest_sdk::{ConventionProfile, KindSpec, spec};
/// # let spec = KindSpec { group: "example.dev".into(), version: "v1".into(), kind: "Widget".into(),
/// #     plural: "widgets".into(), namespaced: true, profile: ConventionProfile::Progressing,
/// #     aspects: vec!["ConfigurationValid".into(), "WorkloadReady".into()], advisory: vec![],
/// #     reasons: spec::registry("widget", &["SecretNotFound"], &[("WidgetBroken", "It is broken.")]),
/// #     negative_polarity: vec![], quiet_reasons: vec![], stalls: vec![spec::stalls("SecretNotFound")],
/// #     reads: vec![spec::reads(spec::kind_ref("", "v1", "Secret")),
/// #                 spec::reads_optional(spec::kind_ref("route.openshift.io", "v1", "Route"))],
/// #     pause: spec::pause("example.dev/reconcile", "skip"), spec_schema: None, printer_columns: vec![] };
/// reconciler_guest_sdk::testing::assert_reads(&spec, &[
///     ("/v1/Secret", false),
///     ("route.openshift.io/v1/Route", true),
/// ]);
/// ```
pub fn assert_reads(spec: &KindSpec, expected: &[(&str, bool)]) {
    let declared = declared_reads(spec);
    for (kind, optional) in expected {
        assert!(
            declared.contains(&((*kind).to_owned(), *optional)),
            "{kind} in {declared:?}"
        );
    }
}

/// The aspect `type_`, which the verdict must give.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, testing::aspect, verdict::ok};
/// let mut v = VerdictBuilder::new();
/// v.aspect(ok("ConfigurationValid", "valid"));
/// assert_eq!(aspect(&v.build(), "ConfigurationValid").reason, "AsExpected");
/// ```
pub fn aspect<'a>(verdict: &'a Verdict, type_: &str) -> &'a Condition {
    verdict.aspect(type_).expect("every aspect is given")
}

/// `c` is `status` with `reason`, and its message mentions `needle`.
///
/// ```
/// use reconciler_guest_sdk::{ConditionStatus, testing::assert_condition, verdict::fails};
/// let c = fails("WorkloadReady", "CrashLoopBackOff", "Deployment a: back-off 5m0s");
/// assert_condition(&c, ConditionStatus::False, "CrashLoopBackOff", "back-off");
/// ```
pub fn assert_condition(c: &Condition, status: ConditionStatus, reason: &str, needle: &str) {
    assert_eq!((c.status, c.reason.as_str()), (status, reason), "{c:?}");
    assert!(
        c.message.contains(needle),
        "{:?} does not mention {needle:?}",
        c.message
    );
}

/// Every aspect is True with AsExpected, and nothing stalls.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, testing::assert_as_expected, verdict::ok};
/// let mut v = VerdictBuilder::new();
/// v.aspect(ok("ConfigurationValid", "valid")).aspect(ok("WorkloadReady", "1/1"));
/// assert_as_expected(&v.build());
/// ```
pub fn assert_as_expected(verdict: &Verdict) {
    for c in &verdict.aspects {
        assert_eq!(
            (c.status, c.reason.as_str()),
            (ConditionStatus::True, AS_EXPECTED),
            "{c:?}"
        );
    }
    assert!(verdict.stall.is_none(), "{:?}", verdict.stall);
}

/// ConfigurationValid is False with `reason` (its message mentions
/// `needle`) and the pass stalls on it; every later aspect waits, Unknown
/// (Reconciling) naming the reason.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, testing::assert_stall, verdict::{RECONCILING, fails, unknown}};
/// let mut v = VerdictBuilder::new();
/// v.aspect(fails("ConfigurationValid", "ClusterNotFound", "Cluster pg does not exist in ns"))
///     .stall("ClusterNotFound", "Cluster pg does not exist in ns");
/// assert_stall(&v.build(), "ClusterNotFound", "Cluster pg");
/// ```
pub fn assert_stall(verdict: &Verdict, reason: &str, needle: &str) {
    assert_condition(
        aspect(verdict, CONFIGURATION_VALID),
        ConditionStatus::False,
        reason,
        needle,
    );
    assert_eq!(
        verdict.stall.as_ref().map(|s| s.reason.as_str()),
        Some(reason)
    );
    for later in verdict
        .aspects
        .iter()
        .filter(|c| c.type_ != CONFIGURATION_VALID)
    {
        assert_condition(later, ConditionStatus::Unknown, RECONCILING, reason);
    }
}

/// A read failed for `type_`: Unknown (Reconciling) saying so, no stall,
/// the pass retried after [`RETRY_SECONDS`]. `what` names the case in the
/// failure's message.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, read, testing::assert_retried, verdict::{RECONCILING, unknown}};
/// let mut v = VerdictBuilder::new();
/// v.aspect(unknown("ConfigurationValid", RECONCILING, "could not read Secret oidc: not synced"))
///     .requeue_after(read::RETRY_SECONDS);
/// assert_retried(&v.build(), "ConfigurationValid", "the Secret's cache is not synced");
/// ```
pub fn assert_retried(verdict: &Verdict, type_: &str, what: &str) {
    let c = verdict.aspect(type_).expect("aspect");
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::Unknown, RECONCILING),
        "{what}"
    );
    assert!(c.message.contains("could not read"), "{what}: {c:?}");
    assert!(verdict.stall.is_none(), "{what}");
    assert_eq!(verdict.requeue_after_seconds, Some(RETRY_SECONDS), "{what}");
}

/// The same pass gives the same verdict, every time.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, mock::MockFacts, testing::assert_deterministic, verdict::ok};
/// let facts = MockFacts::at(0);
/// assert_deterministic(|| {
///     let mut v = VerdictBuilder::new();
///     v.aspect(ok("ConfigurationValid", format!("at {}", reconciler_guest_sdk::Facts::now(&facts).seconds)));
///     v.build()
/// });
/// ```
pub fn assert_deterministic(pass: impl Fn() -> Verdict) {
    let first = format!("{:?}", pass());
    for _ in 0..3 {
        assert_eq!(format!("{:?}", pass()), first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{common, kind_ref, owned, reads, reads_optional, stalls};
    use crate::verdict::{fails, ok, unknown};
    use crate::{ConventionProfile, VerdictBuilder};

    fn spec() -> KindSpec {
        KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Thing".into(),
            plural: "things".into(),
            namespaced: true,
            profile: ConventionProfile::Progressing,
            aspects: vec![CONFIGURATION_VALID.into(), "WorkloadReady".into()],
            advisory: vec!["Extra".into()],
            reasons: vec![
                common("SecretNotFound"),
                owned("thing", "Broken", "It is broken."),
            ],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![stalls("SecretNotFound")],
            reads: vec![
                reads(kind_ref("", "v1", "Secret")),
                reads_optional(kind_ref("x.dev", "v1", "Y")),
            ],
            pause: crate::spec::pause("example.dev/reconcile", "skip"),
            spec_schema: None,
            printer_columns: vec![],
        }
    }

    #[test]
    fn a_schema_file_is_the_types_schema() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Spec {
            /// A name.
            name: String,
        }
        let dir = std::env::temp_dir().join(format!("sdk-schema-golden-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("spec-schema.json");
        std::fs::write(
            &file,
            r#"{"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "description": "A name."}}}"#,
        )
        .unwrap();
        schema_golden::<Spec>(&file, "me");
        std::fs::write(
            &file,
            r#"{"type": "object", "required": ["name"], "properties": {"name": {"type": "integer"}}}"#,
        )
        .unwrap();
        let failed = std::panic::catch_unwind(|| schema_golden::<Spec>(&file, "me")).unwrap_err();
        let message = failed.downcast_ref::<String>().unwrap();
        assert!(
            message.contains("first difference at /properties/name/"),
            "{message}"
        );
        assert!(message.contains("BLESS=1 cargo test -p me"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn healthy() -> VerdictBuilder {
        let mut b = VerdictBuilder::new();
        b.aspect(ok(CONFIGURATION_VALID, "fine"))
            .aspect(ok("WorkloadReady", "fine"));
        b
    }

    #[test]
    fn a_healthy_verdict_keeps_the_contract() {
        let v = healthy().build();
        keeps_contract(&spec(), &v, false);
        assert_as_expected(&v);
        assert_deterministic(|| healthy().build());
        let mut paused = VerdictBuilder::new();
        paused.aspect(ok("WorkloadReady", "fine"));
        keeps_contract(&spec(), &paused.build(), true);
    }

    #[test]
    #[should_panic(expected = "ConfigurationValid=False without a stall")]
    fn configuration_valid_false_stalls() {
        let mut b = healthy();
        b.aspect(fails(CONFIGURATION_VALID, "SecretNotFound", "gone"));
        stalls_only_on_invalid_configuration(&b.build());
    }

    #[test]
    fn a_host_reason_is_registered_for_every_kind() {
        let mut b = healthy();
        b.aspect(unknown("WorkloadReady", RECONCILING, "later"));
        keeps_contract(&spec(), &b.build(), false);
    }

    #[test]
    #[should_panic(expected = "unregistered reason NoSuchReason")]
    fn a_reason_neither_the_kinds_nor_the_hosts_is_unregistered() {
        let mut b = healthy();
        b.aspect(unknown("WorkloadReady", "NoSuchReason", "later"));
        keeps_contract(&spec(), &b.build(), false);
    }

    #[test]
    fn a_stall_leaves_the_later_aspects_out() {
        let mut b = VerdictBuilder::new();
        b.aspect(fails(
            CONFIGURATION_VALID,
            "SecretNotFound",
            "Secret s is gone",
        ))
        .stall("SecretNotFound", "Secret s is gone");
        let v = b.build();
        keeps_contract(&spec(), &v, false);
        assert_stall(&v, "SecretNotFound", "Secret s");
    }

    #[test]
    #[should_panic(expected = "every aspect up to the first not True")]
    fn an_aspect_that_decides_ready_is_not_left_out() {
        let mut b = VerdictBuilder::new();
        b.aspect(ok(CONFIGURATION_VALID, "fine"));
        keeps_contract(&spec(), &b.build(), false);
    }

    #[test]
    fn a_failed_read_is_retried() {
        let mut b = healthy();
        b.aspect(unknown(
            "WorkloadReady",
            RECONCILING,
            "could not read Secret s: x",
        ))
        .requeue_after(RETRY_SECONDS);
        assert_retried(&b.build(), "WorkloadReady", "secret s");
        assert_condition(
            aspect(&b.build(), "WorkloadReady"),
            ConditionStatus::Unknown,
            RECONCILING,
            "Secret s",
        );
    }

    #[test]
    fn the_spec_helpers_read_the_spec() {
        let spec = spec();
        assert_kind(&spec, ["example.dev", "v1", "Thing", "things"]);
        assert_registry(&spec, &["thing"]);
        assert_pause(&spec, "example.dev/reconcile", "skip");
        assert_eq!(owner(&spec, "Broken"), "thing");
        assert_eq!(owner(&spec, "SecretNotFound"), COMMON);
        assert_reads(&spec, &[("/v1/Secret", false), ("x.dev/v1/Y", true)]);
    }

    #[test]
    fn the_golden_file_only_grows() {
        let dir = std::env::temp_dir().join(format!("sdk-golden-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let golden = dir.join("reasons.golden");
        let mut all: Vec<String> = HOST_REASONS.iter().map(|r| (*r).to_owned()).collect();
        all.extend(["Broken".to_owned(), "SecretNotFound".to_owned()]);
        all.sort();
        std::fs::write(&golden, all.join("\n") + "\n").unwrap();
        reasons_golden(&spec(), &golden, "thing-guest");
        std::fs::write(&golden, all.join("\n") + "\nRemoved\n").unwrap();
        let removed = std::panic::catch_unwind(|| reasons_golden(&spec(), &golden, "thing-guest"));
        assert!(removed.is_err(), "a removed reason fails");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
