//! The PgToolBoxConsole guest end to end: `reconciler-host run` as a child
//! process serving the console guest against the real local kube-apiserver
//! (`tests/apiserver`, one per test binary, with kube-controller-manager's
//! deployment, replicaset, namespace and garbage-collector controllers).
//! Each test has its own namespace and its own host watching only that
//! namespace. The host renders the console's children (contract 0.3.0: the
//! `<name>-ingress` NetworkPolicy, the ServiceAccount and RoleBindings, the
//! `<name>-instance-ca` bundle, the Deployment, the Service, the Ingress),
//! the controllers make the ReplicaSets and Pods. The test makes only what
//! a user or another controller would: the console, Nodes with their
//! podCIDRs, the installation's ClusterRoles, CloudNativePG Clusters with
//! their CA Secrets, NetworkPolicies of the namespace's own; the Pods are
//! scheduled onto kwok's simulated Nodes (`kwok-node-<i>`, podCIDR
//! `10.<128+i>.0.0/16`), which report them running (or crash-looping,
//! chosen through [`PodStates`]); the test stands in for the ingress
//! controller only (`console_objects::admit_as_router`: the Ingress's
//! load-balancer address).
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
    CONSOLE, CONSOLE_ROLE, HOST_SUFFIX, IMAGE, POD_LOGS_ROLE, TRUST_ALL_PEERS, TRUST_ANNOTATION,
    admit_as_router, ca_bundle_name, ca_secret, cluster_roles, console, console_pods, consoles,
    create_cluster_scoped, delete_cluster_scoped, ensure_cluster_role, ingress_nginx_peer,
    ingress_spec, ip_block_peer, node, nodes, open_policy, pg_cluster, workload_name,
};
use harness::{
    Host, condition, events_about, eventually, fixture_of, garbage_collector_follows, get, has,
    install_crds, published, resource_version, settle, summary, wait_for, wait_healthy,
};
use objects::{PodState, api, create, create_all, merge};
use reconciler_host_harness::pod_states::PodStates;

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

/// The Nodes of a test: two named after the namespace with podCIDRs
/// `10.<net>.2.0/23` and `10.<net>.4.0/23` (`net` is the test's own). The
/// console's Pods are on none of them: the scheduler places them on kwok's
/// Nodes (a new Node is tainted not-ready, and nothing lifts a test
/// Node's taint), whose ranges are outside every test's. The Nodes are still what the
/// console reads of the cluster's podCIDRs (ExposurePeersBroad, and the
/// note when a Node has none).
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

/// What a running exposed console needs beside the host: the chooser of
/// its Pods' state (kept for the test).
struct Running {
    _pod_states: PodStates,
    host: Host,
}

