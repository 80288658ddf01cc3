//! Traces end to end (issue 17): the host started with `--otlp-endpoint`
//! exports its spans over OTLP/HTTP to a receiver in this test, which
//! decodes the protobuf requests as a collector would. A Widget's pass is
//! one `reconcile` span naming the parent, with its guest evaluation, its
//! plan and its API writes (kube's `HTTP` spans: the status write under
//! the pass, the child's apply under its plan) in the same trace.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use reconciler_host_harness::objects::create;
use reconciler_host_harness::operator::{Guests, Host, eventually, fixture_of, install_crds};
use reconciler_testsupport::TestNamespace;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WRITER: Guests = Guests {
    dir: "traces-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

/// The spans received so far.
type Received = Arc<Mutex<Vec<Span>>>;

/// An OTLP/HTTP receiver on a free port: every `POST /v1/traces` body
/// decoded, its spans kept; answered 200 with an empty response.
async fn receiver() -> (SocketAddr, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Received = Arc::default();
    let spans = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let spans = spans.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buffer.len() < end + 4 + length {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Vec<u8> = buffer.drain(..end + 4 + length).skip(end + 4).collect();
                    if head.starts_with("post /v1/traces")
                        && let Ok(request) = ExportTraceServiceRequest::decode(&body[..])
                    {
                        let mut kept = spans.lock().unwrap();
                        for resource in request.resource_spans {
                            for scope in resource.scope_spans {
                                kept.extend(scope.spans);
                            }
                        }
                    }
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")
                        .await;
                }
            });
        }
    });
    (addr, received)
}

fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

#[tokio::test]
async fn a_pass_is_one_trace_with_its_evaluation_and_writes() {
    fixture_of(&WRITER);
    let ns = TestNamespace::new("traces").await.expect("a namespace");
    install_crds(&ns.client()).await;
    let (addr, received) = receiver().await;
    let endpoint = format!("http://{addr}");
    let host = Host::start_in(ns.name(), &["--otlp-endpoint", &endpoint]).await;
    create(
        &ns.client(),
        ns.name(),
        json!({"apiVersion": "testing.reconciler.dev/v1", "kind": "Widget",
               "metadata": {"name": "w"}, "spec": {"data": {"a": "1"}}}),
    )
    .await;
    // The batch exporter sends every 5 s: the first pass's trace arrives
    // whole (a span is exported when it ends, children before parents).
    let (pass, spans) = eventually("the first pass of w, exported", async || {
        let spans = received.lock().unwrap().clone();
        let pass = spans.iter().find(|s| {
            s.name == "reconcile"
                && attribute(s, "parent.name") == Some("w")
                && spans.iter().any(|c| {
                    c.parent_span_id == s.span_id && attribute(c, "http.method") == Some("PATCH")
                })
        });
        match pass {
            Some(p) => Ok((p.clone(), spans.clone())),
            None => Err(spans.iter().map(|s| s.name.clone()).collect::<Vec<_>>()),
        }
    })
    .await;
    assert_eq!(attribute(&pass, "parent.kind"), Some("Widget"));
    assert_eq!(attribute(&pass, "parent.namespace"), Some(ns.name()));
    let children: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == pass.span_id)
        .collect();
    assert!(children.iter().all(|c| c.trace_id == pass.trace_id));
    let evaluate = children
        .iter()
        .find(|c| c.name == "evaluate")
        .expect("the guest's evaluation is a child of the pass");
    assert_eq!(attribute(evaluate, "guest"), Some("writer_guest"));
    // The children's applies run in the pass's `plan` span.
    let plan = children
        .iter()
        .find(|c| c.name == "plan")
        .expect("the plan is a child of the pass");
    let descendants: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == pass.span_id || s.parent_span_id == plan.span_id)
        .collect();
    assert!(descendants.iter().all(|c| c.trace_id == pass.trace_id));
    let writes: Vec<&str> = descendants
        .iter()
        .filter_map(|c| Some((attribute(c, "http.method")?, attribute(c, "http.url")?)))
        .filter(|(m, _)| *m == "PATCH")
        .map(|(_, url)| url)
        .collect();
    assert!(
        writes.iter().any(|u| u.contains("/configmaps/w-config")),
        "the child's apply is a span of the pass: {writes:?}"
    );
    assert!(
        writes.iter().any(|u| u.contains("/widgets/w/status")),
        "the status write is a span of the pass: {writes:?}"
    );
    host.finish();
}
