//! The PgAdmin guest: ConfigurationValid, WorkloadReady, ExposureReady and ServersSynced of a pgAdmin, the advisory PgAdminEgressConfined, and the children it asks the host for.

pub mod configdb;
pub mod configuration;
pub mod egress;
pub mod exposure;
pub mod grants;
pub mod registration;
pub mod registry;
pub mod render;
pub mod servers;
pub mod spec;
pub mod upgrade;

use reconciler_guest_sdk::configuration::NotValid;
use reconciler_guest_sdk::hostname::{self, ALLOWED_HOST_SUFFIXES};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::verdict::{RECONCILING, condition, fails, ok, unknown};
use reconciler_guest_sdk::{
    Condition, ConditionStatus, Evaluation, EventType, Facts, Guest, KindRef, KindSpec,
    Reconciliation, Verdict, VerdictBuilder, read, workload,
};
use serde_json::{Value, json};

use exposure::{PUBLISHED_KINDS_FIELD, URL_FIELD, Url};
use registration::{DEFAULT_REGISTRATION_USER, REGISTRATION_USER, Registration};
use registry::*;
use render::{Plan, child_name};
use upgrade::Upgrade;

pub struct PgAdmin;

/// The `status` field listing the offered servers.
pub const SERVERS_FIELD: &str = "servers";

/// How soon the pass after a HostnameNotAllowed recovery runs: the
/// conditions that said it are Unknown until then.
pub const RECOVERY_REQUEUE_SECONDS: u32 = 1;

impl Guest for PgAdmin {
    fn describe() -> KindSpec {
        registry::describe()
    }

    fn writes() -> Vec<KindRef> {
        registry::writes()
    }

    fn evaluate(input: &Evaluation, facts: &dyn Facts) -> Verdict {
        Self::reconcile(input, facts).verdict
    }

