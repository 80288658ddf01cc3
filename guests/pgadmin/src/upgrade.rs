//! The upgrade backup: a changed image runs a backup Job of the settings database, with the old image, before the Deployment changes; the skip annotation naming the target image releases it without one.

use reconciler_guest_sdk::verdict::fails;
use reconciler_guest_sdk::{
    Change, Condition, DeleteObject, EventType, Facts, JobFact, JobState, VerdictBuilder, read,
};
use serde_json::{Value, json};

use crate::configdb::Connection;
use crate::registration::digest;
use crate::registry::*;
use crate::render::{DATA_DIR, apply, child_name, head, labels};

/// The annotation that releases an upgrade to the image it names with no
/// backup.
pub const SKIP_ANNOTATION: &str = "pgtoolbox.fyannk.dev/skip-upgrade-backup";
/// `app.kubernetes.io/component` of the backup Jobs.
pub const COMPONENT: &str = "upgrade-backup";
/// The `status` field recording the last backup that completed.
pub const STATUS_FIELD: &str = "upgradeBackup";
/// Where the backups are kept, on the data claim.
pub const BACKUP_DIR: &str = "/var/lib/pgadmin/backups";

/// What the pass does about the image.
pub enum Upgrade {
    /// Run `image` (no change, or released).
    Run { image: String, changes: Vec<Change> },
    /// Keep `image` running: the backup runs (WorkloadReady False, quiet).
    Hold {
        image: String,
        condition: Condition,
        changes: Vec<Change>,
    },
    /// The backup failed: a stall, the old image keeps running.
    Failed { message: String },
    /// The Job could not be read.
    Unread(String),
}

/// The image the Deployment `name` runs now, if it exists.
pub fn running_image(
    facts: &dyn Facts,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, String> {
    match facts.get(&deployment_kind(), namespace, name) {
        Ok(Some(d)) => {
            let json: Value = serde_json::from_str(&d.json).unwrap_or_default();
            Ok(json["spec"]["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["name"] == "pgadmin")
                .and_then(|c| c["image"].as_str())
                .map(str::to_owned))
        }
        Ok(None) => Ok(None),
        Err(e) => Err(read::failure(&format!("Deployment {name}"), &e)),
    }
}

fn backup_job(pgadmin: &str, from: &str, to: &str, database: Option<&Connection>) -> Value {
    let key = digest(&format!("{from}\n{to}"));
    let name = format!("{}-backup-{key}", child_name(pgadmin));
    let mut l = labels(pgadmin);
    l["app.kubernetes.io/component"] = json!(COMPONENT);
    let (script, env, affinity) = match database {
        // pg_dump of the settings database, by the newest pg_dump of the image.
        Some(c) => (
            format!(
                "mkdir -p {BACKUP_DIR} && \"$(ls -d /usr/local/pgsql-* | sort -V | tail -1)/pg_dump\" -Fc -f {BACKUP_DIR}/pgadmin-{key}.dump \"postgresql://{}:${PASSWORD}@{}:5432/{}?sslmode=require\"",
                c.role,
                c.host,
                c.database,
                PASSWORD = crate::configdb::PASSWORD_ENV
            ),
            vec![c.env()[0].clone()],
            Value::Null,
        ),
        // SQLite's online backup of pgAdmin's settings, on pgAdmin's node.
        None => (
            format!(
                "mkdir -p {BACKUP_DIR} && /venv/bin/python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' {DATA_DIR}/pgadmin4.db {BACKUP_DIR}/pgadmin4-{key}.db"
            ),
            Vec::new(),
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": labels(pgadmin)},
                "topologyKey": "kubernetes.io/hostname"}]}}),
        ),
    };
    let mut container = json!({"name": "backup", "image": from, "command": ["/bin/sh", "-c", script],
        "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}]});
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    let mut pod = json!({"restartPolicy": "Never", "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": child_name(pgadmin)}}]});
    if !affinity.is_null() {
        pod["affinity"] = affinity;
    }
    let mut job = head("batch/v1", "Job", pgadmin);
    job["metadata"]["name"] = json!(name);
    job["metadata"]["labels"] = l;
    job["spec"] = json!({"backoffLimit": 2, "template": {"metadata": {"labels": {
        "app.kubernetes.io/name": "pgadmin-backup", "app.kubernetes.io/instance": pgadmin}},
        "spec": pod}});
    job
}

