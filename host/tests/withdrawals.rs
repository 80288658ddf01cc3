//! Withdrawals (issue 29, docs/design.md "Withdrawals and who sets the
//! gates"), against the real API server: a requester who may only create
//! PgAccessRequests (the shipped `pgaccessrequest-requester` role, acting
//! as themselves by impersonation) cannot hold back the host taking their
//! access away. Seed 000, PgAccessRequest: "Reported, never a stall:
//! expiry and revocation keep working", and "the operator only takes grants
//! away". Each request is annotated with a gate a requester might try
//! (`reconciler.dev/approval: manual`, `reconciler.dev/mode: observe`, a
//! mode that is no gate), or the operator sets the kind to manual approval,
//! with ReconcilePlans not served, then served: at `spec.expiresAt` every
//! RoleBinding is gone within seconds, the authorizer says no, the status
//! says AccessExpired only once the deletion is made, one
//! RoleBindingDeleted Event each; where plans are served, each withdrawal
//! is on record (a plan made without review, saying why).
//!
//! The gates' admission policy (deploy/gates-admission.yaml) is not
//! installed here: it refuses the annotated creates (host/tests/
//! gates_admission.rs); this holds the host to the guarantee without it.
//! This binary has its own API server, so whether plans are served is the
//! test's to decide.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconciler_host_harness::access_requests::{TimedEvent, events_of, furnish, may, whoami};
use reconciler_host_harness::objects;
use reconciler_host_harness::operator::{
    Guests, Host, eventually, fixture_of, get, settle, wait_for,
};
use reconciler_host_harness::plans;
use reconciler_testsupport::{TestNamespace, client_as};
use serde_json::{Value, json};

const ACCESS: Guests = Guests {
    dir: "withdrawal-tests",
    crates: &["pgaccessrequest-guest"],
    settings: &["PgAccessRequest.orphanGraceSeconds=120"],
    // The last phase takes the Cluster kind away under a running host.
    expected_warnings: &["the API is no longer served (404)"],
};

const API_VERSION: &str = "pgtoolbox.fyannk.dev/v1alpha1";
const KIND: &str = "PgAccessRequest";
const LABEL: &str = "pgtoolbox.fyannk.dev/access-request";
const READER: &str = "pgaccess-withdrawal-cluster-reader";
/// The requester, and the subject of the requests.
const DAVE: &str = "dave@example.com";
/// An approver.
const CAROL: &str = "carol@example.com";
/// The CloudNativePG Cluster kind the requests read.
const CLUSTER_CRD: &str = "clusters.postgresql.cnpg.io";

/// The gates a requester writes on their own request.
const ANNOTATED: &[(&str, &str, &str)] = &[
    ("manual", "reconciler.dev/approval", "manual"),
    ("observe", "reconciler.dev/mode", "observe"),
    ("bogus", "reconciler.dev/mode", "bogus"),
];

struct Scene {
    ns: TestNamespace,
    admin: Client,
    carol: Client,
    dave: Client,
}

impl Scene {
    async fn new(prefix: &str) -> Scene {
        fixture_of(&ACCESS);
        let ns = TestNamespace::new(prefix).await.expect("a test namespace");
        let admin = ns.client();
        furnish(&admin, ns.name(), READER, DAVE, CAROL).await;
        Scene {
            carol: client_as(CAROL, &[]).await.expect("carol"),
            dave: client_as(DAVE, &[]).await.expect("dave"),
            admin,
            ns,
        }
    }

    fn name(&self) -> &str {
        self.ns.name()
    }

    fn requests(&self, client: &Client) -> Api<DynamicObject> {
        objects::api(client, self.name(), API_VERSION, KIND)
    }

    fn role_bindings(&self) -> Api<DynamicObject> {
        objects::api(
            &self.admin,
            self.name(),
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        )
    }

