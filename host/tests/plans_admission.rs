//! Plans and approval, first slice (docs/design.md, "Plans and approval"):
//! the ReconcilePlan CRD's rules and the admission policy, as `deploy/`
//! ships them, against the real API server. Nothing of the host runs here:
//! the test writes plans as the host would (impersonating the host's
//! ServiceAccount, which `deploy/plans-rbac.yaml` grants `manage`) and
//! decides them as reviewers would (users bound to the shipped roles).
//!
//! Every refusal is the API server's, and says why: the tests assert on
//! the message.
//!
//! The reviewer CLI (`reconciler-host plan show|approve|deny`) is run here
//! too, as the built binary, with a kubeconfig impersonating each reviewer.

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use reconciler_host_harness::identity;
use reconciler_host_harness::paths::target_tmpdir;
use reconciler_host_harness::plans::{self, install};
use reconciler_testsupport::{Access, TestNamespace, await_access, client_as};
use serde_json::{Value, json};

/// A reviewer bound to the reviewer role and the EvidenceAgent approver role.
const ALICE: &str = "alice@example.com";
/// A reviewer bound to the reviewer role only: may patch plan status, may
/// not approve.
const BOB: &str = "bob@example.com";
/// The host, as `deploy/operator.yaml` runs it; `deploy/plans-rbac.yaml`
/// binds it `reconciler-plan-manager`.
const HOST: &str = "system:serviceaccount:reconciler-system:reconciler-host";
const HOST_GROUPS: &[&str] = &[
    "system:serviceaccounts",
    "system:serviceaccounts:reconciler-system",
];

fn plan_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("reconciler.dev", "v1alpha1", "ReconcilePlan"),
        "reconcileplans",
    )
}

/// A namespace with the plans' manifests installed and enforced, and a
/// client for each identity.
struct Fixture {
    ns: TestNamespace,
    admin: Api<DynamicObject>,
    alice: Api<DynamicObject>,
    bob: Api<DynamicObject>,
    host: Api<DynamicObject>,
}

impl Fixture {
    async fn new(prefix: &str) -> Fixture {
        let client = reconciler_testsupport::client()
            .await
            .expect("the test apiserver");
        install(&client).await;
        let ns = TestNamespace::new(prefix).await.expect("a namespace");
        for (user, role) in [
            (ALICE, "reconciler-plan-reviewer"),
            (ALICE, "reconciler-plan-approver-evidenceagents"),
            (BOB, "reconciler-plan-reviewer"),
        ] {
            let binding = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": format!("{}-{role}", user.split('@').next().unwrap())},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            });
            Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(client.clone(), ns.name())
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(binding).unwrap(),
                )
                .await
                .expect("binding a reviewer");
        }
        let plans = |verb, resource| Access {
            verb,
            group: "reconciler.dev",
            resource,
            namespace: Some(ns.name()),
        };
        let approve = Access {
            verb: "approve",
            group: "pgtoolbox.fyannk.dev",
            resource: "evidenceagents",
            namespace: Some(ns.name()),
        };
        for (user, groups, wanted) in [
            (
                ALICE,
                &[][..],
                vec![plans("patch", "reconcileplans/status"), approve],
            ),
            (BOB, &[][..], vec![plans("patch", "reconcileplans/status")]),
            (
                HOST,
                HOST_GROUPS,
                vec![
                    plans("manage", "reconcileplans"),
                    plans("patch", "reconcileplans/status"),
                ],
            ),
        ] {
            await_access(&client, user, groups, &wanted)
                .await
                .expect("the grants");
        }
        let api = async |c: Client| Api::namespaced_with(c, ns.name(), &plan_resource());
        let fixture = Fixture {
            admin: api(client.clone()).await,
            alice: api(client_as(ALICE, &[]).await.unwrap()).await,
            bob: api(client_as(BOB, &[]).await.unwrap()).await,
            host: api(client_as(HOST, HOST_GROUPS).await.unwrap()).await,
            ns,
        };
        fixture.await_enforced().await;
        fixture
    }

    /// Waits (up to 30 s) until the policy refuses Bob's approval: a policy
    /// just created is enforced a moment later. Each try takes a fresh plan,
    /// since a try that lands decides its plan for good.
    async fn await_enforced(&self) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        for i in 0.. {
            let name = format!("probe-{i}");
            self.open(&name).await;
            let answer = patch_status(&self.bob, &name, decision("Approved", BOB)).await;
            match answer {
                Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("approve") => {
                    return;
                }
                other => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the admission policy is still not enforced after 30 s: {other:?}"
                ),
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// A plan for EvidenceAgent `orders`, created and opened as the host
    /// does: Pending, with Approved=False.
    async fn open(&self, name: &str) {
        let plan = json!({
            "apiVersion": "reconciler.dev/v1alpha1",
            "kind": "ReconcilePlan",
            "metadata": {"name": name},
            "spec": {
                "parent": {
                    "group": "pgtoolbox.fyannk.dev",
                    "version": "v1alpha1",
                    "resource": "evidenceagents",
                    "kind": "EvidenceAgent",
                    "name": "orders",
                    "uid": "0b5c3d0e-7a51-4e4c-9d43-2f0d1d9f6a11",
                },
                "mode": "apply",
                "digest": "sha256:9f2c",
                "digestEncoding": "reconciler.dev/effects/v1",
                "target": {
                    "clusterUID": "5d7f0f4e-2b0a-4c1e-8f8e-6a3c1b2d4e5f",
                    "parentUID": "0b5c3d0e-7a51-4e4c-9d43-2f0d1d9f6a11",
                },
                "effects": {"inline": "apply Deployment orders-agent\n"},
                "changes": {"applies": 1, "deletions": 0, "generated": 0},
            },
        });
        self.admin
            .create(
                &PostParams::default(),
                &serde_json::from_value(plan).unwrap(),
            )
            .await
            .unwrap_or_else(|e| panic!("creating plan {name}: {e}"));
        patch_status(
            &self.host,
            name,
            json!({"status": {
                "phase": "Pending",
                "conditions": [condition("Approved", "False", "Pending")],
            }}),
        )
        .await
        .unwrap_or_else(|e| panic!("the host opens plan {name}: {e}"));
    }

    async fn status(&self, name: &str) -> Value {
        let plan = self.admin.get(name).await.expect("the plan");
        plan.data["status"].clone()
    }

    async fn finish(self) {
        self.ns.cleanup().await.expect("cleanup");
    }
}

