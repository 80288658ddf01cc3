//! Who may gate a parent (docs/design.md, "The three gates"): the
//! annotations `reconciler.dev/mode` and `reconciler.dev/approval` hold back
//! what the host does for a parent, so `deploy/gates-admission.yaml` (a
//! native ValidatingAdmissionPolicy, applied here as shipped) lets only a
//! user holding the verb `approve` on the parent's kind set, change or
//! remove either. Nothing of the host runs here: the users attack the real
//! API server, impersonated, with the shipped roles
//! (`deploy/accessrequest-rbac.yaml`, `deploy/generated/rbac.yaml`) on
//! PgAccessRequests, the CRD as `deploy/generated/` ships it.
//!
//! Every refusal is the API server's, and says why: the tests assert on
//! the message.

use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use reconciler_host_harness::access_requests::{apply, bind, deploy_documents, requester};
use reconciler_host_harness::identity;
use reconciler_testsupport::{Access, TestNamespace, await_access, client_as};
use serde_json::{Value, json};

/// A requester: `pgaccessrequest-requester` (create, get, delete), no more.
const RITA: &str = "rita@example.com";
/// An approver of the host's plans for PgAccessRequests: the requester role,
/// `reconciler-plan-approver-pgaccessrequests` (the verb `approve`) and the
/// patcher Role (to edit a request afterwards).
const ALICE: &str = "alice@example.com";
/// The requester role and a Role granting patch and update on
/// PgAccessRequests: may edit a request, not `approve`.
const PAT: &str = "pat@example.com";

const MODE: &str = "reconciler.dev/mode";
const APPROVAL: &str = "reconciler.dev/approval";

/// The Role granting patch and update on PgAccessRequests, bound to `PAT`
/// and `ALICE` in each test's namespace.
const PATCHER_ROLE: &str = "pgaccessrequest-patcher";

fn request_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("pgtoolbox.fyannk.dev", "v1alpha1", "PgAccessRequest"),
        "pgaccessrequests",
    )
}

/// A valid PgAccessRequest `name` (guests/pgaccessrequest/README.md,
/// "Spec") carrying `annotations`.
fn request(name: &str, annotations: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1",
        "kind": "PgAccessRequest",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "cluster": {"name": "orders"},
            "clusterRole": "pg-reader",
            "subject": {"kind": "User", "name": RITA},
            "expiresAt": "2036-11-29T13:00:00Z",
            "reason": "investigate slow queries",
        },
    }))
    .expect("a PgAccessRequest")
}

/// A namespace with the CRD, the roles and the gates' policy installed and
/// enforced, and a client for each identity.
struct Fixture {
    ns: TestNamespace,
    admin: Api<DynamicObject>,
    rita: Api<DynamicObject>,
    alice: Api<DynamicObject>,
    pat: Api<DynamicObject>,
}