    /// Dave asks, as himself, for READER on Cluster orders until
    /// `expires`, annotating the request with `annotations`.
    async fn ask(&self, name: &str, annotations: Value, expires: jiff::Timestamp) {
        let request = json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "cluster": {"name": "orders"}, "clusterRole": READER,
                "subject": {"kind": "User", "name": DAVE},
                "expiresAt": expires.to_string(), "reason": "an incident on orders",
            },
        });
        self.requests(&self.dave)
            .create(
                &PostParams::default(),
                &serde_json::from_value(request).expect("a request"),
            )
            .await
            .unwrap_or_else(|e| panic!("dave asks for {name}: {e}"));
    }

    /// Carol approves `name` as an approver does: the RoleBinding first
    /// (the request its controller), then the decision in the status.
    async fn approve(&self, name: &str) {
        let request = get(&self.requests(&self.carol), name).await;
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {
                "name": name,
                "labels": {LABEL: name},
                "ownerReferences": [{
                    "apiVersion": API_VERSION, "kind": KIND, "name": name,
                    "uid": request["metadata"]["uid"], "controller": true,
                }],
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": DAVE}],
        });
        objects::api(
            &self.carol,
            self.name(),
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        )
        .create(
            &PostParams::default(),
            &serde_json::from_value(binding).expect("a RoleBinding"),
        )
        .await
        .unwrap_or_else(|e| panic!("carol binds {name}: {e}"));
        let (_, groups) = whoami(&self.carol).await;
        let decision = json!({"status": {"decision": {
            "outcome": "Approved",
            "decidedBy": {"username": CAROL, "groups": groups},
        }}});
        self.requests(&self.carol)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&decision))
            .await
            .unwrap_or_else(|e| panic!("carol approves {name}: {e}"));
    }

    /// Carol revokes `name`; its RoleBinding is deleted within 5 s of the
    /// revocation, AccessRevoked said after it, one RoleBindingDeleted Event.
    async fn revoke(&self, name: &str) {
        let (_, groups) = whoami(&self.carol).await;
        let revocation = json!({"status": {"revocation": {
            "revokedBy": {"username": CAROL, "groups": groups},
        }}});
        let revoked_at = jiff::Timestamp::now();
        self.requests(&self.carol)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&revocation))
            .await
            .unwrap_or_else(|e| panic!("carol revokes {name}: {e}"));
        self.synced(name, "AccessRevoked").await;
        assert!(
            self.role_bindings()
                .get_opt(name)
                .await
                .expect("read")
                .is_none(),
            "{name}: AccessRevoked while its RoleBinding is still there"
        );
        settle().await;
        let events = self.events(name).await;
        assert_eq!(count(&events, "RoleBindingDeleted"), 1, "{events:#?}");
        let deleted = events
            .iter()
            .find(|e| e.reason == "RoleBindingDeleted")
            .expect("the Event");
        assert!(
            deleted.time <= revoked_at + jiff::SignedDuration::from_secs(5),
            "{name}: revoked at {revoked_at}, deleted at {}: not within 5 s",
            deleted.time
        );
    }

    async fn synced(&self, name: &str, reason: &str) -> Value {
        wait_for(
            &self.requests(&self.admin),
            name,
            &[("RoleBindingSynced", "True", reason)],
        )
        .await
    }

    async fn events(&self, name: &str) -> Vec<TimedEvent> {
        events_of(&self.admin, self.name(), KIND, name).await
    }

    /// Asks for `names` (each with its annotations) expiring together,
    /// approves each, and waits until every one is granted and dave may
    /// list Clusters.
    async fn granted(&self, requests: &[(String, Value)], expires: jiff::Timestamp) {
        for (name, annotations) in requests {
            self.ask(name, annotations.clone(), expires).await;
        }
        for (name, _) in requests {
            self.approve(name).await;
        }
        for (name, _) in requests {
            self.synced(name, "AccessGranted").await;
        }
        self.dave_may_list(true).await;
    }

    async fn dave_may_list(&self, allowed: bool) {
        eventually(&format!("dave may list Clusters: {allowed}"), async || {
            if may(&self.admin, DAVE, "list", self.name()).await == allowed {
                Ok(())
            } else {
                Err(!allowed)
            }
        })
        .await;
    }

    /// At `expires`, each request's RoleBinding is deleted within 5 s, the
    /// status says AccessExpired once the deletion is made, with one
    /// RoleBindingDeleted Event each; dave may no longer list Clusters.
    async fn expire(&self, requests: &[(String, Value)], expires: jiff::Timestamp) {
        sleep_until_shortly_before(expires).await;
        for (name, _) in requests {
            let expired = self.synced(name, "AccessExpired").await;
            assert_eq!(expired["status"]["phase"], "Expired", "{name}");
            assert!(
                self.role_bindings()
                    .get_opt(name)
                    .await
                    .expect("read")
                    .is_none(),
                "{name}: the status says AccessExpired while its RoleBinding is still there"
            );
            let events = self.events(name).await;
            let deleted = events
                .iter()
                .find(|e| e.reason == "RoleBindingDeleted")
                .unwrap_or_else(|| panic!("{name}: no RoleBindingDeleted Event: {events:#?}"));
            assert!(
                deleted.time >= expires
                    && deleted.time <= expires + jiff::SignedDuration::from_secs(5),
                "{name}: deleted at {}, spec.expiresAt {expires}: not within 5 s",
                deleted.time
            );
            // The AccessExpired Event follows the status write that says it:
            // it comes after the deletion.
            let expired_event =
                eventually(&format!("{name}: an AccessExpired Event"), async || {
                    let events = self.events(name).await;
                    match events.iter().find(|e| e.reason == "AccessExpired") {
                        Some(e) => Ok(e.time),
                        None => Err(events),
                    }
                })
                .await;
            assert!(
                expired_event >= deleted.time,
                "{name}: AccessExpired said at {expired_event}, before the deletion at {}",
                deleted.time
            );
        }
        self.dave_may_list(false).await;
        settle().await;
        for (name, _) in requests {
            let events = self.events(name).await;
            assert_eq!(
                count(&events, "RoleBindingDeleted"),
                1,
                "{name}: one RoleBindingDeleted Event: {events:#?}"
            );
        }
    }

    /// The plans of the namespace recording withdrawals.
    async fn withdrawal_plans(&self) -> Vec<Value> {
        let api = objects::api(
            &self.admin,
            self.name(),
            "reconciler.dev/v1alpha1",
            "ReconcilePlan",
        );
        api.list(&ListParams::default().labels("reconciler.dev/withdrawal=true"))
            .await
            .expect("listing plans")
            .items
            .into_iter()
            .map(|p| serde_json::to_value(p).expect("JSON"))
            .collect()
    }
}

