//! Capture: one pass over a live parent, run as the operator runs it but writing nothing to the cluster, kept as a fixture (the parent, every object the pass read, the settings, the clock) and its golden, which `reconciler-host test` replays offline.
//!
//! In order: [`live`] reads the parent, watches what its guest reads as
//! the operator watches it, and makes the operator's pass of it as a dry
//! run (reads past the cache included, the guest evaluated again on what
//! became of its changes); [`plans`] reads the parent's plans as the operator's pass
//! would find them, under the gates given; [`select`] keeps exactly what each recorded read answered,
//! each object as [`redact`] lets a fixture hold it (no Secret value);
//! [`render`] writes the fixture; [`replay`] evaluates it offline and
//! refuses a fixture that does not read, decide and ask for what the live
//! pass did.

pub mod live;
pub mod plans;
pub mod redact;
pub mod render;
pub mod replay;
pub mod select;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use crate::facts::Dependency;
use crate::fixture::{Fixture, FixtureError, golden, run_fixture};
use crate::operator::cluster::probe::ProbeError;
use crate::operator::kinds::watches::ReadRefused;
use crate::pass::compare;
use crate::runtime::Module;
pub use live::{LivePass, Subject};
use reconciler_conventions::status::Status;

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("no guest in {dir} serves kind {kind} (its guests serve {served})")]
    UnknownKind {
        kind: String,
        dir: PathBuf,
        served: String,
    },
    #[error(
        "{kind} is not served by this cluster: is its CustomResourceDefinition installed? (`reconciler-host crd` prints it)"
    )]
    NotInstalled { kind: KindRef },
    #[error("{kind} is namespaced: give the parent as <namespace>/<name>")]
    NamespaceMissing { kind: KindRef },
    #[error("{kind} is cluster-scoped: give the parent as <name>, without a namespace")]
    ClusterScoped { kind: KindRef },
    #[error(
        "namespace {namespace} is not among --namespaces ({}): an operator watching those does not serve it",
        watched.join(",")
    )]
    NamespaceNotWatched {
        namespace: String,
        watched: Vec<String>,
    },
    /// `parent` is `<Kind> <namespace>/<name>`.
    #[error("{parent} not found ({kind})")]
    NotFound { parent: String, kind: KindRef },
    /// `what`: what the credentials may not do (`get <Kind>
    /// <namespace>/<name>`, `list the ReconcilePlans of ...`).
    #[error("forbidden: you may not {what}: {message}")]
    Forbidden { what: String, message: String },
    #[error("cannot read what the {kind} guest reads with these credentials: {refused}")]
    Reads {
        kind: String,
        refused: Box<ReadRefused>,
    },
    #[error(transparent)]
    Probe(Box<ProbeError>),
    #[error("the watches did not list what the guest reads within {after:?}")]
    SyncTimeout { after: Duration },
    #[error("{what}: {source}")]
    Api {
        what: String,
        source: Box<kube::Error>,
    },
    #[error(
        "the captured fixture does not replay the live pass (a host defect: please report it):\n  {}",
        differences.join("\n  ")
    )]
    NotReplayable { differences: Vec<String> },
    /// The pass settles on another status than the parent's live one (a
    /// change since the last pass, or a host that does not pass it so):
    /// a fixture of it would not say what the cluster shows.
    #[error(
        "the live status differs from the pass captured (--accept-difference writes the fixture anyway, the live status beside its expectation):\n  {}",
        differences.join("\n  ")
    )]
    LiveDiffers { differences: Vec<String> },
    #[error("the captured fixture cannot be read back (a host defect: please report it): {0}")]
    Unreadable(#[from] FixtureError),
}

/// A capture: the fixture's text, its golden's, and what to tell the user.
pub struct Captured {
    pub fixture: String,
    pub golden: String,
    /// Objects the fixture holds.
    pub objects: usize,
    /// Reads the pass recorded.
    pub reads: usize,
    /// The conditions the pass produced, `Type=Status/Reason`.
    pub conditions: Vec<String>,
    /// Where the live status differs from the pass (accepted).
    pub live_differences: Vec<String>,
}

/// The module of `modules` serving `kind` (its name, any case), loaded from
/// `dir`.
pub fn serving(modules: Vec<Module>, kind: &str, dir: &Path) -> Result<Module, CaptureError> {
    let served: Vec<String> = modules.iter().map(|m| m.spec().kind_ref().kind).collect();
    modules
        .into_iter()
        .find(|m| m.spec().kind.eq_ignore_ascii_case(kind))
        .ok_or_else(|| CaptureError::UnknownKind {
            kind: kind.to_owned(),
            dir: dir.to_owned(),
            served: served.join(", "),
        })
}

