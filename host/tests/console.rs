//! The PgToolBoxConsole guest end to end: `reconciler-host run` as a child
//! process serving the console guest against the real local kube-apiserver
//! (`tests/apiserver`, one per test binary). Each test has its own
//! namespace and its own host watching only that namespace; the operator's
//! renderer and the cluster's controllers are played by the test: it
//! creates the Deployment `<name>-console` and its Pods (with their status
//! and the X-Forwarded-For grant), the admitted Ingress, the
//! `<name>-ingress` NetworkPolicy as the operator renders it, Nodes with
//! their podCIDRs, the installation's ClusterRoles, and CloudNativePG
//! Clusters with their CA Secrets.
//!
//! Nodes and ClusterRoles are cluster-scoped, shared by every test of the
//! binary: each test names its Nodes after its namespace and gives their
//! podCIDRs and its `ipBlock`s ranges of its own; `pgtoolbox-console` is
//! created once and never removed; `pgtoolbox-console-pod-logs`, which one
//! test deletes, is needed by that test alone (the others say
//! `podLogs: false`).
//!
//! Nothing here asserts timing: every expectation is polled with a timeout
//! (`harness::TIMEOUT`), and what must not happen is watched for a settle
//! interval (`harness::SETTLE`).

use reconciler_host_harness::console_objects;
use reconciler_host_harness::objects;
use reconciler_host_harness::operator as harness;

use kube::Api;
use kube::api::DynamicObject;
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

use console_objects::{
    CONSOLE, CONSOLE_ROLE, HOST_SUFFIX, POD_LOGS_ROLE, ca_secret, cluster_roles, console, consoles,
    create_cluster_scoped, delete_cluster_scoped, deployment, ensure_cluster_role, ingress,
    ingress_nginx_peer, ingress_policy, ingress_spec, ip_block_peer, node, nodes, open_policy,
    pg_cluster, pod,
};
use harness::{
    Host, condition, events_about, eventually, fixture_of, get, has, install_crds, published,
    resource_version, settle, summary, wait_for, wait_healthy,
};
use objects::{api, create, create_all, merge};

/// The console of every test.
const NAME: &str = "orders";
/// Its allowed hostname.
const HOSTNAME: &str = "orders.apps.example.com";

/// A namespace with the CRDs and the console ClusterRole installed.
async fn namespace(prefix: &str) -> TestNamespace {
    // First: the binary serves the console guest, not the EvidenceAgent.
    fixture_of(&CONSOLE);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    let client = ns.client();
    install_crds(&client).await;
    ensure_cluster_role(&client, CONSOLE_ROLE).await;
    ns
}

/// Where a test's console runs: two Nodes named after the namespace with
/// podCIDRs `10.<net>.2.0/23` and `10.<net>.4.0/23` (`net` is the test's
/// own), and a Pod on each.
struct Placement {
    net: u8,
    nodes: Vec<String>,
}

impl Placement {
    fn new(ns: &TestNamespace, net: u8) -> Placement {
        Placement {
            net,
            nodes: vec![
                format!("{}-worker-1", ns.name()),
                format!("{}-worker-2", ns.name()),
            ],
        }
    }

    fn pod_cidr(&self, i: usize) -> String {
        format!("10.{}.{}.0/23", self.net, 2 + 2 * i)
    }

    fn pod_ip(&self, i: usize) -> String {
        format!("10.{}.{}.{}", self.net, 2 + 2 * i, 17 + i)
    }

    async fn create_nodes(&self, client: &kube::Client) {
        for (i, n) in self.nodes.iter().enumerate() {
            create_cluster_scoped(client, node(n, &[&self.pod_cidr(i)])).await;
        }
    }

    async fn delete_nodes(&self, client: &kube::Client) {
        for n in &self.nodes {
            delete_cluster_scoped(&nodes(client), n).await;
        }
    }
}

