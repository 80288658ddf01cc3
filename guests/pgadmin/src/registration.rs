//! ServersSynced: the registration of the offered set in pgAdmin by a Job that runs `setup.py load-servers` on the servers JSON of a ConfigMap, its Events RegistrationStarted and ServersRegistered, and `status.registration`.

use reconciler_guest_sdk::verdict::{RECONCILING, fails, ok, unknown};
use reconciler_guest_sdk::{
    Change, Condition, DeleteObject, EventType, Facts, JobFact, JobState, PodFact, VerdictBuilder,
    read,
};
use serde_json::{Value, json};

use crate::configdb::Connection;
use crate::configuration::plural;
use crate::registry::*;
use crate::render::{DATA_DIR, apply, child_name, head, labels};
use crate::servers::{Offered, POSTGRES_PORT};

/// The setting naming the pgAdmin user the servers are loaded for (shared
/// with every user of a server-mode pgAdmin).
pub const REGISTRATION_USER: &str = "registrationUser";
/// The user when the setting is not set.
pub const DEFAULT_REGISTRATION_USER: &str = "pgadmin@pgtoolbox.fyannk.dev";
/// The key of the servers JSON in the ConfigMap.
pub const SERVERS_KEY: &str = "servers.json";
/// The `status` field recording the registration.
pub const STATUS_FIELD: &str = "registration";
/// `app.kubernetes.io/component` of the registration's ConfigMap and Jobs.
pub const COMPONENT: &str = "registration";
/// Retries of a registration Job's Pod before the Job fails.
pub const BACKOFF_LIMIT: u32 = 2;
/// A Job name is a label value: at most 63 characters.
const MAX_JOB_NAME: usize = 63;

/// The ConfigMap holding the servers JSON: `<name>-pgadmin-servers`.
pub fn config_map_name(pgadmin: &str) -> String {
    format!("{}-servers", child_name(pgadmin))
}

/// The servers JSON `setup.py load-servers` reads: one shared server per
/// offered server, grouped by namespace, numbered from 1.
pub fn servers_json(offered: &Offered) -> String {
    let servers: serde_json::Map<String, Value> = offered
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                (i + 1).to_string(),
                json!({"Name": s.name(), "Group": s.namespace, "Host": s.host(),
                    "Port": POSTGRES_PORT, "MaintenanceDB": s.database, "Username": s.username,
                    "SSLMode": "require", "Shared": true}),
            )
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "Servers": servers })).unwrap_or_default()
}

/// FNV-1a (64 bits): a short, stable digest for the Job's name.
pub fn digest(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:010x}", hash >> 24)
}

fn component_labels(pgadmin: &str) -> Value {
    let mut l = labels(pgadmin);
    l["app.kubernetes.io/component"] = json!(COMPONENT);
    l
}

/// The registration of one offered set by one image.
#[derive(Clone, Debug)]
pub struct Registration {
    pub job_name: String,
    pub servers: usize,
    config_map: Value,
    job: Value,
}

