//! Shared test fixtures: a healthy world of facts around one PgToolBoxConsole, and the contract every verdict keeps.

use std::collections::BTreeMap;

use pgtoolboxconsole_guest::PgToolBoxConsole;
use pgtoolboxconsole_guest::registry::{self, EXPOSURE_READY, HOSTNAME_NOT_ALLOWED, exposure_kind};
use reconciler_guest_sdk::mock::{MockFacts, evaluation, exposure_kind_ref, meta, workload_ready};
use reconciler_guest_sdk::{
    Admission, ApplyOutcome, ApplyRefusal, Availability, CertificateBundleFact, CertificateFact,
    ConditionStatus, ControllerRef, Evaluation, ExposureFact, ExposureKind, Guest, KindRef,
    Reconciliation, Verdict, WorkloadFact, testing,
};
use serde_json::{Value, json};

pub const NS: &str = "team-b";
pub const NAME: &str = "orders";
/// The uid the mock gives the parent (`uid-<namespace>-<name>`).
pub const UID: &str = "uid-team-b-orders";
pub const NOW: i64 = 1_795_953_600;
pub const HOST: &str = "orders.apps.example.com";
pub const SETTINGS: &[(&str, &str)] = &[
    (
        "defaultConsoleImage",
        "ghcr.io/fyannk/pgtoolbox-console:1.0",
    ),
    (
        "allowedImageRepositories",
        "ghcr.io/fyannk/,quay.io/oauth2-proxy/",
    ),
    ("allowedHostSuffixes", ".apps.example.com"),
];

pub fn parent_with(spec: Value) -> Value {
    json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgToolBoxConsole",
        "metadata": {"name": NAME, "namespace": NS, "generation": 1},
        "spec": spec,
    })
}

/// A console published through a Route.
pub fn route_spec() -> Value {
    json!({"exposure": {"type": "route", "hostname": HOST}})
}

pub fn parent() -> Value {
    parent_with(route_spec())
}

/// The parent as a pass before evaluated it (its spec unchanged since).
pub fn evaluated(parent: Value) -> Value {
    with_status(parent, json!({"observedGeneration": 1}))
}

pub fn with_status(mut parent: Value, status: Value) -> Value {
    parent["status"] = status;
    parent
}

pub fn condition(type_: &str, status: &str, reason: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": "before",
           "lastTransitionTime": "2026-11-29T11:00:00Z", "observedGeneration": 1})
}

/// The console as the controller of its children.
pub fn the_console() -> ControllerRef {
    ControllerRef {
        api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
        kind: "PgToolBoxConsole".into(),
        name: NAME.into(),
        uid: UID.into(),
    }
}

/// The console's own exposure object of `kind`.
pub fn exposure_fact(kind: ExposureKind, hostname: &str, admission: Admission) -> ExposureFact {
    let mut meta = meta(NS, "orders-console");
    meta.controller = Some(the_console());
    ExposureFact {
        meta,
        kind,
        hostnames: vec![hostname.into()],
        admission,
    }
}

/// A child of the console: `kind` `name` in its namespace, controlled by
/// it, with the uid `uid-team-b-<name>`.
pub fn child(kind: &KindRef, name: &str) -> Value {
    let api_version = if kind.group.is_empty() {
        kind.version.clone()
    } else {
        format!("{}/{}", kind.group, kind.version)
    };
    json!({"apiVersion": api_version, "kind": kind.kind,
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{NS}-{name}"),
                        "ownerReferences": [{"apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
                            "kind": "PgToolBoxConsole", "name": NAME, "uid": UID, "controller": true}]}})
}

pub fn cluster(name: &str, team: &str) -> Value {
    json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster",
           "metadata": {"name": name, "namespace": NS, "labels": {"team": team}},
           "spec": {"instances": 1}})
}

pub fn ca(secret: &str, sha: &str) -> CertificateBundleFact {
    CertificateBundleFact {
        meta: meta(NS, secret),
        has_key: true,
        certificates: vec![CertificateFact {
            sha256: sha.into(),
            pem_bytes: 700,
        }],
    }
}

