//! Traces: OpenTelemetry over OTLP (HTTP, protobuf) when an endpoint is
//! set, off and free when not. A pass is the `reconcile` span with its
//! parent's identity; its guest evaluation (`evaluate`), its plan (`plan`)
//! and each API request kube sends (`HTTP`, with method, URL and status)
//! are its children.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_subscriber::filter::{LevelFilter, Targets};

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("--otlp-endpoint {endpoint:?}: {why}")]
    Endpoint { endpoint: String, why: String },
    #[error("the OTLP exporter for {endpoint}: {source}")]
    Exporter {
        endpoint: String,
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// The tracer provider exporting to `endpoint` (`http://host:4318`: the
/// traces go to `<endpoint>/v1/traces`), in batches from its own thread.
/// Keep it, and shut it down before exiting: that flushes what is left.
pub fn provider(endpoint: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let base = endpoint.trim_end_matches('/');
    if !base.starts_with("http://") {
        return Err(TelemetryError::Endpoint {
            endpoint: endpoint.to_owned(),
            why: "expected http://host:port (OTLP over HTTP; use a local collector for TLS)"
                .to_owned(),
        });
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .map_err(|source| TelemetryError::Exporter {
            endpoint: endpoint.to_owned(),
            source,
        })?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(crate::marks::FIELD_MANAGER)
                .build(),
        )
        .build())
}

/// The host's tracer from `provider`.
pub fn tracer(provider: &SdkTracerProvider) -> SdkTracer {
    provider.tracer(crate::marks::FIELD_MANAGER)
}

/// What becomes a span: the host's own spans, and kube's per-request
/// `HTTP` spans (debug level); nothing of the exporter's own client.
pub fn traced() -> Targets {
    Targets::new()
        .with_target("reconciler_host", LevelFilter::INFO)
        .with_target("kube_client", LevelFilter::DEBUG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_endpoints_are_taken() {
        let e = provider("https://collector:4318").unwrap_err();
        assert!(e.to_string().contains("expected http://host:port"), "{e}");
    }
}
