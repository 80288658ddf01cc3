//! The host's change path end to end: the writer test guest
//! (`guests/testing/writer`) asks for a ConfigMap per Widget, and the host
//! makes it so against the real API server: created with the Widget as its
//! controller and the host's label, no request once converged (nor after a
//! restart), a hand edit put back, an object of another owner left alone,
//! a child no longer wanted deleted by its UID, a refusal by an admission
//! policy recorded for the guest, which reports it as its own reason, and
//! the children garbage-collected with their parent (by the real
//! kube-controller-manager the test API server runs).

use reconciler_host_harness::objects::{self, create, merge};
use reconciler_host_harness::operator::{
    Guests, Host, condition, eventually, fixture_of, garbage_collector_follows, get, install_crds,
    settle,
};
use reconciler_host_harness::widgets::{widget, widgets};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use kube::Api;
use kube::api::DynamicObject;

/// The writer guest, alone.
const WRITER: Guests = Guests {
    dir: "children-tests",
    crates: &["writer-guest"],
    settings: &[],
    expected_warnings: &[],
};

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&WRITER);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ns
}

fn config_maps(ns: &TestNamespace) -> Api<DynamicObject> {
    objects::api(&ns.client(), ns.name(), "v1", "ConfigMap")
}

/// The ConfigMap once it exists.
async fn config_map(ns: &TestNamespace, name: &str) -> Value {
    let api = config_maps(ns);
    eventually(&format!("ConfigMap {name}"), async || {
        match api.get_opt(name).await {
            Ok(Some(o)) => Ok(serde_json::to_value(o).unwrap()),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

/// Waits for ChildReady with `status` and `reason`.
async fn child_ready(ns: &TestNamespace, name: &str, status: &str, reason: &str) -> Value {
    let api = widgets(ns);
    eventually(
        &format!("{name}: ChildReady {status} {reason}"),
        async || {
            let o = get(&api, name).await;
            match condition(&o, "ChildReady") {
                Some(c) if c.status == status && c.reason == reason => Ok(o),
                other => Err(other),
            }
        },
    )
    .await
}

/// Applies to ConfigMap `name` the host sent.
fn applies(host: &Host, ns: &TestNamespace, name: &str) -> usize {
    host.requests(
        "PATCH",
        &format!("/namespaces/{}/configmaps/{name}", ns.name()),
    )
}

#[tokio::test]
async fn a_child_is_made_owned_and_costs_nothing_once_converged_or_after_a_restart() {
    let ns = namespace("children-make").await;
    let client = ns.client();
    let mut host = Host::start(ns.name()).await;
    create(&client, ns.name(), widget("w", json!({"data": {"a": "1"}}))).await;
    let w = child_ready(&ns, "w", "True", "AsExpected").await;
    let cm = config_map(&ns, "w-config").await;
    assert_eq!(cm["data"], json!({"a": "1"}));
    let owner = &cm["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], w["metadata"]["uid"]);
    assert_eq!(owner["kind"], "Widget");
    assert_eq!(owner["controller"], true);
    assert_eq!(
        cm["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "reconciler-host"
    );
    assert_eq!(applies(&host, &ns, "w-config"), 1, "one apply made it");

    // A pass with nothing to change (a label on the Widget) sends nothing.
    merge(
        &widgets(&ns),
        "w",
        json!({"metadata": {"labels": {"touched": "1"}}}),
    )
    .await;
    settle().await;
    assert_eq!(
        applies(&host, &ns, "w-config"),
        1,
        "a converged pass sends no apply"
    );
    let unchanged = config_maps(&ns).get("w-config").await.unwrap();
    assert_eq!(
        unchanged.metadata.resource_version,
        cm["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned)
    );
    host.stop();

    // A new host adopts what exists: no apply.
    let host = Host::start(ns.name()).await;
    settle().await;
    assert_eq!(
        applies(&host, &ns, "w-config"),
        0,
        "adopted, not applied again"
    );
    host.finish();
}

#[tokio::test]
async fn a_child_edited_by_hand_is_put_back_and_an_unwanted_one_is_deleted() {
    let ns = namespace("children-edit").await;
    let client = ns.client();
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        widget("w", json!({"data": {"a": "1"}, "extra": true})),
    )
    .await;
    child_ready(&ns, "w", "True", "AsExpected").await;
    config_map(&ns, "w-config").await;
    let extra = config_map(&ns, "w-extra").await;

    // Someone edits the data the host applied: put back.
    merge(
        &config_maps(&ns),
        "w-config",
        json!({"data": {"a": "tampered", "b": "theirs"}}),
    )
    .await;
    eventually("the data put back", async || {
        let cm = config_map(&ns, "w-config").await;
        if cm["data"]["a"] == "1" {
            Ok(cm)
        } else {
            Err(cm["data"].clone())
        }
    })
    .await;

    // No longer wanted: deleted (by the UID the guest saw).
    merge(&widgets(&ns), "w", json!({"spec": {"extra": false}})).await;
    let api = config_maps(&ns);
    eventually("w-extra deleted", async || {
        match api.get_opt("w-extra").await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(extra["metadata"]["uid"].is_string());
    host.finish();
}

#[tokio::test]
async fn children_go_with_their_parent() {
    let ns = namespace("children-gc").await;
    let client = ns.client();
    garbage_collector_follows(&client, "widgets.testing.reconciler.dev").await;
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        widget("g", json!({"data": {"a": "1"}, "extra": true})),
    )
    .await;
    child_ready(&ns, "g", "True", "AsExpected").await;
    config_map(&ns, "g-config").await;
    config_map(&ns, "g-extra").await;
    objects::delete(&widgets(&ns), "g").await;
    let api = config_maps(&ns);
    eventually("the children garbage-collected", async || {
        let left: Vec<String> = api
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .filter(|n| n.starts_with("g-"))
            .collect();
        if left.is_empty() { Ok(()) } else { Err(left) }
    })
    .await;
    host.finish();
}

#[tokio::test]
async fn a_child_of_another_owner_is_not_touched() {
    let ns = namespace("children-owner").await;
    let client = ns.client();
    // `x-config` exists, controlled by another object.
    create(
        &client,
        ns.name(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "other-owner"}}),
    )
    .await;
    let other = config_maps(&ns).get("other-owner").await.unwrap();
    create(
        &client,
        ns.name(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x-config", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "other-owner",
            "uid": other.metadata.uid, "controller": true}]},
        "data": {"theirs": "yes"}}),
    )
    .await;
    let before = config_maps(&ns).get("x-config").await.unwrap();
    let host = Host::start(ns.name()).await;
    create(&client, ns.name(), widget("x", json!({"data": {"a": "1"}}))).await;
    let x = child_ready(&ns, "x", "False", "ResourceNotOwned").await;
    assert!(
        condition(&x, "ChildReady")
            .unwrap()
            .message
            .contains("controlled by ConfigMap other-owner"),
        "{x}"
    );
    settle().await;
    let after = config_maps(&ns).get("x-config").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "not touched"
    );
    assert_eq!(applies(&host, &ns, "x-config"), 0);
    host.finish();
}