impl Registration {
    /// Renders the ConfigMap and the Job. The Job's name carries a digest
    /// of the servers JSON and of its own template: a new offered set (or
    /// image, or user) is a new Job, since a Job's template cannot change.
    pub fn render(
        pgadmin: &str,
        image: &str,
        user: &str,
        offered: &Offered,
        database: Option<&Connection>,
    ) -> Registration {
        let servers = servers_json(offered);
        let config = config_map_name(pgadmin);
        let mut config_map = head("v1", "ConfigMap", pgadmin);
        config_map["metadata"]["name"] = json!(config);
        config_map["metadata"]["labels"] = component_labels(pgadmin);
        config_map["data"] = json!({ SERVERS_KEY: servers });
        let pod_labels = json!({"app.kubernetes.io/name": "pgadmin-registration",
            "app.kubernetes.io/instance": pgadmin});
        let load = format!(
            "/venv/bin/python3 /pgadmin4/setup.py load-servers /servers/{SERVERS_KEY} --replace --user {user}"
        );
        let mut container = json!({
            "name": "load-servers",
            "image": image,
            "volumeMounts": [
                {"name": "data", "mountPath": DATA_DIR},
                {"name": "servers", "mountPath": "/servers", "readOnly": true},
            ],
        });
        let mut pod = json!({
            "restartPolicy": "Never",
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": child_name(pgadmin)}},
                {"name": "servers", "configMap": {"name": config}},
            ],
        });
        match database {
            // The settings are in PostgreSQL: pgAdmin's config reads the
            // URI as its entrypoint would have written it.
            Some(c) => {
                container["env"] = json!(c.env());
                container["command"] = json!([
                    "/bin/sh",
                    "-c",
                    format!(
                        "printf 'CONFIG_DATABASE_URI = %s\\n' \"$PGADMIN_CONFIG_CONFIG_DATABASE_URI\" >> /pgadmin4/config_distro.py && exec {load}"
                    )
                ]);
            }
            // The settings SQLite is on the ReadWriteOnce data claim: on
            // pgAdmin's node.
            None => {
                container["command"] = json!([
                    "/venv/bin/python3",
                    "/pgadmin4/setup.py",
                    "load-servers",
                    format!("/servers/{SERVERS_KEY}"),
                    "--replace",
                    "--user",
                    user,
                    "--sqlite-path",
                    format!("{DATA_DIR}/pgadmin4.db")
                ]);
                pod["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": labels(pgadmin)},
                    "topologyKey": "kubernetes.io/hostname"}]}});
            }
        }
        pod["containers"] = json!([container]);
        let spec = json!({
            "backoffLimit": BACKOFF_LIMIT,
            "template": {"metadata": {"labels": pod_labels}, "spec": pod},
        });
        let hash = digest(&format!("{servers}\n{spec}"));
        let suffix = format!("-servers-{hash}");
        let prefix = child_name(pgadmin);
        let keep = MAX_JOB_NAME.saturating_sub(suffix.len()).min(prefix.len());
        let job_name = format!("{}{suffix}", prefix[..keep].trim_end_matches('-'));
        let mut job = head("batch/v1", "Job", pgadmin);
        job["metadata"]["name"] = json!(job_name);
        job["metadata"]["labels"] = component_labels(pgadmin);
        job["spec"] = spec;
        Registration {
            job_name,
            servers: offered.servers.len(),
            config_map,
            job,
        }
    }
}

/// Whether the PgAdmin registers servers: the spec asks for them, or a
/// registration ran before (the offered set may now be empty: its servers
/// are removed).
pub fn wanted(offered: &Offered, status: &Value) -> bool {
    offered.requested || !status[STATUS_FIELD].is_null()
}

/// What ServersSynced decided, with the changes it asks for.
pub struct Synced {
    pub condition: Condition,
    pub changes: Vec<Change>,
    pub retry: bool,
}

fn servers(n: usize) -> String {
    plural(n, "server")
}

/// The failure of a Job, as its fact says.
fn failure(job: &JobFact, state: &str) -> String {
    let mut text = format!("registration Job {} failed: {state}", job.meta.name);
    if let Some(pod) = &job.failed_pod {
        text.push_str(&format!("; Pod {}: {}", pod.pod, pod.reason));
        if let Some(container) = &pod.container {
            text.push_str(&format!(" (container {container}"));
            if let Some(code) = pod.exit_code {
                text.push_str(&format!(", exit code {code}"));
            }
            text.push(')');
        }
        if !pod.message.is_empty() {
            text.push_str(&format!(": {}", pod.message));
        }
    }
    text.push_str(&format!("; delete Job {} to run it again", job.meta.name));
    text
}

