//! The floor of review (issue 49): the operator sets each kind's least
//! promotion (the host's `--promotion-floor`, and the admission policy's
//! ConfigMap), and a GuestModule may ask for more review, never less.
//!
//! Who could break it: the publisher (the shipped
//! reconciler-guestmodule-publisher role, impersonated), who writes the
//! spec and so its promotion; and anyone who may lower it in the spec, whose
//! module the host still holds to the floor.

use super::*;

/// The floor the tests set for Hostile.
const FLOOR: &str = "Hostile=manual";
/// Bound to both shipped roles, publisher and approver: a user who may ask
/// for less than the floor (and could approve the module anyway).
const RELEASER: &str = "guestmodule-releaser@example.com";

/// The shipped admission policy reading a floor of `manual` for Hostile:
/// the test's own ConfigMap in `ns`, bound by a copy of the shipped binding
/// to this test's GuestModules alone (the shipped binding reads the
/// ConfigMap of reconciler-system, which every test of this binary
/// shares). Returns once the API server enforces it: the publisher's
/// dry-run create asking for `direct` is refused.
async fn floor_admission(rollout: &Rollout, ns: &TestNamespace) {
    let client = ns.client();
    apply(
        &client,
        ns.name(),
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "promotion-floors"},
                "data": {"Hostile": "manual"}}),
    )
    .await;
    let mut binding = deploy_documents("guestmodules-admission.yaml")
        .into_iter()
        .find(|d| {
            d["kind"] == "ValidatingAdmissionPolicyBinding"
                && d["metadata"]["name"] == "guestmodule-promotion-floors.reconciler.dev"
        })
        .expect("the shipped binding of the floors");
    binding["metadata"]["name"] = json!(format!("{}-floors", rollout.label));
    binding["spec"]["paramRef"]["name"] = json!("promotion-floors");
    binding["spec"]["paramRef"]["namespace"] = json!(ns.name());
    binding["spec"]["matchResources"] = json!({"objectSelector": {
        "matchLabels": {"reconciler.dev/test": rollout.label},
    }});
    apply(&client, "", &binding).await;
    let probe = rollout.object(&format!("{}-probe", rollout.label), "r/x:1", Some("direct"));
    let publisher = publisher().await;
    let refused = eventually("the floor enforced", async || {
        match publisher
            .create(
                &PostParams {
                    dry_run: true,
                    ..PostParams::default()
                },
                &probe,
            )
            .await
        {
            Err(kube::Error::Api(s)) if s.code == 403 => Ok(s.message),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // A create asking for less is refused too, naming the floor.
    assert!(
        refused.contains(
            "asks promotion direct, below the floor the operator sets for kind Hostile: manual"
        ),
        "{refused}"
    );
}

/// The hostile user's sequence, under a floor of `manual` for Hostile: the
/// publisher holds a manual candidate waiting for its decision, then asks
/// for `direct` and a module that fails every parent in one write. The
/// admission policy refuses it, naming the floor (and `auto`, less than
/// the floor too). The same write by a user who may (one who could approve
/// the module anyway) is accepted, and the host still holds the module to
/// the floor: shadowed, held on its regression (Shadowed False Regression,
/// the refusal saying the promotion in force), never swapped in, every
/// parent Ready True on the module serving before.
#[tokio::test]
async fn the_publisher_cannot_lower_the_review_and_a_lowered_one_is_held_to_the_floor() {
    let v = variants();
    let rollout = Rollout::new("gm-floor");
    let candidate = rollout.push(&v.message, "message", true, 1);
    let trap = rollout.push(&v.trap, "trap", true, 2);
    let mut args = rollout.args("a");
    args.extend(["--promotion-floor", FLOOR].map(str::to_owned));
    install(&admin_client().await).await;
    let (ns, _dir, host, api, mut want) = four_served("gm-floor", &strs(&args)).await;
    floor_admission(&rollout, &ns).await;
    let (publisher, admin) = (publisher().await, admin(&ns));
    let name = "gm-floor";
    publisher
        .create(
            &PostParams::default(),
            &rollout.object(name, &candidate, Some("manual")),
        )
        .await
        .expect("the publisher creates a GuestModule under manual promotion");
    wait_for(
        &admin,
        name,
        &[
            ("Shadowed", "True", "AsExpected"),
            ("Serving", "False", "AwaitingApproval"),
        ],
    )
    .await;

    let lowering = json!({"spec": {"source": {"oci": trap}, "promotion": "direct"}});
    let by_publisher = publisher
        .patch(name, &PatchParams::default(), &Patch::Merge(&lowering))
        .await;
    assert!(
        forbidden(
            &by_publisher,
            "asks promotion direct, below the floor the operator sets for kind Hostile: manual"
        ),
        "{by_publisher:?}"
    );
    let to_auto = publisher
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"promotion": "auto"}})),
        )
        .await;
    assert!(forbidden(&to_auto, "below the floor"), "{to_auto:?}");
    let o = get(&admin, name).await;
    assert_eq!(o["spec"]["promotion"], "manual");
    assert_eq!(o["spec"]["source"]["oci"], candidate.as_str());

    // One who may lowers it: the host holds the module to the floor all
    // the same.
    admin
        .patch(name, &PatchParams::default(), &Patch::Merge(&lowering))
        .await
        .expect("an administrator may ask for less");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Shadowed", "False", "Regression"),
            ("Ready", "False", "Regression"),
            ("Stalled", "True", "Regression"),
        ],
    )
    .await;
    assert_eq!(o["status"]["digest"], digest_of(&trap));
    assert_eq!(o["status"]["promotion"], "manual", "{}", o["status"]);
    let shadowed = condition(&o, "Shadowed").unwrap().message;
    assert!(
        shadowed.contains("4 would fail where the serving module does not")
            && shadowed.ends_with("held (promotion manual)"),
        "{shadowed}"
    );
    wait_replicas(&admin, name, &[("a", "Held", digest_of(&trap))]).await;
    // Every parent Ready True, evaluated by the module serving before.
    want[0].1 = "after".into();
    set_message(&api, &want[0].0, "after").await;
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}

