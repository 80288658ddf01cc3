//! Start-up discovery: which kinds the cluster serves, and where the host
//! may read the optional ones.

use kube::Client;
use kube::api::ListParams;
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use reconciler_conventions::kind::KindRef;

use crate::facts::Availability;
use crate::operator::cluster::decode;

/// Why the start fails.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{kind} is required by a guest but not served by this cluster")]
    Required { kind: KindRef },
    #[error(
        "the host may not list {resource} ({kind}) in every namespace (403): grant list and watch on {resource} cluster-wide, or name the namespaces to watch with --namespaces"
    )]
    Refused { kind: KindRef, resource: String },
    #[error(
        "the host may not list {resource} ({kind}), a cluster-scoped kind (403): grant list and watch on {resource}"
    )]
    RefusedClusterScoped { kind: KindRef, resource: String },
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

/// A kind the cluster serves: its API resource and its scope.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub resource: ApiResource,
    /// Its objects live in namespaces (Pods), or not (Nodes, ClusterRoles).
    pub namespaced: bool,
}

impl Resolved {
    /// Where the host watches and probes the kind: each of `scopes` (the
    /// watched namespaces, or `""` for all) when it is namespaced, and
    /// cluster-wide only (`""`) when it is not, whatever `--namespaces` says.
    pub fn scopes(&self, scopes: &[String]) -> Vec<String> {
        if self.namespaced {
            scopes.to_vec()
        } else {
            vec![String::new()]
        }
    }
}

/// Resolves a kind to its API resource; `None` when it is not served.
pub async fn resolve(client: &Client, kind: &KindRef) -> Result<Option<Resolved>, ProbeError> {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((resource, caps)) => Ok(Some(Resolved {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
        })),
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

/// Whether the host may list `resource` in `namespace` ("" for all, and
/// for a cluster-scoped kind).
pub async fn readable(
    client: &Client,
    kind: &KindRef,
    resource: &ApiResource,
    namespace: &str,
) -> Result<Availability, ProbeError> {
    // Metadata only, each object decoded bounded: the first object of the
    // kind may be one a user nested too deep (issue 49).
    let api = decode::metadata_api(client, resource, namespace);
    match api.list(&ListParams::default().limit(1)).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_scoped_kind_is_watched_cluster_wide_whatever_the_namespaces() {
        let resolved = |namespaced: bool| Resolved {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "Node"),
                "nodes",
            ),
            namespaced,
        };
        let listed = ["team-a".to_owned(), "team-b".to_owned()];
        assert_eq!(resolved(true).scopes(&listed), listed);
        assert_eq!(resolved(false).scopes(&listed), [""]);
        assert_eq!(resolved(false).scopes(&[String::new()]), [""]);
        assert_eq!(resolved(false).scopes(&[]), [""]);
    }
}
