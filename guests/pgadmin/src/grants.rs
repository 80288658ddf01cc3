//! PgAdminAccess grants: whether a PgAdminAccess of a Cluster's namespace grants a PgAdmin of another namespace that Cluster.

use reconciler_guest_sdk::{Facts, ReadError, read};
use serde_json::Value;

use crate::registry::pgadmin_access_kind;

/// What the Cluster's namespace answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// A PgAdminAccess grants it (its name).
    Granted(String),
    /// None does: GrantMissing's message.
    Missing(String),
    /// The operator may not read PgAdminAccesses there: why the Cluster is
    /// not offered, naming that namespace.
    Refused(String),
}

/// The PgAdmin asking: its namespace and name.
#[derive(Clone, Copy, Debug)]
pub struct Grantee<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The strings of `list[*][key]`, with their index.
fn names<'a>(list: &'a Value, key: &'a str) -> impl Iterator<Item = (usize, &'a Value)> + 'a {
    list.as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(move |(i, entry)| (i, &entry[key]))
}

/// Whether a PgAdminAccess of `namespace` grants `grantee` the Cluster
/// `cluster` (asked for by `field`); Err is a read that failed.
pub fn check(
    facts: &dyn Facts,
    namespace: &str,
    grantee: Grantee<'_>,
    cluster: &str,
    field: &str,
) -> Result<Grant, String> {
    let accesses = match facts.list(&pgadmin_access_kind(), namespace, &[]) {
        Ok(accesses) => accesses,
        Err(ReadError::NotServed(_)) => {
            return Ok(Grant::Missing(format!(
                "Cluster {cluster} of {namespace} ({field}): PgAdminAccess is not served by this cluster (deploy/pgadminaccess-crd.yaml installs it), so nothing grants it"
            )));
        }
        Err(ReadError::Forbidden(_)) => {
            return Ok(Grant::Refused(format!(
                "the operator may not read PgAdminAccesses in {namespace}: Cluster {cluster} ({field}) is not offered"
            )));
        }
        Err(e) => {
            return Err(read::failure(
                &format!("the PgAdminAccesses of {namespace}"),
                &e,
            ));
        }
    };
    // Grants of this Cluster to another PgAdmin of the grantee's
    // namespace: most likely a misspelt name, said in the message.
    let mut elsewhere = Vec::new();
    for access in &accesses {
        let json: Value = serde_json::from_str(&access.json).unwrap_or_default();
        let spec = &json["spec"];
        if !names(&spec["clusters"], "name").any(|(_, c)| c == cluster) {
            continue;
        }
        for (i, pgadmin) in spec["pgAdmins"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if pgadmin["namespace"] != grantee.namespace {
                continue;
            }
            match pgadmin["name"].as_str() {
                Some(name) if name == grantee.name => {
                    return Ok(Grant::Granted(access.meta.name.clone()));
                }
                Some(name) => elsewhere.push(format!(
                    "PgAdminAccess {} grants it to {}/{name} (spec.pgAdmins[{i}]), not to {}",
                    access.meta.name, grantee.namespace, grantee.name
                )),
                None => {}
            }
        }
    }
    let mut message = format!(
        "no PgAdminAccess of {namespace} grants PgAdmin {}/{} Cluster {cluster} ({field})",
        grantee.namespace, grantee.name
    );
    for hint in elsewhere {
        message.push_str(": ");
        message.push_str(&hint);
    }
    Ok(Grant::Missing(message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::Availability;
    use reconciler_guest_sdk::mock::MockFacts;
    use serde_json::json;

    const ORDERS: Grantee<'static> = Grantee {
        namespace: "team-a",
        name: "orders",
    };

    fn access(name: &str, pgadmins: Value, clusters: Value) -> Value {
        json!({"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdminAccess",
            "metadata": {"name": name, "namespace": "team-b", "uid": format!("u-{name}")},
            "spec": {"pgAdmins": pgadmins, "clusters": clusters}})
    }

    fn check_b(facts: &MockFacts, cluster: &str) -> Grant {
        check(
            facts,
            "team-b",
            ORDERS,
            cluster,
            "spec.crossNamespaceClusterRefs[0]",
        )
        .unwrap()
    }

    #[test]
    fn a_grant_names_the_pgadmin_by_namespace_and_name_and_the_cluster() {
        let facts = MockFacts::at(0).with_object(
            &pgadmin_access_kind(),
            access(
                "to-team-a",
                json!([{"namespace": "team-a", "name": "orders"}]),
                json!([{"name": "orders-db"}]),
            ),
        );
        assert_eq!(
            check_b(&facts, "orders-db"),
            Grant::Granted("to-team-a".into())
        );
        assert_eq!(
            check_b(&facts, "billing-db"),
            Grant::Missing(
                "no PgAdminAccess of team-b grants PgAdmin team-a/orders Cluster billing-db (spec.crossNamespaceClusterRefs[0])".into()
            )
        );
    }

    #[test]
    fn a_grant_to_another_pgadmin_of_the_namespace_is_named_in_the_message() {
        let facts = MockFacts::at(0).with_object(
            &pgadmin_access_kind(),
            access(
                "to-team-a",
                json!([{"namespace": "team-c", "name": "orders"}, {"namespace": "team-a", "name": "order"}]),
                json!([{"name": "orders-db"}]),
            ),
        );
        assert_eq!(
            check_b(&facts, "orders-db"),
            Grant::Missing(
                "no PgAdminAccess of team-b grants PgAdmin team-a/orders Cluster orders-db (spec.crossNamespaceClusterRefs[0]): PgAdminAccess to-team-a grants it to team-a/order (spec.pgAdmins[1]), not to orders".into()
            )
        );
    }

    #[test]
    fn a_refused_namespace_is_named_and_no_other() {
        let facts = MockFacts::at(0).with_availability(
            &pgadmin_access_kind(),
            "team-b",
            Availability::Forbidden,
        );
        let Grant::Refused(message) = check_b(&facts, "orders-db") else {
            panic!("refused")
        };
        assert_eq!(
            message,
            "the operator may not read PgAdminAccesses in team-b: Cluster orders-db (spec.crossNamespaceClusterRefs[0]) is not offered"
        );
        assert!(!message.contains("team-a"));
    }
}
