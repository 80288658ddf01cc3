//! Namespaces the host may not watch: at start, every namespace of
//! `--namespaces` where the host may not list a kind it needs (a guest's
//! parent kind or a read no guest has optional) is left out of the watch,
//! and the objects it may still list there are told so, once
//! (Ready=Unknown, NamespaceNotWatched: `crate::operator::kinds::not_watched`).

use std::collections::BTreeMap;

use kube::Client;
use kube::core::ApiResource;
use reconciler_conventions::kind::KindRef;

use crate::facts::Availability;
use crate::operator::cluster::probe::{self, ProbeError, Resolved};

/// One kind the host may not list in a namespace: its kind and its
/// resource name as RBAC spells it (`pods`, `clusters.postgresql.cnpg.io`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refused {
    pub kind: KindRef,
    pub resource: String,
}

/// The namespaces left out of the watch, with what is refused in each.
pub(crate) type LeftOut = BTreeMap<String, Vec<Refused>>;

/// A resource's name as RBAC and `kubectl auth can-i` spell it: the plural,
/// qualified with its group for a kind outside the core group.
pub(crate) fn resource_name(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

/// The refused resources, sorted and de-duplicated: `pods, secrets`.
pub fn resources(refused: &[Refused]) -> String {
    let mut names: Vec<&str> = refused.iter().map(|r| r.resource.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

/// The WARN line of a namespace left out of the watch.
pub(crate) fn left_out_line(namespace: &str, refused: &[Refused]) -> String {
    format!(
        "namespace {namespace} left out of the watch: missing list on {}",
        resources(refused)
    )
}

/// Ready's message on an object of a namespace left out of the watch.
pub(crate) fn not_watched_message(namespace: &str, refused: &[Refused]) -> String {
    format!(
        "the operator left namespace {namespace} out of its watch: it may not list {} there; this status is no longer updated",
        resources(refused)
    )
}

/// Checks that the host may list every required kind where it watches.
///
/// - Every namespace (`namespaces` empty): a kind whose cluster-wide list
///   is refused (403) fails the start, naming the kind and the permission.
/// - Listed namespaces: a namespace where any required kind is refused is
///   returned, with every kind refused there; the others are watched.
///
/// A cluster-scoped kind (a Node, a ClusterRole) is probed cluster-wide
/// either way, and a refusal fails the start: no namespace can be left out
/// for it. Any other answer (401 included) fails the start, as for optional
/// kinds.
pub async fn check(
    client: &Client,
    required: &BTreeMap<KindRef, Resolved>,
    namespaces: &[String],
) -> Result<LeftOut, ProbeError> {
    let mut left_out = LeftOut::new();
    for (kind, resolved) in required.iter().filter(|(_, r)| !r.namespaced) {
        match probe::readable(client, kind, &resolved.resource, "").await? {
            Availability::Available => {}
            Availability::Forbidden => {
                return Err(ProbeError::RefusedClusterScoped {
                    kind: kind.clone(),
                    resource: resource_name(&resolved.resource),
                });
            }
            Availability::NotServed => {
                return Err(ProbeError::Required { kind: kind.clone() });
            }
        }
    }
    let required: BTreeMap<&KindRef, &ApiResource> = required
        .iter()
        .filter(|(_, r)| r.namespaced)
        .map(|(k, r)| (k, &r.resource))
        .collect();
    if namespaces.is_empty() {
        for (kind, resource) in required {
            match probe::readable(client, kind, resource, "").await? {
                Availability::Available => {}
                Availability::Forbidden => {
                    return Err(ProbeError::Refused {
                        kind: (*kind).clone(),
                        resource: resource_name(resource),
                    });
                }
                Availability::NotServed => {
                    return Err(ProbeError::Required {
                        kind: (*kind).clone(),
                    });
                }
            }
        }
        return Ok(left_out);
    }
    for ns in namespaces {
        for (kind, resource) in &required {
            match probe::readable(client, kind, resource, ns).await? {
                Availability::Available => {}
                Availability::Forbidden => left_out.entry(ns.clone()).or_default().push(Refused {
                    kind: (*kind).clone(),
                    resource: resource_name(resource),
                }),
                Availability::NotServed => {
                    return Err(ProbeError::Required {
                        kind: (*kind).clone(),
                    });
                }
            }
        }
    }
    Ok(left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(group: &str, version: &str, kind: &str, plural: &str) -> Refused {
        let kind = KindRef {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        };
        let resource = ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(group, version, &kind.kind),
            plural,
        );
        Refused {
            kind,
            resource: resource_name(&resource),
        }
    }

    #[test]
    fn resource_names_are_rbac_names() {
        assert_eq!(refused("", "v1", "Pod", "pods").resource, "pods");
        assert_eq!(
            refused("postgresql.cnpg.io", "v1", "Cluster", "clusters").resource,
            "clusters.postgresql.cnpg.io"
        );
    }

    #[test]
    fn messages_name_the_namespace_and_every_missing_permission_once_sorted() {
        let missing = vec![
            refused("", "v1", "Secret", "secrets"),
            refused("", "v1", "Pod", "pods"),
            refused("", "v1", "Secret", "secrets"),
            refused("apps", "v1", "Deployment", "deployments"),
        ];
        assert_eq!(
            left_out_line("team-b", &missing),
            "namespace team-b left out of the watch: missing list on deployments.apps, pods, secrets"
        );
        assert_eq!(
            not_watched_message("team-b", &missing),
            "the operator left namespace team-b out of its watch: it may not list deployments.apps, pods, secrets there; this status is no longer updated"
        );
    }

    #[test]
    fn the_cluster_wide_refusal_names_the_kind_and_the_permission() {
        let r = refused("", "v1", "Secret", "secrets");
        let e = ProbeError::Refused {
            kind: r.kind,
            resource: r.resource,
        };
        assert_eq!(
            e.to_string(),
            "the host may not list secrets (v1/Secret) in every namespace (403): grant list and watch on secrets cluster-wide, or name the namespaces to watch with --namespaces"
        );
    }
}
