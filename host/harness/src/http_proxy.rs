//! A fault-injecting HTTP proxy in front of the test API server: the host
//! talks plain HTTP to it on loopback (a kubeconfig with an `http://`
//! server and no credentials), and it forwards each request through an
//! admin [`kube::Client`] (TLS, client certificate) and streams the answer
//! back, watches included. A test makes it answer `503 Service
//! Unavailable` instead, to every n-th request, for as long as it wants.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody as BoxBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The proxy; dropped, it stops accepting.
pub struct HttpFaultProxy {
    addr: SocketAddr,
    /// Every n-th request is answered 503; 0: none.
    every: Arc<AtomicU64>,
    injected: Arc<AtomicU64>,
    accept: tokio::task::JoinHandle<()>,
}

impl HttpFaultProxy {
    /// Listens on a free loopback port, forwarding through `upstream`.
    pub async fn start(upstream: kube::Client) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let every = Arc::new(AtomicU64::new(0));
        let injected = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(AtomicU64::new(0));
        let accept = {
            let (every, injected) = (every.clone(), injected.clone());
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (upstream, every, injected, seen) = (
                        upstream.clone(),
                        every.clone(),
                        injected.clone(),
                        seen.clone(),
                    );
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let (upstream, every, injected, seen) = (
                                upstream.clone(),
                                every.clone(),
                                injected.clone(),
                                seen.clone(),
                            );
                            async move {
                                let n = every.load(Ordering::SeqCst);
                                let i = seen.fetch_add(1, Ordering::SeqCst) + 1;
                                if n > 0 && i % n == 0 {
                                    injected.fetch_add(1, Ordering::SeqCst);
                                    return Ok::<_, Infallible>(unavailable());
                                }
                                Ok(forward(&upstream, req).await)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        Ok(HttpFaultProxy {
            addr,
            every,
            injected,
            accept,
        })
    }

    /// Answers every `n`-th request 503 from now on; 0 stops.
    pub fn fail_every(&self, n: u64) {
        self.every.store(n, Ordering::SeqCst);
    }

    /// How many requests were answered 503 so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// A kubeconfig pointing at the proxy (plain HTTP, no credentials).
    pub fn kubeconfig(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: http://{}\nusers:\n- name: proxy\n  user: {{}}\ncontexts:\n- name: proxy\n  context:\n    cluster: proxy\n    user: proxy\ncurrent-context: proxy\n",
                self.addr
            ),
        )?;
        Ok(path.to_path_buf())
    }
}

impl Drop for HttpFaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// A `503` with a Kubernetes `Status`, as an overloaded API server answers.
fn unavailable() -> Response<BoxBody<Bytes, BoxError>> {
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": "injected by the test's fault proxy", "reason": "ServiceUnavailable",
        "code": 503,
    });
    let mut response = Response::new(
        Full::new(Bytes::from(status.to_string()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The request sent on through `upstream`, its answer streamed back.
async fn forward(
    upstream: &kube::Client,
    req: Request<Incoming>,
) -> Response<BoxBody<Bytes, BoxError>> {
    let (mut parts, body) = req.into_parts();
    parts.headers.remove(http::header::HOST);
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return unavailable(),
    };
    let request = Request::from_parts(parts, kube::client::Body::from(body.to_vec()));
    match upstream.send(request).await {
        Ok(response) => response.map(|b| b.map_err(|e| Box::new(e) as BoxError).boxed_unsync()),
        Err(_) => unavailable(),
    }
}