/// The console's uid, once it exists.
async fn uid_of(api: &Api<DynamicObject>, name: &str) -> String {
    get(api, name).await["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned()
}

/// Creates the console `NAME` exposed through an Ingress for `HOSTNAME`,
/// confined to `from`, then what the operator and the cluster would have
/// made of it: the Nodes, the Deployment and its two Pods (with the grant),
/// the `<name>-ingress` policy rendered from `from`, and the Ingress with
/// its load-balancer address. Called before the host starts, so its first
/// pass sees all of it: the objects are watched kind by kind, and a host
/// running while they are created may see the Ingress before the policy
/// (ExposureOpen, for a moment, with its Warning).
async fn exposed_console(
    ns: &TestNamespace,
    placement: &Placement,
    from: &[Value],
    pod_logs: bool,
) {
    let client = ns.client();
    let consoles = consoles(&client, ns.name());
    create(
        &client,
        ns.name(),
        console(NAME, ingress_spec(HOSTNAME, from, pod_logs)),
    )
    .await;
    let uid = uid_of(&consoles, NAME).await;
    placement.create_nodes(&client).await;
    let mut children = vec![deployment(NAME, &uid, 2)];
    for (i, (suffix, n)) in ["a1b2c", "d3e4f"].iter().zip(&placement.nodes).enumerate() {
        children.push(pod(NAME, suffix, n, &placement.pod_ip(i)));
    }
    children.push(ingress_policy(NAME, &uid, from));
    children.push(ingress(NAME, &uid, HOSTNAME));
    create_all(&client, ns.name(), children).await;
}

/// Ready True with every aspect True, ExposureReady for the Ingress, and
/// the url.
async fn wait_ready_with_url(consoles: &Api<DynamicObject>) -> Value {
    // Every aspect True (AsExpected), ExposureReady included.
    let o = wait_healthy(consoles, NAME).await;
    eventually("status.url", async || {
        let o = get(consoles, NAME).await;
        if o["status"]["url"] == format!("https://{HOSTNAME}") {
            Ok(o)
        } else {
            Err((o["status"]["url"].clone(), summary(&o)))
        }
    })
    .await;
    o
}

fn message(object: &Value, type_: &str) -> String {
    condition(object, type_)
        .unwrap_or_else(|| panic!("no {type_} in {:?}", summary(object)))
        .message
}

fn generation(object: &Value) -> i64 {
    object["metadata"]["generation"].as_i64().unwrap_or(-1)
}

/// The Ingress controller's Pods and one narrow `ipBlock`.
fn nginx_and_block(cidr: &str, except: &[&str]) -> Vec<Value> {
    vec![ingress_nginx_peer(), ip_block_peer(cidr, except)]
}

/// 1. A console exposed through an admitted Ingress, its policy rendered,
/// its peers narrow and every Node with podCIDRs: Ready True, ExposureReady
/// True with `status.url`, ExposureConfined True saying whom the console
/// trusts with X-Forwarded-For, the ipBlock recorded as verified.
#[tokio::test]
async fn an_exposed_confined_console_is_ready_with_its_url() {
    let ns = namespace("console-ready").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 201);
    exposed_console(
        &ns,
        &placement,
        &nginx_and_block("203.0.113.0/24", &["203.0.113.8/29"]),
        false,
    )
    .await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());

    wait_ready_with_url(&consoles).await;
    let o = wait_for(
        &consoles,
        NAME,
        &[("ExposureConfined", "True", "AsExpected")],
    )
    .await;
    assert_eq!(
        message(&o, "ExposureReady"),
        format!("Ingress orders-console is admitted: the console is at https://{HOSTNAME}")
    );
    assert_eq!(
        message(&o, "ExposureConfined"),
        "NetworkPolicy orders-ingress admits only from[0] (Pods \
         app.kubernetes.io/name=ingress-nginx of namespaces \
         kubernetes.io/metadata.name=ingress-nginx) and from[1] (ipBlock \
         203.0.113.0/24 except 203.0.113.8/29) to the console port 8080; the \
         console trusts X-Forwarded-For from these peers.",
        "whom the console trusts, and no note about the Nodes"
    );
    assert_eq!(
        o["status"]["exposureConfinement"]["verifiedIpBlocks"],
        json!(["203.0.113.0/24 except 203.0.113.8/29"])
    );
    assert_eq!(o["status"]["publishedExposureKinds"], json!(["Ingress"]));
    assert!(
        message(&o, "ConfigurationValid")
            .contains(&format!("exposure ingress orders-console for {HOSTNAME}")),
        "{:?}",
        summary(&o)
    );

    // Healthy and confined: nothing is a Warning.
    let events = eventually("the Ready Event", async || {
        let events = events_about(&client, ns.name(), NAME).await;
        if published(&events, "Normal", "AsExpected") > 0 {
            Ok(events)
        } else {
            Err(events)
        }
    })
    .await;
    assert!(
        events.iter().all(|e| e.type_ == "Normal"),
        "no Warning for a healthy console: {events:#?}"
    );

    // Converged: passes re-queued by what the console reads (a Pod and a
    // Node, metadata only) find the same status and write nothing.
    let version = resource_version(&get(&consoles, NAME).await);
    let writes = host.status_writes(ns.name(), NAME);
    let touched = json!({"metadata": {"labels": {"test.reconciler.dev/touched": "1"}}});
    merge(
        &objects::pods(&client, ns.name()),
        "orders-console-7c9d8f6b5-a1b2c",
        touched.clone(),
    )
    .await;
    merge(&nodes(&client), &placement.nodes[0], touched).await;
    settle().await;
    let still = get(&consoles, NAME).await;
    assert_eq!(
        resource_version(&still),
        version,
        "no write: {:?}",
        summary(&still)
    );
    assert_eq!(host.status_writes(ns.name(), NAME), writes);

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 2a. Another NetworkPolicy of the namespace admitting every source to
/// the console port: the console reads NetworkPolicies, so creating one
/// re-queues it with no change to the console itself. ExposureConfined
/// False (ExposurePolicyBypassed) naming it, Ready unaffected (advisory);
/// deleting it confines the console again.
#[tokio::test]
async fn another_policy_admitting_everyone_bypasses_the_confinement_until_deleted() {
    let ns = namespace("console-bypass").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 202);
    exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    let before = wait_for(
        &consoles,
        NAME,
        &[("ExposureConfined", "True", "AsExpected")],
    )
    .await;

    create(&client, ns.name(), open_policy("allow-console-port")).await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ExposureConfined", "False", "ExposurePolicyBypassed"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    let m = message(&o, "ExposureConfined");
    assert!(
        m.starts_with("NetworkPolicy allow-console-port admits ")
            && m.contains(
                "to the console port 8080, which spec.exposure.networkPolicy.from does not list"
            ),
        "{m}"
    );
    assert_eq!(
        generation(&o),
        generation(&before),
        "the console itself did not change"
    );
    eventually("the ExposurePolicyBypassed Warning", async || {
        let events = events_about(&client, ns.name(), NAME).await;
        if published(&events, "Warning", "ExposurePolicyBypassed") == 1 {
            Ok(())
        } else {
            Err(events)
        }
    })
    .await;

    objects::delete(
        &api(&client, ns.name(), "networking.k8s.io/v1", "NetworkPolicy"),
        "allow-console-port",
    )
    .await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ExposureConfined", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    assert!(
        message(&o, "ExposureConfined")
            .ends_with("the console trusts X-Forwarded-For from these peers."),
        "{:?}",
        summary(&o)
    );
    assert_eq!(generation(&o), generation(&before));

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 2b. The Nodes' podCIDRs are a fact the console reads: a Node
/// registering (again) with a podCIDR the `ipBlock` peer overlaps makes the
/// peer broad (ExposurePeersBroad), with no change to the console; the Node
/// back on its own range confines it again. A Node's podCIDRs cannot be
/// changed in place, so the Node is deleted and registered again, as a
/// re-joining Node would be.
#[tokio::test]
async fn a_node_pod_cidr_overlapping_an_ip_block_makes_the_peers_broad() {
    let ns = namespace("console-nodes").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 203);
    let edge = format!("{}-edge-1", ns.name());
    let own_range = format!("10.{}.6.0/23", placement.net);
    create_cluster_scoped(&client, node(&edge, &[&own_range])).await;
    exposed_console(
        &ns,
        &placement,
        &nginx_and_block("198.51.100.0/24", &[]),
        false,
    )
    .await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    let before = wait_for(
        &consoles,
        NAME,
        &[("ExposureConfined", "True", "AsExpected")],
    )
    .await;

    // The API server refuses a change of a Node's podCIDRs in place.
    let moved = json!({"spec": {
        "podCIDR": "198.51.100.128/25",
        "podCIDRs": ["198.51.100.128/25"],
    }});
    let refused = nodes(&client)
        .patch(
            &edge,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(moved),
        )
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.code == 422),
        "{refused:?}"
    );
    let register = async |cidr: &str| {
        delete_cluster_scoped(&nodes(&client), &edge).await;
        eventually("the Node to be gone", async || {
            match nodes(&client).get_opt(&edge).await.expect("get") {
                None => Ok(()),
                Some(_) => Err("still there"),
            }
        })
        .await;
        create_cluster_scoped(&client, node(&edge, &[cidr])).await;
    };

    register("198.51.100.128/25").await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ExposureConfined", "False", "ExposurePeersBroad"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    let m = message(&o, "ExposureConfined");
    assert!(
        m.starts_with(
            "from[1] (ipBlock 198.51.100.0/24) admits (nearly) everyone: \
             overlaps the Node podCIDR 198.51.100.128/25"
        ),
        "{m}"
    );
    assert!(
        o["status"]["exposureConfinement"].is_null()
            || o["status"]["exposureConfinement"]["verifiedIpBlocks"].is_null(),
        "a broad block is not recorded as verified: {}",
        o["status"]
    );
    assert_eq!(
        generation(&o),
        generation(&before),
        "the console did not change"
    );

    register(&own_range).await;
    wait_for(
        &consoles,
        NAME,
        &[("ExposureConfined", "True", "AsExpected")],
    )
    .await;

    host.finish();
    delete_cluster_scoped(&nodes(&client), &edge).await;
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 2c. ClusterRoles are facts the console reads (cluster-wide, whatever
/// `--namespaces` says): deleting `pgtoolbox-console-pod-logs` stalls the
/// console (ConsoleRoleMissing), recreating it makes it Ready again. The
/// stall's recheck is two minutes, longer than the tests wait: only the
/// dependency on the ClusterRole can have re-queued it.
#[tokio::test]
async fn deleting_the_pod_logs_role_stalls_and_recreating_it_recovers() {
    let rule = fixture_of(&CONSOLE)
        .spec
        .stall_rule("ConsoleRoleMissing")
        .expect("ConsoleRoleMissing is a stall of the kind");
    assert!(
        rule.recheck_seconds
            .is_some_and(|s| u64::from(s) > harness::TIMEOUT.as_secs()),
        "{rule:?}"
    );

    let ns = namespace("console-roles").await;
    let client = ns.client();
    ensure_cluster_role(&client, POD_LOGS_ROLE).await;
    let placement = Placement::new(&ns, 204);
    exposed_console(&ns, &placement, &[ingress_nginx_peer()], true).await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());
    let before = wait_ready_with_url(&consoles).await;
    assert!(
        message(&before, "ConfigurationValid")
            .contains("ClusterRoles pgtoolbox-console, pgtoolbox-console-pod-logs"),
        "{:?}",
        summary(&before)
    );

    delete_cluster_scoped(&cluster_roles(&client), POD_LOGS_ROLE).await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ConfigurationValid", "False", "ConsoleRoleMissing"),
            ("Stalled", "True", "ConsoleRoleMissing"),
            ("Ready", "False", "ConsoleRoleMissing"),
        ],
    )
    .await;
    assert_eq!(
        message(&o, "ConfigurationValid"),
        "ClusterRole pgtoolbox-console-pod-logs does not exist: the operator installation is \
         incomplete (looked at again every two minutes)"
    );
    assert_eq!(
        generation(&o),
        generation(&before),
        "the console did not change"
    );

    ensure_cluster_role(&client, POD_LOGS_ROLE).await;
    wait_ready_with_url(&consoles).await;

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 3. A hostname outside `allowedHostSuffixes` (the hosts run with
/// `.apps.example.com`): Stalled True and ConfigurationValid and
/// ExposureReady False (HostnameNotAllowed), `status.url` cleared, one
/// Warning Event for all three; the hostname fixed, Ready True again.
#[tokio::test]
async fn a_hostname_outside_the_allowed_suffixes_stalls_with_one_warning() {
    assert!(
        CONSOLE
            .settings
            .contains(&"PgToolBoxConsole.allowedHostSuffixes=.apps.example.com")
            && HOSTNAME.ends_with(HOST_SUFFIX)
    );
    let ns = namespace("console-hostname").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 205);
    exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;

    let outside = "orders.example.org";
    let hostname = |h: &str| json!({"spec": {"exposure": {"hostname": h}}});
    merge(&consoles, NAME, hostname(outside)).await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("Stalled", "True", "HostnameNotAllowed"),
            ("Progressing", "False", "HostnameNotAllowed"),
            ("ConfigurationValid", "False", "HostnameNotAllowed"),
            ("ExposureReady", "False", "HostnameNotAllowed"),
            ("Ready", "False", "HostnameNotAllowed"),
            // The policy outlives the grant the Pods still carry.
            ("ExposureConfined", "False", "ExposurePolicyKept"),
        ],
    )
    .await;
    let m = message(&o, "ConfigurationValid");
    assert!(m.contains(outside) && m.contains(HOST_SUFFIX), "{m}");
    assert!(
        message(&o, "ExposureConfined").starts_with(
            "the console is stalled on HostnameNotAllowed: its exposure is withdrawn, and its \
             workload and NetworkPolicy orders-ingress stay as they were"
        ),
        "{:?}",
        summary(&o)
    );
    let url = eventually("status.url cleared", async || {
        let o = get(&consoles, NAME).await;
        if o["status"].get("url").is_none_or(Value::is_null) {
            Ok(o)
        } else {
            Err(o["status"]["url"].clone())
        }
    })
    .await;
    assert!(has(&url, "Stalled", "True", "HostnameNotAllowed"));

    eventually("the HostnameNotAllowed Warning", async || {
        let events = events_about(&client, ns.name(), NAME).await;
        if published(&events, "Warning", "HostnameNotAllowed") > 0 {
            Ok(())
        } else {
            Err(events)
        }
    })
    .await;
    settle().await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(
        published(&events, "Warning", "HostnameNotAllowed"),
        1,
        "Stalled, ConfigurationValid and ExposureReady share one Warning: {events:#?}"
    );
    let warning = events
        .iter()
        .find(|e| e.reason == "HostnameNotAllowed")
        .unwrap();
    assert!(warning.note.contains(outside), "{warning:?}");

    merge(&consoles, NAME, hostname(HOSTNAME)).await;
    wait_ready_with_url(&consoles).await;
    wait_for(
        &consoles,
        NAME,
        &[("ExposureConfined", "True", "AsExpected")],
    )
    .await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(
        published(&events, "Warning", "HostnameNotAllowed"),
        1,
        "{events:#?}"
    );

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 4. The instance CA bundle through the real cache, which keeps of a
/// Secret only its key names and a summary of its certificates: a selected
/// Cluster whose `<cluster>-ca` has a PEM `ca.crt`, and one whose Secret
/// lacks it: InstanceCABundleComplete False (InstanceCAMissing) naming the
/// second (SecretKeyMissing); `ca.crt` added, True, the CA counted once.
#[tokio::test]
async fn instance_ca_bundle_follows_the_cluster_secrets() {
    let ns = namespace("console-ca").await;
    let client = ns.client();
    let consoles = consoles(&client, ns.name());
    create_all(
        &client,
        ns.name(),
        vec![
            pg_cluster("alpha", json!({"team": "b"})),
            ca_secret("alpha", true),
            pg_cluster("beta", json!({"team": "b"})),
            ca_secret("beta", false),
            // Not selected: no Secret at all, and nothing said about it.
            pg_cluster("gamma", json!({"team": "c"})),
        ],
    )
    .await;
    create(
        &client,
        ns.name(),
        console(
            NAME,
            json!({"clusterSelector": {"matchLabels": {"team": "b"}}, "podLogs": false}),
        ),
    )
    .await;
    let uid = uid_of(&consoles, NAME).await;
    let worker = format!("{}-worker-1", ns.name());
    create_all(
        &client,
        ns.name(),
        vec![
            deployment(NAME, &uid, 1),
            pod(NAME, "a1b2c", &worker, "10.206.2.17"),
        ],
    )
    .await;
    let host = Host::start(ns.name()).await;

    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("InstanceCABundleComplete", "False", "InstanceCAMissing"),
            ("ExposureReady", "True", "NotRequested"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    let m = message(&o, "InstanceCABundleComplete");
    assert!(
        m.starts_with("1 of 2 selected Clusters have no server CA in ConfigMap orders-instance-ca")
            && m.contains("beta (beta-ca: ")
            && !m.contains("alpha")
            && !m.contains("gamma"),
        "{m}"
    );
    assert_eq!(
        o["status"]["instanceCABundle"],
        json!({"missing": [{"cluster": "beta", "secret": "beta-ca", "reason": "SecretKeyMissing"}]})
    );

    merge(
        &api(&client, ns.name(), "v1", "Secret"),
        "beta-ca",
        json!({"data": {"ca.crt": console_objects::b64(console_objects::CA_PEM)}}),
    )
    .await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("InstanceCABundleComplete", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
        ],
    )
    .await;
    let m = message(&o, "InstanceCABundleComplete");
    assert!(
        m.contains("every selected Cluster (2) is in ConfigMap orders-instance-ca")
            && m.contains("1 distinct CA, 664 bytes"),
        "the shared CA counted once, at its PEM size: {m}"
    );
    assert!(
        o["status"]
            .get("instanceCABundle")
            .is_none_or(Value::is_null),
        "{}",
        o["status"]
    );

    host.finish();
    ns.cleanup().await.unwrap();
}
