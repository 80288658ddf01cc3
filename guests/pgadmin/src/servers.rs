//! The offered set: the servers pgAdmin is given from `spec.clusterSelector`, `spec.clusterRefs` and the granted `spec.crossNamespaceClusterRefs` (each Cluster's endpoints, as each of its login DatabaseRoles where CloudNativePG serves them), and the problems that leave some out.

use std::collections::{BTreeMap, BTreeSet};

use reconciler_guest_sdk::{Facts, Object, ReadError, read};
use serde_json::{Value, json};

use crate::grants::{self, Grant, Grantee};
use crate::registry::*;
use crate::spec::{ClusterRef, Endpoint, PgAdminSpec};

/// The bound of the offered set (seed: "the bound the credential files and
/// the registration accept").
pub const MAX_SERVERS: usize = 64;
/// The port of CloudNativePG's Services and Poolers.
pub const POSTGRES_PORT: u16 = 5432;

/// One server pgAdmin is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub namespace: String,
    pub cluster: String,
    pub endpoint: Endpoint,
    /// The Service pgAdmin connects to.
    pub service: String,
    pub database: String,
    pub username: String,
}

impl Server {
    /// The name pgAdmin shows: `<cluster> <endpoint> as <role>`.
    pub fn name(&self) -> String {
        format!(
            "{} {} as {}",
            self.cluster,
            self.endpoint.text(),
            self.username
        )
    }

    /// The host pgAdmin connects to.
    pub fn host(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }

    /// Its row of `status.servers`.
    pub fn row(&self) -> Value {
        json!({"name": self.name(), "namespace": self.namespace, "cluster": self.cluster,
            "endpoint": self.endpoint.text(), "username": self.username, "host": self.host(),
            "state": "Offered"})
    }
}

/// A Cluster of another namespace that namespace does not let the operator
/// read in full: a `status.servers` row naming that namespace (and no
/// other), not a configuration problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotOffered {
    pub namespace: String,
    pub cluster: String,
    pub message: String,
}

impl NotOffered {
    /// Its row of `status.servers`.
    pub fn row(&self) -> Value {
        json!({"namespace": self.namespace, "cluster": self.cluster, "state": "NotOffered",
            "message": self.message})
    }
}

/// Why part of what the spec asks for is not offered: a ConfigurationValid
/// reason that leaves the PgAdmin running with the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub reason: &'static str,
    pub message: String,
}

/// The offered set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// Whether the spec asks for servers at all.
    pub requested: bool,
    /// At most [`MAX_SERVERS`], in order: the `clusterRefs` entries, the
    /// selected Clusters by name, then the `crossNamespaceClusterRefs`
    /// entries.
    pub servers: Vec<Server>,
    pub problems: Vec<Problem>,
    /// The Clusters of other namespaces not offered, or offered as their
    /// owner only, because that namespace refuses a read.
    pub not_offered: Vec<NotOffered>,
}

impl Offered {
    /// `status.servers`: the offered servers, then the NotOffered rows.
    pub fn rows(&self) -> Value {
        let offered = self.servers.iter().map(Server::row);
        Value::Array(
            offered
                .chain(self.not_offered.iter().map(NotOffered::row))
                .collect(),
        )
    }
}

fn problem(reason: &'static str, message: String) -> Problem {
    Problem { reason, message }
}

/// The Clusters' application database and owner (CloudNativePG's
/// `spec.bootstrap.initdb`, `app` by default).
fn initdb(cluster: &Value, field: &str) -> String {
    cluster["spec"]["bootstrap"]["initdb"][field]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or("app")
        .to_owned()
}

fn json(object: &Object) -> Value {
    serde_json::from_str(&object.json).unwrap_or_default()
}

/// The Cluster a CloudNativePG object (Pooler, DatabaseRole, Database) is
/// for: `spec.cluster.name`.
pub fn cluster_of(object: &Value) -> Option<&str> {
    object["spec"]["cluster"]["name"].as_str()
}

/// The login roles of each Cluster, from the namespace's DatabaseRoles:
/// None when CloudNativePG does not serve them or the operator may not
/// read them there (each Cluster's owner is offered instead).
struct Roles(Option<Vec<(String, String)>>);