/// The Nodes, the console `NAME` exposed through an Ingress for
/// `HOSTNAME` confined to `from`, its Pods' chooser and the host; then
/// the ingress controller's part: the Ingress the host made admitted.
/// (Before, the test made the Deployment, its Pods, the policy and the
/// Ingress before the host started; now the host makes them from the
/// console, in the order the guest asks: the policy first, so no pass sees
/// the Ingress unconfined.)
async fn exposed_console(
    ns: &TestNamespace,
    placement: &Placement,
    from: &[Value],
    pod_logs: bool,
) -> Running {
    let client = ns.client();
    placement.create_nodes(&client).await;
    create(
        &client,
        ns.name(),
        console(NAME, ingress_spec(HOSTNAME, from, pod_logs)),
    )
    .await;
    let pod_states = PodStates::start(&client, ns.name(), PodState::Running);
    let host = Host::start(ns.name()).await;
    admit_as_router(&client, ns.name(), NAME, HOSTNAME).await;
    Running {
        _pod_states: pod_states,
        host,
    }
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

/// Ready True and ExposureConfined True with the grant rolled out: the
/// console's one Pod carries it (the Deployment's first Pods are made
/// without it, before the confinement is checked; the grant follows
/// ExposureConfined True and rolls out as a new ReplicaSet), the
/// Deployment's rollout is through, and the message says the console
/// trusts the peers. What the tests used to start from, when they made
/// the granted Pods themselves.
async fn wait_confined(client: &kube::Client, ns: &str) -> Value {
    let consoles = consoles(client, ns);
    let deployments = api(client, ns, "apps/v1", "Deployment");
    eventually(
        "ExposureConfined True with the grant rolled out",
        async || {
            let o = get(&consoles, NAME).await;
            let pods = console_pods(client, ns, NAME).await;
            let d = get(&deployments, &workload_name(NAME)).await;
            let through = d["status"]["observedGeneration"] == d["metadata"]["generation"]
                && d["status"]["replicas"] == 1
                && d["status"]["updatedReplicas"] == 1
                && d["status"]["availableReplicas"] == 1;
            let granted = pods.len() == 1
                && pods
                    .iter()
                    .all(|p| p["metadata"]["annotations"][TRUST_ANNOTATION] == TRUST_ALL_PEERS);
            let trusted = condition(&o, "ExposureConfined").is_some_and(|c| {
                c.status == "True"
                    && c.message
                        .ends_with("the console trusts X-Forwarded-For from these peers.")
            });
            if through && granted && trusted && has(&o, "Ready", "True", "AsExpected") {
                Ok(o)
            } else {
                Err((summary(&o), pods.len(), d["status"].clone()))
            }
        },
    )
    .await
}

/// The plurals of the kinds the console writes (its children).
const CHILD_RESOURCES: [&str; 8] = [
    "networkpolicies",
    "serviceaccounts",
    "rolebindings",
    "configmaps",
    "deployments",
    "services",
    "ingresses",
    "httproutes",
];

/// The host's applies (server-side apply: PATCH) of children in `ns` so far.
fn child_applies(host: &Host, ns: &str) -> usize {
    CHILD_RESOURCES
        .iter()
        .map(|r| host.requests("PATCH", &format!("/namespaces/{ns}/{r}/")))
        .sum()
}

/// The UID of an object's controller, if it has one.
fn controller_of(object: &Value) -> Option<String> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
        .map(str::to_owned)
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
    let Running { _pod_states, host } = exposed_console(
        &ns,
        &placement,
        &nginx_and_block("203.0.113.0/24", &["203.0.113.8/29"]),
        false,
    )
    .await;
    let consoles = consoles(&client, ns.name());

    wait_ready_with_url(&consoles).await;
    let o = wait_confined(&client, ns.name()).await;
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

    // Healthy and confined: nothing is a Warning (the console's first
    // passes may find the policy the host just applied and no Pod address
    // yet, ExposureTrustUnverified, but ExposureConfined is advisory and
    // seed 000 reports no advisory condition by Event).
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
    // Node, metadata only) find the same status and write nothing, and
    // apply none of the children again (they hold every field asked for).
    let version = resource_version(&get(&consoles, NAME).await);
    let writes = host.status_writes(ns.name(), NAME);
    let applies = child_applies(&host, ns.name());
    let touched = json!({"metadata": {"labels": {"test.reconciler.dev/touched": "1"}}});
    let pod = console_pods(&client, ns.name(), NAME).await[0]["metadata"]["name"]
        .as_str()
        .expect("a Pod name")
        .to_owned();
    merge(&objects::pods(&client, ns.name()), &pod, touched.clone()).await;
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
    assert_eq!(
        child_applies(&host, ns.name()),
        applies,
        "no child applied again"
    );

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
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    let before = wait_confined(&client, ns.name()).await;

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
    // Seed 000 lists the Events worth attention (Ready turning True,
    // Stalled turning True, an aspect turning False, error classes):
    // ExposureConfined is advisory, so its turn is no Warning.
    settle().await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(
        published(&events, "Warning", "ExposurePolicyBypassed"),
        0,
        "an advisory condition raises no Event: {events:#?}"
    );

    objects::delete(
        &api(&client, ns.name(), "networking.k8s.io/v1", "NetworkPolicy"),
        "allow-console-port",
    )
    .await;
    // The grant was withdrawn while the policy was bypassed (a rollout
    // without it): True again, and granted again once that rollout is
    // through.
    let o = wait_confined(&client, ns.name()).await;
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
    let Running { _pod_states, host } = exposed_console(
        &ns,
        &placement,
        &nginx_and_block("198.51.100.0/24", &[]),
        false,
    )
    .await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    let before = wait_confined(&client, ns.name()).await;

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
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], true).await;
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
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    // The Pods carry the grant: what ExposurePolicyKept is about below.
    wait_confined(&client, ns.name()).await;
    let ingresses = api(&client, ns.name(), "networking.k8s.io/v1", "Ingress");
    let published_ingress = uid_of(&ingresses, &workload_name(NAME)).await;

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
    // The host made the Ingress, so it withdraws it now (deleted by its
    // UID): the pass that asks says "Ingress orders-console is withdrawn",
    // the next, which finds it gone, that nothing is published.
    eventually("the Ingress withdrawn", async || {
        match ingresses.get_opt(&workload_name(NAME)).await.expect("get") {
            None => Ok(()),
            Some(i) => Err(i.metadata.uid),
        }
    })
    .await;
    eventually("ExposureReady to say nothing is published", async || {
        let o = get(&consoles, NAME).await;
        let m = message(&o, "ExposureReady");
        if m.ends_with("nothing is published under it and status.url is cleared") {
            Ok(())
        } else {
            Err(m)
        }
    })
    .await;

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

    // The hostname fixed: the host makes a new Ingress, which the ingress
    // controller admits again.
    merge(&consoles, NAME, hostname(HOSTNAME)).await;
    admit_as_router(&client, ns.name(), NAME, HOSTNAME).await;
    assert_ne!(
        uid_of(&ingresses, &workload_name(NAME)).await,
        published_ingress
    );
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
    // The host makes the Deployment and the bundle; the controllers the
    // Pod, kwok starts it.
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
            && m.contains("SecretKeyMissing (a Secret without ca.crt): beta (beta-ca)")
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
    // The bundle the host mirrored: the shared CA once, and the console its
    // controller.
    let bundle = get(
        &api(&client, ns.name(), "v1", "ConfigMap"),
        &ca_bundle_name(NAME),
    )
    .await;
    assert_eq!(bundle["data"]["ca.crt"], console_objects::CA_PEM);
    assert_eq!(
        controller_of(&bundle),
        Some(uid_of(&consoles, NAME).await),
        "{}",
        bundle["metadata"]
    );

    host.finish();
    ns.cleanup().await.unwrap();
}