/// The kind's settings, each name once: the first value given, which is
/// the one a guest reads.
pub fn settings_of(given: &[(String, String)]) -> BTreeMap<String, String> {
    let mut settings = BTreeMap::new();
    for (name, value) in given {
        settings
            .entry(name.clone())
            .or_insert_with(|| value.clone());
    }
    settings
}

/// The fixture and golden of a live pass of `target`, checked to replay
/// it. `settings` are those the live pass was given ([`settings_of`]).
/// Where the live status differs from the pass, the capture fails
/// ([`CaptureError::LiveDiffers`]) unless `accept_difference`: then the
/// fixture says so beside its expectation.
pub async fn fixture(
    module: &Module,
    target: &Subject,
    settings: &BTreeMap<String, String>,
    live: &LivePass,
    plans: &plans::RecordedPlans,
    accept_difference: bool,
) -> Result<Captured, CaptureError> {
    let pass = &live.pass;
    let reads: Vec<Dependency> = pass.reads.iter().cloned().collect();
    let selection = select::select(&reads, &*pass.facts, &target.namespace);
    let parent = redact::for_fixture(live.parent.clone());
    let live_differences: Vec<String> = pass
        .live
        .iter()
        .flat_map(|live| compare::unreproduced(live, &pass.status))
        .map(|u| format!("{}: live {}, this pass {}", u.type_, u.live, u.serving))
        .collect();
    if !live_differences.is_empty() && !accept_difference {
        return Err(CaptureError::LiveDiffers {
            differences: live_differences,
        });
    }
    let mut captured = render::CapturedFixture {
        module,
        target,
        now: live.now,
        settings,
        parent: &parent,
        selection: &selection,
        plans,
        reads: reads.len(),
        live_differences: &[],
    };
    let named = Path::new("the captured fixture");
    let first = Fixture::parse(&render::fixture_text(&captured, &json!({})), named)?;
    // The fixture replays the pass: its first evaluation reads, decides and
    // asks for what the live one did, and its pass settles on the same
    // verdict and status.
    let first_run = run_fixture(module, &first).await;
    let replayed = replay::evaluate(module, &first);
    let settled_on = first_run
        .verdicts
        .into_iter()
        .next()
        .unwrap_or_else(|| replayed.outcome.clone());
    let outcome = first_run.outcomes.first().cloned().unwrap_or(Value::Null);
    let mut differences = replay::differences(pass, &replayed, &settled_on);
    let replayed_status = Status::from_json(&outcome["status"]).unwrap_or_default();
    differences.extend(
        compare::unreproduced(&pass.status, &replayed_status)
            .into_iter()
            .filter(|u| pass.status.condition(&u.type_).is_some())
            .map(|u| {
                format!(
                    "condition {}: live pass {}, replayed {}",
                    u.type_, u.live, u.serving
                )
            }),
    );
    if !differences.is_empty() {
        return Err(CaptureError::NotReplayable { differences });
    }
    let golden = golden::render(&first_run.outcomes);
    captured.live_differences = &live_differences;
    let text = render::fixture_text(&captured, &render::expect_of(&settled_on, &outcome));
    // Its own expect block and golden hold for the fixture as written.
    let report = run_fixture(module, &Fixture::parse(&text, named)?).await;
    let mut differences: Vec<String> = report
        .steps
        .iter()
        .flat_map(|(_, mismatches)| mismatches.iter().cloned())
        .collect();
    if golden::render(&report.outcomes) != golden {
        differences.push("a second replay produced another golden".to_owned());
    }
    if !differences.is_empty() {
        return Err(CaptureError::NotReplayable { differences });
    }
    let conditions = outcome["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={}/{}",
                c["type"].as_str().unwrap_or("?"),
                c["status"].as_str().unwrap_or("?"),
                c["reason"].as_str().unwrap_or("?")
            )
        })
        .collect();
    Ok(Captured {
        fixture: text,
        golden,
        objects: selection.objects.len(),
        reads: reads.len(),
        conditions,
        live_differences,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_value_of_a_setting_is_the_one_kept() {
        let given = [
            ("b".to_owned(), "1".to_owned()),
            ("a".to_owned(), "2".to_owned()),
            ("b".to_owned(), "3".to_owned()),
        ];
        assert_eq!(
            settings_of(&given),
            BTreeMap::from([
                ("a".to_owned(), "2".to_owned()),
                ("b".to_owned(), "1".to_owned())
            ])
        );
    }
}
