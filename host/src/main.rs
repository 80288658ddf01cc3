//! `reconciler-host`: the operator binary and its offline tools.

mod cli;

use std::process::ExitCode;

use opentelemetry_sdk::trace::SdkTracerProvider;
use reconciler_host::telemetry;

fn main() -> ExitCode {
    // One TLS provider for every rustls client in the process (the OTLP
    // exporter's and the registry client's reqwest are built without one
    // of their own): ring's, the one kube's rustls already uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = cli::Cli::parse_shown();
    let traces = match args.otlp_endpoint.as_deref().map(telemetry::provider) {
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Some(Ok(provider)) => Some(provider),
        None => None,
    };
    logs(args.log_format, traces.as_ref());
    let code = match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::from(2)
        }
    };
    if let Some(provider) = traces
        && let Err(e) = provider.shutdown()
    {
        eprintln!("warning: the last traces were not exported: {e}");
    }
    code
}

/// Log lines to stderr, filtered by `RUST_LOG` (default `info`): text,
/// coloured only when stderr is a terminal (files and pipes get no escape
/// codes), or one JSON object a line with the current span's fields. With
/// `traces`, spans are exported too (their own filter: the host's spans
/// and kube's requests, whatever `RUST_LOG` says). Neither carries an
/// answer's body, whatever the level (`telemetry::no_bodies`).
fn logs(format: cli::LogFormat, traces: Option<&SdkTracerProvider>) {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let lines = match format {
        cli::LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        cli::LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    let spans = traces.map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(telemetry::tracer(provider))
            .with_filter(telemetry::traced())
    });
    let no_bodies = tracing_subscriber::filter::filter_fn(telemetry::no_bodies);
    tracing_subscriber::registry()
        .with(lines.with_filter(filter).with_filter(no_bodies.clone()))
        .with(spans.map(|spans| spans.with_filter(no_bodies)))
        .init();
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
