//! `spec.configDatabase`: pgAdmin's settings in PostgreSQL, a CloudNativePG Database and DatabaseRole (with a generated password) the PgAdmin applies, checked once the hostname is fixed.

use reconciler_guest_sdk::configuration::{NotValid, owned, stalled};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{ApplyOutcome, Change, Facts, KindRef, ReadError, read};
use serde_json::{Value, json};

use crate::registry::*;
use crate::render::{apply, child_name, head};
use crate::servers::POSTGRES_PORT;

/// The environment variable holding the generated password in pgAdmin's
/// containers (not `PGADMIN_CONFIG_*`: pgAdmin would read it as Python).
pub const PASSWORD_ENV: &str = "CONFIG_DATABASE_PASSWORD";
/// The key of the generated password in its Secret.
pub const PASSWORD_KEY: &str = "password";

/// Where pgAdmin keeps its settings, once CloudNativePG has made them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    pub role: String,
    pub database: String,
    /// The Cluster's rw Service, fully qualified.
    pub host: String,
    /// The Secret CloudNativePG generated the password into.
    pub secret: String,
}

impl Connection {
    /// pgAdmin's `CONFIG_DATABASE_URI`, as a Python string, the password
    /// expanded by Kubernetes from [`PASSWORD_ENV`].
    pub fn uri(&self) -> String {
        format!(
            "'postgresql://{}:$({PASSWORD_ENV})@{}:{POSTGRES_PORT}/{}?sslmode=require'",
            self.role, self.host, self.database
        )
    }

    /// The container environment that points pgAdmin at it.
    pub fn env(&self) -> Vec<Value> {
        vec![
            json!({"name": PASSWORD_ENV,
                "valueFrom": {"secretKeyRef": {"name": self.secret, "key": PASSWORD_KEY}}}),
            json!({"name": "PGADMIN_CONFIG_CONFIG_DATABASE_URI", "value": self.uri()}),
        ]
    }
}

/// What the configDatabase asks for and where it stands.
#[derive(Clone, Debug)]
pub struct ConfigDatabase {
    /// The DatabaseRole and the Database, applied every pass.
    pub changes: Vec<Change>,
    /// Ready, or ConfigDatabaseNotReady's message.
    pub state: Result<Connection, String>,
}

/// The PostgreSQL name of the PgAdmin's role and database:
/// `pgadmin_<name>`, dashes and dots as underscores.
pub fn sql_name(pgadmin: &str) -> String {
    format!("pgadmin_{}", pgadmin.replace(['-', '.'], "_"))
}

fn json_of(object: &reconciler_guest_sdk::Object) -> Value {
    serde_json::from_str(&object.json).unwrap_or_default()
}

/// Reads `kind` `name`: an API not served or refused stalls on `reason`.
fn read_own(
    facts: &dyn Facts,
    pgadmin: &Parent,
    kind: &KindRef,
    name: &str,
    reason: &'static str,
    needs: &str,
) -> Result<Option<Value>, NotValid> {
    let ns = pgadmin.namespace;
    match facts.get(kind, ns, name) {
        Ok(object) => {
            owned(
                pgadmin,
                &kind.kind,
                name,
                Ok(object.as_ref().map(|o| o.meta.clone())),
            )?;
            Ok(object.as_ref().map(json_of))
        }
        Err(ReadError::NotServed(_)) => Err(stalled(
            reason,
            format!(
                "spec.configDatabase needs the CloudNativePG {} API ({needs}), which this cluster does not serve",
                kind.kind
            ),
        )),
        Err(ReadError::Forbidden(_)) => Err(stalled(
            reason,
            format!(
                "spec.configDatabase needs the CloudNativePG {} API, which the operator may not read in {ns}",
                kind.kind
            ),
        )),
        Err(e) => Err(NotValid::Unread(read::failure(
            &format!("{} {name}", kind.kind),
            &e,
        ))),
    }
}

/// The DatabaseRole of the PgAdmin's settings, its password generated.
/// Asked for in a PasswordGenerationUnavailable stall too: applied again
/// once CloudNativePG's CRD knows `spec.password`, it keeps it.
pub fn role_change(pgadmin: &str, cluster: &str) -> Change {
    let mut body = head("postgresql.cnpg.io/v1", "DatabaseRole", pgadmin);
    body["spec"] = json!({"cluster": {"name": cluster}, "name": sql_name(pgadmin),
        "ensure": "present", "login": true, "password": {"generate": true}});
    apply(database_role_kind(), body)
}

