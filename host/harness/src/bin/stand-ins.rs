//! `stand-ins`: what `make run` (examples/run) runs beside the host, until
//! killed, in one namespace:
//!
//! - the crash-loop chooser ([`PodStates`]): the Pods of the instances named
//!   by `--crash-loop` (label `app.kubernetes.io/instance`, the parent's
//!   name) annotated for kwok, which runs the local cluster's Pods, to
//!   report them in CrashLoopBackOff (the others it reports running);
//! - the ingress controller ([`RouterStandIn`]), the one component the
//!   local cluster lacks: every Ingress of the namespace whose hosts are
//!   below a `--admit` suffix is given a load-balancer address.
//!
//! ```text
//! stand-ins --namespace <ns> [--crash-loop <instance>]... [--admit <host-suffix>]...
//! ```
//!
//! The kubeconfig comes from the environment (`KUBECONFIG`), as for the
//! host. Deployments, ReplicaSets and Pods are the controller-manager's;
//! nothing here creates an object.

use std::process::ExitCode;

use anyhow::{Context, bail};
use reconciler_host_harness::console_objects::RouterStandIn;
use reconciler_host_harness::objects::{PodState, crash_loop};
use reconciler_host_harness::pod_states::PodStates;

const USAGE: &str =
    "usage: stand-ins --namespace <ns> [--crash-loop <instance>]... [--admit <host-suffix>]...";

#[derive(Debug, Default, PartialEq)]
struct Args {
    namespace: String,
    crash_loop: Vec<String>,
    admit: Vec<String>,
}

fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args::default();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (flag, None),
        };
        if flag == "-h" || flag == "--help" {
            bail!("{USAGE}");
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .with_context(|| format!("{flag} needs a value"))?,
        };
        if value.is_empty() {
            bail!("{flag} needs a value");
        }
        match flag.as_str() {
            "--namespace" => parsed.namespace = value,
            "--crash-loop" => parsed.crash_loop.push(value),
            "--admit" => parsed.admit.push(value),
            other => bail!("unknown argument {other:?}"),
        }
    }
    if parsed.namespace.is_empty() {
        bail!("--namespace is required");
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stand-ins: {e:#}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let args = parse(std::env::args().skip(1))?;
    let client = kube::Client::try_default()
        .await
        .context("a client from the kubeconfig")?;
    let pod_states = PodStates::start(&client, &args.namespace, PodState::Running);
    for instance in &args.crash_loop {
        pod_states.set(instance, crash_loop());
    }
    let router = RouterStandIn::start(&client, &args.namespace, &args.admit);
    eprintln!(
        "stand-ins: crash-loop chooser and ingress controller for namespace {}: Pods running{}; \
         Ingresses admitted for hosts below {}",
        args.namespace,
        if args.crash_loop.is_empty() {
            String::new()
        } else {
            format!(
                ", but those of {} in CrashLoopBackOff",
                args.crash_loop.join(", ")
            )
        },
        if args.admit.is_empty() {
            "no suffix (none)".to_owned()
        } else {
            args.admit.join(", ")
        },
    );

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("handling SIGTERM")?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    drop(router);
    drop(pod_states);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> anyhow::Result<Args> {
        parse(a.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_repeat_and_take_their_value_inline_or_next() {
        assert_eq!(
            args(&[
                "--namespace",
                "examples",
                "--crash-loop=billing",
                "--crash-loop",
                "ledger",
                "--admit",
                ".apps.example.com",
            ])
            .unwrap(),
            Args {
                namespace: "examples".into(),
                crash_loop: vec!["billing".into(), "ledger".into()],
                admit: vec![".apps.example.com".into()],
            }
        );
        assert!(args(&[]).is_err(), "a namespace is required");
        assert!(args(&["--namespace"]).is_err());
        assert!(args(&["--namespace", "x", "--nope", "y"]).is_err());
    }
}
