//! Traces: OpenTelemetry over OTLP (HTTP, protobuf) when an endpoint is
//! set, off and free when not. A pass is the `reconcile` span with its
//! parent's identity; its guest evaluation (`evaluate`), its plan (`plan`)
//! and each API request kube sends (`HTTP`, with method, URL and status)
//! are its children. And what neither logs nor traces carry: the bodies of
//! the API server's answers ([`no_bodies`]).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Metadata;
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

/// The module of kube's client whose events carry the whole body of an
/// answer: one it could not decode (WARN), a Status (TRACE), an error it
/// could not parse (DEBUG).
const KUBE_CLIENT_BODIES: &str = "kube_client::client";

/// Whether `meta` may be logged or traced: anything but the events of
/// kube's client module that write an answer's body (a user's object, up
/// to megabytes, at every retry: issue 49). What they say reaches the host
/// as the request's error, which names no body; the requests' spans (a
/// module of their own) are kept.
pub fn no_bodies(meta: &Metadata<'_>) -> bool {
    !(meta.is_event() && meta.target() == KUBE_CLIENT_BODIES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn no_level_logs_the_body_kube_could_not_decode() {
        let written = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer = {
            let written = written.clone();
            move || Writer(written.clone())
        };
        let lines = tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_filter(LevelFilter::TRACE)
            .with_filter(filter_fn(no_bodies));
        let subscriber = tracing_subscriber::registry().with(lines);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "kube_client::client", "{{\"secret\": 1}}, recursion limit");
            tracing::trace!(target: "kube_client::client", "Status from {{\"secret\": 1}}");
            tracing::debug!(target: "kube_client::client::builder", "requesting");
            tracing::warn!(target: "reconciler_host::operator", "kept");
        });
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert!(
            text.contains("requesting") && text.contains("kept"),
            "{text}"
        );
    }

    struct Writer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn only_plain_http_endpoints_are_taken() {
        let e = provider("https://collector:4318").unwrap_err();
        assert!(e.to_string().contains("expected http://host:port"), "{e}");
    }
}
