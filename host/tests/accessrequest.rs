//! PgAccessRequests end to end (issue 15): the unchanged host serving the
//! PgAccessRequest guest against the real API server, with `deploy/`'s
//! admission policy and roles applied as shipped. People act as
//! themselves, by impersonation: dave asks for access (the requester role),
//! carol approves as an approver does (the approver role and `bind` on the
//! ClusterRole: she creates the RoleBinding, the request its controller,
//! then records the decision in the request's status); the host only ever
//! takes the grant away. What a user relies on is asserted: whether dave
//! may read Clusters (the authorizer's answer), the RoleBindings that
//! exist, the conditions, and how many Events of each reason were
//! published, with their causes and times. Times are a few seconds, and
//! waited for with a generous deadline (`harness::TIMEOUT`).

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconciler_host_harness::access_requests::{
    TimedEvent, approver, events_of, furnish, may, whoami,
};
use reconciler_host_harness::objects::{self, create};
use reconciler_host_harness::operator::{
    self as harness, Guests, Host, condition, eventually, fixture_of, get, settle, wait_for,
};
use reconciler_testsupport::{TestNamespace, client_as};
use serde_json::{Value, json};

/// The guest alone. The orphan grace is long by default here, so that no
/// approval of these tests is taken for an orphan; the orphan test starts
/// its host with a short one.
const ACCESS: Guests = Guests {
    dir: "accessrequest-tests",
    crates: &["pgaccessrequest-guest"],
    settings: &["PgAccessRequest.orphanGraceSeconds=120"],
    expected_warnings: &[],
};

const API_VERSION: &str = "pgtoolbox.fyannk.dev/v1alpha1";
const KIND: &str = "PgAccessRequest";
const LABEL: &str = "pgtoolbox.fyannk.dev/access-request";
/// The ClusterRole the requests ask for: get and list on Clusters.
const READER: &str = "pgaccess-test-cluster-reader";
/// The requester, and the subject of the requests.
const DAVE: &str = "dave@example.com";
/// An approver.
const CAROL: &str = "carol@example.com";