// The console's children, end to end (contract 0.3.0): made by the host
// with the console as their controller, adopted by a host started again,
// put back when edited by hand, never taken from another owner, collected
// with the console; and what the API server refuses of them.

/// The children of an exposed console with `podLogs: true`, as
/// (apiVersion, kind, name).
fn exposed_children() -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            console_objects::policy_name(NAME),
        ),
        ("v1", "ServiceAccount", workload_name(NAME)),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            workload_name(NAME),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            format!("{}-pod-logs", workload_name(NAME)),
        ),
        ("v1", "ConfigMap", ca_bundle_name(NAME)),
        ("apps/v1", "Deployment", workload_name(NAME)),
        ("v1", "Service", workload_name(NAME)),
        ("networking.k8s.io/v1", "Ingress", workload_name(NAME)),
    ]
}

/// The kubeconfig of the test API server, for a host started again.
fn kubeconfig() -> std::path::PathBuf {
    reconciler_testsupport::kubeconfig_path().expect("the test apiserver")
}

/// 5. Every child of an exposed console is made by the host, controlled by
/// the console and labelled `app.kubernetes.io/managed-by:
/// reconciler-host`; a host started again adopts them as they are (no
/// apply, no status write) and still follows the console; deleting the
/// console collects them all (the garbage collector follows the owner
/// references the host set), the controllers' ReplicaSets and Pods with
/// them.
#[tokio::test]
async fn children_are_made_adopted_by_a_new_host_and_collected_with_the_console() {
    let ns = namespace("console-children").await;
    let client = ns.client();
    ensure_cluster_role(&client, POD_LOGS_ROLE).await;
    garbage_collector_follows(&client, "pgtoolboxconsoles.pgtoolbox.fyannk.dev").await;
    let placement = Placement::new(&ns, 206);
    let Running {
        _pod_states: pod_states,
        host,
    } = exposed_console(&ns, &placement, &[ingress_nginx_peer()], true).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    wait_confined(&client, ns.name()).await;
    let uid = uid_of(&consoles, NAME).await;

    for (api_version, kind, name) in exposed_children() {
        let child = get(&api(&client, ns.name(), api_version, kind), &name).await;
        let md = &child["metadata"];
        assert_eq!(
            controller_of(&child).as_deref(),
            Some(uid.as_str()),
            "{kind} {name}: {md}"
        );
        assert_eq!(
            md["labels"]["app.kubernetes.io/managed-by"], "reconciler-host",
            "{kind} {name}: {md}"
        );
        assert_eq!(
            md["labels"]["app.kubernetes.io/instance"], NAME,
            "{kind} {name}: {md}"
        );
    }
    let version = resource_version(&get(&consoles, NAME).await);
    host.finish();

    // Started again: its caches hold every child with every field asked
    // for, so its passes send nothing.
    let again = Host::start_with(
        &kubeconfig(),
        &["--namespaces", ns.name()],
        &format!("{}-again", ns.name()),
    )
    .await;
    settle().await;
    assert_eq!(child_applies(&again, ns.name()), 0, "no child applied");
    assert_eq!(again.status_writes(ns.name(), NAME), 0);
    assert_eq!(resource_version(&get(&consoles, NAME).await), version);
    // And it follows the console: its Pod crash-looping is written, with
    // still no child applied.
    pod_states.set(NAME, objects::crash_loop());
    wait_for(
        &consoles,
        NAME,
        &[("WorkloadReady", "False", "CrashLoopBackOff")],
    )
    .await;
    assert_eq!(child_applies(&again, ns.name()), 0, "no child applied");

    objects::delete(&consoles, NAME).await;
    eventually("the children to be collected", async || {
        let mut left = Vec::new();
        for (api_version, kind, name) in exposed_children() {
            let children = api(&client, ns.name(), api_version, kind);
            if children.get_opt(&name).await.expect("get").is_some() {
                left.push(format!("{kind} {name}"));
            }
        }
        let pods = console_pods(&client, ns.name(), NAME).await;
        let replica_sets = api(&client, ns.name(), "apps/v1", "ReplicaSet")
            .list(&kube::api::ListParams::default())
            .await
            .expect("listing ReplicaSets")
            .items
            .len();
        if left.is_empty() && pods.is_empty() && replica_sets == 0 {
            Ok(())
        } else {
            Err((left, pods.len(), replica_sets))
        }
    })
    .await;

    again.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 6. The operator narrows `allowedHostSuffixes` (a host started again
/// with `.apps.example.org`): the console's hostname is refused
/// (HostnameNotAllowed, a stall) and the Ingress the host had made is
/// deleted. (The test server serves no Route kind: the Ingress is the
/// exposure here; a Route is withdrawn the same way, by the UID the guest
/// saw.)
#[tokio::test]
async fn a_hostname_refused_by_the_settings_withdraws_the_ingress() {
    refused_hostname_withdraws("console-withdraw", 207, &[]).await;
}

/// 6b. The same under mode observe: seed 000, "what was published under
/// the name is withdrawn, whatever else stalls": a withdrawal passes every
/// gate (issue 29), though nothing else of the console is made.
#[tokio::test]
async fn a_hostname_refused_under_mode_observe_still_withdraws_the_ingress() {
    refused_hostname_withdraws(
        "console-withdraw-observe",
        211,
        &["--mode", "PgToolBoxConsole=observe"],
    )
    .await;
}

/// 6c. The same under manual approval (ReconcilePlans not served here, so
/// any other change would fail the pass): the withdrawal is made.
#[tokio::test]
async fn a_hostname_refused_under_manual_approval_still_withdraws_the_ingress() {
    refused_hostname_withdraws(
        "console-withdraw-manual",
        212,
        &["--approval", "PgToolBoxConsole=manual"],
    )
    .await;
}

/// The console exposed by a host, then a host with `gates` whose
/// `allowedHostSuffixes` refuses its hostname: the Ingress is withdrawn,
/// status.url cleared, the workload left as it was.
async fn refused_hostname_withdraws(prefix: &str, net: u8, gates: &[&str]) {
    let ns = namespace(prefix).await;
    let client = ns.client();
    let placement = Placement::new(&ns, net);
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    let ingresses = api(&client, ns.name(), "networking.k8s.io/v1", "Ingress");
    let published_ingress = get(&ingresses, &workload_name(NAME)).await;
    assert!(controller_of(&published_ingress).is_some());
    host.finish();

    let narrowed = "PgToolBoxConsole.allowedHostSuffixes=.apps.example.org";
    let mut args = vec!["--namespaces", ns.name()];
    args.extend_from_slice(gates);
    let host = Host::start_overriding(
        &kubeconfig(),
        &args,
        &[narrowed],
        &format!("{}-narrowed", ns.name()),
    )
    .await;
    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("Stalled", "True", "HostnameNotAllowed"),
            ("ConfigurationValid", "False", "HostnameNotAllowed"),
            ("ExposureReady", "False", "HostnameNotAllowed"),
        ],
    )
    .await;
    let m = message(&o, "ConfigurationValid");
    assert!(
        m.contains(HOSTNAME) && m.contains(".apps.example.org"),
        "{m}"
    );
    eventually("the Ingress withdrawn", async || {
        match ingresses.get_opt(&workload_name(NAME)).await.expect("get") {
            None => Ok(()),
            Some(i) => Err(i.metadata.uid),
        }
    })
    .await;
    eventually("status.url cleared", async || {
        let o = get(&consoles, NAME).await;
        if o["status"].get("url").is_none_or(Value::is_null) {
            Ok(())
        } else {
            Err(o["status"]["url"].clone())
        }
    })
    .await;
    // Only the exposure is withdrawn: the workload stays as it was.
    get(
        &api(&client, ns.name(), "apps/v1", "Deployment"),
        &workload_name(NAME),
    )
    .await;

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 7. A child edited by hand (another field manager): the Deployment's
/// image is put back by the next pass (the host watches what it writes;
/// server-side apply with force takes the field back), and then nothing is
/// applied again: no tug of war.
#[tokio::test]
async fn a_child_edited_by_hand_is_put_back() {
    let ns = namespace("console-edited").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 208);
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;
    wait_confined(&client, ns.name()).await;

    let deployments = api(&client, ns.name(), "apps/v1", "Deployment");
    let image = |d: &Value| d["spec"]["template"]["spec"]["containers"][0]["image"].clone();
    deployments
        .patch(
            &workload_name(NAME),
            &by_hand(),
            &kube::api::Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "console", "image": "ghcr.io/fyannk/pgtoolbox-console:0.9"},
            ]}}}})),
        )
        .await
        .expect("editing the Deployment");

    eventually("the image put back", async || {
        let deployment = get(&deployments, &workload_name(NAME)).await;
        if image(&deployment) == IMAGE {
            Ok(())
        } else {
            Err(image(&deployment))
        }
    })
    .await;
    wait_confined(&client, ns.name()).await;
    let applies = child_applies(&host, ns.name());
    settle().await;
    assert_eq!(child_applies(&host, ns.name()), applies, "no tug of war");

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// A change by hand: another field manager than the host's.
fn by_hand() -> kube::api::PatchParams {
    kube::api::PatchParams {
        field_manager: Some("kubectl-edit".to_owned()),
        ..Default::default()
    }
}

