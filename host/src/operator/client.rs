//! The host's API client: kube's, counting every request it sends (`reconciler_api_requests_total`, by method).

use std::sync::Arc;

use kube::Client;
use kube::client::{Body, ClientBuilder};
use tower::util::MapRequestLayer;

use crate::operator::metrics::{MethodLabel, Metrics};

/// A client from the inferred configuration (KUBECONFIG, ~/.kube/config
/// or in-cluster) whose every request `metrics` counts: what a converged
/// operator costs the API server is then a number, not a guess.
pub async fn counted(metrics: &Arc<Metrics>) -> Result<Client, kube::Error> {
    let config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    let requests = metrics.api_requests.clone();
    let count = MapRequestLayer::new(move |request: http::Request<Body>| {
        requests
            .get_or_create(&MethodLabel {
                method: request.method().as_str().to_owned(),
            })
            .inc();
        request
    });
    Ok(ClientBuilder::try_from(config)?.with_layer(&count).build())
}
