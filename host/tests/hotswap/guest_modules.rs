//! GuestModule objects end to end (issue 33): the Hostile guest's variants
//! pushed to go-containerregistry's registry on loopback, signed (or not)
//! by the real cosign, and rolled out by GuestModule objects to hosts run
//! with `--guest-modules` under a verification policy that asks for the
//! release key's signature on Hostile modules.
//!
//! Who could break it: whoever may write GuestModules (the shipped
//! reconciler-guestmodule-publisher role, impersonated). They choose the
//! source; whether it is trusted is the host's policy's, and the status is
//! the host's record.
//!
//! The conditions and Events asserted are seed 004's (kstatus): every
//! transition of a condition is one Event typed by polarity (an aspect
//! arriving True a Normal with its reason, False a Warning), one Event per
//! reason within a pass, Ready turning True a Normal AsExpected, Stalled
//! turning True a Warning with the stall's reason; Ready copies the first
//! aspect that is not True.

use kube::api::{ApiResource, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use reconciler_host::operator::guest_modules::kind as gm;
use reconciler_host_harness::access_requests::{apply, deploy_documents};
use reconciler_host_harness::cosign::KeyPair;
use reconciler_host_harness::identity;
use reconciler_host_harness::registry::Registry;
use reconciler_testsupport::client_as;

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use harness::{events_of, wait_for};

mod floors;

/// Bound to the shipped reconciler-guestmodule-publisher role.
const PUBLISHER: &str = "guestmodule-publisher@example.com";
/// Bound to the shipped reconciler-guestmodule-approver role.
const APPROVER: &str = "guestmodule-approver@example.com";

static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();

/// The GuestModule CRD (as `make deploy` renders it) and the shipped roles,
/// the publisher bound to theirs, once per binary.
async fn install(client: &kube::Client) {
    INSTALLED
        .get_or_init(|| async {
            reconciler_testsupport::install_crd(
                client,
                serde_json::from_value(gm::crd()).expect("a CRD"),
            )
            .await
            .expect("installing the GuestModule CRD");
            for file in ["guestmodules-rbac.yaml", "guestmodules-admission.yaml"] {
                for manifest in deploy_documents(file) {
                    apply(client, "", &manifest).await;
                }
            }
            // The shipped binding's ConfigMap (the chart renders it), empty:
            // no floor of review for the tests that set none. floors.rs
            // binds the policy to a floor of its own.
            apply(
                client,
                "",
                &json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": "reconciler-system"}}),
            )
            .await;
            apply(
                client,
                "reconciler-system",
                &json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "reconciler-promotion-floors"}}),
            )
            .await;
            for (role, user) in [
                ("reconciler-guestmodule-publisher", PUBLISHER),
                ("reconciler-guestmodule-approver", APPROVER),
            ] {
                identity::apply_rbac(client, identity::cluster_role_binding(role, user)).await;
            }
            // A policy is enforced once the API server has read it.
            tokio::time::sleep(Duration::from_secs(2)).await;
        })
        .await;
}

fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(gm::GROUP, gm::VERSION, gm::KIND),
        gm::PLURAL,
    )
}

/// GuestModules as `user` writes them (impersonated).
async fn as_user(user: &str) -> Api<DynamicObject> {
    Api::all_with(client_as(user, &[]).await.expect("a client"), &resource())
}

/// GuestModules as the publisher writes them.
async fn publisher() -> Api<DynamicObject> {
    as_user(PUBLISHER).await
}

async fn admin_client() -> kube::Client {
    reconciler_testsupport::client()
        .await
        .expect("the test apiserver")
}

/// GuestModules as admin reads them.
fn admin(ns: &TestNamespace) -> Api<DynamicObject> {
    Api::all_with(ns.client(), &resource())
}

/// A registry, the release key, the policy asking for it on Hostile
/// modules, and the hosts' arguments to serve GuestModules of one test.
struct Rollout {
    registry: Registry,
    dir: PathBuf,
    release: KeyPair,
    policy: PathBuf,
    /// The label the test's GuestModules carry and its hosts select.
    label: String,
}

impl Rollout {
    fn new(test: &str) -> Rollout {
        let dir = variants().dir.join(test).join("rollout");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let release = KeyPair::generate(&dir, "release");
        let policy = dir.join("policy.yaml");
        std::fs::write(&policy, "kinds:\n  Hostile:\n    allOf: [release.pub]\n").unwrap();
        Rollout {
            registry: Registry::start(),
            dir,
            release,
            policy,
            label: test.to_owned(),
        }
    }