/// 7b. The Service's port edited by hand (8080 to 9090, another field
/// manager): put back by the next pass. A server-side apply alone keeps
/// the other manager's list entry (`ports` is a map keyed by port and
/// protocol) beside the host's, which the API server refuses ("Duplicate
/// value", 422); the host then takes the lists of its body back whole and
/// applies again.
#[tokio::test]
async fn a_service_port_edited_by_hand_is_put_back() {
    let ns = namespace("console-port").await;
    let client = ns.client();
    let placement = Placement::new(&ns, 209);
    let Running { _pod_states, host } =
        exposed_console(&ns, &placement, &[ingress_nginx_peer()], false).await;
    let consoles = consoles(&client, ns.name());
    wait_ready_with_url(&consoles).await;

    let services = api(&client, ns.name(), "v1", "Service");
    let ports = |s: &Value| s["spec"]["ports"].clone();
    services
        .patch(
            &workload_name(NAME),
            &by_hand(),
            // A merge patch replaces the list (a strategic one would add a
            // port: its merge key is the port number).
            &kube::api::Patch::Merge(json!({"spec": {"ports": [
                {"name": "http", "port": 9090, "protocol": "TCP", "targetPort": "http"},
            ]}})),
        )
        .await
        .expect("editing the Service");
    eventually("the port put back", async || {
        let service = get(&services, &workload_name(NAME)).await;
        if ports(&service).as_array().map(Vec::len) == Some(1) && ports(&service)[0]["port"] == 8080
        {
            Ok(())
        } else {
            Err(ports(&service))
        }
    })
    .await;
    wait_healthy(&consoles, NAME).await;

    host.finish();
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// 8. An object under a child's name controlled by another owner (the
/// Service `orders-console`, controlled by a ConfigMap): ConfigurationValid
/// False (ResourceNotOwned, a stall), nothing asked for, the object left as
/// it is (its resourceVersion unchanged).
#[tokio::test]
async fn a_child_controlled_by_another_owner_is_not_owned_and_not_touched() {
    let ns = namespace("console-not-owned").await;
    let client = ns.client();
    create(
        &client,
        ns.name(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "someone-else"}}),
    )
    .await;
    let config_maps = api(&client, ns.name(), "v1", "ConfigMap");
    let owner = uid_of(&config_maps, "someone-else").await;
    create(
        &client,
        ns.name(),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": workload_name(NAME),
                "ownerReferences": [{
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "someone-else",
                    "uid": owner,
                    "controller": true,
                }],
            },
            "spec": {"ports": [{"name": "web", "port": 80}]},
        }),
    )
    .await;
    let services = api(&client, ns.name(), "v1", "Service");
    let theirs = resource_version(&get(&services, &workload_name(NAME)).await);
    create(&client, ns.name(), console(NAME, json!({"podLogs": false}))).await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());

    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ConfigurationValid", "False", "ResourceNotOwned"),
            ("Stalled", "True", "ResourceNotOwned"),
            ("Ready", "False", "ResourceNotOwned"),
        ],
    )
    .await;
    let m = message(&o, "ConfigurationValid");
    assert!(
        m.starts_with("Service orders-console exists and is controlled by ConfigMap someone-else"),
        "{m}"
    );
    settle().await;
    assert_eq!(
        resource_version(&get(&services, &workload_name(NAME)).await),
        theirs,
        "the other owner's Service is not touched"
    );
    assert_eq!(child_applies(&host, ns.name()), 0, "nothing asked for");
    assert!(
        api(&client, ns.name(), "apps/v1", "Deployment")
            .get_opt(&workload_name(NAME))
            .await
            .expect("get")
            .is_none()
    );

    host.finish();
    ns.cleanup().await.unwrap();
}