/// A namespace with the CRDs, the shipped policy and roles, dave a
/// requester and carol an approver of READER, and the Cluster orders the
/// requests name.
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
        let scene = Scene {
            carol: client_as(CAROL, &[]).await.expect("carol"),
            dave: client_as(DAVE, &[]).await.expect("dave"),
            admin,
            ns,
        };
        scene.await_enforced().await;
        scene
    }

    fn name(&self) -> &str {
        self.ns.name()
    }

    fn requests(&self, client: &Client) -> Api<DynamicObject> {
        objects::api(client, self.name(), API_VERSION, KIND)
    }

    fn role_bindings(&self, client: &Client) -> Api<DynamicObject> {
        objects::api(
            client,
            self.name(),
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        )
    }

    /// Waits (30 s at most) until the admission policy refuses a decision
    /// naming someone else: a policy just applied is enforced a moment
    /// later. Each try takes a fresh request, as a try that lands decides
    /// its request for good.
    async fn await_enforced(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        for i in 0.. {
            let name = format!("probe-{i}");
            self.ask(&name, DAVE, in_seconds(600)).await;
            let answer = self
                .record(
                    &self.carol,
                    &name,
                    decision("Approved", "mallory@example.com", &[]),
                )
                .await;
            match answer {
                Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("mallory") => {
                    return;
                }
                other => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the admission policy is still not enforced after 30 s: {other:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Dave asks for READER on Cluster orders for `subject` until `expires`.
    async fn ask(&self, name: &str, subject: &str, expires: jiff::Timestamp) {
        self.ask_for(
            name,
            json!({"kind": "User", "name": subject}),
            READER,
            expires,
        )
        .await
        .unwrap_or_else(|e| panic!("dave asks for {name}: {e}"));
    }

    async fn ask_for(
        &self,
        name: &str,
        subject: Value,
        role: &str,
        expires: jiff::Timestamp,
    ) -> Result<DynamicObject, kube::Error> {
        let request = json!({
            "apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name},
            "spec": {
                "cluster": {"name": "orders"}, "clusterRole": role, "subject": subject,
                "expiresAt": expires.to_string(), "reason": "an incident on orders",
            },
        });
        self.requests(&self.dave)
            .create(
                &PostParams::default(),
                &serde_json::from_value(request).expect("a request"),
            )
            .await
    }

    /// A status write of `client` on request `name`, as an approver makes
    /// it: a JSON merge patch of the status subresource.
    async fn record(
        &self,
        client: &Client,
        name: &str,
        status: Value,
    ) -> Result<DynamicObject, kube::Error> {
        self.requests(client)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "status": status })),
            )
            .await
    }

    /// `who` creates the RoleBinding of an approval of `name` binding
    /// `subjects` to READER: the request its controller, labelled for it.
    async fn bind_as(&self, who: &Client, name: &str, subjects: Value) -> Value {
        let request = get(&self.requests(who), name).await;
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
            "subjects": subjects,
        });
        let created = self
            .role_bindings(who)
            .create(
                &PostParams::default(),
                &serde_json::from_value(binding).expect("a RoleBinding"),
            )
            .await
            .unwrap_or_else(|e| panic!("creating the RoleBinding of {name}: {e}"));
        serde_json::to_value(created).expect("JSON")
    }

    /// `who` approves `name` as an approver does: the RoleBinding binding
    /// exactly the subject to READER first, then the decision, stamped with
    /// who they are.
    async fn approve_as(&self, who: &Client, name: &str, subject: &str) -> Value {
        let binding = self.bind_as(who, name, json!([user(subject)])).await;
        let (username, groups) = whoami(who).await;
        self.record(who, name, decision("Approved", &username, &groups))
            .await
            .unwrap_or_else(|e| panic!("{username} approves {name}: {e}"));
        binding
    }

    async fn approve(&self, name: &str) -> Value {
        self.approve_as(&self.carol, name, DAVE).await
    }

    /// Waits for RoleBindingSynced with `status` and `reason`.
    async fn synced(&self, name: &str, status: &str, reason: &str) -> Value {
        wait_for(
            &self.requests(&self.admin),
            name,
            &[("RoleBindingSynced", status, reason)],
        )
        .await
    }

    /// The RoleBinding `name`, if it exists.
    async fn role_binding(&self, name: &str) -> Option<Value> {
        self.role_bindings(&self.admin)
            .get_opt(name)
            .await
            .expect("reading a RoleBinding")
            .map(|o| serde_json::to_value(o).expect("JSON"))
    }

    /// Waits until the RoleBinding `name` is gone.
    async fn gone(&self, name: &str) {
        eventually(&format!("RoleBinding {name} gone"), async || {
            match self.role_binding(name).await {
                None => Ok(()),
                Some(rb) => Err(rb["metadata"]["uid"].clone()),
            }
        })
        .await;
    }

    /// Waits until the authorizer lets dave list Clusters here, or not.
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

    async fn events(&self, name: &str) -> Vec<TimedEvent> {
        events_of(&self.admin, self.name(), KIND, name).await
    }

    /// Waits until an Event of `reason` about `name` is published (the
    /// status write that reports a transition comes first).
    async fn event(&self, name: &str, reason: &str) -> Vec<TimedEvent> {
        eventually(&format!("an Event {reason} about {name}"), async || {
            let events = self.events(name).await;
            if events.iter().any(|e| e.reason == reason) {
                Ok(events)
            } else {
                Err(events)
            }
        })
        .await
    }
}

/// Sleeps until five seconds before `at`: a wait for what happens at `at`
/// then fits the harness's 30 s, however long the setup took.
async fn sleep_until_shortly_before(at: jiff::Timestamp) {
    let until = jiff::Timestamp::now().duration_until(at) - jiff::SignedDuration::from_secs(5);
    if until.is_positive() {
        tokio::time::sleep(std::time::Duration::try_from(until).expect("positive")).await;
    }
}

fn in_seconds(seconds: i64) -> jiff::Timestamp {
    // Whole seconds, as `date-time` is usually written.
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(seconds);
    jiff::Timestamp::from_second(t.as_second()).expect("a time")
}

fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

fn decision(outcome: &str, username: &str, groups: &[String]) -> Value {
    json!({"decision": {
        "outcome": outcome,
        "decidedBy": {"username": username, "groups": groups},
        "comment": "for the incident on orders",
    }})
}

/// How many Events of `reason` were published (a series counts each).
fn count(events: &[TimedEvent], reason: &str) -> i32 {
    events
        .iter()
        .filter(|e| e.reason == reason)
        .map(|e| e.count)
        .sum()
}