    /// Pushes `bytes` to the tag `tag`, dated `created` (seconds since the
    /// epoch: one module pushed at two dates is two digests), signed by the
    /// release key when `signed`; the reference pinned to its digest.
    fn push(&self, bytes: &[u8], tag: &str, signed: bool, created: u32) -> String {
        let dir = self.dir.join(tag);
        std::fs::create_dir_all(&dir).unwrap();
        let module = dir.join(FILE);
        std::fs::write(&module, bytes).unwrap();
        let reference = format!("{}/guests/hostile:{tag}", self.registry.address);
        let out = Command::new(env!("CARGO_BIN_EXE_reconciler-host"))
            .env("NO_COLOR", "1")
            .env("DOCKER_CONFIG", self.dir.join("no-docker-config"))
            .env("SOURCE_DATE_EPOCH", created.to_string())
            .arg("--cache-dir")
            .arg(&variants().cache_dir)
            .args(["push", module.to_str().unwrap(), &reference])
            .args(["--insecure-registry", &self.registry.address])
            .output()
            .expect("the host binary runs");
        assert!(
            out.status.success(),
            "push: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pinned = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if signed {
            self.release.sign(&pinned);
        }
        pinned
    }

    /// `run`'s arguments serving this test's GuestModules as replica
    /// `replica`.
    fn args(&self, replica: &str) -> Vec<String> {
        [
            "--guest-modules",
            "--verification-policy",
            self.policy.to_str().unwrap(),
            "--insecure-registry",
            &self.registry.address,
            "--pulled-dir",
            self.dir.join(format!("pulled-{replica}")).to_str().unwrap(),
            "--guest-modules-selector",
            &format!("reconciler.dev/test={}", self.label),
            "--identity",
            replica,
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// The GuestModule `name` serving Hostile from `oci`.
    fn object(&self, name: &str, oci: &str, promotion: Option<&str>) -> DynamicObject {
        let mut spec = json!({"kind": KIND, "source": {"oci": oci}});
        if let Some(p) = promotion {
            spec["promotion"] = json!(p);
        }
        serde_json::from_value(json!({
            "apiVersion": format!("{}/{}", gm::GROUP, gm::VERSION),
            "kind": gm::KIND,
            "metadata": {"name": name, "labels": {"reconciler.dev/test": self.label}},
            "spec": spec,
        }))
        .expect("a GuestModule")
    }
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Waits until the Events about the GuestModule `name` (cluster-scoped:
/// in `default`) are `want`: (type, reason, how many times published),
/// sorted. The host publishes a transition's Events after it writes the
/// status that shows it, so a test that saw the status waits for them.
async fn wait_events_about(client: &kube::Client, name: &str, want: &[(&str, &str, i32)]) {
    let want: Vec<(String, String, i32)> = want
        .iter()
        .map(|(t, r, n)| ((*t).into(), (*r).into(), *n))
        .collect();
    eventually("the GuestModule's Events", async || {
        let mut found: BTreeMap<(String, String), i32> = BTreeMap::new();
        for e in events_of(client, "default", gm::KIND, name).await {
            *found.entry((e.type_, e.reason)).or_default() += e.count;
        }
        let found: Vec<_> = found.into_iter().map(|((t, r), n)| (t, r, n)).collect();
        if found == want { Ok(()) } else { Err(found) }
    })
    .await;
}

/// The digest part of a pinned reference.
fn digest_of(pinned: &str) -> &str {
    pinned.rsplit_once('@').expect("a pinned reference").1
}

/// Waits until `.status.replicas` is `want` (name, state, digest), in
/// any order.
async fn wait_replicas(api: &Api<DynamicObject>, name: &str, want: &[(&str, &str, &str)]) {
    let mut want: Vec<(String, String, String)> = want
        .iter()
        .map(|(n, s, d)| ((*n).into(), (*s).into(), (*d).into()))
        .collect();
    want.sort();
    eventually("the replicas' entries", async || {
        let o = get(api, name).await;
        let mut seen: Vec<(String, String, String)> = o["status"]["replicas"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let field = |f: &str| r[f].as_str().unwrap_or_default().to_owned();
                (field("name"), field("state"), field("digest"))
            })
            .collect();
        seen.sort();
        if seen == want { Ok(()) } else { Err(seen) }
    })
    .await;
}

/// A module signed by the release key, named by its tag, is pulled,
/// pinned, gated and swapped in (promotion direct: Shadowed True
/// ShadowSkipped, no check claimed that did not run): every aspect True,
/// Ready True, one Normal Event per reason, the replica's entry Serving
/// its digest, every parent evaluated by it. The publisher then points the
/// object at an unsigned module: Verified False SignatureRefused, Ready
/// copying it, Stalled True (one Warning for both, one reason in one
/// pass), and the signed module serves on. The publisher cannot write the
/// status.
#[tokio::test]
async fn a_signed_module_rolls_out_and_an_unsigned_one_is_refused_while_it_serves_on() {
    let v = variants();
    let rollout = Rollout::new("gm-signed");
    let signed = rollout.push(&v.message, "message", true, 1);
    rollout.push(&v.trap, "trap", false, 2);
    let args = rollout.args("a");
    install(&admin_client().await).await;
    let (ns, _dir, host, api, want) = four_served("gm-signed", &strs(&args)).await;
    let publisher = publisher().await;
    let admin = admin(&ns);
    let name = "gm-signed";
    let tag = format!("{}/guests/hostile:message", rollout.registry.address);
    publisher
        .create(&PostParams::default(), &rollout.object(name, &tag, None))
        .await
        .expect("the publisher creates a GuestModule");

    let o = wait_for(
        &admin,
        name,
        &[
            ("Ready", "True", "AsExpected"),
            ("Reconciling", "False", "AsExpected"),
            ("Stalled", "False", "AsExpected"),
            ("Pulled", "True", "AsExpected"),
            ("Verified", "True", "AsExpected"),
            ("Compatible", "True", "AsExpected"),
            // The host's --promotion direct: no shadow ran, and it says so.
            ("Shadowed", "True", "ShadowSkipped"),
            ("Serving", "True", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(o["status"]["promotion"], "direct");
    assert!(
        o["status"].get("shadow").is_none(),
        "no review of a module not shadowed: {}",
        o["status"]
    );
    assert_eq!(o["status"]["pinned"], signed.as_str(), "the tag pinned");
    assert_eq!(o["status"]["digest"], digest_of(&signed));
    assert!(
        condition(&o, "Verified")
            .unwrap()
            .message
            .contains("release.pub"),
        "{:?}",
        condition(&o, "Verified")
    );
    wait_replicas(&admin, name, &[("a", "Serving", digest_of(&signed))]).await;
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(n, m)| (n.clone(), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &v2).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    wait_events_about(
        &ns.client(),
        name,
        &[("Normal", "AsExpected", 1), ("Normal", "ShadowSkipped", 1)],
    )
    .await;

    let trap = format!("{}/guests/hostile:trap", rollout.registry.address);
    publisher
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"oci": trap}}})),
        )
        .await
        .expect("the publisher points it at an unsigned module");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Verified", "False", "SignatureRefused"),
            ("Ready", "False", "SignatureRefused"),
            ("Stalled", "True", "SignatureRefused"),
        ],
    )
    .await;
    let verified = condition(&o, "Verified").unwrap().message;
    assert!(
        verified.contains(&rollout.policy.display().to_string())
            && verified.contains("no cosign signature"),
        "{verified}"
    );
    // The signed module serves on.
    set_message(&api, "h0", "after").await;
    let mut after = v2.clone();
    after[0].1 = "v2: after".into();
    wait_messages(&api, &after).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    wait_events_about(
        &ns.client(),
        name,
        &[
            ("Normal", "AsExpected", 1),
            ("Normal", "ShadowSkipped", 1),
            ("Warning", "SignatureRefused", 1),
        ],
    )
    .await;
    // The status is the host's record: the publisher cannot fake it.
    let forged = publisher
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"digest": "sha256:forged"}})),
        )
        .await;
    assert!(
        matches!(&forged, Err(kube::Error::Api(s)) if s.code == 403),
        "{forged:?}"
    );
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}