fn job_failure(job: &JobFact, state: &str) -> String {
    let mut text = format!("backup Job {} failed: {state}", job.meta.name);
    if let Some(pod) = &job.failed_pod {
        text.push_str(&format!("; Pod {}: {}", pod.pod, pod.reason));
        if let Some(code) = pod.exit_code {
            text.push_str(&format!(" (exit code {code})"));
        }
        if !pod.message.is_empty() {
            text.push_str(&format!(": {}", pod.message));
        }
    }
    text
}

/// Decides the image to run. `target` is the image the spec asks for.
#[allow(clippy::too_many_arguments)]
pub fn decide(
    v: &mut VerdictBuilder,
    facts: &dyn Facts,
    pgadmin: &str,
    namespace: &str,
    annotations: &[(String, String)],
    target: &str,
    running: Option<&str>,
    database: Option<&Connection>,
    status: &Value,
) -> Upgrade {
    let skip = annotations
        .iter()
        .find(|(k, _)| k == SKIP_ANNOTATION)
        .map(|(_, v)| v.as_str());
    let from = match running {
        Some(from) if from != target => from,
        // Nothing to upgrade: the backup Jobs of earlier upgrades go.
        _ => {
            return Upgrade::Run {
                image: target.to_owned(),
                changes: stale(facts, None),
            };
        }
    };
    if skip == Some(target) {
        v.event(
            EventType::Warning,
            UPGRADE_BACKUP_SKIPPED,
            format!(
                "the annotation {SKIP_ANNOTATION} names {target}: {from} is replaced by it with no backup of the settings database"
            ),
        );
        return Upgrade::Run {
            image: target.to_owned(),
            changes: stale(facts, None),
        };
    }
    let body = backup_job(pgadmin, from, target, database);
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut changes = stale(facts, Some(&name));
    let ignored = match skip {
        Some(other) => format!(
            "; the annotation {SKIP_ANNOTATION} names {other}, not the target image {target}: it does not release this upgrade"
        ),
        None => String::new(),
    };
    let hold = |message: String, changes: Vec<Change>| Upgrade::Hold {
        image: from.to_owned(),
        condition: fails(WORKLOAD_READY, UPGRADE_BACKUP_RUNNING, message),
        changes,
    };
    match facts.job(namespace, &name) {
        Err(e) => Upgrade::Unread(read::failure(&format!("Job {name}"), &e)),
        Ok(None) => {
            changes.push(apply(job_kind(), body));
            hold(
                format!(
                    "backup Job {name} of the settings database started: {from} keeps running until it completes, then {target} replaces it{ignored}"
                ),
                changes,
            )
        }
        Ok(Some(job)) => match &job.state {
            JobState::Failed(state) => Upgrade::Failed {
                message: format!(
                    "{}: {from} keeps running; delete Job {name} to try again, or annotate the PgAdmin {SKIP_ANNOTATION}={target} to upgrade with no backup{ignored}",
                    job_failure(&job, state)
                ),
            },
            JobState::Succeeded => {
                if status[STATUS_FIELD]["job"].as_str() != Some(&name) {
                    v.event(
                        EventType::Normal,
                        UPGRADE_BACKUP_COMPLETED,
                        format!("backup Job {name} saved the settings database of {from}; {target} replaces it"),
                    );
                }
                v.field(
                    STATUS_FIELD,
                    json!({"job": name, "from": from, "to": target}),
                );
                Upgrade::Run {
                    image: target.to_owned(),
                    changes,
                }
            }
            JobState::Running | JobState::Suspended => hold(
                format!(
                    "backup Job {name} of the settings database runs: {from} keeps running until it completes, then {target} replaces it{ignored}"
                ),
                changes,
            ),
        },
    }
}

/// The PgAdmin's backup Jobs but `keep`, deleted by the UID seen.
fn stale(facts: &dyn Facts, keep: Option<&str>) -> Vec<Change> {
    facts
        .children(&job_kind())
        .unwrap_or_default()
        .into_iter()
        .filter(|j| Some(j.meta.name.as_str()) != keep && j.meta.deletion.is_none())
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