    /// The hostname is checked first, paused or not: a refused one stalls
    /// the PgAdmin (ConfigurationValid and ExposureReady False with
    /// HostnameNotAllowed, `status.url` cleared) and its exposure objects
    /// are withdrawn (the only changes then, and while paused). Otherwise a
    /// paused pass only recovers the conditions that still say
    /// HostnameNotAllowed and asks for nothing; an unpaused one decides
    /// ConfigurationValid, and on a valid configuration asks for its
    /// children and decides the later aspects. See the README.
    fn reconcile(input: &Evaluation, facts: &dyn Facts) -> Reconciliation {
        let parent = input.parent_json();
        let status = &parent["status"];
        let pgadmin = Parent::of(KIND, &input.parent.meta);
        let mut v = VerdictBuilder::new();
        if let Some(advisory) = previous(status, EGRESS_CONFINED) {
            v.advisory(advisory);
        }
        let refusal = spec::requested_hostname(&parent).and_then(|h| {
            hostname::check(h, &input.setting_list(ALLOWED_HOST_SUFFIXES), KIND).err()
        });
        if let Some(refusal) = refusal {
            return hostname_refused(&mut v, input, &parent, &pgadmin, facts, &refusal);
        }
        let recovering: Vec<&str> = [CONFIGURATION_VALID, WORKLOAD_READY, EXPOSURE_READY]
            .into_iter()
            .filter(|t| said_hostname_not_allowed(status, t))
            .collect();
        // A pass that stops short says what holds of those it evaluates;
        // the others turn Unknown until the next pass, soon.
        let recover = |v: &mut VerdictBuilder| {
            for type_ in &recovering {
                if v.aspect_of(type_).is_none() {
                    v.aspect(recovered(type_));
                    v.requeue_after(RECOVERY_REQUEUE_SECONDS);
                }
            }
        };
        if input.paused {
            recover(&mut v);
            return done(&v, Vec::new());
        }
        let valid = match configuration::evaluate(&parent, &pgadmin, input, facts) {
            Ok(valid) => valid,
            Err(NotValid::Stalled { reason, message }) => {
                v.aspect(fails(CONFIGURATION_VALID, reason, message.clone()));
                v.stall(reason, message);
                recover(&mut v);
                // The one change that resolves it once CloudNativePG can
                // generate passwords (looked at again every few minutes).
                let changes = match spec::parse(&parent) {
                    Ok(spec::PgAdminSpec {
                        config_database: Some(cluster),
                        ..
                    }) if reason == PASSWORD_GENERATION_UNAVAILABLE => {
                        vec![configdb::role_change(pgadmin.name, &cluster)]
                    }
                    _ => Vec::new(),
                };
                return done(&v, changes);
            }
            Err(NotValid::Unread(message)) => {
                v.aspect(unknown(CONFIGURATION_VALID, RECONCILING, message));
                v.requeue_after(read::RETRY_SECONDS);
                recover(&mut v);
                return done(&v, Vec::new());
            }
        };
        // What is left out of the offered set leaves pgAdmin running with
        // the rest.
        v.aspect(match valid.offered.problems.first() {
            None => ok(CONFIGURATION_VALID, valid.message.clone()),
            Some(first) => fails(
                CONFIGURATION_VALID,
                first.reason,
                valid
                    .offered
                    .problems
                    .iter()
                    .map(|p| p.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        });
        v.field(
            SERVERS_FIELD,
            if valid.offered.requested {
                valid.offered.rows()
            } else {
                Value::Null
            },
        );
        let ns = pgadmin.namespace;
        let name = child_name(pgadmin.name);
        let database = valid.config_database.as_ref();
        let connection = database.and_then(|d| d.state.as_ref().ok());
        let running = match upgrade::running_image(facts, ns, &name) {
            Ok(running) => running,
            Err(message) => {
                v.aspect(unknown(WORKLOAD_READY, RECONCILING, message));
                v.requeue_after(read::RETRY_SECONDS);
                return done(&v, Vec::new());
            }
        };
        let decided = upgrade::decide(
            &mut v,
            facts,
            pgadmin.name,
            ns,
            &input.parent.meta.annotations,
            &valid.image,
            running.as_deref(),
            connection,
            status,
        );
        let (image, held, mut changes) = match decided {
            Upgrade::Run { image, changes } => (image, None, changes),
            Upgrade::Hold {
                image,
                condition,
                changes,
            } => (image, Some(condition), changes),
            Upgrade::Failed { message } => {
                v.aspect(fails(
                    WORKLOAD_READY,
                    UPGRADE_BACKUP_FAILED,
                    message.clone(),
                ));
                v.stall(UPGRADE_BACKUP_FAILED, message);
                return done(&v, Vec::new());
            }
            Upgrade::Unread(message) => {
                v.aspect(unknown(WORKLOAD_READY, RECONCILING, message));
                v.requeue_after(read::RETRY_SECONDS);
                return done(&v, Vec::new());
            }
        };
        if let Some(d) = database {
            changes.extend(d.changes.iter().cloned());
        }
        let exposure = valid.spec.exposure.as_ref();
        let observation =
            exposure::observe(facts, &pgadmin, &name, exposure.map(|e| e.kind), status);
        let plan = Plan {
            pgadmin: pgadmin.name,
            image: &image,
            oauth2_secret: valid.spec.oauth2_secret.as_deref(),
            exposure,
            database: connection,
            stopped: database.is_some_and(|d| d.state.is_err()),
            observation: &observation,
        };
        let changing = rollout(&mut v, &name, &image, &render::workload(&plan), status);
        changes.extend(render::changes(&plan, facts));
        let workload_read = facts.workload(ns, &name);
        v.aspect(match (database.map(|d| &d.state), held) {
            (Some(Err(message)), _) => {
                fails(WORKLOAD_READY, CONFIG_DATABASE_NOT_READY, message.clone())
            }
            (_, Some(held)) => held,
            _ => match (workload::condition(WORKLOAD_READY, &name, &workload_read), changing) {
                // Seed 000: "every desired replica runs the current
                // template". The pass that changes the template reads the
                // Deployment as it was: its replicas run the old one.
                (c, Some(change)) if c.status == ConditionStatus::True => fails(
                    WORKLOAD_READY,
                    ROLLOUT_IN_PROGRESS,
                    format!("Deployment {name} rolls out a changed template ({change}): the replicas run the previous one until the rollout shows"),
                ),
                (c, _) => c,
            },
        });
        if workload_read.is_err() {
            v.requeue_after(read::RETRY_SECONDS);
        }
        let decided = exposure::decide(&observation, exposure.map(|e| e.hostname.as_str()));
        if decided.retry {
            v.requeue_after(read::RETRY_SECONDS);
        }
        v.aspect(exposure::with_sentences(
            decided.condition,
            &observation.may_remain(&changes),
        ));
        match decided.url {
            Url::Set(url) => {
                v.field(URL_FIELD, json!(url));
            }
            Url::Clear => {
                v.field(URL_FIELD, Value::Null);
            }
            Url::Keep => {}
        }
        v.field(PUBLISHED_KINDS_FIELD, observation.published_kinds());
        let pods = match &workload_read {
            Ok(Some(w)) => w.pods.as_slice(),
            _ => &[],
        };
        if valid.registers {
            let user = input
                .setting(REGISTRATION_USER)
                .unwrap_or(DEFAULT_REGISTRATION_USER);
            let registration =
                Registration::render(pgadmin.name, &image, user, &valid.offered, connection);
            let synced = registration::sync(&mut v, facts, ns, &registration, pods, status);
            if synced.retry {
                v.requeue_after(read::RETRY_SECONDS);
            }
            v.aspect(synced.condition);
            changes.extend(synced.changes);
        } else {
            v.aspect(ok(
                SERVERS_SYNCED,
                "no server is offered (spec.clusterSelector and spec.clusterRefs are not set)",
            ));
        }
        v.advisory(egress::evaluate(facts, ns, pods));
        done(&v, changes)
    }
}

fn done(v: &VerdictBuilder, changes: Vec<reconciler_guest_sdk::Change>) -> Reconciliation {
    Reconciliation {
        verdict: v.build(),
        changes,
    }
}

/// The `status` field holding the digest of the Deployment's body.
pub const WORKLOAD_HASH_FIELD: &str = "workloadHash";

/// RolloutStarted when the Deployment's body changes (its digest is
/// recorded in `status.workloadHash`); none for the first one.
/// Records the workload's hash; when it changed since the last pass, the
/// RolloutStarted Event, and the change (`<previous> to <hash>`): this
/// pass asks for a Deployment its replicas do not run yet.
fn rollout(
    v: &mut VerdictBuilder,
    name: &str,
    image: &str,
    body: &Value,
    status: &Value,
) -> Option<String> {
    let hash = registration::digest(&body.to_string());
    let mut changing = None;
    if let Some(previous) = status[WORKLOAD_HASH_FIELD].as_str()
        && previous != hash
    {
        v.event(
            EventType::Normal,
            ROLLOUT_STARTED,
            format!("Deployment {name} rolls out a changed template ({previous} to {hash}, image {image})"),
        );
        changing = Some(format!("{previous} to {hash}"));
    }
    v.field(WORKLOAD_HASH_FIELD, json!(hash));
    changing
}

/// A refused hostname: ConfigurationValid and ExposureReady False with
/// HostnameNotAllowed (the first naming a refused image too), a stall,
/// `status.url` cleared, and the PgAdmin's exposure objects withdrawn.
fn hostname_refused(
    v: &mut VerdictBuilder,
    input: &Evaluation,
    parent: &Value,
    pgadmin: &Parent,
    facts: &dyn Facts,
    refusal: &str,
) -> Reconciliation {
    let configuration = match configuration::image(parent, input) {
        Err(NotValid::Stalled { reason, message }) if reason == IMAGE_NOT_ALLOWED => {
            format!("{refusal}; and {message}")
        }
        _ => refusal.to_owned(),
    };
    let name = child_name(pgadmin.name);
    let observation = exposure::observe(
        facts,
        pgadmin,
        &name,
        spec::ExposureType::of(parent).and_then(spec::ExposureType::kind),
        &parent["status"],
    );
    let withdrawal = render::withdraw(facts, &observation, None);
    let withdrawn = match (&withdrawal.withdrawn[..], &withdrawal.still_there[..]) {
        ([], []) => "nothing is published under it and status.url is cleared".to_owned(),
        (made, []) => format!(
            "{} {} withdrawn and status.url cleared",
            made.join(", "),
            if made.len() == 1 { "is" } else { "are" }
        ),
        ([], still) => format!("{}; status.url is cleared", still.join("; ")),
        (made, still) => format!(
            "{} {} withdrawn; {}; status.url is cleared",
            made.join(", "),
            if made.len() == 1 { "is" } else { "are" },
            still.join("; ")
        ),
    };
    v.aspect(fails(
        CONFIGURATION_VALID,
        HOSTNAME_NOT_ALLOWED,
        configuration.clone(),
    ));
    v.aspect(exposure::with_sentences(
        fails(
            EXPOSURE_READY,
            HOSTNAME_NOT_ALLOWED,
            format!("{refusal}: {withdrawn}"),
        ),
        &observation.may_remain(&withdrawal.deletions),
    ));
    v.stall(HOSTNAME_NOT_ALLOWED, configuration);
    v.field(URL_FIELD, Value::Null);
    v.field(PUBLISHED_KINDS_FIELD, observation.published_kinds());
    done(v, withdrawal.deletions)
}

/// Whether the previous `status` has the condition `type_` with reason
/// HostnameNotAllowed.
fn said_hostname_not_allowed(status: &Value, type_: &str) -> bool {
    previous(status, type_).is_some_and(|c| c.reason == HOSTNAME_NOT_ALLOWED)
}

/// The condition `type_` in the step after a HostnameNotAllowed refusal.
fn recovered(type_: &str) -> Condition {
    unknown(
        type_,
        RECONCILING,
        format!(
            "spec.exposure.hostname is no longer refused; {type_} said HostnameNotAllowed and is evaluated again"
        ),
    )
}

/// The condition `type_` as the previous status has it, carried forward by
/// a pass that does not evaluate it.
fn previous(status: &Value, type_: &str) -> Option<Condition> {
    let c = status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(type_))?;
    let status = match c["status"].as_str()? {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    Some(condition(
        type_,
        status,
        c["reason"].as_str()?,
        c["message"].as_str().unwrap_or_default(),
    ))
}

reconciler_guest_sdk::export_guest!(PgAdmin);
