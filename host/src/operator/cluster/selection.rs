//! What a watch selects: every object, those a label selector selects, or
//! those a selection that changes while the host runs selects (a ring
//! member's slots), by label or by the API server's own `shardSelector`
//! (KEP-5866, where it serves it); the watch lists again when it changes.

use futures::future::BoxFuture;
use kube::Client;
use kube::client::Body;
use kube::runtime::watcher;
use tokio::sync::watch;

/// One selection: a label selector, a `shardSelector`, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchSelector {
    pub labels: Option<String>,
    pub shards: Option<String>,
}

/// What a watch selects.
#[derive(Clone, Debug, Default)]
pub enum Selecting {
    /// Every object.
    #[default]
    All,
    /// The objects a label selector selects.
    Labels(String),
    /// The objects the selection of the moment selects.
    Following(watch::Receiver<WatchSelector>),
}

impl Selecting {
    /// The selection of the moment.
    pub fn now(&self) -> WatchSelector {
        match self {
            Selecting::All => WatchSelector::default(),
            Selecting::Labels(labels) => WatchSelector {
                labels: Some(labels.clone()),
                shards: None,
            },
            Selecting::Following(current) => current.borrow().clone(),
        }
    }

    /// Resolves when the selection changed since [`Selecting::now`] was
    /// last read (never, for a fixed one, or once its source is gone).
    pub async fn changed(&mut self) {
        match self {
            Selecting::Following(current) => {
                if current.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            _ => std::future::pending().await,
        }
    }
}

impl WatchSelector {
    /// The watcher's configuration of this selection.
    pub fn config(&self) -> watcher::Config {
        match &self.labels {
            Some(labels) => watcher::Config::default().labels(labels),
            None => watcher::Config::default(),
        }
    }

    /// `client`, its reads of collections selecting [`WatchSelector::shards`]
    /// (kube's list and watch parameters have no `shardSelector` yet).
    pub fn client(&self, client: &Client) -> Client {
        let Some(shards) = self.shards.clone() else {
            return client.clone();
        };
        let inner = client.clone();
        let service = tower::service_fn(move |request: http::Request<Body>| {
            let inner = inner.clone();
            let request = selecting_shards(request, &shards);
            let sent: BoxFuture<'static, _> = Box::pin(async move { inner.send(request).await });
            sent
        });
        Client::new(service, client.default_namespace())
    }
}

/// `request` with `shardSelector=<shards>` in its query, when it is a GET.
fn selecting_shards(mut request: http::Request<Body>, shards: &str) -> http::Request<Body> {
    if request.method() != http::Method::GET {
        return request;
    }
    let uri = request.uri();
    let query = match uri.query() {
        Some(q) if !q.is_empty() => format!("{q}&shardSelector={}", encoded(shards)),
        _ => format!("shardSelector={}", encoded(shards)),
    };
    let path_and_query = format!("{}?{query}", uri.path());
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = path_and_query.parse().ok();
    if let Ok(uri) = http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

/// `text` percent-encoded for a query value (every byte but the
/// unreserved ones).
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_selects_the_shards_and_nothing_else_changes() {
        let get = http::Request::get(
            "https://api:6443/apis/x.dev/v1/widgets?watch=true&labelSelector=a%3Db",
        )
        .body(Body::empty())
        .unwrap();
        let sent = selecting_shards(get, "shardRange(object.metadata.uid, '0x00', '0x01')");
        assert_eq!(
            sent.uri().to_string(),
            "https://api:6443/apis/x.dev/v1/widgets?watch=true&labelSelector=a%3Db&shardSelector=shardRange%28object.metadata.uid%2C%20%270x00%27%2C%20%270x01%27%29"
        );
        let bare = http::Request::get("/api/v1/configmaps")
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            selecting_shards(bare, "x").uri().to_string(),
            "/api/v1/configmaps?shardSelector=x"
        );
        let patch = http::Request::patch("/api/v1/configmaps/c")
            .body(Body::empty())
            .unwrap();
        assert_eq!(
            selecting_shards(patch, "x").uri().to_string(),
            "/api/v1/configmaps/c"
        );
    }

    #[tokio::test]
    async fn a_following_selection_is_read_as_it_changes() {
        let (tx, rx) = watch::channel(WatchSelector::default());
        let mut selecting = Selecting::Following(rx);
        assert_eq!(selecting.now(), WatchSelector::default());
        let next = WatchSelector {
            labels: Some("a=b".into()),
            shards: None,
        };
        tx.send_replace(next.clone());
        selecting.changed().await;
        assert_eq!(selecting.now(), next);
        assert_eq!(Selecting::Labels("a=b".into()).now(), next);
    }
}