impl Fixture {
    async fn new(prefix: &str) -> Fixture {
        let client = reconciler_testsupport::client()
            .await
            .expect("the test apiserver");
        for crd in deploy_documents("generated/pgaccessrequest-crd.yaml") {
            reconciler_testsupport::install_crd(
                &client,
                serde_json::from_value(crd).expect("a CRD"),
            )
            .await
            .expect("installing the PgAccessRequest CRD");
        }
        let mut manifests = deploy_documents("accessrequest-rbac.yaml");
        manifests.extend(
            reconciler_host_harness::plans::approver_roles()
                .into_iter()
                .filter(|d| d["metadata"]["name"] == "reconciler-plan-approver-pgaccessrequests"),
        );
        assert_eq!(
            manifests.len(),
            3,
            "the requester, decider and plan approver roles"
        );
        manifests.extend(deploy_documents("gates-admission.yaml"));
        for manifest in &manifests {
            apply(&client, "", manifest).await;
        }

        let ns = TestNamespace::new(prefix).await.expect("a namespace");
        let name = ns.name();
        for user in [RITA, ALICE, PAT] {
            requester(&client, name, user).await;
        }
        bind(
            &client,
            name,
            ALICE,
            "reconciler-plan-approver-pgaccessrequests",
        )
        .await;
        apply(
            &client,
            name,
            &json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": PATCHER_ROLE, "namespace": name},
                "rules": [{"apiGroups": ["pgtoolbox.fyannk.dev"], "resources": ["pgaccessrequests"],
                           "verbs": ["patch", "update"]}],
            }),
        )
        .await;
        for (binding, user) in [("pat-patcher", PAT), ("alice-patcher", ALICE)] {
            identity::apply_rbac(
                &client,
                identity::role_binding(name, binding, "Role", PATCHER_ROLE, user),
            )
            .await;
        }
        let access = |verb| Access {
            verb,
            group: "pgtoolbox.fyannk.dev",
            resource: "pgaccessrequests",
            namespace: Some(name),
        };
        for (user, wanted) in [
            (ALICE, vec![access("approve"), access("patch")]),
            (PAT, vec![access("patch"), access("update")]),
        ] {
            await_access(&client, user, &[], &wanted)
                .await
                .expect("the grants");
        }

        let api = |c: Client| Api::namespaced_with(c, name, &request_resource());
        let fixture = Fixture {
            admin: api(client.clone()),
            rita: api(client_as(RITA, &[]).await.unwrap()),
            alice: api(client_as(ALICE, &[]).await.unwrap()),
            pat: api(client_as(PAT, &[]).await.unwrap()),
            ns,
        };
        fixture.await_enforced().await;
        fixture
    }

    /// Waits (up to 30 s) until the policy refuses Rita a gated request: a
    /// policy just created is enforced a moment later. Each try takes a
    /// fresh name, since a try admitted before then stays.
    async fn await_enforced(&self) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        for i in 0.. {
            let probe = request(&format!("probe-{i}"), json!({APPROVAL: "manual"}));
            match self.rita.create(&PostParams::default(), &probe).await {
                Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("approve") => {
                    return;
                }
                other => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the gates' admission policy is still not enforced after 30 s: {other:?}"
                ),
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// The annotations of request `name`, as the server holds it.
    async fn annotations(&self, name: &str) -> Value {
        let object = self.admin.get(name).await.expect("the request");
        json!(object.metadata.annotations.unwrap_or_default())
    }

    async fn finish(self) {
        self.ns.cleanup().await.expect("cleanup");
    }
}

async fn annotate(
    api: &Api<DynamicObject>,
    name: &str,
    annotations: Value,
) -> Result<DynamicObject, kube::Error> {
    let patch = json!({"metadata": {"annotations": annotations}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

/// The API server's refusal: 403, and a message holding every one of
/// `says`.
fn refused(answer: Result<DynamicObject, kube::Error>, says: &[&str]) -> String {
    match answer {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403, "{e:?}");
            for s in says {
                assert!(e.message.contains(s), "{s:?} not in {:?}", e.message);
            }
            e.message
        }
        other => panic!("expected a refusal (403), got {other:?}"),
    }
}

/// The rule the policy's message names, for `user` writing `gated` on the
/// request `name` in `namespace`.
fn rule(user: &str, gated: &str, name: &str, namespace: &str) -> [String; 2] {
    [
        format!("\"{user}\" may not set, change or remove {gated} on PgAccessRequest {name}"),
        format!(
            "needs the verb approve on pgaccessrequests.pgtoolbox.fyannk.dev in namespace {namespace}"
        ),
    ]
}

fn says(rule: &[String]) -> Vec<&str> {
    rule.iter().map(String::as_str).collect()
}

/// A requester may not create a request that holds back the host's work
/// (approval manual, mode observe) nor one with a mode that is no gate:
/// each is refused naming the annotation, the kind, the request and the
/// verb needed, and nothing is created.
#[tokio::test]
async fn a_requester_may_not_create_a_gated_request() {
    let fx = Fixture::new("gates-create").await;
    let ns = fx.ns.name().to_string();
    for (name, annotation, value) in [
        ("manual", APPROVAL, "manual"),
        ("observe", MODE, "observe"),
        ("bogus", MODE, "bogus"),
        ("empty", APPROVAL, ""),
    ] {
        let message = refused(
            fx.rita
                .create(
                    &PostParams::default(),
                    &request(name, json!({annotation: value})),
                )
                .await,
            &says(&rule(RITA, annotation, name, &ns)),
        );
        eprintln!("{annotation}: {value:?} by a requester: {message}");
        assert!(
            matches!(fx.admin.get_opt(name).await, Ok(None)),
            "{name} was created"
        );
    }
    // Both at once: both named.
    refused(
        fx.rita
            .create(
                &PostParams::default(),
                &request("both", json!({MODE: "observe", APPROVAL: "manual"})),
            )
            .await,
        &says(&rule(RITA, &format!("{MODE}, {APPROVAL}"), "both", &ns)),
    );
    fx.finish().await;
}

/// The policy refuses gates only: the requester's plain request is
/// admitted, and the requester may withdraw it.
#[tokio::test]
async fn a_requester_may_create_and_delete_an_ungated_request() {
    let fx = Fixture::new("gates-plain").await;
    fx.rita
        .create(&PostParams::default(), &request("plain", json!({})))
        .await
        .expect("Rita asks for access");
    let mut bare = request("bare", json!({}));
    bare.metadata.annotations = None;
    fx.rita
        .create(&PostParams::default(), &bare)
        .await
        .expect("a request without annotations at all");
    for name in ["plain", "bare"] {
        fx.rita
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("Rita withdraws {name}: {e}"));
        assert!(
            matches!(fx.admin.get_opt(name).await, Ok(None)),
            "{name} is gone"
        );
    }
    fx.finish().await;
}

