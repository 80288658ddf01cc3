//! Start-up discovery: which kinds the cluster serves, and where the host
//! may read the optional ones.

use kube::api::{DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use reconciler_conventions::kind::KindRef;

use crate::facts::Availability;

/// Why the start fails.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{kind} is required by a guest but not served by this cluster")]
    Required { kind: KindRef },
    #[error(
        "the host may not list {resource} ({kind}) in every namespace (403): grant list and watch on {resource} cluster-wide, or name the namespaces to watch with --namespaces"
    )]
    Refused { kind: KindRef, resource: String },
    #[error("probing {kind}{where_}: the API server refused the host's credential (401); fix the credential and restart", where_ = in_namespace(namespace))]
    Unauthorized { kind: KindRef, namespace: String },
    #[error("probing {kind}{where_}: {source}", where_ = in_namespace(namespace))]
    Api {
        kind: KindRef,
        namespace: String,
        source: kube::Error,
    },
}

fn in_namespace(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!(" in namespace {ns}")
    }
}

/// Resolves a kind to its API resource; `None` when it is not served.
pub async fn resolve(client: &Client, kind: &KindRef) -> Result<Option<ApiResource>, ProbeError> {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((resource, _)) => Ok(Some(resource)),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(kube::Error::Api(s)) if s.code == 401 => Err(ProbeError::Unauthorized {
            kind: kind.clone(),
            namespace: String::new(),
        }),
        Err(source) => Err(ProbeError::Api {
            kind: kind.clone(),
            namespace: String::new(),
            source,
        }),
    }
}

/// Whether the host may list `resource` in `namespace` ("" for all).
pub async fn readable(
    client: &Client,
    kind: &KindRef,
    resource: &ApiResource,
    namespace: &str,
) -> Result<Availability, ProbeError> {
    let api: Api<DynamicObject> = if namespace.is_empty() {
        Api::all_with(client.clone(), resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, resource)
    };
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Ok(Availability::Available),
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(Availability::Forbidden),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Availability::NotServed),
        Err(kube::Error::Api(s)) if s.code == 401 => Err(ProbeError::Unauthorized {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
        }),
        Err(source) => Err(ProbeError::Api {
            kind: kind.clone(),
            namespace: namespace.to_owned(),
            source,
        }),
    }
}