/// Decides ServersSynced for `registration`, emitting RegistrationStarted
/// when it asks for the Job and ServersRegistered when the Job succeeded,
/// each once (`status.registration` records the Jobs they were for), and
/// deletes the PgAdmin's registration Jobs of other offered sets.
pub fn sync(
    v: &mut VerdictBuilder,
    facts: &dyn Facts,
    namespace: &str,
    registration: &Registration,
    pods: &[PodFact],
    status: &Value,
) -> Synced {
    let name = &registration.job_name;
    let previous = &status[STATUS_FIELD];
    let mut record = json!({"job": name, "servers": registration.servers});
    if let Some(registered) = previous["registered"].as_str() {
        record["registered"] = json!(registered);
    }
    let mut changes = vec![apply(config_map_kind(), registration.config_map.clone())];
    changes.extend(stale_jobs(facts, name));
    let job = match facts.job(namespace, name) {
        Ok(job) => job,
        Err(e) => {
            return Synced {
                condition: unknown(
                    SERVERS_SYNCED,
                    RECONCILING,
                    read::failure(&format!("Job {name}"), &e),
                ),
                changes,
                retry: true,
            };
        }
    };
    let condition = match job {
        None if !pods.iter().any(|p| p.ready && p.meta.deletion.is_none()) => {
            record = previous.clone();
            unknown(
                SERVERS_SYNCED,
                PGADMIN_NOT_RUNNING,
                format!(
                    "pgAdmin has no Ready Pod yet: the registration of {} waits",
                    servers(registration.servers)
                ),
            )
        }
        None => {
            changes.push(apply(job_kind(), registration.job.clone()));
            if previous["job"].as_str() != Some(name) {
                v.event(
                    EventType::Normal,
                    REGISTRATION_STARTED,
                    format!(
                        "registration Job {name} started for {}",
                        servers(registration.servers)
                    ),
                );
            }
            unknown(
                SERVERS_SYNCED,
                REGISTRATION_RUNNING,
                format!(
                    "registration Job {name} started for {}",
                    servers(registration.servers)
                ),
            )
        }
        Some(job) => match &job.state {
            JobState::Failed(state) => {
                fails(SERVERS_SYNCED, REGISTRATION_FAILED, failure(&job, state))
            }
            JobState::Succeeded => {
                if previous["registered"].as_str() != Some(name) {
                    v.event(
                        EventType::Normal,
                        SERVERS_REGISTERED,
                        format!(
                            "registration Job {name} registered {}",
                            servers(registration.servers)
                        ),
                    );
                }
                record["registered"] = json!(name);
                ok(
                    SERVERS_SYNCED,
                    format!("{} registered by Job {name}", servers(registration.servers)),
                )
            }
            JobState::Suspended => unknown(
                SERVERS_SYNCED,
                REGISTRATION_RUNNING,
                format!("registration Job {name} is suspended"),
            ),
            JobState::Running => unknown(
                SERVERS_SYNCED,
                REGISTRATION_RUNNING,
                format!(
                    "registration Job {name} runs for {} ({} Pod active, {} failed)",
                    servers(registration.servers),
                    job.active,
                    job.failed
                ),
            ),
        },
    };
    v.field(STATUS_FIELD, record);
    Synced {
        condition,
        changes,
        retry: false,
    }
}

/// The PgAdmin's registration Jobs other than `current`, deleted by the UID
/// seen: each was for an offered set that is no longer current.
fn stale_jobs(facts: &dyn Facts, current: &str) -> Vec<Change> {
    facts
        .children(&job_kind())
        .unwrap_or_default()
        .into_iter()
        .filter(|j| j.meta.name != current && j.meta.deletion.is_none())
        .filter(|j| {
            j.meta
                .labels
                .iter()
                .any(|(k, v)| k == "app.kubernetes.io/component" && v == COMPONENT)
        })
        .map(|j| {
            Change::Delete(DeleteObject {
                kind: job_kind(),
                name: j.meta.name,
                uid: j.meta.uid,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::Server;
    use crate::spec::Endpoint;

    fn offered(n: usize) -> Offered {
        Offered {
            requested: true,
            servers: (0..n)
                .map(|i| Server {
                    namespace: "team-b".into(),
                    cluster: format!("c{i}"),
                    endpoint: Endpoint::Rw,
                    service: format!("c{i}-rw"),
                    database: "app".into(),
                    username: "app".into(),
                })
                .collect(),
            ..Offered::default()
        }
    }

    #[test]
    fn a_new_offered_set_or_image_is_a_new_job_within_63_characters() {
        let a = Registration::render("orders", "i:1", "u", &offered(1), None);
        let b = Registration::render("orders", "i:1", "u", &offered(2), None);
        let c = Registration::render("orders", "i:2", "u", &offered(1), None);
        assert_ne!(a.job_name, b.job_name);
        assert_ne!(a.job_name, c.job_name);
        assert!(a.job_name.starts_with("orders-pgadmin-servers-"));
        let long = Registration::render(&"x".repeat(80), "i", "u", &offered(1), None);
        assert!(long.job_name.len() <= 63, "{}", long.job_name);
    }

    #[test]
    fn the_servers_json_is_shared_and_numbered() {
        let json: Value = serde_json::from_str(&servers_json(&offered(2))).unwrap();
        assert_eq!(json["Servers"]["2"]["Host"], "c1-rw.team-b.svc");
        assert_eq!(json["Servers"]["1"]["Shared"], true);
    }
}
