//! The host's API client: kube's, counting every request it sends
//! (`reconciler_api_requests_total`, by method, verb and resource), its
//! writes behind the replica's fence (`operator::replica::fence`).

use std::sync::Arc;

use std::time::Duration;

use kube::Client;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder};
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;
use tower::util::MapRequestLayer;

use crate::operator::replica::fence::{Fence, FenceLayer};
use crate::operator::replica::metrics::{Metrics, RequestLabels};

/// A client from the inferred configuration (KUBECONFIG, ~/.kube/config
/// or in-cluster) whose every request `metrics` counts: what a converged
/// operator costs the API server is then a number, not a guess. A write
/// `fence` refuses is neither sent nor counted.
///
/// A request answered 429, 503 or 504 is retried inside the call at most
/// [`RETRIES`] times within about three seconds ([`retry_policy`]): a
/// blip (storage re-initializing after a CRD is created) stays one. kube's
/// default retry is off: it retries up to 15 times, its delay doubling
/// from 5 ms without a useful bound, where nothing of the host sees it.
/// The soak found a watch silent 46 s that way after an API server
/// restart, and an expired grant's deletion held for as long. What fails
/// longer, the host retries where it is seen: a failed watch after 100 ms
/// to 2 s, a failed pass with its backoff.
pub async fn counted(metrics: &Arc<Metrics>, fence: &Arc<Fence>) -> Result<Client, kube::Error> {
    let mut config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    config.default_retry = false;
    let requests = metrics.api_requests.clone();
    let count = MapRequestLayer::new(move |request: http::Request<Body>| {
        requests.get_or_create(&labels(&request)).inc();
        request
    });
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&count)
        .with_layer(&FenceLayer(fence.clone()))
        // tower's retry clones the service it retries: kube's is boxed,
        // a buffer in front of it is the clonable handle.
        .with_layer(&BufferLayer::new(BUFFERED))
        .with_layer(&RetryLayer::new(retry_policy()))
        .build())
}

/// Requests waiting for the client's buffer (the service is ready at once:
/// a request waits only while the buffer's task hands the one before on).
const BUFFERED: usize = 1024;

/// How many times a request answered 429, 503 or 504 is sent again.
pub(crate) const RETRIES: u32 = 5;

/// [`RETRIES`] retries, the delay doubling from 50 ms to at most 1 s
/// (about three seconds in all, jitter included); a `Retry-After` is not
/// waited for.
fn retry_policy() -> RetryPolicy {
    RetryPolicy::new(
        Duration::from_millis(50),
        Duration::from_secs(1),
        RETRIES,
        false,
    )
    .expect("the retry delays are valid")
}

/// A request's labels: its method, and from its path and query the verb
/// and resource the API server would log (`list` `deployments`, `patch`
/// `evidenceagents/status`); a path outside the resource APIs (discovery,
/// `/version`) is its own resource with the verb `get`.
fn labels<B>(request: &http::Request<B>) -> RequestLabels {
    let method = request.method().as_str().to_owned();
    let (verb, resource) = verb_and_resource(
        request.method(),
        request.uri().path(),
        request.uri().query().unwrap_or_default(),
    );
    RequestLabels {
        method,
        verb: verb.to_owned(),
        resource,
    }
}

fn verb_and_resource(method: &http::Method, path: &str, query: &str) -> (&'static str, String) {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = match segments.first() {
        Some(&"api") if segments.len() >= 2 => &segments[2..],
        Some(&"apis") if segments.len() >= 3 => &segments[3..],
        _ => return ("get", format!("/{}", segments.join("/"))),
    };
    let rest = match rest {
        ["namespaces", _, more @ ..] if !more.is_empty() => more,
        _ => rest,
    };
    let (resource, name) = match rest {
        [] => return ("get", "discovery".to_owned()),
        [r] => ((*r).to_owned(), None),
        [r, n] => ((*r).to_owned(), Some(*n)),
        [r, n, sub, ..] => (format!("{r}/{sub}"), Some(*n)),
    };
    let watch = query
        .split('&')
        .any(|p| p == "watch=true" || p == "watch=1");
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if name.is_none() => "list",
        http::Method::GET => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if name.is_none() => "deletecollection",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    (verb, resource)
}

#[cfg(test)]
mod tests {
    use super::verb_and_resource;
    use http::Method;

    #[test]
    fn names_the_verb_and_resource() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/a/pods",
                "",
                ("list", "pods"),
            ),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/a/deployments",
                "watch=true&resourceVersion=1",
                ("watch", "deployments"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/secrets/s",
                "",
                ("get", "secrets"),
            ),
            (
                Method::PATCH,
                "/apis/pgtoolbox.fyannk.dev/v1alpha1/namespaces/a/evidenceagents/x/status",
                "fieldManager=m",
                ("patch", "evidenceagents/status"),
            ),
            (
                Method::POST,
                "/apis/events.k8s.io/v1/namespaces/a/events",
                "",
                ("create", "events"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a",
                "",
                ("get", "namespaces"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces",
                "",
                ("list", "namespaces"),
            ),
            (Method::GET, "/apis/apps/v1", "", ("get", "discovery")),
            (Method::GET, "/version", "", ("get", "/version")),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/services/s",
                "",
                ("delete", "services"),
            ),
        ];
        for (method, path, query, (verb, resource)) in cases {
            assert_eq!(
                verb_and_resource(&method, path, query),
                (verb, resource.to_owned()),
                "{method} {path}?{query}"
            );
        }
    }
}