/// Under promotion auto (the object's), a signed module that would fail
/// every parent where the serving one does not is held: Compatible True,
/// Shadowed False Regression, Stalled True; never swapped in. A registry
/// gone: Pulled False PullFailed naming the reference, not a stall (it is
/// tried again), and the module serving before serves on.
#[tokio::test]
async fn a_module_failing_its_shadow_is_held_and_a_registry_gone_is_said() {
    let v = variants();
    let rollout = Rollout::new("gm-held");
    let trap = rollout.push(&v.trap, "trap", true, 2);
    let message = rollout.push(&v.message, "message", true, 1);
    let args = rollout.args("a");
    install(&admin_client().await).await;
    let (ns, _dir, host, api, mut want) = four_served("gm-held", &strs(&args)).await;
    let publisher = publisher().await;
    let admin = admin(&ns);
    let name = "gm-held";
    publisher
        .create(
            &PostParams::default(),
            &rollout.object(name, &trap, Some("auto")),
        )
        .await
        .expect("the publisher creates a GuestModule");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Compatible", "True", "AsExpected"),
            ("Shadowed", "False", "Regression"),
            ("Ready", "False", "Regression"),
            ("Stalled", "True", "Regression"),
        ],
    )
    .await;
    let shadowed = condition(&o, "Shadowed").unwrap().message;
    assert!(
        shadowed.contains("4 would fail where the serving module does not"),
        "{shadowed}"
    );
    // The review, parent by parent, recorded in the status for whoever
    // decides what to do with the module: each of the four would fail.
    let review = &o["status"]["shadow"];
    assert_eq!(
        [
            &review["parents"],
            &review["differ"],
            &review["newGuestErrors"]
        ],
        [4, 4, 4],
        "{review}"
    );
    let listed: BTreeSet<String> = review["differences"]
        .as_array()
        .expect("the differences")
        .iter()
        .inspect(|e| assert!(e["newGuestError"].is_string(), "{e}"))
        .map(|e| e["parent"].as_str().unwrap().to_owned())
        .collect();
    let parents: BTreeSet<String> = want
        .iter()
        .map(|(n, _)| format!("{}/{n}", ns.name()))
        .collect();
    assert_eq!(listed, parents);
    wait_replicas(&admin, name, &[("a", "Held", digest_of(&trap))]).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );
    // Pulled, Verified and Compatible arriving True: one Normal for their
    // one reason; Shadowed False and Stalled True: one Warning.
    wait_events_about(
        &ns.client(),
        name,
        &[("Normal", "AsExpected", 1), ("Warning", "Regression", 1)],
    )
    .await;

    rollout.registry.stop();
    publisher
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"oci": message}, "promotion": "direct"}})),
        )
        .await
        .expect("the publisher points it at another module");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Pulled", "False", "PullFailed"),
            ("Ready", "False", "PullFailed"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    let pulled = condition(&o, "Pulled").unwrap().message;
    assert!(pulled.contains(&message), "{pulled}");
    assert!(
        o["status"].get("shadow").is_none(),
        "no review of a module not staged: {}",
        o["status"]
    );
    // The module serving before serves on.
    want[0].1 = "after".into();
    set_message(&api, &want[0].0, "after").await;
    wait_messages(&api, &want).await;
    wait_events_about(
        &ns.client(),
        name,
        &[
            ("Normal", "AsExpected", 1),
            ("Warning", "PullFailed", 1),
            ("Warning", "Regression", 1),
        ],
    )
    .await;
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}