/// 9. The console's NetworkPolicy refused by the API server (a
/// ValidatingAdmissionPolicy denying NetworkPolicies in the namespace):
/// the host's apply is refused (422 Invalid) and recorded; the next pass is
/// ConfigurationValid False (ExposurePolicyInvalid, a stall) naming the
/// refusal and when the policy is asked for again (five minutes after the
/// refusal), with nothing asked for meanwhile: one refused apply, no
/// retries. The five minutes are not waited for: what is asserted of the
/// re-ask is the time the condition names (within the five minutes from
/// now) and the guest's requeue seen as no pass asking during the settle
/// interval; then a change of the spec (the other re-ask the README
/// names), with the admission policy gone, has the policy applied and the
/// console Ready.
#[tokio::test]
async fn a_network_policy_refused_by_admission_is_exposure_policy_invalid() {
    let ns = namespace("console-vap").await;
    let client = ns.client();
    let name = format!("deny-netpol-{}", ns.name());
    let cluster = |kind: &str| {
        Api::<DynamicObject>::all_with(
            client.clone(),
            &objects::resource_of("admissionregistration.k8s.io/v1", kind),
        )
    };
    let policies = cluster("ValidatingAdmissionPolicy");
    let bindings = cluster("ValidatingAdmissionPolicyBinding");
    freeze_network_policies(&client, ns.name(), &name).await;
    let network_policies = api(&client, ns.name(), "networking.k8s.io/v1", "NetworkPolicy");
    eventually(
        "the admission policy to be enforced",
        async || match network_policy_admitted(&network_policies).await {
            Ok(false) => Ok(()),
            other => Err(other),
        },
    )
    .await;

    let placement = Placement::new(&ns, 210);
    placement.create_nodes(&client).await;
    create(
        &client,
        ns.name(),
        console(NAME, ingress_spec(HOSTNAME, &[ingress_nginx_peer()], false)),
    )
    .await;
    let host = Host::start(ns.name()).await;
    let consoles = consoles(&client, ns.name());
    let policy_path = format!(
        "/namespaces/{}/networkpolicies/{}",
        ns.name(),
        console_objects::policy_name(NAME)
    );

    let o = wait_for(
        &consoles,
        NAME,
        &[
            ("ConfigurationValid", "False", "ExposurePolicyInvalid"),
            ("Stalled", "True", "ExposurePolicyInvalid"),
            ("Ready", "False", "ExposurePolicyInvalid"),
        ],
    )
    .await;
    refusal_named_with_when_asked_again(&o);

    // Held back: no pass asks for the policy (or anything) again in the
    // meantime, and the one refusal is the host's one "children not made".
    held_back(&host, &client, ns.name(), &policy_path).await;

    // The admission policy gone and the spec changed: asked for again at
    // once, applied, the console Ready.
    let _ = bindings.delete(&name, &Default::default()).await;
    let _ = policies.delete(&name, &Default::default()).await;
    eventually(
        "the admission policy to be gone",
        async || match network_policy_admitted(&network_policies).await {
            Ok(true) => Ok(()),
            other => Err(other),
        },
    )
    .await;
    merge(
        &consoles,
        NAME,
        json!({"spec": {"exposure": {"networkPolicy": {"from": [
            ingress_nginx_peer(),
            ip_block_peer("192.0.2.0/24", &[]),
        ]}}}}),
    )
    .await;
    admit_as_router(&client, ns.name(), NAME, HOSTNAME).await;
    wait_ready_with_url(&consoles).await;
    get(&network_policies, &console_objects::policy_name(NAME)).await;

    // The refused apply was logged as a warning: expected here.
    drop(host);
    placement.delete_nodes(&client).await;
    ns.cleanup().await.unwrap();
}