/// Under a floor of `manual` for Hostile, a GuestModule created asking for
/// `direct` by a user the admission policy lets (bound to the approver's
/// role as well as the publisher's) is served as the floor: shadowed, then
/// waiting for a reviewer's decision (Serving False AwaitingApproval), its
/// status saying the promotion in force and the floor that raised it, the
/// module before serving on. Approved, it serves.
#[tokio::test]
async fn a_module_asking_less_than_the_floor_serves_only_once_approved() {
    let v = variants();
    let rollout = Rollout::new("gm-floor-direct");
    let module = rollout.push(&v.message, "message", true, 1);
    let mut args = rollout.args("a");
    args.extend(["--promotion-floor", FLOOR].map(str::to_owned));
    let client = admin_client().await;
    install(&client).await;
    for role in [
        "reconciler-guestmodule-publisher",
        "reconciler-guestmodule-approver",
    ] {
        identity::apply_rbac(&client, identity::cluster_role_binding(role, RELEASER)).await;
    }
    let (ns, _dir, host, api, want) = four_served("gm-floor-direct", &strs(&args)).await;
    floor_admission(&rollout, &ns).await;
    let (releaser, approver, admin) =
        (as_user(RELEASER).await, as_user(APPROVER).await, admin(&ns));
    let name = "gm-floor-direct";
    releaser
        .create(
            &PostParams::default(),
            &rollout.object(name, &module, Some("direct")),
        )
        .await
        .expect("a user who may approve asks for direct");
    let o = wait_for(
        &admin,
        name,
        &[
            ("Shadowed", "True", "AsExpected"),
            ("Serving", "False", "AwaitingApproval"),
            ("Ready", "False", "AwaitingApproval"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(o["status"]["promotion"], "manual", "{}", o["status"]);
    let serving = condition(&o, "Serving").unwrap().message;
    assert!(
        serving.starts_with(
            "Promotion manual, the floor of kind Hostile (direct asked): awaiting a reviewer's decision"
        ),
        "{serving}"
    );
    assert_eq!(o["status"]["shadow"]["parents"], 4, "{}", o["status"]);
    wait_replicas(&admin, name, &[("a", "Held", digest_of(&module))]).await;
    wait_messages(&api, &want).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        None
    );

    approver
        .patch_status(
            name,
            &PatchParams::default(),
            &decision(digest_of(&module), "Approved", APPROVER),
        )
        .await
        .expect("the approver approves it");
    wait_for(
        &admin,
        name,
        &[
            ("Serving", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    let v2: Vec<(String, String)> = want
        .iter()
        .map(|(n, m)| (n.clone(), format!("v2: {m}")))
        .collect();
    wait_messages(&api, &v2).await;
    assert_eq!(
        host.sample("reconciler_swaps_total{kind=\"Hostile\"}"),
        Some(1.0)
    );
    admin.delete(name, &Default::default()).await.unwrap();
    host.finish();
    ns.cleanup().await.unwrap();
}