fn condition(kind: &str, status: &str, reason: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "message": format!("{kind} {status}"),
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    })
}

/// A decision as the README's `kubectl patch --subresource=status
/// --type=merge` writes it: the condition (replacing the list) and
/// decidedBy, in one write.
fn decision(kind: &str, decided_by: &str) -> Value {
    json!({"status": {
        "conditions": [condition(kind, "True", &format!("{kind}ByReviewer"))],
        "decidedBy": {"username": decided_by},
    }})
}

async fn patch_status(
    api: &Api<DynamicObject>,
    name: &str,
    patch: Value,
) -> Result<DynamicObject, kube::Error> {
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

/// The API server's refusal: its code, and a message holding every one of
/// `says`.
fn refused(answer: Result<DynamicObject, kube::Error>, code: u16, says: &[&str]) -> String {
    match answer {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, code, "{e:?}");
            for s in says {
                assert!(e.message.contains(s), "{s:?} not in {:?}", e.message);
            }
            e.message
        }
        other => panic!("expected a refusal ({code}), got {other:?}"),
    }
}

fn decided(status: &Value, kind: &str) -> bool {
    status["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// A merge patch replaces the whole conditions list: one that keeps the
/// host's Approved=False and appends an Approved=True holds two entries of
/// one type, which the CRD refuses (conditions is a map keyed by type).
#[tokio::test]
async fn a_second_approved_entry_is_refused() {
    let fx = Fixture::new("plans-dup").await;
    fx.open("p").await;
    let patch = json!({"status": {
        "conditions": [
            condition("Approved", "False", "Pending"),
            condition("Approved", "True", "ApprovedByReviewer"),
        ],
        "decidedBy": {"username": ALICE},
    }});
    let message = refused(
        patch_status(&fx.alice, "p", patch).await,
        422,
        &["status.conditions[1]", "Duplicate value"],
    );
    eprintln!("a second Approved entry: {message}");
    assert!(!decided(&fx.status("p").await, "Approved"));
    fx.finish().await;
}

/// A decision without decidedBy is refused, and decidedBy without a
/// decision too: they are written together.
#[tokio::test]
async fn a_decision_without_decided_by_is_refused() {
    let fx = Fixture::new("plans-nodecider").await;
    fx.open("p").await;
    let patch = json!({"status": {
        "conditions": [condition("Approved", "True", "ApprovedByReviewer")],
    }});
    let message = refused(
        patch_status(&fx.alice, "p", patch).await,
        422,
        &["status.decidedBy", "written together, in the same write"],
    );
    eprintln!("a decision without decidedBy: {message}");
    let patch = json!({"status": {"decidedBy": {"username": ALICE}}});
    refused(
        patch_status(&fx.alice, "p", patch).await,
        422,
        &["written together, in the same write"],
    );
    assert!(fx.status("p").await.get("decidedBy").is_none());
    fx.finish().await;
}

/// decidedBy names the writer, approver or host: no exemption.
#[tokio::test]
async fn decided_by_naming_someone_else_is_refused() {
    let fx = Fixture::new("plans-impostor").await;
    fx.open("p").await;
    let message = refused(
        patch_status(&fx.alice, "p", decision("Approved", "carol@example.com")).await,
        403,
        &[
            "status.decidedBy.username is \"carol@example.com\"",
            &format!("this write is made by \"{ALICE}\""),
        ],
    );
    eprintln!("decidedBy naming someone else: {message}");
    // The host's exemption is from the approve check only.
    refused(
        patch_status(&fx.host, "p", decision("Approved", ALICE)).await,
        403,
        &[&format!("this write is made by \"{HOST}\"")],
    );
    // A uid or groups the request does not carry are refused the same way.
    let patch = json!({"status": {
        "conditions": [condition("Denied", "True", "DeniedByReviewer")],
        "decidedBy": {"username": ALICE, "groups": ["system:masters"]},
    }});
    // The refusal names the groups claimed and the writer's (issue 30: it
    // once printed the username where it meant the groups).
    refused(
        patch_status(&fx.alice, "p", patch).await,
        403,
        &[
            "status.decidedBy.groups is [system:masters]",
            &format!("this write is made by \"{ALICE}\" in groups [system:authenticated]"),
        ],
    );
    assert!(fx.status("p").await.get("decidedBy").is_none());
    fx.finish().await;
}

/// Patching plan status is no authority to decide: Bob lacks `approve` on
/// EvidenceAgents, for an approval and a denial alike.
#[tokio::test]
async fn a_decision_by_a_user_without_approve_is_refused() {
    let fx = Fixture::new("plans-noverb").await;
    fx.open("p").await;
    for kind in ["Approved", "Denied"] {
        let message = refused(
            patch_status(&fx.bob, "p", decision(kind, BOB)).await,
            403,
            &[
                &format!("\"{BOB}\" may not decide plan p of EvidenceAgent orders"),
                "needs the verb approve on evidenceagents.pgtoolbox.fyannk.dev",
            ],
        );
        eprintln!("{kind} without approve: {message}");
    }
    assert!(fx.status("p").await.get("decidedBy").is_none());
    fx.finish().await;
}

/// A decision is write-once: not changed to the other, not removed, its
/// decidedBy not rewritten, by its reviewer or by the host; and approved
/// and denied at once is refused in the first place.
#[tokio::test]
async fn a_decision_cannot_be_changed_once_written() {
    let fx = Fixture::new("plans-once").await;
    fx.open("both").await;
    let patch = json!({"status": {
        "conditions": [
            condition("Approved", "True", "ApprovedByReviewer"),
            condition("Denied", "True", "DeniedByReviewer"),
        ],
        "decidedBy": {"username": ALICE},
    }});
    refused(
        patch_status(&fx.alice, "both", patch).await,
        422,
        &["Approved=True and Denied=True are mutually exclusive"],
    );

    fx.open("p").await;
    patch_status(&fx.alice, "p", decision("Approved", ALICE))
        .await
        .expect("Alice approves");
    let message = refused(
        patch_status(&fx.alice, "p", decision("Denied", ALICE)).await,
        422,
        &["a decision is write-once"],
    );
    eprintln!("a decision changed: {message}");
    let removed = json!({"status": {
        "conditions": [condition("Approved", "False", "Pending")],
        "decidedBy": null,
    }});
    for writer in [&fx.alice, &fx.host] {
        refused(
            patch_status(writer, "p", removed.clone()).await,
            422,
            &["a decision is write-once", "status.decidedBy is write-once"],
        );
    }
    let mut reworded = decision("Approved", ALICE);
    reworded["status"]["conditions"][0]["message"] = json!("something else");
    refused(
        patch_status(&fx.alice, "p", reworded).await,
        422,
        &["a decision is write-once"],
    );
    refused(
        patch_status(
            &fx.host,
            "p",
            json!({"status": {"decidedBy": {"username": HOST}}}),
        )
        .await,
        422,
        &["status.decidedBy is write-once"],
    );
    // What was planned cannot change either, not even by an administrator.
    let respec = json!({"spec": {"parent": {"resource": "pgtoolboxconsoles"}}});
    refused(
        fx.admin
            .patch("p", &PatchParams::default(), &Patch::Merge(&respec))
            .await,
        422,
        &["spec is immutable"],
    );
    let status = fx.status("p").await;
    assert!(decided(&status, "Approved") && !decided(&status, "Denied"));
    assert_eq!(status["decidedBy"]["username"], ALICE);
    fx.finish().await;
}

/// An approver's approval and denial are admitted and recorded as written;
/// the host's later writes (phase) leave the decision as it is.
#[tokio::test]
async fn a_proper_decision_by_an_approver_is_accepted() {
    let fx = Fixture::new("plans-approve").await;
    fx.open("approved").await;
    fx.open("denied").await;
    patch_status(&fx.alice, "approved", decision("Approved", ALICE))
        .await
        .expect("Alice approves");
    patch_status(&fx.alice, "denied", decision("Denied", ALICE))
        .await
        .expect("Alice denies");
    // The host moves the plans on; the decision stays.
    for (name, phase) in [("approved", "Approved"), ("denied", "Rejected")] {
        patch_status(&fx.host, name, json!({"status": {"phase": phase}}))
            .await
            .unwrap_or_else(|e| panic!("the host moves {name} on: {e}"));
    }
    let status = fx.status("approved").await;
    assert!(decided(&status, "Approved"), "{status}");
    assert_eq!(status["decidedBy"], json!({"username": ALICE}));
    assert_eq!(status["phase"], "Approved");
    let status = fx.status("denied").await;
    assert!(decided(&status, "Denied") && !decided(&status, "Approved"));
    assert_eq!(status["decidedBy"], json!({"username": ALICE}));
    assert_eq!(status["phase"], "Rejected");
    fx.finish().await;
}

/// The host holds `manage` on plans (deploy/plans-rbac.yaml), not
/// `approve` on EvidenceAgents: it decides its own plans (approval
/// `auto`), naming itself.
#[tokio::test]
async fn the_hosts_own_decision_is_allowed() {
    let fx = Fixture::new("plans-host").await;
    fx.open("p").await;
    let mut auto = decision("Approved", HOST);
    auto["status"]["conditions"][0]["reason"] = json!("AutoApproved");
    patch_status(&fx.host, "p", auto)
        .await
        .expect("the host approves its own plan");
    let status = fx.status("p").await;
    assert!(decided(&status, "Approved"), "{status}");
    assert_eq!(status["decidedBy"]["username"], HOST);
    fx.finish().await;
}

/// `reconciler-host plan <args>` under `kubeconfig`.
fn plan_cli(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    plans::plan_cli(
        std::path::Path::new(env!("CARGO_BIN_EXE_reconciler-host")),
        kubeconfig,
        args,
    )
}

/// The reviewer CLI decides as the user the cluster authenticates: an
/// approver's approval and denial land with decidedBy naming them; a second
/// decision is refused saying by whom the first was made; a reviewer
/// without `approve` is refused with the policy's message; `show` prints
/// the phase and the decision.
#[tokio::test]
async fn the_plan_cli_decides_as_the_reviewer() {
    let fx = Fixture::new("plans-cli").await;
    let ns = fx.ns.name().to_string();
    fx.open("p").await;
    fx.open("q").await;
    let dir = target_tmpdir().join(&ns);
    std::fs::create_dir_all(&dir).unwrap();
    let (alice, bob) = (
        identity::kubeconfig_as(ALICE, &dir),
        identity::kubeconfig_as(BOB, &dir),
    );

    let (ok, shown, _) = plan_cli(&alice, &["show", "p", "-n", &ns]);
    assert!(ok);
    for line in [
        "Parent:      EvidenceAgent orders (evidenceagents.pgtoolbox.fyannk.dev",
        "Mode:        apply",
        "Phase:       Pending",
        "Digest:      sha256:9f2c (reconciler.dev/effects/v1)",
        "Changes:     1 applies, 0 deletions, 0 generated",
        "Decision:    none yet",
        "  apply Deployment orders-agent",
    ] {
        assert!(shown.contains(line), "{line:?} not in:\n{shown}");
    }

    let (ok, _, err) = plan_cli(&bob, &["approve", "p", "-n", &ns]);
    assert!(!ok);
    for says in [
        "refused by admission",
        &format!("\"{BOB}\" may not decide plan p of EvidenceAgent orders"),
        "needs the verb approve on evidenceagents.pgtoolbox.fyannk.dev",
    ] {
        assert!(err.contains(says), "{says:?} not in {err:?}");
    }
    assert!(fx.status("p").await.get("decidedBy").is_none());

    let (ok, out, _) = plan_cli(&alice, &["approve", "p", "-n", &ns]);
    assert!(ok);
    assert!(out.contains(&format!("approved by {ALICE}")), "{out}");
    let status = fx.status("p").await;
    assert!(decided(&status, "Approved"), "{status}");
    assert_eq!(status["decidedBy"]["username"], ALICE);
    // As the SelfSubjectReview says: an impersonated user is in
    // system:authenticated.
    assert_eq!(
        status["decidedBy"]["groups"],
        json!(["system:authenticated"])
    );
    // The host's Approved=False is replaced, not kept beside.
    let approved: Vec<_> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "Approved")
        .collect();
    assert_eq!(approved.len(), 1, "{status}");

    let (ok, _, err) = plan_cli(&alice, &["approve", "p", "-n", &ns]);
    assert!(!ok);
    assert!(
        err.contains(&format!("plan {ns}/p was already approved by {ALICE}")),
        "{err}"
    );

    let (ok, out, _) = plan_cli(
        &alice,
        &["deny", "q", "-n", &ns, "--reason", "not during the freeze"],
    );
    assert!(ok);
    assert!(out.contains(&format!("denied by {ALICE}")), "{out}");
    let status = fx.status("q").await;
    assert!(
        decided(&status, "Denied") && !decided(&status, "Approved"),
        "{status}"
    );
    assert_eq!(status["decidedBy"]["username"], ALICE);
    let (ok, shown, _) = plan_cli(&alice, &["show", "q", "-n", &ns]);
    assert!(ok);
    assert!(shown.contains("Phase:       Pending"), "{shown}");
    assert!(
        shown.contains(&format!("Decision:    denied by {ALICE}"))
            && shown.contains("(DeniedByReviewer: not during the freeze)"),
        "{shown}"
    );

    let (ok, _, err) = plan_cli(&alice, &["show", "nope", "-n", &ns]);
    assert!(!ok);
    assert!(
        err.contains(&format!("plan nope not found in namespace {ns}")),
        "{err}"
    );
    fx.finish().await;
}

/// The phase is the host's record of what it did, never a reviewer's
/// request (issue 30): neither a reviewer nor an approver may move it
/// (Applying on a pending plan, on a denied one), nor touch the host's
/// other fields (its Superseded condition, the revalidated fields); the
/// refusal names the rule. A decision by the approver still lands, and
/// the host (holding `manage`) moves the phase.
#[tokio::test]
async fn the_phase_and_the_hosts_fields_are_the_hosts_alone() {
    let fx = Fixture::new("plans-phase").await;
    fx.open("p").await;
    for (who, api) in [(BOB, &fx.bob), (ALICE, &fx.alice)] {
        let message = refused(
            patch_status(api, "p", json!({"status": {"phase": "Applying"}})).await,
            403,
            &[
                "status.phase of plan p is the host's",
                &format!("\"{who}\" may not change it from \"Pending\" to \"Applying\""),
                "a plan is executed on a decision, never on a phase",
            ],
        );
        eprintln!("{who} writes Applying: {message}");
    }
    let superseded = json!({"status": {"conditions": [
        condition("Approved", "False", "Pending"),
        condition("Superseded", "True", "EffectsChanged"),
    ]}});
    refused(
        patch_status(&fx.bob, "p", superseded).await,
        403,
        &["is the host's but for a decision", "the revalidated fields"],
    );
    refused(
        patch_status(
            &fx.bob,
            "p",
            json!({"status": {"revalidatedGeneration": 7}}),
        )
        .await,
        403,
        &["is the host's but for a decision"],
    );
    assert_eq!(fx.status("p").await["phase"], "Pending");

    // Denied by the approver: still no phase of theirs.
    patch_status(&fx.alice, "p", decision("Denied", ALICE))
        .await
        .expect("Alice denies");
    refused(
        patch_status(&fx.alice, "p", json!({"status": {"phase": "Applying"}})).await,
        403,
        &["from \"Pending\" to \"Applying\""],
    );
    // A decision and the phase in one write: the phase refuses it all.
    fx.open("q").await;
    let mut approve_and_run = decision("Approved", ALICE);
    approve_and_run["status"]["phase"] = json!("Applying");
    refused(
        patch_status(&fx.alice, "q", approve_and_run).await,
        403,
        &["status.phase of plan q is the host's"],
    );
    assert!(fx.status("q").await.get("decidedBy").is_none());
    // The host moves it.
    patch_status(&fx.host, "p", json!({"status": {"phase": "Rejected"}}))
        .await
        .expect("the host writes the phase");
    assert_eq!(fx.status("p").await["phase"], "Rejected");
    fx.finish().await;
}
