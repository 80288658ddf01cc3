//! The host's HTTP endpoints, on `--metrics-addr`: `/metrics` (Prometheus
//! text format), `/readyz` (200 while every required watch has listed its
//! kind and none has been down for longer than its bound; 503 naming the
//! watches that are not; a standby is ready once its caches are; either
//! way a line per guest file the start refused, `not served: ...`) and
//! `/healthz` (200 unless parents wait with no pass ending for longer than
//! `--wedged-after`: a wedged process).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::operator::cluster::health::WatchHealth;
use crate::operator::hot_swap::unserved::Unserved;
use crate::operator::replica::liveness::Liveness;
use crate::operator::replica::metrics::Metrics;

/// Lines, each ended by a newline.
fn lines(lines: impl Iterator<Item = String>) -> String {
    lines.map(|l| l + "\n").collect()
}

/// Binds `addr` (at start, so that a port in use fails the start).
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot serve metrics on --metrics-addr {addr}: {e}"))
}

/// What the endpoints answer from.
pub struct Endpoints {
    pub metrics: Arc<Metrics>,
    pub health: Arc<WatchHealth>,
    /// How long a required watch may be down before `/readyz` fails.
    pub watch_down_bound: Duration,
    pub liveness: Arc<Liveness>,
    /// How long parents may wait with no pass ending before `/healthz`
    /// fails.
    pub wedged_after: Duration,
    /// The guest files the start refused, not served yet.
    pub unserved: Arc<Unserved>,
}

impl Endpoints {
    /// The status line and body for a request line's path.
    fn answer(&self, request: &str) -> (&'static str, String) {
        let path = request.split_whitespace().nth(1).unwrap_or_default();
        match (request.split_whitespace().next(), path) {
            (Some("GET"), "/metrics") => ("200 OK", self.metrics.encode()),
            (Some("GET"), "/readyz") => {
                let unserved = self.unserved.lines();
                match self.health.readiness(self.watch_down_bound) {
                    Ok(()) => (
                        "200 OK",
                        lines(["ok".to_owned()].into_iter().chain(unserved)),
                    ),
                    Err(why) => (
                        "503 Service Unavailable",
                        lines(why.into_iter().chain(unserved)),
                    ),
                }
            }
            (Some("GET"), "/healthz") => match self.liveness.check(self.wedged_after) {
                Ok(()) => ("200 OK", "ok\n".to_owned()),
                Err(why) => ("503 Service Unavailable", why + "\n"),
            },
            _ => (
                "404 Not Found",
                "served: /metrics, /readyz, /healthz\n".to_owned(),
            ),
        }
    }
}

/// Serves the endpoints until the task is dropped.
pub async fn serve(listener: TcpListener, endpoints: Arc<Endpoints>) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving /metrics, /readyz and /healthz");
    }
    while let Ok((mut stream, _)) = listener.accept().await {
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            // The request line and headers, up to 1 KiB (nothing here
            // needs a body).
            let mut request = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            while request.len() < 1024 && !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&chunk[..n]),
                }
            }
            let line = String::from_utf8_lossy(&request);
            let (status, body) = endpoints.answer(line.lines().next().unwrap_or_default());
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}