/// A ValidatingAdmissionPolicy, and its binding, denying NetworkPolicies in
/// the namespace `ns`; both named `name`.
async fn freeze_network_policies(client: &kube::Client, ns: &str, name: &str) {
    create_cluster_scoped(
        client,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["networking.k8s.io"],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["networkpolicies"],
                }]},
                "validations": [{
                    "expression": format!("request.namespace != '{ns}'"),
                    "message": "NetworkPolicies are frozen in this test",
                }],
            },
        }),
    )
    .await;
    create_cluster_scoped(
        client,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }),
    )
    .await;
}

/// Whether a NetworkPolicy of our own is admitted now (then deleted).
async fn network_policy_admitted(network_policies: &Api<DynamicObject>) -> Result<bool, String> {
    let probe: DynamicObject =
        serde_json::from_value(open_policy("probe")).expect("a NetworkPolicy");
    match network_policies
        .create(&kube::api::PostParams::default(), &probe)
        .await
    {
        Ok(_) => {
            objects::delete(network_policies, "probe").await;
            Ok(true)
        }
        Err(kube::Error::Api(e)) if e.code == 422 || e.code == 403 => Ok(false),
        Err(e) => Err(format!("{e}")),
    }
}

/// The refusal named in ConfigurationValid's message, with when the policy
/// is asked for again: within five minutes of now.
fn refusal_named_with_when_asked_again(o: &Value) {
    let seen = jiff::Timestamp::now();
    let m = message(o, "ConfigurationValid");
    assert!(
        m.starts_with(
            "the API server refused NetworkPolicy orders-ingress rendered from \
             spec.exposure.networkPolicy (422 Invalid): "
        ) && m.contains("NetworkPolicies are frozen in this test"),
        "{m}"
    );
    let again: jiff::Timestamp = m
        .split_once("asked for again at ")
        .and_then(|(_, rest)| rest.split_once(',').map(|(at, _)| at))
        .expect("when the policy is asked for again")
        .parse()
        .expect("an RFC 3339 time");
    let left = again.duration_since(seen);
    assert!(
        left.is_positive() && left <= jiff::SignedDuration::from_secs(300),
        "asked for again within five minutes of the refusal: {again} ({left:?} from now)"
    );
}

/// Nothing asked for again in the meantime: one refused apply, the one
/// problem the host logs, the console still stalled, one Warning.
async fn held_back(host: &Host, client: &kube::Client, ns: &str, policy_path: &str) {
    let consoles = consoles(client, ns);
    settle().await;
    assert_eq!(host.requests("PATCH", policy_path), 1, "one refused apply");
    let refused: Vec<String> = host
        .problems()
        .into_iter()
        .filter(|l| l.contains("children not made"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(
        refused[0].contains("the apply of NetworkPolicy orders-ingress failed"),
        "{refused:#?}"
    );
    assert!(
        has(
            &get(&consoles, NAME).await,
            "Stalled",
            "True",
            "ExposurePolicyInvalid"
        ),
        "still stalled"
    );
    let events = events_about(client, ns, NAME).await;
    assert_eq!(
        published(&events, "Warning", "ExposurePolicyInvalid"),
        1,
        "{events:#?}"
    );
}
