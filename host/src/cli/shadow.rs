//! `shadow`: a candidate module evaluated beside the module serving its
//! kind on every live parent, writing nothing: what would differ, as a
//! review, and whether it would be held (a new guest error, or a parent
//! turning from Ready True to False).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use reconciler_host::operator::replica::client::counted;
use reconciler_host::operator::replica::fence::Fence;
use reconciler_host::operator::replica::metrics::Metrics;
use reconciler_host::runtime::{GuestModule, Runtime};
use reconciler_host::shadow::{self, Difference};
use serde::Serialize;

use super::live::LiveArgs;

#[derive(Args)]
pub struct ShadowArgs {
    /// The candidate module (*.wasm).
    candidate: PathBuf,
    /// The operator's view: its module of the candidate's kind serves, and
    /// every parent in its namespaces is shadowed.
    #[command(flatten)]
    live: LiveArgs,
    /// Where to write the review (YAML); default: standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
}

/// The review a shadow run writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    kind: &'a str,
    serving: Module<'a>,
    candidate: Module<'a>,
    /// The parents shadowed.
    parents: usize,
    differ: usize,
    ready_turns_false: usize,
    new_guest_errors: usize,
    /// Only the parents for which something differs.
    differences: Vec<Entry<'a>>,
}

#[derive(Serialize)]
struct Module<'a> {
    guest: &'a str,
    digest: &'a str,
}

impl<'a> Module<'a> {
    fn of(module: &'a GuestModule) -> Self {
        Module {
            guest: module.name(),
            digest: module.digest(),
        }
    }
}

#[derive(Serialize)]
struct Entry<'a> {
    parent: String,
    #[serde(flatten)]
    difference: &'a Difference,
}

pub fn run(runtime: &Runtime, args: ShadowArgs) -> anyhow::Result<ExitCode> {
    let candidate = runtime.load_file(&args.candidate)?;
    let kind = candidate.spec().kind.clone();
    let serving = args.live.serving(runtime, &kind)?;
    let settings: Vec<(String, String)> = args.live.settings(&kind)?.into_iter().collect();
    let scopes = args.live.scopes();
    let shadowed = tokio::runtime::Runtime::new()?.block_on(async {
        let client = counted(&Arc::new(Metrics::new()), &Fence::open())
            .await
            .context(
                "no Kubernetes client configuration (KUBECONFIG, ~/.kube/config or in-cluster)",
            )?;
        anyhow::Ok(shadow::run(&client, &serving, &candidate, &scopes, &settings).await?)
    })?;
    let count =
        |f: &dyn Fn(&Difference) -> bool| shadowed.iter().filter(|s| f(&s.difference)).count();
    let review = Review {
        kind: &kind,
        serving: Module::of(&serving),
        candidate: Module::of(&candidate),
        parents: shadowed.len(),
        differ: count(&|d| !d.is_empty()),
        ready_turns_false: count(&|d| d.ready_turns_false),
        new_guest_errors: count(&|d| d.new_guest_error.is_some()),
        differences: shadowed
            .iter()
            .filter(|s| !s.difference.is_empty())
            .map(|s| Entry {
                parent: s.parent.to_string(),
                difference: &s.difference,
            })
            .collect(),
    };
    let text = serde_yaml::to_string(&review).expect("a review serializes");
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    eprintln!(
        "shadowed guest {} (digest {}…) beside guest {} (digest {}…) on {} {kind} parent(s): \
         {} differ, {} turn Ready True to False, {} new guest error(s); nothing written to the cluster",
        candidate.name(),
        &candidate.digest()[..12],
        serving.name(),
        &serving.digest()[..12],
        review.parents,
        review.differ,
        review.ready_turns_false,
        review.new_guest_errors,
    );
    if review.ready_turns_false > 0 || review.new_guest_errors > 0 {
        eprintln!(
            "held: an automatic promotion would not serve it (a parent turning from Ready True to False, or a new guest error)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