fn the_one<'a>(events: &'a [TimedEvent], reason: &str) -> &'a TimedEvent {
    assert_eq!(count(events, reason), 1, "one {reason} Event: {events:#?}");
    events
        .iter()
        .find(|e| e.reason == reason)
        .expect("the Event")
}

fn creation(object: &Value) -> jiff::Timestamp {
    object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("a creation time")
}

fn message(object: &Value, type_: &str) -> String {
    condition(object, type_)
        .map(|c| c.message)
        .unwrap_or_default()
}

#[tokio::test]
async fn granted_access_works_until_expires_at_and_is_taken_away_then() {
    let scene = Scene::new("access-expiry").await;
    let host = Host::start(scene.name()).await;
    // Long enough to be granted first on a loaded CI machine (12 s was not).
    let expires = in_seconds(40);
    scene.ask("orders", DAVE, expires).await;
    let pending = scene.synced("orders", "True", "AwaitingDecision").await;
    assert!(harness::has(&pending, "Ready", "True", "AsExpected"));
    assert!(
        message(&pending, "ConfigurationValid").contains("the grant covers every Cluster"),
        "{pending}"
    );
    assert!(!may(&scene.admin, DAVE, "list", scene.name()).await);

    scene.approve("orders").await;
    let granted = scene.synced("orders", "True", "AccessGranted").await;
    assert_eq!(granted["status"]["phase"], "Approved");
    assert_eq!(granted["status"]["roleBindings"], json!(["orders"]));
    scene.dave_may_list(true).await;

    // At spec.expiresAt the host deletes the RoleBinding, by itself: no
    // watched change happens then, and the resync is ten minutes away.
    sleep_until_shortly_before(expires).await;
    let expired = scene.synced("orders", "True", "AccessExpired").await;
    assert!(harness::has(&expired, "Ready", "True", "AsExpected"));
    assert_eq!(expired["status"]["phase"], "Expired");
    scene.gone("orders").await;
    scene.dave_may_list(false).await;
    let events = scene.event("orders", "AccessExpired").await;
    let deleted = the_one(&events, "RoleBindingDeleted");
    assert_eq!(deleted.type_, "Normal");
    assert!(
        deleted
            .note
            .contains(&format!("the access expired at {expires}")),
        "{deleted:?}"
    );
    assert!(
        deleted.time >= expires,
        "deleted at {}, before spec.expiresAt {expires}",
        deleted.time
    );
    the_one(&events, "AccessExpired");
    assert!(
        events.iter().all(|e| e.type_ == "Normal"),
        "no Warning: {events:#?}"
    );
    settle().await;
    assert_eq!(
        count(&scene.events("orders").await, "RoleBindingDeleted"),
        1
    );
    host.finish();
}

#[tokio::test]
async fn a_revocation_takes_the_access_away_at_once() {
    let scene = Scene::new("access-revoke").await;
    let host = Host::start(scene.name()).await;
    scene.ask("orders", DAVE, in_seconds(3_600)).await;
    scene.approve("orders").await;
    scene.synced("orders", "True", "AccessGranted").await;
    scene.dave_may_list(true).await;

    let (username, groups) = whoami(&scene.carol).await;
    scene
        .record(
            &scene.carol,
            "orders",
            json!({"revocation": {"revokedBy": {"username": username, "groups": groups}}}),
        )
        .await
        .expect("carol revokes");
    let revoked = scene.synced("orders", "True", "AccessRevoked").await;
    assert!(message(&revoked, "RoleBindingSynced").contains(&format!("Revoked by {CAROL}")));
    scene.gone("orders").await;
    scene.dave_may_list(false).await;
    let events = scene.event("orders", "RoleBindingDeleted").await;
    let deleted = the_one(&events, "RoleBindingDeleted");
    assert!(
        deleted
            .note
            .contains(&format!("the access was revoked by {CAROL}")),
        "{deleted:?}"
    );
    assert_eq!(count(&events, "AccessExpired"), 0);
    host.finish();
}

