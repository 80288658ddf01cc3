//! `shadow`: a candidate module evaluated beside the module serving its
//! kind on every live parent, writing nothing: what would differ, as a
//! review, and whether it would be held (a new guest error, or a parent
//! turning from Ready True to False).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use reconciler_host::capture::plans::GivenGates;
use reconciler_host::operator::replica::client::counted;
use reconciler_host::operator::replica::fence::Fence;
use reconciler_host::operator::replica::metrics::Metrics;
use reconciler_host::pass::review::{Review, ReviewedModule};
use reconciler_host::runtime::{Module, Runtime};
use reconciler_host::shadow;

use super::gates::GateArgs;
use super::live::LiveArgs;

#[derive(Args)]
pub(super) struct ShadowArgs {
    /// The candidate module (*.wasm).
    candidate: PathBuf,
    /// The operator's view: its module of the candidate's kind serves, and
    /// every parent in its namespaces is shadowed.
    #[command(flatten)]
    live: LiveArgs,
    /// Where to write the review (YAML); default: standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// The plan gates the operator is run with: each module's pass holds
    /// or makes its changes as the operator's would.
    #[command(flatten)]
    gates: GateArgs,
}

/// A module as the review names it.
fn module(module: &Module) -> ReviewedModule {
    ReviewedModule {
        guest: module.name().to_owned(),
        digest: module.digest().to_owned(),
    }
}

pub(super) fn run(runtime: &Runtime, args: ShadowArgs) -> anyhow::Result<ExitCode> {
    let candidate = runtime.load_file(&args.candidate)?;
    let kind = candidate.spec().kind.clone();
    let serving = args.live.serving(runtime, &kind)?;
    let settings: Vec<(String, String)> = args.live.settings(&kind)?.into_iter().collect();
    let scopes = args.live.scopes();
    let gates = GivenGates {
        kind: args.gates.of(&kind),
        replan_after: Some(args.gates.replan_after),
    };
    let shadowed = tokio::runtime::Runtime::new()?.block_on(async {
        let client = counted(&Arc::new(Metrics::new()), &Fence::open())
            .await
            .context(
                "no Kubernetes client configuration (KUBECONFIG, ~/.kube/config or in-cluster)",
            )?;
        anyhow::Ok(shadow::run(&client, &serving, &candidate, &scopes, &settings, gates).await?)
    })?;
    let review = Review::new(
        &kind,
        module(&serving),
        module(&candidate),
        shadowed
            .into_iter()
            .map(|s| (s.parent.to_string(), s.difference)),
    );
    let text = serde_yaml::to_string(&review).expect("a review serializes");
    match &args.output {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{text}"),
    }
    eprintln!(
        "shadowed guest {} (digest {}…) beside guest {} (digest {}…) on {} {kind} parent(s): \
         {} differ, {} turn Ready True to False, {} new guest error(s), {} not reproduced; \
         nothing written to the cluster",
        candidate.name(),
        &candidate.digest()[..12],
        serving.name(),
        &serving.digest()[..12],
        review.parents,
        review.differ,
        review.ready_turns_false,
        review.new_guest_errors,
        review.not_reproduced,
    );
    if review.not_reproduced > 0 {
        eprintln!(
            "not reproduced: on {} parent(s) the serving module's pass does not settle on the live status \
             (each listed with `notReproduced`): what this review says of them is not what the operator would do",
            review.not_reproduced
        );
    }
    if review.ready_turns_false > 0 || review.new_guest_errors > 0 {
        eprintln!(
            "held: an automatic promotion would not serve it (a parent turning from Ready True to False, or a new guest error)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
