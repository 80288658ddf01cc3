//! Every watch of the host: its one backoff, how one is opened, and the loop driving a reflector.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::Api;
use kube::Resource;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Lookup, store::Writer};
use kube::runtime::utils::ResetTimerBackoff;
use kube::runtime::watcher::{self, Event, ExponentialBackoff};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

/// The backoff of a failed watch: 100 ms doubling to 2 s, with jitter
/// (each delay up to twice the base: at most 4 s), reset after 30 s of
/// health, rather than kube-runtime's default (0.8 s doubling to 30 s): an
/// operator that lost its API server should be back within a couple of
/// seconds of it, and a 410 (the watch's version compacted away) costs one
/// relist, not a long wait.
fn backoff() -> ResetTimerBackoff<ExponentialBackoff> {
    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(2))
        .with_factor(2.0)
        .with_jitter()
        .without_max_times();
    ResetTimerBackoff::new(builder.into(), Duration::from_secs(30))
}

/// A watch of what `config` selects of `api`, restarting after a failure
/// with [`backoff`] (the failure is still an item of the stream).
pub(crate) fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher::watcher(api, config).backoff(backoff())
}

/// A [`watch`] keeping `writer`'s store in step.
pub(crate) fn reflect<K>(
    writer: Writer<K>,
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource + Lookup + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    <K as Lookup>::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    reflector::reflector(writer, watch(api, config))
}

/// Drives a reflector's `stream` until it ends, waking `wake` on every
/// event (a failure included: it is said at debug level, as `what`
/// failed).
pub(crate) async fn drive<S, K>(stream: S, wake: Arc<Notify>, what: &str)
where
    S: Stream<Item = watcher::Result<Event<K>>>,
{
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        if let Err(e) = event {
            tracing::debug!(error = %e, "{what} failed; it retries");
        }
        wake.notify_one();
    }
}
