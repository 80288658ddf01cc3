//! The host's reads past the cache: one GET per object a pass wanted of a
//! kind it may not list or watch in the namespace (`crate::facts::past_cache`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use crate::facts::past_cache::{MAX_READS, ObjectKey, PastCache, WithPastCache};
use crate::facts::{Cached, ObjectSource, SourceError};
use crate::operator::cluster::cache::{ClusterSource, slim};
use crate::operator::cluster::decode;
use crate::runtime::Evaluated;

/// What answers a pass's reads past the caches.
#[derive(Clone, Copy)]
pub enum PastReads<'a> {
    /// The API server: one GET each.
    Server(&'a Client),
    /// Objects that answer them themselves ([`ObjectSource::past_cache`]):
    /// a fixture's, which stand in for the API server.
    Objects(&'a dyn ObjectSource),
}

/// The rounds of one pass: evaluate over [`Rounds::source`], then
/// [`Rounds::read_wanted`]; while it reads something, evaluate again.
/// At most [`MAX_READS`] objects a pass, in as many rounds; the operator's
/// pass and a capture run the same rounds.
#[derive(Debug, Default)]
pub struct Rounds {
    answers: PastCache,
}

impl Rounds {
    /// What the next evaluation reads: the cache, and the answers read
    /// past it so far.
    pub fn source(&self, cache: &Arc<ClusterSource>) -> Arc<dyn ObjectSource> {
        if self.answers.is_empty() {
            cache.clone()
        } else {
            Arc::new(WithPastCache::new(
                cache.clone(),
                Arc::new(self.answers.clone()),
            ))
        }
    }

    /// Reads past the cache, through `past`, what `evaluated` wanted and
    /// was not read yet, within the pass's bound; false when there is
    /// nothing to read (the evaluation stands).
    pub(crate) async fn read_wanted(
        &mut self,
        past: PastReads<'_>,
        cache: &ClusterSource,
        evaluated: &Evaluated,
    ) -> bool {
        let wanted: BTreeSet<_> = evaluated
            .past_cache_wanted
            .iter()
            .filter(|k| !self.answers.contains(k))
            .take(MAX_READS.saturating_sub(self.answers.len()))
            .cloned()
            .collect();
        if wanted.is_empty() {
            return false;
        }
        match past {
            PastReads::Server(client) => read(client, cache, &wanted, &mut self.answers).await,
            PastReads::Objects(objects) => {
                for (kind, namespace, name) in &wanted {
                    let answer = objects
                        .past_cache(kind, namespace, name)
                        .unwrap_or(Ok(None));
                    self.answers
                        .insert((kind.clone(), namespace.clone(), name.clone()), answer);
                }
            }
        }
        true
    }

    /// What the pass read past the cache.
    pub fn answers(&self) -> &PastCache {
        &self.answers
    }
}

/// How long one read may take before the pass is failed and retried.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads each of `wanted` not answered yet into `answers`: found,
/// absent (404), refused (403), or another failure the pass reports.
async fn read(
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
                let api = decode::api(client, &resource, namespace);
                match tokio::time::timeout(READ_TIMEOUT, api.get_opt(name)).await {
                    Err(_) => Err(failed(format!("no answer in {READ_TIMEOUT:?}"))),
                    Ok(Ok(None)) => Ok(None),
                    Ok(Ok(Some(object))) => match object.undecodable() {
                        Some(why) => Err(SourceError::Undecodable {
                            object: format!("{kind} {namespace}/{name}"),
                            why: why.to_owned(),
                        }),
                        None => Ok(Some(Cached::new(Arc::new(slim(object.into_value()))))),
                    },
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
