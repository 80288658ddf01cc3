//! `reconciler-host`: the operator binary and its offline tools.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    logs(args.log_format);
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::from(2)
        }
    }
}

/// Log lines to stderr, filtered by `RUST_LOG` (default `info`): text,
/// coloured only when stderr is a terminal (files and pipes get no escape
/// codes), or one JSON object a line with the current span's fields.
fn logs(format: cli::LogFormat) {
    use std::io::IsTerminal as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        cli::LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        cli::LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}

/// The error and its causes, each said once: a cause whose text an outer
/// message already carries (an error that formats its source into its own
/// message, and also returns it as its source) is not repeated.
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("probing Widget: {source}")]
    struct Probe {
        source: std::io::Error,
    }

    #[test]
    fn each_cause_is_said_once() {
        let e = anyhow::Error::new(Probe {
            source: std::io::Error::other("connection refused"),
        })
        .context("starting the operator");
        assert_eq!(
            report(&e),
            "starting the operator: probing Widget: connection refused"
        );
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(report(&plain), "outer: inner");
    }
}