#[tokio::test]
async fn a_refused_apply_reaches_the_guest_which_reports_it() {
    let ns = namespace("children-refused").await;
    let client = ns.client();
    // An admission policy refusing ConfigMaps with a `forbidden` key, in
    // this namespace.
    let policy_name = format!("{}-no-forbidden", ns.name());
    objects::create(
        &client,
        "",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": policy_name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "!has(object.data) || !('forbidden' in object.data)",
                    "message": "no forbidden keys"}]
            }
        }),
    )
    .await;
    objects::create(&client, "", json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name},
        "spec": {"policyName": policy_name, "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns.name()}}}}
    })).await;
    // The policy takes effect once the API server has loaded it.
    let probe = config_maps(&ns);
    eventually("the policy in force", async || {
        let attempt: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1",
            "kind": "ConfigMap", "metadata": {"name": "probe"}, "data": {"forbidden": "x"}}))
        .unwrap();
        match probe.create(&Default::default(), &attempt).await {
            Err(kube::Error::Api(s)) if s.message.contains("no forbidden keys") => Ok(()),
            Ok(_) => {
                let _ = probe.delete("probe", &Default::default()).await;
                Err("admitted".to_owned())
            }
            Err(e) => Err(e.to_string()),
        }
    })
    .await;

    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        widget("r", json!({"data": {"forbidden": "x"}})),
    )
    .await;
    let r = child_ready(&ns, "r", "False", "ChildRefused").await;
    let message = condition(&r, "ChildReady").unwrap().message;
    assert!(message.contains("no forbidden keys"), "{message}");
    assert!(
        config_maps(&ns)
            .get_opt("r-config")
            .await
            .unwrap()
            .is_none()
    );
    drop(host);
    let _ = kube::Api::<DynamicObject>::all_with(
        client.clone(),
        &objects::resource_of(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
        ),
    )
    .delete(&policy_name, &Default::default())
    .await;
}

/// `rbac --discover` asks the cluster for each kind's resource: the
/// writer's ClusterRole grants what the host does with ConfigMaps (list,
/// watch; create, patch, delete) and its Widgets' status.
#[tokio::test]
async fn rbac_grants_what_the_host_writes_as_discovery_names_it() {
    let _ns = namespace("children-rbac").await;
    let kubeconfig = reconciler_testsupport::kubeconfig_path().expect("the test apiserver");
    let guest = reconciler_host_harness::guests::guest_wasm("writer-guest");
    let out = std::process::Command::new(reconciler_host_harness::paths::host_binary())
        .env("KUBECONFIG", &kubeconfig)
        .args(["--no-cache", "rbac", "--discover"])
        .arg(&guest)
        .output()
        .expect("rbac runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let documents: Vec<Value> = serde_yaml::Deserializer::from_slice(&out.stdout)
        .map(|d| serde::Deserialize::deserialize(d).expect("YAML"))
        .collect();
    let names: Vec<&str> = documents
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        ["reconciler-host", "reconciler-plan-approver-widgets"],
        "the host's ClusterRole, then the Widget's approver role"
    );
    let role = &documents[0];
    let rules = role["rules"].as_array().expect("rules");
    let verbs_on = |resource: &str| -> Vec<String> {
        let mut verbs: Vec<String> = rules
            .iter()
            .filter(|r| {
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == resource)
            })
            .flat_map(|r| r["verbs"].as_array().unwrap().clone())
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        verbs.sort();
        verbs
    };
    assert_eq!(
        verbs_on("configmaps"),
        ["create", "delete", "list", "patch", "watch"]
    );
    assert_eq!(verbs_on("widgets"), ["list", "watch"]);
    assert_eq!(verbs_on("widgets/status"), ["patch"]);
}