/// Checks `spec.configDatabase.clusterRef.name` (`cluster`) and decides
/// what it asks for.
pub fn evaluate(
    pgadmin: &Parent,
    cluster: &str,
    facts: &dyn Facts,
) -> Result<ConfigDatabase, NotValid> {
    let ns = pgadmin.namespace;
    match facts.get(&cluster_kind(), ns, cluster) {
        Ok(Some(_)) => {}
        Ok(None) | Err(ReadError::NotServed(_) | ReadError::Forbidden(_)) => {
            return Err(stalled(
                CONFIGURATION_INVALID,
                format!(
                    "spec.configDatabase.clusterRef.name names Cluster {cluster}, which the operator cannot find in {ns}: pgAdmin has no settings database"
                ),
            ));
        }
        Err(e) => {
            return Err(NotValid::Unread(read::failure(
                &format!("Cluster {cluster}"),
                &e,
            )));
        }
    }
    let name = child_name(pgadmin.name);
    let sql = sql_name(pgadmin.name);
    let role = read_own(
        facts,
        pgadmin,
        &database_role_kind(),
        &name,
        DATABASE_ROLE_API_UNAVAILABLE,
        "CloudNativePG 1.30 and later",
    )?;
    let database = read_own(
        facts,
        pgadmin,
        &database_kind(),
        &name,
        DATABASE_API_UNAVAILABLE,
        "CloudNativePG 1.25 and later",
    )?;
    let mut database_body = head("postgresql.cnpg.io/v1", "Database", pgadmin.name);
    database_body["spec"] = json!({"cluster": {"name": cluster}, "name": sql, "owner": sql,
        "ensure": "present"});
    let changes = vec![
        role_change(pgadmin.name, cluster),
        apply(database_kind(), database_body),
    ];
    // The API server prunes what a CRD does not know: a DatabaseRole the
    // host applied that comes back without spec.password was stored by a
    // CloudNativePG that cannot generate it.
    if let Some(role) = &role {
        let applied = matches!(
            facts.last_apply(&database_role_kind(), ns, &name),
            Some(ApplyOutcome::Applied)
        );
        if applied && role["spec"]["password"]["generate"] != json!(true) {
            return Err(NotValid::Stalled {
                reason: PASSWORD_GENERATION_UNAVAILABLE,
                message: format!(
                    "DatabaseRole {name} was stored without spec.password: spec.configDatabase needs CloudNativePG to generate the role's password (DatabaseRole spec.password, 1.31 and later)"
                ),
            });
        }
    }
    let waiting = |what: &str| {
        format!("CloudNativePG has not applied {what} yet: pgAdmin has no Pod until it has")
    };
    let state = match (&role, &database) {
        (None, _) | (_, None) => Err(waiting(&format!(
            "DatabaseRole {name} and Database {name} in Cluster {cluster}"
        ))),
        (Some(r), _) if r["status"]["applied"] != json!(true) => {
            Err(waiting(&format!("DatabaseRole {name} (role {sql})")))
        }
        (Some(r), _) if r["status"]["passwordSecret"]["name"].as_str().is_none() => Err(waiting(
            &format!("the generated password of DatabaseRole {name}"),
        )),
        (_, Some(d)) if d["status"]["applied"] != json!(true) => {
            Err(waiting(&format!("Database {name} (database {sql})")))
        }
        (Some(r), Some(_)) => Ok(Connection {
            role: sql.clone(),
            database: sql.clone(),
            host: format!("{cluster}-rw.{ns}.svc"),
            secret: r["status"]["passwordSecret"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        }),
    };
    Ok(ConfigDatabase { changes, state })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_guest_sdk::mock::{MockFacts, meta};

    fn facts() -> MockFacts {
        MockFacts::at(0).with_object(
            &cluster_kind(),
            json!({"metadata": {"name": "db", "namespace": "ns", "uid": "c"}}),
        )
    }

    fn owner() -> Value {
        json!([{"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAdmin", "name": "a",
            "uid": "p", "controller": true}])
    }

    #[test]
    fn not_ready_until_cloudnativepg_applied_both_and_generated_the_password() {
        let m = meta("ns", "a");
        let mut m = m;
        m.uid = "p".into();
        let parent = Parent::of(KIND, &m);
        let c = evaluate(&parent, "db", &facts()).unwrap();
        assert_eq!(c.changes.len(), 2);
        assert!(
            c.state
                .unwrap_err()
                .contains("has not applied DatabaseRole a-pgadmin")
        );
        let f = facts()
            .with_object(&database_role_kind(), json!({"metadata": {"name": "a-pgadmin", "namespace": "ns", "uid": "r", "ownerReferences": owner()},
                "spec": {"password": {"generate": true}}, "status": {"applied": true, "passwordSecret": {"name": "a-pgadmin-password"}}}))
            .with_object(&database_kind(), json!({"metadata": {"name": "a-pgadmin", "namespace": "ns", "uid": "d", "ownerReferences": owner()},
                "status": {"applied": true}}));
        let c = evaluate(&parent, "db", &f).unwrap();
        let conn = c.state.unwrap();
        assert_eq!(
            conn.uri(),
            "'postgresql://pgadmin_a:$(CONFIG_DATABASE_PASSWORD)@db-rw.ns.svc:5432/pgadmin_a?sslmode=require'"
        );
    }
}
