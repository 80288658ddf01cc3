//! The host's reads past the cache: one GET per object a pass wanted of a
//! kind it may not list or watch in the namespace (`crate::facts::past_cache`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject};

use crate::facts::past_cache::{ObjectKey, PastCache};
use crate::facts::{Cached, SourceError};
use crate::operator::cluster::cache::{ClusterSource, slim};

/// How long one read may take before the pass is failed and retried.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads each of `wanted` not answered yet into `answers`: found,
/// absent (404), refused (403), or another failure the pass reports.
pub async fn read(
    client: &Client,
    source: &ClusterSource,
    wanted: &BTreeSet<ObjectKey>,
    answers: &mut PastCache,
) {
    for key in wanted {
        if answers.contains(key) {
            continue;
        }
        let (kind, namespace, name) = key;
        let failed = |why: String| SourceError::PastCache {
            object: format!("{kind} {namespace}/{name}"),
            why,
        };
        let answer = match source.resource(kind) {
            None => Err(SourceError::NotServed(kind.clone())),
            Some(resource) => {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), namespace, &resource);
                match tokio::time::timeout(READ_TIMEOUT, api.get_opt(name)).await {
                    Err(_) => Err(failed(format!("no answer in {READ_TIMEOUT:?}"))),
                    Ok(Ok(None)) => Ok(None),
                    Ok(Ok(Some(object))) => serde_json::to_value(object)
                        .map(|v| Some(Cached::new(Arc::new(slim(v)))))
                        .map_err(|e| failed(e.to_string())),
                    Ok(Err(kube::Error::Api(s))) if s.code == 403 => Err(SourceError::Forbidden {
                        kind: kind.clone(),
                        namespace: namespace.clone(),
                    }),
                    Ok(Err(e)) => Err(failed(e.to_string())),
                }
            }
        };
        tracing::debug!(%kind, %namespace, %name, found = matches!(answer, Ok(Some(_))), "read past the cache");
        answers.insert(key.clone(), answer);
    }
}