/// Two replicas electing a leader: both pull and verify the same digest;
/// the leader serves it, the standby says it staged it. The leader killed,
/// the standby takes the Lease and serves that digest, and says so.
#[tokio::test]
async fn two_replicas_stage_one_digest_and_the_standby_serves_it_once_leading() {
    let v = variants();
    let rollout = Rollout::new("gm-replicas");
    let signed = rollout.push(&v.message, "message", true, 1);
    let ns = namespace("swap-gm-replicas").await;
    install(&ns.client()).await;
    let dir = guests_dir("gm-replicas");
    place(&dir, FILE, &v.base);
    let elect = [
        "--leader-elect",
        "--lease-namespace",
        ns.name(),
        "--lease-duration",
        "4s",
    ];
    let replica = |name: &str| {
        let mut args = rollout.args(name);
        args.extend(elect.map(str::to_owned));
        args
    };
    let (args_a, args_b) = (replica("a"), replica("b"));
    let mut a = SwapHost::start_as(
        ns.name(),
        &dir,
        &strs(&args_a),
        "a",
        "caches synced; reconciling",
    )
    .await;
    let b = SwapHost::start_as(
        ns.name(),
        &dir,
        &strs(&args_b),
        "b",
        "standby until the Lease is held",
    )
    .await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h0", "m-0").await;
    wait_messages(&api, &[("h0".into(), "m-0".into())]).await;

    let publisher = publisher().await;
    let admin = admin(&ns);
    let name = "gm-replicas";
    publisher
        .create(&PostParams::default(), &rollout.object(name, &signed, None))
        .await
        .expect("the publisher creates a GuestModule");
    wait_for(&admin, name, &[("Ready", "True", "AsExpected")]).await;
    let digest = digest_of(&signed);
    wait_replicas(
        &admin,
        name,
        &[("a", "Serving", digest), ("b", "Staged", digest)],
    )
    .await;
    wait_messages(&api, &[("h0".into(), "v2: m-0".into())]).await;

    a.child.kill().expect("killing the leader");
    let _ = a.child.wait();
    wait_replicas(
        &admin,
        name,
        &[("a", "Serving", digest), ("b", "Serving", digest)],
    )
    .await;
    set_message(&api, "h0", "after").await;
    wait_messages(&api, &[("h0".into(), "v2: after".into())]).await;
    admin.delete(name, &Default::default()).await.unwrap();
    b.finish();
    ns.cleanup().await.unwrap();
}