/// How a namespace answered the read of its DatabaseRoles.
enum RolesRead {
    Read(Roles),
    /// The operator may not read them there.
    Forbidden,
}

impl Roles {
    fn read(facts: &dyn Facts, namespace: &str) -> Result<RolesRead, String> {
        match facts.list(&database_role_kind(), namespace, &[]) {
            Ok(roles) => Ok(RolesRead::Read(Roles(Some(
                roles
                    .iter()
                    .map(json)
                    .filter(|r| {
                        r["spec"]["login"] == json!(true) && r["spec"]["ensure"] != "absent"
                    })
                    .filter_map(|r| {
                        let cluster = cluster_of(&r)?.to_owned();
                        let name = r["spec"]["name"].as_str()?.to_owned();
                        Some((cluster, name))
                    })
                    .collect(),
            )))),
            // CloudNativePG before 1.30: none is offered, the PgAdmin stays Ready.
            Err(ReadError::NotServed(_)) => Ok(RolesRead::Read(Roles(None))),
            Err(ReadError::Forbidden(_)) => Ok(RolesRead::Forbidden),
            Err(e) => Err(read::failure(
                &format!("the DatabaseRoles of {namespace}"),
                &e,
            )),
        }
    }

    /// The roles a Cluster is offered as.
    fn of(&self, cluster: &str, spec: &Value) -> Vec<String> {
        let mut roles: Vec<String> = self
            .0
            .iter()
            .flatten()
            .filter(|(c, _)| c == cluster)
            .map(|(_, r)| r.clone())
            .collect();
        roles.sort();
        roles.dedup();
        if roles.is_empty() {
            roles.push(initdb(spec, "owner"));
        }
        roles
    }
}

/// The Service of `endpoint` of `cluster`, or why it is not offered.
fn service(
    facts: &dyn Facts,
    namespace: &str,
    cluster: &str,
    endpoint: &Endpoint,
    field: &str,
) -> Result<Result<String, Problem>, String> {
    let pooler = match endpoint {
        Endpoint::Rw => return Ok(Ok(format!("{cluster}-rw"))),
        Endpoint::Ro => return Ok(Ok(format!("{cluster}-ro"))),
        Endpoint::R => return Ok(Ok(format!("{cluster}-r"))),
        Endpoint::Pooler(pooler) => pooler,
    };
    let at = format!("{field} pooler:{pooler}");
    match facts.get(&pooler_kind(), namespace, pooler) {
        Ok(Some(object)) => {
            let spec = json(&object);
            match cluster_of(&spec) {
                Some(c) if c == cluster => Ok(Ok(pooler.clone())),
                other => Ok(Err(problem(
                    POOLER_NOT_FOUND,
                    format!(
                        "{at}: Pooler {pooler} of {namespace} serves Cluster {}, not {cluster}",
                        other.unwrap_or("(none)")
                    ),
                ))),
            }
        }
        Ok(None) => Ok(Err(problem(
            POOLER_NOT_FOUND,
            format!("{at}: no Pooler {pooler} in {namespace}"),
        ))),
        Err(ReadError::NotServed(_)) => Ok(Err(problem(
            POOLER_API_UNAVAILABLE,
            format!("{at}: the CloudNativePG Pooler API is not served"),
        ))),
        Err(ReadError::Forbidden(_)) => Ok(Err(problem(
            POOLER_API_UNAVAILABLE,
            format!("{at}: the operator may not read Poolers in {namespace}"),
        ))),
        Err(e) => Err(read::failure(&format!("Pooler {pooler}"), &e)),
    }
}

/// A Cluster the spec asks for that exists, with its endpoints (and the
/// field asking for each).
struct Wanted {
    namespace: String,
    cluster: Object,
    endpoints: Vec<(Endpoint, String)>,
}

fn endpoints_of(r: &ClusterRef, field: &str) -> Vec<(Endpoint, String)> {
    r.endpoints
        .iter()
        .enumerate()
        .map(|(j, e)| (e.clone(), format!("{field}.endpoints[{j}]")))
        .collect()
}

