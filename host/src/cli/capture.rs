//! `capture`: one live pass of a parent, as the operator runs it and writing nothing to the cluster, kept as a fixture and its golden.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use reconciler_host::capture::plans::GivenGates;
use reconciler_host::capture::{self, Subject};
use reconciler_host::fixture::golden;
use reconciler_host::operator::replica::client::counted;
use reconciler_host::operator::replica::fence::Fence;
use reconciler_host::operator::replica::metrics::Metrics;
use reconciler_host::runtime::Runtime;

use super::gates::GateArgs;
use super::live::LiveArgs;

#[derive(Args)]
pub(super) struct CaptureArgs {
    /// The parent's kind, as its guest names it (PgToolBoxConsole).
    kind: String,
    /// The parent: `<namespace>/<name>`, or `<name>` for a cluster-scoped
    /// kind.
    #[arg(value_name = "NAMESPACE/NAME", value_parser = parse_target)]
    target: Subject,
    #[command(flatten)]
    live: LiveArgs,
    /// The fixture to write (default: `<name>.yaml` in the current
    /// directory); its golden is written beside it (`<name>.golden`).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// The plan gates the operator is run with: the fixture states the
    /// kind's, and the parent's current plan where it describes the pass's
    /// changes.
    #[command(flatten)]
    gates: GateArgs,
    /// Write the fixture even where the live status differs from the pass
    /// captured (a change since the last pass): the live status is kept
    /// beside its expectation.
    #[arg(long)]
    accept_difference: bool,
}

fn parse_target(s: &str) -> Result<Subject, String> {
    let parts: Vec<&str> = s.split('/').collect();
    match parts[..] {
        [name] if !name.is_empty() => Ok(Subject {
            namespace: String::new(),
            name: name.to_owned(),
        }),
        [namespace, name] if !namespace.is_empty() && !name.is_empty() => Ok(Subject {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }),
        _ => Err(format!(
            "{s:?}: expected <namespace>/<name> (or <name> for a cluster-scoped kind)"
        )),
    }
}

pub(super) fn run(runtime: &Runtime, args: CaptureArgs) -> anyhow::Result<ExitCode> {
    let module = args.live.serving(runtime, &args.kind)?;
    let settings = args.live.settings(&module.spec().kind)?;
    let settings_given: Vec<(String, String)> = settings
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let scopes = args.live.scopes();
    let target = args.target;
    let given = GivenGates {
        kind: args.gates.of(&module.spec().kind),
        replan_after: Some(args.gates.replan_after),
    };
    let (captured, target, plans) = tokio::runtime::Runtime::new()?.block_on(async {
        let client = counted(&Arc::new(Metrics::new()), &Fence::open())
            .await
            .context(
                "no Kubernetes client configuration (KUBECONFIG, ~/.kube/config or in-cluster)",
            )?;
        let live =
            capture::live::pass(&client, &module, &target, &scopes, &settings_given, given).await?;
        let plans = capture::plans::record(
            &client,
            module.spec(),
            &target,
            &live.parent,
            &live.pass.evaluated.changes,
            &*live.pass.facts,
            given,
        )
        .await?;
        let captured = capture::fixture(
            &module,
            &target,
            &settings,
            &live,
            &plans,
            args.accept_difference,
        )
        .await?;
        anyhow::Ok((captured, target, plans))
    })?;
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(format!("{}.yaml", target.name)));
    let golden_path = golden::path_for(&output);
    std::fs::write(&output, &captured.fixture)
        .with_context(|| format!("writing {}", output.display()))?;
    std::fs::write(&golden_path, &captured.golden)
        .with_context(|| format!("writing {}", golden_path.display()))?;
    println!(
        "captured {} {target}: {} reads, {} objects read; nothing written to the cluster",
        module.spec().kind,
        captured.reads,
        captured.objects
    );
    for condition in &captured.conditions {
        println!("  {condition}");
    }
    if let Some(plan) = &plans.left_out {
        println!("  left out: {plan}");
    }
    for difference in &captured.live_differences {
        println!("  the live status differs (accepted): {difference}");
    }
    println!(
        "wrote {} and {} (replay: reconciler-host test <guest.wasm> {})",
        output.display(),
        golden_path.display(),
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_namespace_slash_name_or_a_name() {
        let t = |ns: &str, name: &str| Subject {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        };
        assert_eq!(parse_target("team-a/orders"), Ok(t("team-a", "orders")));
        assert_eq!(parse_target("node-1"), Ok(t("", "node-1")));
        for bad in ["", "/orders", "team-a/", "a/b/c"] {
            assert!(
                parse_target(bad)
                    .unwrap_err()
                    .contains("<namespace>/<name>"),
                "{bad:?}"
            );
        }
    }
}