/// `.status.approval` as a reviewer writes it.
fn decision(digest: &str, decision: &str, by: &str) -> Patch<Value> {
    Patch::Merge(json!({"status": {"approval": {
        "digest": digest, "decision": decision, "decidedBy": {"username": by},
    }}}))
}

/// Whether a write was refused as forbidden, its message containing `why`.
fn forbidden<T: std::fmt::Debug>(result: &Result<T, kube::Error>, why: &str) -> bool {
    matches!(result, Err(kube::Error::Api(s)) if s.code == 403 && s.message.contains(why))
}

/// Under promotion manual a candidate that passed every check waits:
/// Serving False AwaitingApproval (a gate holds it: no Event), the module
/// before serving on. Who may decide, as the shipped roles and admission
/// policy say, each impersonated: not the publisher (no status write), not
/// an approver in another's name; an approver's denial is written once (it
/// cannot be turned into an approval) and holds: Serving False
/// PromotionDenied, Stalled, one Warning. A new candidate (the publisher's
/// next digest) supersedes the decision and waits again; approved, it is
/// swapped in: Serving and Ready True, every parent evaluated by it.
#[tokio::test]
async fn a_manual_promotion_is_decided_once_in_the_reviewers_name_and_a_new_candidate_supersedes_it()
 {
    let v = variants();
    let rollout = Rollout::new("gm-manual");
    let first = rollout.push(&v.message, "first", true, 1);
    let second = rollout.push(&v.message, "second", true, 2);
    assert_ne!(digest_of(&first), digest_of(&second));
    let args = rollout.args("a");
    install(&admin_client().await).await;
    let (ns, _dir, host, api, want) = four_served("gm-manual", &strs(&args)).await;
    let (publisher, approver, admin) = (publisher().await, as_user(APPROVER).await, admin(&ns));
    let name = "gm-manual";
    publisher
        .create(
            &PostParams::default(),
            &rollout.object(name, &first, Some("manual")),
        )
        .await
        .expect("the publisher creates a GuestModule");
    awaits_approval(&admin, name, &first).await;

    who_may_decide(&publisher, &approver, &admin, name, [&first, &second]).await;
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );

    new_candidate_approved(&publisher, &approver, &admin, name, &second).await;
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(n, m)| (n.clone(), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &v2).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    // The checks arriving True, then Serving and Ready: AsExpected twice;
    // the denial once (Serving False and Stalled True, one reason).
    wait_events_about(
        &ns.client(),
        name,
        &[
            ("Normal", "AsExpected", 2),
            ("Warning", "PromotionDenied", 1),
        ],
    )
    .await;
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}