#[tokio::test]
async fn a_drifted_role_binding_is_deleted_and_never_recreated() {
    let scene = Scene::new("access-drift").await;
    let host = Host::start(scene.name()).await;
    scene.ask("orders", DAVE, in_seconds(3_600)).await;
    scene.approve("orders").await;
    scene.synced("orders", "True", "AccessGranted").await;

    // Someone adds mallory to the granted RoleBinding.
    objects::merge(
        &scene.role_bindings(&scene.admin),
        "orders",
        json!({"subjects": [user(DAVE), user("mallory@example.com")]}),
    )
    .await;
    let drifted = scene.synced("orders", "False", "RoleBindingDrifted").await;
    assert!(harness::has(
        &drifted,
        "Ready",
        "False",
        "RoleBindingDrifted"
    ));
    assert!(harness::has(&drifted, "Stalled", "False", "AsExpected"));
    assert!(
        message(&drifted, "RoleBindingSynced").contains("User mallory@example.com"),
        "{drifted}"
    );
    scene.gone("orders").await;
    scene.dave_may_list(false).await;
    let events = scene.event("orders", "RoleBindingDeleted").await;
    let deleted = the_one(&events, "RoleBindingDeleted");
    assert!(deleted.note.contains("fail closed"), "{deleted:?}");
    assert_eq!(the_one(&events, "RoleBindingDrifted").type_, "Warning");

    settle().await;
    assert!(
        scene.role_binding("orders").await.is_none(),
        "never recreated"
    );
    let after = get(&scene.requests(&scene.admin), "orders").await;
    assert!(harness::has(
        &after,
        "RoleBindingSynced",
        "False",
        "RoleBindingDrifted"
    ));
    assert_eq!(
        count(&scene.events("orders").await, "RoleBindingDeleted"),
        1
    );
    host.finish();
}

#[tokio::test]
async fn a_role_binding_deleted_by_hand_is_missing_and_never_recreated() {
    let scene = Scene::new("access-missing").await;
    let host = Host::start(scene.name()).await;
    scene.ask("orders", DAVE, in_seconds(3_600)).await;
    scene.approve("orders").await;
    scene.synced("orders", "True", "AccessGranted").await;
    objects::delete(&scene.role_bindings(&scene.admin), "orders").await;
    let missing = scene.synced("orders", "False", "RoleBindingMissing").await;
    assert!(harness::has(
        &missing,
        "Ready",
        "False",
        "RoleBindingMissing"
    ));
    settle().await;
    assert!(
        scene.role_binding("orders").await.is_none(),
        "never recreated"
    );
    let events = scene.events("orders").await;
    assert_eq!(the_one(&events, "RoleBindingMissing").type_, "Warning");
    assert_eq!(
        count(&events, "RoleBindingDeleted"),
        0,
        "the host deleted nothing"
    );
    host.finish();
}

#[tokio::test]
async fn an_approval_in_flight_is_kept_for_the_grace_and_an_orphan_deleted_after_it() {
    const GRACE: i64 = 8;
    let scene = Scene::new("access-orphan").await;
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let host = Host::start_overriding(
        &kubeconfig,
        &["--namespaces", scene.name()],
        &[&format!("PgAccessRequest.orphanGraceSeconds={GRACE}")],
        scene.name(),
    )
    .await;
    scene.ask("kept", DAVE, in_seconds(3_600)).await;
    scene.ask("orphan", DAVE, in_seconds(3_600)).await;
    scene.synced("kept", "True", "AwaitingDecision").await;
    scene.synced("orphan", "True", "AwaitingDecision").await;

    // An approval recorded inside the grace: its RoleBinding is kept.
    scene.approve("kept").await;
    scene.synced("kept", "True", "AccessGranted").await;

    // An approval whose status write fails (the policy refuses a decision
    // naming someone else): its RoleBinding is an orphan.
    let orphan = scene
        .bind_as(&scene.carol, "orphan", json!([user(DAVE)]))
        .await;
    let refused = scene
        .record(
            &scene.carol,
            "orphan",
            decision("Approved", "someone@example.com", &[]),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.code == 403),
        "{refused:?}"
    );
    let orphaned = scene.synced("orphan", "True", "RoleBindingOrphaned").await;
    assert!(harness::has(&orphaned, "Ready", "True", "AsExpected"));
    scene.gone("orphan").await;
    let events = scene.event("orphan", "RoleBindingDeleted").await;
    let deleted = the_one(&events, "RoleBindingDeleted");
    assert!(
        deleted.note.contains(&format!(
            "no approval was recorded within the {GRACE} s grace"
        )),
        "{deleted:?}"
    );
    let grace_end = creation(&orphan) + jiff::SignedDuration::from_secs(GRACE);
    assert!(
        deleted.time >= grace_end,
        "deleted at {}, inside the grace (it ends at {grace_end})",
        deleted.time
    );

    settle().await;
    assert!(
        scene.role_binding("kept").await.is_some(),
        "the approval's RoleBinding is kept"
    );
    let kept = get(&scene.requests(&scene.admin), "kept").await;
    assert!(harness::has(
        &kept,
        "RoleBindingSynced",
        "True",
        "AccessGranted"
    ));
    assert_eq!(count(&scene.events("kept").await, "RoleBindingDeleted"), 0);
    host.finish();
}