/// A generated Secret: random values the guest never sees, created once,
/// owned by the parent, never overwritten (nor by a new host), and
/// different for each parent.
#[tokio::test]
async fn a_generated_secret_is_made_once_and_kept() {
    use base64::Engine as _;
    let ns = namespace("children-secret").await;
    let client = ns.client();
    let mut host = Host::start(ns.name()).await;
    for name in ["s1", "s2"] {
        create(
            &client,
            ns.name(),
            widget(name, json!({"data": {}, "secret": true})),
        )
        .await;
        child_ready(&ns, name, "True", "AsExpected").await;
    }
    let secrets = objects::api(&client, ns.name(), "v1", "Secret");
    let read = async |name: &str| -> Value {
        eventually(&format!("Secret {name}"), async || {
            match secrets.get_opt(name).await {
                Ok(Some(o)) => Ok(serde_json::to_value(o).unwrap()),
                other => Err(format!("{other:?}")),
            }
        })
        .await
    };
    let first = read("s1-secret").await;
    let password = base64::engine::general_purpose::STANDARD
        .decode(first["data"]["password"].as_str().expect("a password"))
        .expect("base64");
    assert_eq!(password.len(), 32);
    let s1 = get(&widgets(&ns), "s1").await;
    assert_eq!(
        first["metadata"]["ownerReferences"][0]["uid"],
        s1["metadata"]["uid"]
    );
    assert_ne!(
        read("s2-secret").await["data"]["password"],
        first["data"]["password"],
        "each parent its own"
    );
    let widget_text = serde_json::to_string(&s1).unwrap();
    assert!(
        !widget_text.contains(first["data"]["password"].as_str().unwrap()),
        "the value reaches no status"
    );

    // Asked for again (a pass with nothing else to do), then by a new host:
    // kept as it is.
    merge(
        &widgets(&ns),
        "s1",
        json!({"metadata": {"labels": {"touched": "1"}}}),
    )
    .await;
    settle().await;
    host.stop();
    let host = Host::start(ns.name()).await;
    settle().await;
    let kept = read("s1-secret").await;
    assert_eq!(
        kept["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert_eq!(kept["data"], first["data"]);
    host.finish();
}

/// Review asked for where the cluster serves no ReconcilePlan (this test
/// server has no plans CRD): nothing is made, and the Widget says why
/// (ReconcileError naming the CRD to install), reported once. A gate
/// annotation that is no gate is named with its value.
#[tokio::test]
async fn review_where_plans_are_not_served_makes_nothing_and_says_why() {
    let ns = namespace("children-no-plans").await;
    let client = ns.client();
    let _host = Host::start_in(ns.name(), &["--approval", "Widget=manual"]).await;
    create(&client, ns.name(), widget("w", json!({"data": {"a": "1"}}))).await;
    let mut typo = widget("t", json!({"data": {"a": "1"}}));
    typo["metadata"]["annotations"] = json!({"reconciler.dev/mode": "obsrve"});
    create(&client, ns.name(), typo).await;
    let api = widgets(&ns);
    for (name, says) in [
        (
            "w",
            "needs ReconcilePlans, which this cluster does not serve (install deploy/plans-crd.yaml): nothing was changed",
        ),
        (
            "t",
            "annotation reconciler.dev/mode is \"obsrve\"; it must be observe or apply",
        ),
    ] {
        let w = eventually(&format!("{name}: ReconcileError"), async || {
            let o = get(&api, name).await;
            match condition(&o, "Ready") {
                Some(c) if c.reason == "ReconcileError" && c.message.contains(says) => Ok(o),
                other => Err(other),
            }
        })
        .await;
        assert_eq!(condition(&w, "Ready").unwrap().status, "False");
    }
    settle().await;
    for name in ["w-config", "t-config"] {
        assert!(
            config_maps(&ns).get_opt(name).await.unwrap().is_none(),
            "{name}: nothing is made"
        );
    }
    let events = reconciler_host_harness::operator::events_about(&client, ns.name(), "w").await;
    assert_eq!(
        reconciler_host_harness::operator::published(&events, "Warning", "ReconciliationFailed"),
        1,
        "{events:?}"
    );
}