/// Resolves the offered set of the PgAdmin `pgadmin` of the namespace
/// `namespace`; Err is a read that failed (not known yet).
pub fn resolve(
    spec: &PgAdminSpec,
    namespace: &str,
    pgadmin: &str,
    facts: &dyn Facts,
) -> Result<Offered, String> {
    let mut offered = Offered {
        requested: spec.cluster_selector.is_some()
            || !spec.cluster_refs.is_empty()
            || !spec.cross_namespace_refs.is_empty(),
        ..Offered::default()
    };
    if !offered.requested {
        return Ok(offered);
    }
    let mut problems = Vec::new();
    let mut not_offered = Vec::new();
    let mut roles: BTreeMap<String, Roles> = BTreeMap::new();
    // The other namespaces that refuse their DatabaseRoles.
    let mut roles_refused: BTreeSet<String> = BTreeSet::new();
    match Roles::read(facts, namespace)? {
        RolesRead::Read(r) => {
            roles.insert(namespace.to_owned(), r);
        }
        RolesRead::Forbidden => {
            problems.push(problem(
                DATABASE_ROLE_API_UNAVAILABLE,
                format!(
                    "the operator may not read DatabaseRoles in {namespace}: each Cluster is offered as its owner only"
                ),
            ));
            roles.insert(namespace.to_owned(), Roles(None));
        }
    }
    // The Clusters offered, each with its endpoints (and the field that
    // asks for each), in order.
    let mut clusters: Vec<Wanted> = Vec::new();
    for (i, r) in spec.cluster_refs.iter().enumerate() {
        let field = format!("spec.clusterRefs[{i}]");
        match facts.get(&cluster_kind(), namespace, &r.name) {
            Ok(Some(cluster)) => clusters.push(Wanted {
                namespace: namespace.to_owned(),
                cluster,
                endpoints: endpoints_of(r, &field),
            }),
            Ok(None) => problems.push(problem(
                CLUSTER_NOT_FOUND,
                format!("Cluster {} ({field}) does not exist in {namespace}", r.name),
            )),
            Err(ReadError::NotServed(_)) => problems.push(problem(
                CLUSTER_NOT_FOUND,
                format!(
                    "Cluster {} ({field}): the CloudNativePG Cluster API is not served",
                    r.name
                ),
            )),
            Err(ReadError::Forbidden(_)) => problems.push(problem(
                CLUSTER_NOT_FOUND,
                format!(
                    "Cluster {} ({field}): the operator may not read Clusters in {namespace}",
                    r.name
                ),
            )),
            Err(e) => return Err(read::failure(&format!("Cluster {}", r.name), &e)),
        }
    }
    if let Some(selector) = &spec.cluster_selector {
        let shown = if selector.is_empty() {
            "{}".to_owned()
        } else {
            selector
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        match facts.list(&cluster_kind(), namespace, selector) {
            Ok(selected) if selected.is_empty() => problems.push(problem(
                NO_CLUSTER_SELECTED,
                format!("spec.clusterSelector {shown} matches no Cluster in {namespace}"),
            )),
            Ok(mut selected) => {
                selected.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
                for cluster in selected {
                    if clusters
                        .iter()
                        .all(|w| w.cluster.meta.name != cluster.meta.name)
                    {
                        clusters.push(Wanted {
                            namespace: namespace.to_owned(),
                            cluster,
                            endpoints: vec![(Endpoint::Rw, "spec.clusterSelector".into())],
                        });
                    }
                }
            }
            Err(ReadError::NotServed(_)) => problems.push(problem(
                NO_CLUSTER_SELECTED,
                format!(
                    "spec.clusterSelector {shown} selects no Cluster: the CloudNativePG Cluster API is not served"
                ),
            )),
            Err(ReadError::Forbidden(_)) => problems.push(problem(
                NO_CLUSTER_SELECTED,
                format!(
                    "spec.clusterSelector {shown} selects no Cluster: the operator may not read Clusters in {namespace}"
                ),
            )),
            Err(e) => return Err(read::failure(&format!("the Clusters of {namespace}"), &e)),
        }
    }
    // Clusters of other namespaces, each read with that namespace's answer
    // once a PgAdminAccess there grants it: a refused read is a NotOffered
    // row naming that namespace.
    let grantee = Grantee {
        namespace,
        name: pgadmin,
    };
    for (i, r) in spec.cross_namespace_refs.iter().enumerate() {
        let field = format!("spec.crossNamespaceClusterRefs[{i}]");
        let (ns, name) = (r.namespace.as_str(), r.cluster.name.as_str());
        let refused = |what: &str| NotOffered {
            namespace: ns.to_owned(),
            cluster: name.to_owned(),
            message: format!(
                "the operator may not read {what} in {ns}: Cluster {name} ({field}) is not offered"
            ),
        };
        match grants::check(facts, ns, grantee, name, &field)? {
            Grant::Granted(_) => {}
            Grant::Missing(message) => {
                problems.push(problem(GRANT_MISSING, message));
                continue;
            }
            Grant::Refused(message) => {
                not_offered.push(NotOffered {
                    namespace: ns.to_owned(),
                    cluster: name.to_owned(),
                    message,
                });
                continue;
            }
        }
        let cluster = match facts.get(&cluster_kind(), ns, name) {
            Ok(Some(cluster)) => cluster,
            Ok(None) => {
                problems.push(problem(
                    CLUSTER_NOT_FOUND,
                    format!("Cluster {name} ({field}) does not exist in {ns}"),
                ));
                continue;
            }
            Err(ReadError::NotServed(_)) => {
                problems.push(problem(
                    CLUSTER_NOT_FOUND,
                    format!(
                        "Cluster {name} ({field}): the CloudNativePG Cluster API is not served"
                    ),
                ));
                continue;
            }
            Err(ReadError::Forbidden(_)) => {
                not_offered.push(refused("Clusters"));
                continue;
            }
            Err(e) => return Err(read::failure(&format!("Cluster {name} of {ns}"), &e)),
        };
        if !roles.contains_key(ns) {
            let read = match Roles::read(facts, ns)? {
                RolesRead::Read(r) => r,
                RolesRead::Forbidden => {
                    roles_refused.insert(ns.to_owned());
                    Roles(None)
                }
            };
            roles.insert(ns.to_owned(), read);
        }
        if roles_refused.contains(ns) {
            not_offered.push(NotOffered {
                namespace: ns.to_owned(),
                cluster: name.to_owned(),
                message: format!(
                    "the operator may not read DatabaseRoles in {ns}: Cluster {name} ({field}) is offered as its owner only"
                ),
            });
        }
        clusters.push(Wanted {
            namespace: ns.to_owned(),
            cluster,
            endpoints: endpoints_of(&r.cluster, &field),
        });
    }
    let mut servers = Vec::new();
    for wanted in &clusters {
        let name = &wanted.cluster.meta.name;
        let ns = wanted.namespace.as_str();
        let spec = json(&wanted.cluster);
        for (endpoint, field) in &wanted.endpoints {
            let service = match service(facts, ns, name, endpoint, field)? {
                Ok(service) => service,
                Err(p) => {
                    problems.push(p);
                    continue;
                }
            };
            let usernames = roles.get(ns).map(|r| r.of(name, &spec)).unwrap_or_default();
            for username in usernames {
                servers.push(Server {
                    namespace: ns.to_owned(),
                    cluster: name.clone(),
                    endpoint: endpoint.clone(),
                    service: service.clone(),
                    database: initdb(&spec, "database"),
                    username,
                });
            }
        }
    }
    if servers.len() > MAX_SERVERS {
        let first_left_out = servers[MAX_SERVERS].name();
        let fields = if spec.cross_namespace_refs.is_empty() {
            "spec.clusterSelector and spec.clusterRefs"
        } else {
            "spec.clusterSelector, spec.clusterRefs and spec.crossNamespaceClusterRefs"
        };
        problems.push(problem(
            TOO_MANY_SERVERS,
            format!(
                "{fields} offer {} servers, more than the {MAX_SERVERS} pgAdmin is given: {first_left_out} and the {} after it are left out",
                servers.len(),
                servers.len() - MAX_SERVERS - 1
            ),
        ));
        servers.truncate(MAX_SERVERS);
    }
    offered.servers = servers;
    offered.problems = problems;
    offered.not_offered = not_offered;
    Ok(offered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;
    use reconciler_guest_sdk::Availability;
    use reconciler_guest_sdk::mock::MockFacts;

    fn cluster(name: &str, labels: Value) -> Value {
        json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "team-b", "uid": format!("u-{name}"), "labels": labels}})
    }

    fn resolve_spec(spec: Value, facts: &MockFacts) -> Offered {
        let spec = parse(&json!({ "spec": spec })).unwrap();
        resolve(&spec, "team-b", "orders", facts).unwrap()
    }

    #[test]
    fn named_and_selected_clusters_are_offered_once_each_as_their_login_roles() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), cluster("a", json!({"team": "b"})))
            .with_object(&cluster_kind(), cluster("b", json!({"team": "b"})))
            .with_object(
                &database_role_kind(),
                json!({"metadata": {"name": "a-alice", "namespace": "team-b", "uid": "r1"},
                "spec": {"cluster": {"name": "a"}, "name": "alice", "login": true}}),
            )
            .with_object(
                &database_role_kind(),
                json!({"metadata": {"name": "a-batch", "namespace": "team-b", "uid": "r2"},
                "spec": {"cluster": {"name": "a"}, "name": "batch"}}),
            );
        let o = resolve_spec(
            json!({"clusterSelector": {"matchLabels": {"team": "b"}},
                "clusterRefs": [{"name": "a", "endpoints": ["rw", "ro"]}]}),
            &facts,
        );
        let names: Vec<String> = o.servers.iter().map(Server::name).collect();
        assert_eq!(names, ["a rw as alice", "a ro as alice", "b rw as app"]);
        assert_eq!(o.servers[1].host(), "a-ro.team-b.svc");
        assert!(o.problems.is_empty());
    }

    #[test]
    fn missing_clusters_and_poolers_leave_the_rest_offered() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), cluster("a", json!({})))
            .with_object(
                &pooler_kind(),
                json!({"metadata": {"name": "other-rw", "namespace": "team-b", "uid": "p1"},
                "spec": {"cluster": {"name": "other"}}}),
            )
            .with_availability(&database_role_kind(), "team-b", Availability::NotServed);
        let o = resolve_spec(
            json!({"clusterRefs": [{"name": "gone"}, {"name": "a", "endpoints": ["rw", "pooler:other-rw", "pooler:none"]}]}),
            &facts,
        );
        assert_eq!(o.servers.len(), 1);
        let reasons: Vec<&str> = o.problems.iter().map(|p| p.reason).collect();
        assert_eq!(
            reasons,
            [CLUSTER_NOT_FOUND, POOLER_NOT_FOUND, POOLER_NOT_FOUND]
        );
        assert_eq!(
            o.problems[1].message,
            "spec.clusterRefs[1].endpoints[1] pooler:other-rw: Pooler other-rw of team-b serves Cluster other, not a"
        );
    }

    #[test]
    fn sixty_five_servers_offer_the_first_sixty_four() {
        let mut facts = MockFacts::at(0);
        for i in 0..65 {
            facts = facts.with_object(&cluster_kind(), cluster(&format!("c{i:02}"), json!({})));
        }
        let o = resolve_spec(json!({"clusterSelector": {}}), &facts);
        assert_eq!(o.servers.len(), MAX_SERVERS);
        assert_eq!(o.problems[0].reason, TOO_MANY_SERVERS);
        assert!(
            o.problems[0]
                .message
                .contains("c64 rw as app and the 0 after it"),
            "{:?}",
            o.problems
        );
    }

    fn in_ns(mut object: Value, namespace: &str) -> Value {
        object["metadata"]["namespace"] = json!(namespace);
        object
    }

    fn grant(namespace: &str, clusters: &[&str]) -> Value {
        let clusters: Vec<Value> = clusters.iter().map(|c| json!({"name": c})).collect();
        json!({"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdminAccess",
            "metadata": {"name": "to-team-b", "namespace": namespace, "uid": format!("g-{namespace}")},
            "spec": {"pgAdmins": [{"namespace": "team-b", "name": "orders"}], "clusters": clusters}})
    }

    #[test]
    fn a_granted_cluster_of_another_namespace_is_offered_after_the_others() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), cluster("a", json!({})))
            .with_object(&cluster_kind(), in_ns(cluster("c", json!({})), "team-c"))
            .with_object(&cluster_kind(), in_ns(cluster("d", json!({})), "team-c"))
            .with_object(&pgadmin_access_kind(), grant("team-c", &["c"]))
            .with_object(
                &database_role_kind(),
                json!({"metadata": {"name": "c-ana", "namespace": "team-c", "uid": "r1"},
                "spec": {"cluster": {"name": "c"}, "name": "ana", "login": true}}),
            );
        let o = resolve_spec(
            json!({"clusterRefs": [{"name": "a"}],
                "crossNamespaceClusterRefs": [{"namespace": "team-c", "name": "c", "endpoints": ["rw", "pooler:p"]},
                    {"namespace": "team-c", "name": "d"}]}),
            &facts,
        );
        let names: Vec<String> = o.servers.iter().map(Server::name).collect();
        assert_eq!(names, ["a rw as app", "c rw as ana"]);
        assert_eq!(o.servers[1].host(), "c-rw.team-c.svc");
        let problems: Vec<(&str, &str)> = o
            .problems
            .iter()
            .map(|p| (p.reason, p.message.as_str()))
            .collect();
        assert_eq!(
            problems,
            [
                (
                    GRANT_MISSING,
                    "no PgAdminAccess of team-c grants PgAdmin team-b/orders Cluster d (spec.crossNamespaceClusterRefs[1])"
                ),
                (
                    POOLER_NOT_FOUND,
                    "spec.crossNamespaceClusterRefs[0].endpoints[1] pooler:p: no Pooler p in team-c"
                ),
            ]
        );
    }

    #[test]
    fn a_namespace_refusing_a_read_is_a_not_offered_row_naming_it_and_no_other() {
        let facts = MockFacts::at(0)
            .with_object(&cluster_kind(), in_ns(cluster("c", json!({})), "team-c"))
            .with_object(&pgadmin_access_kind(), grant("team-c", &["c"]))
            .with_availability(&database_role_kind(), "team-c", Availability::Forbidden)
            .with_availability(&pooler_kind(), "team-c", Availability::Forbidden)
            .with_availability(&pgadmin_access_kind(), "team-d", Availability::Forbidden);
        let o = resolve_spec(
            json!({"crossNamespaceClusterRefs": [
                {"namespace": "team-c", "name": "c", "endpoints": ["rw", "pooler:p"]},
                {"namespace": "team-d", "name": "x"}]}),
            &facts,
        );
        // DatabaseRoles refused there: offered as its owner, and a row.
        let names: Vec<String> = o.servers.iter().map(Server::name).collect();
        assert_eq!(names, ["c rw as app"]);
        assert_eq!(
            o.rows()[1],
            json!({"namespace": "team-c", "cluster": "c", "state": "NotOffered",
                "message": "the operator may not read DatabaseRoles in team-c: Cluster c (spec.crossNamespaceClusterRefs[0]) is offered as its owner only"})
        );
        assert_eq!(
            o.rows()[2]["message"],
            "the operator may not read PgAdminAccesses in team-d: Cluster x (spec.crossNamespaceClusterRefs[1]) is not offered"
        );
        // Its pooler endpoints: a configuration problem naming it.
        assert_eq!(o.problems.len(), 1);
        assert_eq!(o.problems[0].reason, POOLER_API_UNAVAILABLE);
        assert_eq!(
            o.problems[0].message,
            "spec.crossNamespaceClusterRefs[0].endpoints[1] pooler:p: the operator may not read Poolers in team-c"
        );
        for text in [o.rows().to_string(), o.problems[0].message.clone()] {
            assert!(!text.contains("team-b"), "{text}");
        }
    }

    #[test]
    fn a_selector_matching_nothing_is_no_cluster_selected() {
        let o = resolve_spec(
            json!({"clusterSelector": {"matchLabels": {"team": "x"}}}),
            &MockFacts::at(0),
        );
        assert_eq!(o.problems[0].reason, NO_CLUSTER_SELECTED);
        assert_eq!(
            o.problems[0].message,
            "spec.clusterSelector team=x matches no Cluster in team-b"
        );
    }
}