/// The console, as the controller of what the operator made for it.
pub fn this_console() -> ControllerRef {
    ControllerRef {
        api_version: "pgtoolbox.fyannk.dev/v1alpha1".into(),
        kind: "PgToolBoxConsole".into(),
        name: NAME.into(),
        uid: UID.into(),
    }
}

pub fn someone_else() -> ControllerRef {
    ControllerRef {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "legacy-console".into(),
        uid: "uid-someone-else".into(),
    }
}

/// Everything a healthy console reads, each piece replaceable.
pub struct World {
    pub workload: Option<WorkloadFact>,
    pub secrets: Vec<(String, Vec<String>)>,
    pub config_maps: Vec<(String, Vec<String>)>,
    pub cluster_roles: Vec<String>,
    pub exposures: Vec<ExposureFact>,
    pub availability: Vec<(ExposureKind, Availability)>,
    pub clusters: Vec<Value>,
    pub certificates: Vec<CertificateBundleFact>,
    pub last_apply: Option<ApplyOutcome>,
    /// When the host's last apply of the policy was answered.
    pub last_apply_at: Option<i64>,
    /// The console's children (`facts.children`), also served by `get`.
    pub children: Vec<(KindRef, Value)>,
    /// Other objects `get` and `list` serve.
    pub objects: Vec<(KindRef, Value)>,
    /// Patches the controller of an object by name (any kind).
    pub controllers: BTreeMap<String, ControllerRef>,
    /// Reads (`workload`, `secret`, `configmap`, `clusterrole`, `exposure`,
    /// `certificates`, `list`, and a name) that fail.
    pub failing: Vec<(String, String)>,
}

impl World {
    pub fn healthy() -> Self {
        World {
            workload: Some(workload_ready(NS, "orders-console", 1)),
            secrets: Vec::new(),
            config_maps: Vec::new(),
            cluster_roles: vec![
                "pgtoolbox-console".into(),
                "pgtoolbox-console-pod-logs".into(),
                "pgtoolbox-console-restore-drills".into(),
            ],
            exposures: vec![exposure_fact(
                ExposureKind::Route,
                HOST,
                Admission::Admitted,
            )],
            availability: Vec::new(),
            clusters: Vec::new(),
            certificates: Vec::new(),
            last_apply: None,
            last_apply_at: None,
            children: vec![(
                exposure_kind(ExposureKind::Route),
                child(&exposure_kind(ExposureKind::Route), "orders-console"),
            )],
            objects: Vec::new(),
            // The Deployment is the operator's (the console controls it).
            controllers: BTreeMap::from([("orders-console".to_owned(), this_console())]),
            failing: Vec::new(),
        }
    }

    pub fn with_secret(mut self, name: &str, keys: &[&str]) -> Self {
        self.secrets.retain(|(n, _)| n != name);
        self.secrets
            .push((name.into(), keys.iter().map(|k| (*k).to_owned()).collect()));
        self
    }

    pub fn with_config_map(mut self, name: &str) -> Self {
        self.config_maps.push((name.into(), vec!["ca.crt".into()]));
        self
    }

    pub fn without_role(mut self, name: &str) -> Self {
        self.cluster_roles.retain(|r| r != name);
        self
    }

    pub fn kind(mut self, kind: ExposureKind, availability: Availability) -> Self {
        self.availability.push((kind, availability));
        self
    }

    /// The host's last apply of the policy was refused a minute ago.
    pub fn refused_policy(mut self, code: u16, reason: &str, message: &str) -> Self {
        self.last_apply = Some(ApplyOutcome::Refused(ApplyRefusal {
            code,
            reason: reason.into(),
            message: message.into(),
        }));
        self.last_apply_at = Some(NOW - 60);
        self
    }

    /// Another child of the console.
    pub fn with_child(mut self, kind: KindRef, name: &str) -> Self {
        let json = child(&kind, name);
        self.children.push((kind, json));
        self
    }

    /// Only these children (of every kind).
    pub fn without_children(mut self) -> Self {
        self.children.clear();
        self
    }

    /// An object `get` serves that is not the console's child.
    pub fn with_object(mut self, kind: KindRef, json: Value) -> Self {
        self.objects.push((kind, json));
        self
    }