/// An annotation that is no gate, under `reconciler.dev/` or elsewhere, is
/// the requester's to write.
#[tokio::test]
async fn an_ordinary_annotation_is_admitted() {
    let fx = Fixture::new("gates-ordinary").await;
    let ordinary = json!({
        "team.example.com/ticket": "OPS-1234",
        "reconciler.dev/note": "not a gate",
    });
    fx.rita
        .create(&PostParams::default(), &request("ticket", ordinary.clone()))
        .await
        .expect("Rita's annotated request");
    assert_eq!(fx.annotations("ticket").await, ordinary);
    fx.finish().await;
}

/// A user holding `approve` gates a request; a user who may edit the
/// request but not `approve` cannot change the gate, remove it or add the
/// other (by a merge patch or a whole update), and may still change an
/// ordinary annotation, the gate left as it was. The approver may then
/// change and remove it.
#[tokio::test]
async fn only_an_approver_sets_changes_or_removes_a_gate() {
    let fx = Fixture::new("gates-edit").await;
    let ns = fx.ns.name().to_string();
    fx.alice
        .create(
            &PostParams::default(),
            &request("gated", json!({MODE: "observe"})),
        )
        .await
        .expect("Alice, holding approve, gates a request");

    let message = refused(
        annotate(&fx.pat, "gated", json!({MODE: "apply"})).await,
        &says(&rule(PAT, MODE, "gated", &ns)),
    );
    eprintln!("a changed gate: {message}");
    let message = refused(
        annotate(&fx.pat, "gated", json!({MODE: null})).await,
        &says(&rule(PAT, MODE, "gated", &ns)),
    );
    eprintln!("a removed gate: {message}");
    refused(
        annotate(&fx.pat, "gated", json!({APPROVAL: "manual"})).await,
        &says(&rule(PAT, APPROVAL, "gated", &ns)),
    );
    let mut whole = fx.pat.get("gated").await.expect("Pat reads the request");
    whole.metadata.annotations.as_mut().unwrap().remove(MODE);
    refused(
        fx.pat
            .replace("gated", &PostParams::default(), &whole)
            .await,
        &says(&rule(PAT, MODE, "gated", &ns)),
    );
    assert_eq!(fx.annotations("gated").await, json!({MODE: "observe"}));

    annotate(
        &fx.pat,
        "gated",
        json!({"team.example.com/ticket": "OPS-1"}),
    )
    .await
    .expect("Pat changes an ordinary annotation");
    assert_eq!(
        fx.annotations("gated").await,
        json!({MODE: "observe", "team.example.com/ticket": "OPS-1"})
    );

    annotate(
        &fx.alice,
        "gated",
        json!({MODE: "apply", APPROVAL: "manual"}),
    )
    .await
    .expect("Alice changes the gates");
    annotate(&fx.alice, "gated", json!({MODE: null, APPROVAL: null}))
        .await
        .expect("Alice removes the gates");
    assert_eq!(
        fx.annotations("gated").await,
        json!({"team.example.com/ticket": "OPS-1"})
    );
    fx.finish().await;
}