/// The candidate `first` waits for approval: Serving and Ready False
/// AwaitingApproval (a gate holds it: not stalled), the review in the
/// status, the replica holding it.
async fn awaits_approval(admin: &Api<DynamicObject>, name: &str, first: &str) {
    let o = wait_for(
        admin,
        name,
        &[
            ("Shadowed", "True", "AsExpected"),
            ("Serving", "False", "AwaitingApproval"),
            ("Ready", "False", "AwaitingApproval"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert!(
        condition(&o, "Serving")
            .unwrap()
            .message
            .contains(digest_of(first)),
        "{:?}",
        condition(&o, "Serving")
    );
    // What the reviewer decides on: the review in the status. The
    // candidate changes only messages, which a review leaves out.
    let review = &o["status"]["shadow"];
    assert_eq!(
        [
            &review["parents"],
            &review["differ"],
            &review["readyTurnsFalse"]
        ],
        [4, 0, 0],
        "{review}"
    );
    assert_eq!(review["candidate"]["guest"], "hostile_guest", "{review}");
    wait_replicas(admin, name, &[("a", "Held", digest_of(first))]).await;
}

/// Who may decide on `first`, each impersonated: not the publisher (no
/// status write), not an approver in another's name; the approver's
/// denial holds (Serving False PromotionDenied, Stalled) and is written
/// once; the status fields are the host's.
async fn who_may_decide(
    publisher: &Api<DynamicObject>,
    approver: &Api<DynamicObject>,
    admin: &Api<DynamicObject>,
    name: &str,
    [first, second]: [&str; 2],
) {
    let by_publisher = publisher
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(first), "Approved", PUBLISHER),
        )
        .await;
    assert!(
        forbidden(&by_publisher, "guestmodules/status"),
        "{by_publisher:?}"
    );
    let in_another_name = approver
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(first), "Approved", "someone-else"),
        )
        .await;
    assert!(
        forbidden(&in_another_name, "nobody decides in another name"),
        "{in_another_name:?}"
    );
    approver
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(first), "Denied", APPROVER),
        )
        .await
        .expect("the approver denies it");
    wait_for(
        admin,
        name,
        &[
            ("Serving", "False", "PromotionDenied"),
            ("Stalled", "True", "PromotionDenied"),
        ],
    )
    .await;
    let turned = approver
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(first), "Approved", APPROVER),
        )
        .await;
    assert!(forbidden(&turned, "is written once"), "{turned:?}");
    let host_field = approver
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"digest": digest_of(second)}})),
        )
        .await;
    assert!(forbidden(&host_field, "is the host's"), "{host_field:?}");
}