#[tokio::test]
async fn an_approval_by_the_subject_is_refused_and_revoked() {
    let scene = Scene::new("access-self").await;
    // Dave is an approver too, here: four eyes still hold.
    approver(&scene.admin, scene.name(), DAVE, READER).await;
    let host = Host::start(scene.name()).await;
    scene.ask("orders", DAVE, in_seconds(3_600)).await;
    scene.approve_as(&scene.dave, "orders", DAVE).await;
    let refused = scene.synced("orders", "True", "SelfApprovalRefused").await;
    assert_eq!(refused["status"]["phase"], "Revoked");
    assert!(harness::has(&refused, "Ready", "True", "AsExpected"));
    scene.gone("orders").await;
    scene.dave_may_list(false).await;
    let events = scene.event("orders", "SelfApprovalRefused").await;
    assert_eq!(the_one(&events, "SelfApprovalRefused").type_, "Warning");
    assert!(
        the_one(&events, "RoleBindingDeleted")
            .note
            .contains("the request's own subject (four eyes)")
    );
    settle().await;
    let events = scene.events("orders").await;
    assert_eq!(count(&events, "SelfApprovalRefused"), 1);
    assert_eq!(count(&events, "RoleBindingDeleted"), 1);
    host.finish();
}

#[tokio::test]
async fn a_request_whose_cluster_is_gone_still_expires() {
    let scene = Scene::new("access-nocluster").await;
    let host = Host::start(scene.name()).await;
    let expires = in_seconds(40);
    scene.ask("orders", DAVE, expires).await;
    scene.approve("orders").await;
    scene.synced("orders", "True", "AccessGranted").await;
    objects::delete(
        &objects::api(
            &scene.admin,
            scene.name(),
            "postgresql.cnpg.io/v1",
            "Cluster",
        ),
        "orders",
    )
    .await;
    let gone = wait_for(
        &scene.requests(&scene.admin),
        "orders",
        &[
            ("ConfigurationValid", "False", "ClusterNotFound"),
            ("Ready", "False", "ClusterNotFound"),
            ("Stalled", "False", "AsExpected"),
            ("RoleBindingSynced", "True", "AccessGranted"),
        ],
    )
    .await;
    assert!(message(&gone, "ConfigurationValid").contains("expiry and revocation keep working"));
    sleep_until_shortly_before(expires).await;
    scene.synced("orders", "True", "AccessExpired").await;
    scene.gone("orders").await;
    let events = scene.event("orders", "AccessExpired").await;
    let deleted = the_one(&events, "RoleBindingDeleted");
    assert!(deleted.time >= expires, "{deleted:?}");
    the_one(&events, "ClusterNotFound");
    host.finish();
}