    pub fn facts(&self) -> MockFacts {
        let mut mock = MockFacts::at(NOW);
        if let Some(w) = &self.workload {
            mock = mock.with_workload(w.clone());
        }
        for (name, keys) in &self.secrets {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            mock = mock.with_secret(NS, name, &keys);
        }
        for (name, keys) in &self.config_maps {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            mock = mock.with_config_map(NS, name, &keys);
        }
        for role in &self.cluster_roles {
            mock = mock.with_cluster_role(role);
        }
        for e in &self.exposures {
            mock = mock.with_exposure(e.clone());
        }
        for (kind, availability) in &self.availability {
            mock = mock.with_availability(&exposure_kind_ref(*kind), NS, *availability);
        }
        for c in &self.clusters {
            mock = mock.with_object(&registry::cluster_kind(), c.clone());
        }
        for c in &self.certificates {
            mock = mock.with_certificates("ca.crt", c.clone());
        }
        if let Some(outcome) = &self.last_apply {
            mock = mock.with_last_apply(
                &registry::network_policy_kind(),
                NS,
                "orders-ingress",
                outcome.clone(),
            );
        }
        if let Some(at) = self.last_apply_at {
            mock = mock.with_last_apply_time(
                &registry::network_policy_kind(),
                NS,
                "orders-ingress",
                at,
            );
        }
        for (kind, json) in &self.children {
            mock = mock
                .with_child(kind, json.clone())
                .with_object(kind, json.clone());
        }
        for (kind, json) in &self.objects {
            mock = mock.with_object(kind, json.clone());
        }
        for (name, controller) in &self.controllers {
            mock = mock.with_controller(name, controller.clone());
        }
        for (what, name) in &self.failing {
            mock = mock.failing(what, name);
        }
        mock
    }
}

pub fn input(parent: Value, settings: &[(&str, &str)]) -> Evaluation {
    evaluation(parent, settings)
}

/// One unpaused pass, checked against the kind's contract.
pub fn run(parent: Value, settings: &[(&str, &str)], world: &World) -> Verdict {
    reconcile(parent, settings, world).verdict
}

/// One unpaused pass with its changes, the verdict checked against the
/// kind's contract.
pub fn reconcile(parent: Value, settings: &[(&str, &str)], world: &World) -> Reconciliation {
    let r = PgToolBoxConsole::reconcile(&input(parent, settings), &world.facts());
    keeps_contract(&r.verdict, false);
    r
}

/// One paused pass, checked against the kind's contract.
pub fn run_paused(parent: Value, settings: &[(&str, &str)], world: &World) -> Verdict {
    reconcile_paused(parent, settings, world).verdict
}

/// One paused pass with its changes.
pub fn reconcile_paused(parent: Value, settings: &[(&str, &str)], world: &World) -> Reconciliation {
    let mut evaluation = input(parent, settings);
    evaluation.paused = true;
    let r = PgToolBoxConsole::reconcile(&evaluation, &world.facts());
    keeps_contract(&r.verdict, true);
    r
}

/// The default pass: the default parent and settings.
pub fn pass(world: &World) -> Verdict {
    run(parent(), SETTINGS, world)
}

/// What the host checks of a verdict (every aspect once in declared order
/// when unpaused, registered reasons, declared stalls), and the kind's own
/// rules: ConfigurationValid=False always stalls with its reason; a stall
/// on HostnameNotAllowed has ExposureReady False with it and clears
/// `status.url`.
pub fn keeps_contract(verdict: &Verdict, paused: bool) {
    let spec = PgToolBoxConsole::describe();
    testing::keeps_contract(&spec, verdict, paused);
    testing::stalls_only_on_invalid_configuration(verdict);
    let fields = verdict.fields();
    if verdict
        .stall
        .as_ref()
        .is_some_and(|s| s.reason == HOSTNAME_NOT_ALLOWED)
    {
        let exposure = verdict.aspect(EXPOSURE_READY).expect("ExposureReady");
        assert_eq!(
            (exposure.status, exposure.reason.as_str()),
            (ConditionStatus::False, HOSTNAME_NOT_ALLOWED)
        );
        assert_eq!(fields["url"], Value::Null);
        assert!(
            fields.as_object().unwrap().contains_key("url"),
            "url cleared"
        );
    }
}