/// The publisher's next digest supersedes the decision and waits again;
/// approved, it is swapped in: Serving and Ready True.
async fn new_candidate_approved(
    publisher: &Api<DynamicObject>,
    approver: &Api<DynamicObject>,
    admin: &Api<DynamicObject>,
    name: &str,
    second: &str,
) {
    publisher
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"oci": second}}})),
        )
        .await
        .expect("the publisher offers a new candidate");
    let o = wait_for(
        admin,
        name,
        &[
            ("Serving", "False", "AwaitingApproval"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(o["status"]["digest"], digest_of(second));
    approver
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(second), "Approved", APPROVER),
        )
        .await
        .expect("the approver approves the new candidate");
    wait_for(
        admin,
        name,
        &[
            ("Serving", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
}

/// A module from a ConfigMap of the host's own namespace, no registry:
/// served for a kind the policy serves unsigned (a ConfigMap carries no
/// signature), Pulled naming the ConfigMap; replacing the ConfigMap's
/// data rolls the new module out without touching the GuestModule (it is
/// read again while it serves), one swap each. A source naming no
/// ConfigMap that exists is said (PullFailed), not stalled.
#[tokio::test]
async fn a_module_from_a_config_map_serves_and_its_replaced_data_rolls_out() {
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::ConfigMap;

    let v = variants();
    let rollout = Rollout::new("gm-configmap");
    std::fs::write(
        &rollout.policy,
        "kinds:\n  Hostile:\n    allowUnsigned: true\n",
    )
    .unwrap();
    let args = rollout.args("a");
    let client = admin_client().await;
    install(&client).await;
    let (ns, _dir, host, api, want) = four_served("gm-configmap", &strs(&args)).await;
    // The host's namespace: its client's, as the test's kubeconfig says.
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let source = format!("hostile-module-{}", ns.name());
    let module = |bytes: &[u8]| ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(source.clone()),
            ..Default::default()
        },
        binary_data: Some([(FILE.to_owned(), ByteString(bytes.to_vec()))].into()),
        ..Default::default()
    };
    let (publisher, admin) = (publisher().await, admin(&ns));
    let name = "gm-configmap";
    let mut object = rollout.object(name, "unused", Some("direct"));
    object.data["spec"]["source"] = json!({"configMap": {"name": source}});
    publisher
        .create(&PostParams::default(), &object)
        .await
        .expect("the publisher creates a GuestModule");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Pulled", "False", "PullFailed"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    let pulled = condition(&o, "Pulled").unwrap().message;
    assert!(pulled.contains("does not exist"), "{pulled}");

    config_maps
        .create(&PostParams::default(), &module(&v.message))
        .await
        .expect("the module's ConfigMap");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Pulled", "True", "AsExpected"),
            ("Verified", "True", "AsExpected"),
            ("Serving", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    assert!(
        o["status"]["pinned"]
            .as_str()
            .is_some_and(|p| p.starts_with(&format!(
                "ConfigMap default/{source} (hostile_guest.wasm, sha256:"
            ))),
        "{}",
        o["status"]
    );
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(n, m)| (n.clone(), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &v2).await;
    let generation = o["metadata"]["generation"].clone();

    config_maps
        .replace(&source, &PostParams::default(), &{
            let mut replaced = module(&v.base);
            replaced.metadata.resource_version = config_maps
                .get(&source)
                .await
                .unwrap()
                .metadata
                .resource_version;
            replaced
        })
        .await
        .expect("replacing the ConfigMap's data");
    wait_messages(&api, &want).await;
    let o = wait_for(&admin, name, &[("Serving", "True", "AsExpected")]).await;
    assert_eq!(o["metadata"]["generation"], generation);
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(2.0)
    );
    admin.delete(name, &Default::default()).await.unwrap();
    config_maps
        .delete(&source, &Default::default())
        .await
        .unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}

/// Two shards (`--shards 2`), each replica the leader of its own, one
/// of them (shard 1's) left with a stale verification policy naming
/// another key. Shard 0's replica serves the digest (its parents end on
/// it) and writes the object's conditions: Ready True, one Normal Event
/// per reason.
/// Shard 1's refuses it and says so in its own entry (Failed, naming the
/// key it wants), and nothing else: no Warning, no condition turned (two
/// writers of the conditions would flap them and publish the refusal).
#[tokio::test]
async fn every_shard_says_what_it_serves_and_one_writes_the_conditions() {
    let v = variants();
    let rollout = Rollout::new("gm-shards");
    let signed = rollout.push(&v.message, "message", true, 1);
    KeyPair::generate(&rollout.dir, "other");
    let stale = rollout.dir.join("stale-policy.yaml");
    std::fs::write(&stale, "kinds:\n  Hostile:\n    allOf: [other.pub]\n").unwrap();
    let ns = namespace("swap-gm-shards").await;
    install(&ns.client()).await;
    let dir = guests_dir("gm-shards");
    place(&dir, FILE, &v.base);
    let shard = |name: &str, index: &str, policy: &Path| {
        let mut args = rollout.args(name);
        let at = args
            .iter()
            .position(|a| a == "--verification-policy")
            .unwrap();
        args[at + 1] = policy.to_str().unwrap().to_owned();
        args.extend(
            [
                "--leader-elect",
                "--lease-namespace",
                ns.name(),
                "--shards",
                "2",
                "--shard-index",
                index,
            ]
            .map(str::to_owned),
        );
        args
    };
    let (args_a, args_b) = (shard("a", "0", &rollout.policy), shard("b", "1", &stale));
    let ready = "caches synced; reconciling";
    let a = SwapHost::start_as(ns.name(), &dir, &strs(&args_a), "a", ready).await;
    let b = SwapHost::start_as(ns.name(), &dir, &strs(&args_b), "b", ready).await;
    let api = hostiles(&ns);
    create_hostile(&ns, "h0", "m-0").await;
    wait_messages(&api, &[("h0".into(), "m-0".into())]).await;

    let (publisher, admin) = (publisher().await, admin(&ns));
    let name = "gm-shards";
    publisher
        .create(
            &PostParams::default(),
            &rollout.object(name, &signed, Some("direct")),
        )
        .await
        .expect("the publisher creates a GuestModule");
    let digest = digest_of(&signed);
    wait_replicas(
        &admin,
        name,
        &[("a", "Serving", digest), ("b", "Failed", "")],
    )
    .await;
    let o = wait_for(&admin, name, &[("Ready", "True", "AsExpected")]).await;
    let b_entry = o["status"]["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "b")
        .unwrap()
        .clone();
    assert!(
        b_entry["message"]
            .as_str()
            .is_some_and(|m| m.contains("not signed by other.pub")),
        "{b_entry}"
    );
    assert_eq!(
        a.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    assert_eq!(b.sample("reconciler_swaps_total{kind=\"Hostile\"}"), None);
    // A replica writes its entry after it would write the conditions:
    // shard 1's entry is there, so had it written them, it would have.
    assert_eq!(condition(&o, "Verified").unwrap().status, "True");
    wait_events_about(
        &ns.client(),
        name,
        &[("Normal", "AsExpected", 1), ("Normal", "ShadowSkipped", 1)],
    )
    .await;
    admin.delete(name, &Default::default()).await.unwrap();
    a.finish();
    b.finish();
    ns.cleanup().await.unwrap();
}

/// Issue 49: every replica pulls, so a module near the Pod's memory limit
/// would take every replica down at once. Who could break it: whoever may
/// push to the registry, through the OCI API (`push` refuses a module past
/// the bound), with the release key's signature. A signed module of 70 MB
/// is refused from its manifest: Pulled False NotAModule naming its size
/// and the 64 MiB bound, Stalled True, the replica's entry Failed, no blob
/// of it asked of the registry, and the module serving before serves on.
/// A manifest giving the 70 MB component 1 MB (a registry may lie) is cut
/// off at that size and refused the same way.
#[tokio::test]
async fn a_module_past_the_bound_is_refused_before_it_is_downloaded() {
    let v = variants();
    let rollout = Rollout::new("gm-too-large");
    let source = rollout.push(&v.message, "message", false, 1);
    let registry = &rollout.registry;
    let large = registry
        .publish_grown(&source, "large", 70_000_000, None)
        .await;
    let lying = registry
        .publish_grown(&source, "lying", 70_000_000, Some(1_000_000))
        .await;
    rollout.release.sign(&large);
    rollout.release.sign(&lying);
    let args = rollout.args("a");
    install(&admin_client().await).await;
    let (ns, _dir, host, api, mut want) = four_served("gm-too-large", &strs(&args)).await;
    let publisher = publisher().await;
    let admin = admin(&ns);
    let name = "gm-too-large";
    let (asked, blobs) = (registry.requests().len(), registry.blobs_read().len());
    publisher
        .create(&PostParams::default(), &rollout.object(name, &large, None))
        .await
        .expect("the publisher creates a GuestModule");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Pulled", "False", "NotAModule"),
            ("Ready", "False", "NotAModule"),
            ("Stalled", "True", "NotAModule"),
        ],
    )
    .await;
    let pulled = condition(&o, "Pulled").unwrap().message;
    assert!(
        pulled.contains(&format!(
            "{large} is too large to serve: its manifest gives its blobs 7000"
        )) && pulled.contains(
            "more than the 64 MiB (67108864 bytes) a guest module may be; nothing downloaded"
        ),
        "{pulled}"
    );
    let since = registry.requests()[asked..].to_vec();
    assert!(
        since.iter().any(|r| r.contains("/manifests/")),
        "its manifest was read: {since:?}"
    );
    assert_eq!(
        registry.blobs_read()[blobs..],
        [] as [String; 0],
        "no blob of it was asked for: {since:?}"
    );
    wait_replicas(&admin, name, &[("a", "Failed", "")]).await;

    publisher
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"source": {"oci": lying}}})),
        )
        .await
        .expect("the publisher points it at the lying manifest");
    let pulled = eventually("Pulled naming the lying manifest", async || {
        let o = get(&admin, name).await;
        let pulled = condition(&o, "Pulled").unwrap();
        match (pulled.reason.as_str(), pulled.message.contains(&lying)) {
            ("NotAModule", true) => Ok(pulled.message),
            _ => Err(pulled),
        }
    })
    .await;
    assert!(
        pulled.contains(
            "is too large to serve: the registry sends the component past the 1000000 bytes its manifest gives it; refused at that bound"
        ),
        "{pulled}"
    );
    // Neither was swapped in: the module serving before serves on.
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );
    want[0].1 = "after".into();
    set_message(&api, &want[0].0, "after").await;
    wait_messages(&api, &want).await;
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}