#[tokio::test]
async fn bad_input_is_named_and_nothing_the_request_does_not_own_is_deleted() {
    let scene = Scene::new("access-bad").await;
    let host = Host::start(scene.name()).await;

    // A subject of an unknown kind: the API server refuses the request.
    let robot = scene
        .ask_for(
            "robot",
            json!({"kind": "Robot", "name": "r2d2"}),
            READER,
            in_seconds(600),
        )
        .await;
    match robot {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(e.message.contains("spec.subject.kind"), "{}", e.message);
        }
        other => panic!("a Robot subject is refused: {other:?}"),
    }

    // An expiresAt in the past at creation: expired on arrival.
    scene.ask("late", DAVE, in_seconds(-60)).await;
    let late = scene.synced("late", "True", "AccessExpired").await;
    assert!(message(&late, "RoleBindingSynced").contains("Expired on arrival: spec.expiresAt"));
    assert!(harness::has(&late, "Ready", "True", "AsExpected"));

    // A ClusterRole that does not exist: named in the message.
    scene
        .ask_for(
            "nosuchrole",
            json!({"kind": "User", "name": DAVE}),
            "pgaccess-test-no-such-role",
            in_seconds(600),
        )
        .await
        .expect("the request is admitted");
    let nosuch = scene.synced("nosuchrole", "True", "AwaitingDecision").await;
    assert!(
        message(&nosuch, "RoleBindingSynced")
            .contains("ClusterRole pgaccess-test-no-such-role (spec.clusterRole) does not exist"),
        "{nosuch}"
    );

    // The spec is immutable: nobody extends an access, an administrator
    // included.
    let extended = scene
        .requests(&scene.admin)
        .patch(
            "nosuchrole",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"expiresAt": in_seconds(86_400).to_string()}})),
        )
        .await;
    match extended {
        Err(kube::Error::Api(e)) => {
            assert!(e.message.contains("spec is immutable"), "{}", e.message)
        }
        other => panic!("extending expiresAt is refused: {other:?}"),
    }

    // A RoleBinding carrying the request's label, made by an administrator
    // (no controller): named, and left when the request's own goes.
    let expires = in_seconds(10);
    scene.ask("orders", DAVE, expires).await;
    create(
        &scene.admin,
        scene.name(),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "orders-by-hand", "labels": {LABEL: "orders"}},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
               "subjects": [user("erin@example.com")]}),
    )
    .await;
    scene.approve("orders").await;
    let granted = scene.synced("orders", "True", "AccessGranted").await;
    assert!(
        message(&granted, "RoleBindingSynced")
            .contains("RoleBinding orders-by-hand (controlled by no object)"),
        "{granted}"
    );
    scene.synced("orders", "True", "AccessExpired").await;
    scene.gone("orders").await;
    settle().await;
    assert!(
        scene.role_binding("orders-by-hand").await.is_some(),
        "not the request's: never deleted"
    );
    assert_eq!(
        count(&scene.events("orders").await, "RoleBindingDeleted"),
        1
    );
    host.finish();
}

#[tokio::test]
async fn decisions_are_stamped_with_their_writer_written_once_and_need_decide() {
    let scene = Scene::new("access-decide").await;
    let host = Host::start(scene.name()).await;
    scene.ask("orders", DAVE, in_seconds(3_600)).await;
    scene.synced("orders", "True", "AwaitingDecision").await;

    // Dave may patch nothing of the status, and holds no `decide`.
    let (dave, dave_groups) = whoami(&scene.dave).await;
    let by_dave = scene
        .record(
            &scene.dave,
            "orders",
            decision("Approved", &dave, &dave_groups),
        )
        .await;
    assert!(
        matches!(&by_dave, Err(kube::Error::Api(e)) if e.code == 403),
        "{by_dave:?}"
    );

    // Carol's decision must carry her groups, exactly.
    let (carol, groups) = whoami(&scene.carol).await;
    let without_groups = scene
        .record(&scene.carol, "orders", decision("Denied", &carol, &[]))
        .await;
    match without_groups {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403);
            assert!(
                e.message.contains("the recorded groups must be exactly"),
                "{}",
                e.message
            );
        }
        other => panic!("a decision without the writer's groups is refused: {other:?}"),
    }
    scene
        .record(&scene.carol, "orders", decision("Denied", &carol, &groups))
        .await
        .expect("carol denies");
    let denied = scene.synced("orders", "True", "AccessDenied").await;
    assert!(harness::has(&denied, "Ready", "True", "AsExpected"));

    // Written once: not changed, not removed, not even by an administrator.
    let changed = scene
        .record(&scene.admin, "orders", decision("Approved", "admin", &[]))
        .await;
    match changed {
        Err(kube::Error::Api(e)) => assert!(e.message.contains("written once"), "{}", e.message),
        other => panic!("a decision changed is refused: {other:?}"),
    }
    let removed = scene
        .record(&scene.admin, "orders", json!({"decision": null}))
        .await;
    assert!(matches!(&removed, Err(kube::Error::Api(e)) if e.message.contains("written once")));
    assert_eq!(
        get(&scene.requests(&scene.admin), "orders").await["status"]["decision"]["outcome"],
        "Denied"
    );
    // Withdrawn by its requester: gone, with whatever it owned.
    scene
        .requests(&scene.dave)
        .delete("orders", &DeleteParams::default())
        .await
        .expect("dave withdraws his request");
    host.finish();
}