async fn sleep_until_shortly_before(at: jiff::Timestamp) {
    let until = jiff::Timestamp::now().duration_until(at) - jiff::SignedDuration::from_secs(5);
    if until.is_positive() {
        tokio::time::sleep(Duration::try_from(until).expect("positive")).await;
    }
}

fn in_seconds(seconds: i64) -> jiff::Timestamp {
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds);
    jiff::Timestamp::from_second(t.as_second()).expect("a time")
}

fn count(events: &[TimedEvent], reason: &str) -> i32 {
    events
        .iter()
        .filter(|e| e.reason == reason)
        .map(|e| e.count)
        .sum()
}

/// The annotated requests of one round, named `<round>-<gate>`.
fn round(prefix: &str, with_plain: bool) -> Vec<(String, Value)> {
    let mut requests: Vec<(String, Value)> = ANNOTATED
        .iter()
        .map(|(name, key, value)| (format!("{prefix}-{name}"), json!({ *key: *value })))
        .collect();
    if with_plain {
        requests.push((format!("{prefix}-plain"), json!({})));
    }
    requests
}

#[tokio::test]
async fn no_gate_a_requester_or_the_operator_sets_holds_back_an_expiry() {
    let scene = Scene::new("withdrawals").await;

    // ReconcilePlans not served: the gates a requester writes are not read
    // off their request (the kind lets its parents set none).
    let host = Host::start(scene.name()).await;
    let requests = round("a", false);
    let expires = in_seconds(45);
    scene.granted(&requests, expires).await;
    scene.expire(&requests, expires).await;
    host.finish();

    // The operator sets the kind to manual approval: a withdrawal passes
    // that gate too, at expiry and at a revocation.
    let host = Host::start_in(scene.name(), &["--approval", "PgAccessRequest=manual"]).await;
    let requests = round("b", true);
    let expires = in_seconds(45);
    let revoked = vec![(
        "b-revoked".to_owned(),
        json!({"reconciler.dev/approval": "manual"}),
    )];
    scene.granted(&revoked, in_seconds(3_600)).await;
    scene.revoke("b-revoked").await;
    scene.granted(&requests, expires).await;
    scene.expire(&requests, expires).await;
    host.finish();

    // ReconcilePlans served (a host started after they are): each
    // withdrawal is made all the same, and on record.
    plans::install(&scene.admin).await;
    let host = Host::start_in(scene.name(), &["--approval", "PgAccessRequest=manual"]).await;
    let requests = round("c", true);
    let expires = in_seconds(45);
    scene.granted(&requests, expires).await;
    interrupted_records_are_ended(&scene, "c-plain").await;
    scene.expire(&requests, expires).await;
    let recorded: Vec<Value> = scene
        .withdrawal_plans()
        .await
        .into_iter()
        .filter(|p| {
            !p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("left-")
        })
        .collect();
    for (name, _) in &requests {
        let plan = recorded
            .iter()
            .find(|p| p["spec"]["parent"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name}: no plan records its withdrawal: {recorded:#?}"));
        assert_eq!(plan["status"]["phase"], "Applied", "{plan:#}");
        assert_eq!(plan["spec"]["changes"]["deletions"], 1, "{plan:#}");
        let approved = plan["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Approved"))
            .unwrap_or_else(|| panic!("no Approved condition: {plan:#}"));
        assert_eq!(approved["status"], "True");
        assert_eq!(approved["reason"], "Withdrawal");
        let message = approved["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("made without review") && message.contains("approval manual"),
            "the record says why: {message}"
        );
    }
    assert_eq!(
        recorded.len(),
        requests.len(),
        "one plan per withdrawal: {recorded:#?}"
    );
    host.finish();

    // Last: it takes the Cluster kind away from this API server.
    expires_without_the_cluster_kind(&scene).await;
}

/// A record of withdrawals is written Applying before the first deletion,
/// so a host killed between them leaves it Applying: the parent's next
/// pass ends it. Two such records of the request `name`, as a killed host
/// would leave them: one naming a RoleBinding that is gone (another UID)
/// is ended Applied, one naming the request's RoleBinding, still there,
/// Failed (ExecutionInterrupted); neither is executed.
async fn interrupted_records_are_ended(scene: &Scene, name: &str) {
    let request = get(&scene.requests(&scene.admin), name).await;
    let uid = request["metadata"]["uid"]
        .as_str()
        .expect("a UID")
        .to_owned();
    let binding = get(&scene.role_bindings(), name).await;
    let (admin, _) = whoami(&scene.admin).await;
    let plans = objects::api(
        &scene.admin,
        scene.name(),
        "reconciler.dev/v1alpha1",
        "ReconcilePlan",
    );
    for (record, binding_uid) in [
        ("left-gone", "00000000-0000-4000-8000-00000000dead"),
        (
            "left-there",
            binding["metadata"]["uid"].as_str().expect("a UID"),
        ),
    ] {
        let effects = format!(
            "- kind:\n    group: rbac.authorization.k8s.io\n    version: v1\n    kind: RoleBinding\n  \
             name: {name}\n  op: delete\n  uid: {binding_uid}\n"
        );
        let plan = json!({
            "apiVersion": "reconciler.dev/v1alpha1", "kind": "ReconcilePlan",
            "metadata": {
                "name": record,
                "labels": {"reconciler.dev/parent-uid": uid, "reconciler.dev/withdrawal": "true"},
                "ownerReferences": [{"apiVersion": API_VERSION, "kind": KIND, "name": name,
                                     "uid": uid, "controller": true}],
            },
            "spec": {
                "parent": {"group": "pgtoolbox.fyannk.dev", "version": "v1alpha1",
                           "resource": "pgaccessrequests", "kind": KIND, "name": name, "uid": uid},
                "mode": "apply", "digest": "rhd1-sha256:00", "digestEncoding": "rhd1-sha256",
                "target": {"clusterUID": "c", "parentUID": uid},
                "effects": {"inline": effects},
                "changes": {"applies": 0, "deletions": 1, "generated": 0},
            },
        });
        plans
            .create(
                &PostParams::default(),
                &serde_json::from_value(plan).unwrap(),
            )
            .await
            .unwrap_or_else(|e| panic!("creating {record}: {e}"));
        let status = json!({"status": {
            "phase": "Applying",
            "decidedBy": {"username": admin},
            "conditions": [{"type": "Approved", "status": "True", "reason": "Withdrawal",
                            "message": "left by a killed host",
                            "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        }});
        plans
            .patch_status(record, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap_or_else(|e| panic!("{record} Applying: {e}"));
    }
    for (record, phase) in [("left-gone", "Applied"), ("left-there", "Failed")] {
        let ended = eventually(&format!("{record} {phase}"), async || {
            let plan = get(&plans, record).await;
            if plan["status"]["phase"] == phase {
                Ok(plan)
            } else {
                Err(plan["status"]["phase"].clone())
            }
        })
        .await;
        if phase == "Failed" {
            let failed = ended["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "Failed"))
                .unwrap_or_else(|| panic!("no Failed condition: {ended:#}"));
            assert_eq!(failed["reason"], "ExecutionInterrupted", "{ended:#}");
        }
    }
    assert!(
        scene
            .role_bindings()
            .get_opt(name)
            .await
            .expect("read")
            .is_some(),
        "a record is never executed: the grant stands until its expiry"
    );
}

/// A granted request still expires at `spec.expiresAt` once the Cluster
/// kind it reads is no longer served: the read fails every pass
/// (ReconcileError, seed 000), and the withdrawal is made all the same;
/// RoleBindingSynced says AccessExpired beside that error, not the grant of
/// the last good pass.
async fn expires_without_the_cluster_kind(scene: &Scene) {
    let host = Host::start(scene.name()).await;
    let requests = vec![("d-orders".to_owned(), json!({}))];
    let expires = in_seconds(45);
    scene.granted(&requests, expires).await;
    // The Cluster kind goes away after the host started: its read fails
    // every pass (ReconcileError), and the expiry is made all the same.
    let crds: Api<CustomResourceDefinition> = Api::all(scene.admin.clone());
    crds.delete(CLUSTER_CRD, &DeleteParams::default())
        .await
        .expect("deleting the Cluster CRD");
    wait_for(
        &scene.requests(&scene.admin),
        "d-orders",
        &[("Ready", "False", "ReconcileError")],
    )
    .await;
    sleep_until_shortly_before(expires).await;
    eventually("RoleBinding d-orders gone", async || {
        match scene
            .role_bindings()
            .get_opt("d-orders")
            .await
            .expect("read")
        {
            None => Ok(()),
            Some(rb) => Err(serde_json::to_value(rb).expect("JSON")["metadata"]["uid"].clone()),
        }
    })
    .await;
    scene.dave_may_list(false).await;
    // The status says what was taken away, not the grant of the last good
    // pass: RoleBindingSynced AccessExpired beside Ready's ReconcileError.
    let expired = wait_for(
        &scene.requests(&scene.admin),
        "d-orders",
        &[
            ("RoleBindingSynced", "True", "AccessExpired"),
            ("Ready", "False", "ReconcileError"),
        ],
    )
    .await;
    assert_eq!(expired["status"]["phase"], "Expired");
    assert_eq!(expired["status"]["roleBindings"], Value::Null);
    // Published right after the deletion returned.
    let deleted = eventually("a RoleBindingDeleted Event about d-orders", async || {
        let events = scene.events("d-orders").await;
        match events.iter().find(|e| e.reason == "RoleBindingDeleted") {
            Some(e) => Ok(e.clone()),
            None => Err(events),
        }
    })
    .await;
    assert!(
        deleted.time >= expires && deleted.time <= expires + jiff::SignedDuration::from_secs(5),
        "deleted at {}, spec.expiresAt {expires}",
        deleted.time
    );
    settle().await;
    let events = scene.events("d-orders").await;
    assert_eq!(count(&events, "RoleBindingDeleted"), 1, "{events:#?}");
    assert_eq!(count(&events, "AccessExpired"), 1, "{events:#?}");
    host.finish();
}
