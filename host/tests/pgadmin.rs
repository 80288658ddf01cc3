//! The PgAdmin guest end to end: `reconciler-host run` serving the PgAdmin
//! guest against the real local kube-apiserver and the controller-manager's
//! deployment, replicaset and garbage-collector controllers. The host
//! renders the PgAdmin's children (the data claim, the Deployment, the
//! Service, the servers ConfigMap, the registration and backup Jobs); the
//! controllers make the ReplicaSets and Pods. The test makes what a user or
//! another operator would: PgAdmins, CloudNativePG Clusters and Poolers;
//! kwok's simulated Nodes run the Pods and, since no Job controller runs,
//! the test stands in for the Job controller's verdict on a Job
//! (`pgadmin_objects::end_as_job_controller`).
//!
//! Nothing here asserts timing: every expectation is polled with a timeout
//! (`harness::TIMEOUT`), and what must not happen is watched for a settle
//! interval (`harness::SETTLE`).

use reconciler_host_harness::objects::{api, create, create_all, merge};
use reconciler_host_harness::operator::{
    Host, condition, events_about, eventually, fixture_of, get, install_crds, published, settle,
    wait_for,
};
use reconciler_host_harness::pgadmin_objects::{
    IMAGE, JobOutcome, PGADMIN, component_jobs, end_as_job_controller, install_cloudnative_pg_crds,
    install_pgadmin_access_crd, pg_cluster, pgadmin, pgadmin_access, pgadmins, pooler,
    report_applied_as_cloudnative_pg, the_job,
};
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The PgAdmin of every test.
const NAME: &str = "orders";

async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&PGADMIN);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    install_cloudnative_pg_crds(&ns.client()).await;
    install_pgadmin_access_crd(&ns.client()).await;
    ns
}

/// The servers JSON of the registration ConfigMap.
async fn servers_json(ns: &TestNamespace) -> Value {
    let cm = get(
        &api(&ns.client(), ns.name(), "v1", "ConfigMap"),
        "orders-pgadmin-servers",
    )
    .await;
    serde_json::from_str(cm["data"]["servers.json"].as_str().expect("servers.json")).expect("JSON")
}

fn names(jobs: &[Value]) -> Vec<String> {
    jobs.iter()
        .map(|j| {
            j["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_offered_set_is_registered_by_one_job_per_set_with_its_events_once() {
    let ns = namespace("pgadmin-servers").await;
    let client = ns.client();
    create_all(
        &client,
        ns.name(),
        vec![
            pg_cluster("orders-db", json!({"team": "orders"})),
            pg_cluster("reports-db", json!({"team": "orders"})),
        ],
    )
    .await;
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        pgadmin(
            NAME,
            json!({"clusterSelector": {"matchLabels": {"team": "orders"}}}),
        ),
    )
    .await;
    let api = pgadmins(&client, ns.name());
    wait_for(
        &api,
        NAME,
        &[("ServersSynced", "Unknown", "RegistrationRunning")],
    )
    .await;
    let first = the_job(&client, ns.name(), "registration", None).await;
    let first_name = first["metadata"]["name"].as_str().unwrap().to_owned();
    let container = &first["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"], IMAGE,
        "the registration runs pgAdmin's image"
    );
    assert_eq!(
        first["metadata"]["ownerReferences"][0]["kind"], "PgAdmin",
        "the Job is the PgAdmin's"
    );
    let servers = servers_json(&ns).await;
    assert_eq!(
        servers["Servers"]["1"]["Host"],
        "orders-db-rw.".to_owned() + ns.name() + ".svc"
    );
    assert_eq!(servers["Servers"]["2"]["Name"], "reports-db rw as app");

    end_as_job_controller(&client, ns.name(), &first_name, JobOutcome::Succeeded).await;
    let o = wait_for(&api, NAME, &[("ServersSynced", "True", "AsExpected")]).await;
    assert_eq!(
        o["status"]["registration"]["registered"],
        first_name.as_str()
    );
    settle().await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(published(&events, "Normal", "RegistrationStarted"), 1);
    assert_eq!(published(&events, "Normal", "ServersRegistered"), 1);

    // A third Cluster joins the offered set: a new Job, the old one deleted.
    create(
        &client,
        ns.name(),
        pg_cluster("billing-db", json!({"team": "orders"})),
    )
    .await;
    let second = the_job(&client, ns.name(), "registration", Some(&first_name)).await;
    let second_name = second["metadata"]["name"].as_str().unwrap().to_owned();
    eventually("the old registration Job deleted", async || {
        let left = names(&component_jobs(&client, ns.name(), "registration").await);
        if left == [second_name.clone()] {
            Ok(())
        } else {
            Err(left)
        }
    })
    .await;
    end_as_job_controller(&client, ns.name(), &second_name, JobOutcome::Failed).await;
    let o = wait_for(
        &api,
        NAME,
        &[("ServersSynced", "False", "RegistrationFailed")],
    )
    .await;
    let message = condition(&o, "ServersSynced").unwrap().message;
    assert!(
        message.contains(&format!(
            "registration Job {second_name} failed: BackoffLimitExceeded"
        )),
        "{message}"
    );
    assert!(condition(&o, "Stalled").is_some_and(|c| c.status == "False"));
    settle().await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(published(&events, "Normal", "RegistrationStarted"), 2);
    assert_eq!(published(&events, "Warning", "RegistrationFailed"), 1);
    assert_eq!(
        names(&component_jobs(&client, ns.name(), "registration").await),
        [second_name],
        "a failed Job is not run again"
    );
    host.finish();
}

#[tokio::test]
async fn bad_input_names_the_field_and_leaves_pgadmin_running_with_what_resolves() {
    let ns = namespace("pgadmin-bad").await;
    let client = ns.client();
    let mut objects: Vec<Value> = (0..65)
        .map(|i| pg_cluster(&format!("db-{i:02}"), json!({"team": "many"})))
        .collect();
    objects.push(pg_cluster("billing-db", json!({})));
    objects.push(pooler("billing-db-pooler", "billing-db"));
    create_all(&client, ns.name(), objects).await;
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        pgadmin(
            NAME,
            json!({"clusterSelector": {"matchLabels": {"team": "many"}}}),
        ),
    )
    .await;
    let api = pgadmins(&client, ns.name());
    let o = wait_for(
        &api,
        NAME,
        &[
            ("ConfigurationValid", "False", "TooManyServers"),
            ("WorkloadReady", "True", "AsExpected"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert!(
        condition(&o, "ConfigurationValid")
            .unwrap()
            .message
            .contains("offer 65 servers, more than the 64 pgAdmin is given: db-64 rw as app")
    );
    the_job(&client, ns.name(), "registration", None).await;
    let servers = servers_json(&ns).await;
    assert_eq!(servers["Servers"].as_object().unwrap().len(), 64);

    // A pooler endpoint of a Cluster that is not offered.
    merge(
        &api,
        NAME,
        json!({"spec": {"clusterSelector": null,
            "clusterRefs": [{"name": "db-00", "endpoints": ["rw", "pooler:billing-db-pooler"]}]}}),
    )
    .await;
    let o = wait_for(
        &api,
        NAME,
        &[
            ("ConfigurationValid", "False", "PoolerNotFound"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    assert_eq!(
        condition(&o, "ConfigurationValid").unwrap().message,
        format!(
            "spec.clusterRefs[0].endpoints[1] pooler:billing-db-pooler: Pooler billing-db-pooler of {} serves Cluster billing-db, not db-00",
            ns.name()
        )
    );
    eventually("the offered set shrinks to db-00", async || {
        let servers = servers_json(&ns).await;
        match servers["Servers"].as_object().map(|s| s.len()) {
            Some(1) => Ok(()),
            other => Err(other),
        }
    })
    .await;
    // Nothing of another is touched: the Clusters and the Pooler stay.
    let clusters = api_list_len(&ns, "postgresql.cnpg.io/v1", "Cluster").await;
    assert_eq!(clusters, 66);
    assert_eq!(
        api_list_len(&ns, "postgresql.cnpg.io/v1", "Pooler").await,
        1
    );
    host.finish();
}

#[tokio::test]
async fn a_cluster_of_another_namespace_is_offered_once_granted_there_and_an_unwatched_namespace_is_named()
 {
    let ns = namespace("pgadmin-grantee").await;
    let theirs = TestNamespace::new("pgadmin-granter")
        .await
        .expect("a test namespace");
    let unwatched = TestNamespace::new("pgadmin-unwatched")
        .await
        .expect("a test namespace");
    let client = ns.client();
    clusters_elsewhere(&client, ns.name(), theirs.name(), unwatched.name()).await;
    let host = Host::start(&format!("{},{}", ns.name(), theirs.name())).await;
    create(
        &client,
        ns.name(),
        pgadmin(
            NAME,
            json!({"crossNamespaceClusterRefs": [
                {"namespace": theirs.name(), "name": "orders-db", "endpoints": ["rw", "ro"]},
                {"namespace": theirs.name(), "name": "billing-db"},
                {"namespace": unwatched.name(), "name": "secret-db"}]}),
        ),
    )
    .await;
    let admins = pgadmins(&client, ns.name());
    let o = wait_for(
        &admins,
        NAME,
        &[
            ("ConfigurationValid", "False", "GrantMissing"),
            ("Stalled", "False", "AsExpected"),
        ],
    )
    .await;
    let field = |i: usize| format!("spec.crossNamespaceClusterRefs[{i}]");
    assert_eq!(
        condition(&o, "ConfigurationValid").unwrap().message,
        format!(
            "no PgAdminAccess of {theirs} grants PgAdmin {ns}/{NAME} Cluster orders-db ({}); no PgAdminAccess of {theirs} grants PgAdmin {ns}/{NAME} Cluster billing-db ({})",
            field(0),
            field(1),
            theirs = theirs.name(),
            ns = ns.name(),
        )
    );
    let not_offered = json!({"namespace": unwatched.name(), "cluster": "secret-db", "state": "NotOffered",
        "message": format!("the operator may not read PgAdminAccesses in {}: Cluster secret-db ({}) is not offered",
            unwatched.name(), field(2))});
    assert_eq!(o["status"]["servers"], json!([not_offered]));

    // Granted there: offered on both endpoints, from that namespace.
    create(
        &client,
        theirs.name(),
        pgadmin_access("to-orders", &[(ns.name(), NAME)], &["orders-db"]),
    )
    .await;
    offered_from(&client, ns.name(), theirs.name()).await;
    let o = wait_for(
        &admins,
        NAME,
        &[("ConfigurationValid", "False", "GrantMissing")],
    )
    .await;
    assert!(
        condition(&o, "ConfigurationValid")
            .unwrap()
            .message
            .ends_with(&format!("Cluster billing-db ({})", field(1))),
        "{o}"
    );

    // The other Cluster granted too: the configuration is valid, the
    // unwatched namespace stays a row naming it and no other.
    merge(
        &api_of_access(&client, theirs.name()),
        "to-orders",
        json!({"spec": {"clusters": [{"name": "orders-db"}, {"name": "billing-db"}]}}),
    )
    .await;
    let o = wait_for(
        &admins,
        NAME,
        &[
            ("ConfigurationValid", "True", "AsExpected"),
            ("WorkloadReady", "True", "AsExpected"),
        ],
    )
    .await;
    let rows = o["status"]["servers"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows[2]["name"], "billing-db rw as app");
    assert_eq!(rows[3], not_offered);
    // Nothing of the other namespaces is written.
    assert_eq!(
        api_list_len(&theirs, "postgresql.cnpg.io/v1", "Cluster").await,
        2
    );
    let children = api(&client, theirs.name(), "v1", "ConfigMap")
        .list(&Default::default())
        .await
        .expect("listing")
        .items;
    assert!(
        children
            .iter()
            .all(|c| c.metadata.owner_references.is_none()),
        "no child in the granting namespace"
    );
    host.finish();
}

/// Two Clusters in `theirs`; one in `unwatched`, granted to the PgAdmin
/// of `ns` there, in a namespace the host does not watch.
async fn clusters_elsewhere(client: &kube::Client, ns: &str, theirs: &str, unwatched: &str) {
    create_all(
        client,
        theirs,
        vec![
            pg_cluster("orders-db", json!({})),
            pg_cluster("billing-db", json!({})),
        ],
    )
    .await;
    // Granted, in a namespace the host does not watch.
    create(client, unwatched, pg_cluster("secret-db", json!({}))).await;
    create(
        client,
        unwatched,
        pgadmin_access("to-orders", &[(ns, NAME)], &["secret-db"]),
    )
    .await;
}

/// Waits for orders-db to be offered from `theirs` on both endpoints, in
/// the servers ConfigMap of the PgAdmin of `ns`.
async fn offered_from(client: &kube::Client, ns: &str, theirs: &str) {
    let config_maps = api(client, ns, "v1", "ConfigMap");
    eventually("orders-db offered from the other namespace", async || {
        let servers: Value = match config_maps.get_opt("orders-pgadmin-servers").await {
            Ok(Some(cm)) => {
                serde_json::from_value::<Value>(cm.data["data"]["servers.json"].clone())
                    .ok()
                    .and_then(|text| serde_json::from_str(text.as_str()?).ok())
                    .unwrap_or_default()
            }
            _ => Value::Null,
        };
        let hosts: Vec<Value> = servers["Servers"]
            .as_object()
            .into_iter()
            .flat_map(|s| s.values().map(|s| s["Host"].clone()))
            .collect();
        let want = [
            json!(format!("orders-db-rw.{theirs}.svc")),
            json!(format!("orders-db-ro.{theirs}.svc")),
        ];
        if hosts == want { Ok(()) } else { Err(hosts) }
    })
    .await;
}

fn api_of_access(client: &kube::Client, ns: &str) -> kube::Api<kube::api::DynamicObject> {
    api(
        client,
        ns,
        reconciler_host_harness::pgadmin_objects::API_VERSION,
        "PgAdminAccess",
    )
}

async fn api_list_len(ns: &TestNamespace, api_version: &str, kind: &str) -> usize {
    api(&ns.client(), ns.name(), api_version, kind)
        .list(&Default::default())
        .await
        .expect("listing")
        .items
        .len()
}

/// The image of the pgAdmin container of the Deployment.
async fn deployment_image(ns: &TestNamespace) -> String {
    let d = get(
        &api(&ns.client(), ns.name(), "apps/v1", "Deployment"),
        "orders-pgadmin",
    )
    .await;
    d["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_changed_image_is_backed_up_first_and_the_skip_annotation_releases_only_its_image() {
    let ns = namespace("pgadmin-upgrade").await;
    let client = ns.client();
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        pgadmin(NAME, json!({"image": "docker.io/dpage/pgadmin4:9.2"})),
    )
    .await;
    let api = pgadmins(&client, ns.name());
    wait_for(&api, NAME, &[("Ready", "True", "AsExpected")]).await;

    // 9.3, with the annotation naming another image: the backup runs first.
    merge(
        &api,
        NAME,
        json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/skip-upgrade-backup": "docker.io/dpage/pgadmin4:9.9"}},
            "spec": {"image": IMAGE}}),
    )
    .await;
    let o = wait_for(
        &api,
        NAME,
        &[("WorkloadReady", "False", "UpgradeBackupRunning")],
    )
    .await;
    let message = condition(&o, "WorkloadReady").unwrap().message;
    assert!(
        message.contains("names docker.io/dpage/pgadmin4:9.9, not the target image"),
        "{message}"
    );
    let backup = the_job(&client, ns.name(), "upgrade-backup", None).await;
    assert_eq!(
        backup["spec"]["template"]["spec"]["containers"][0]["image"],
        "docker.io/dpage/pgadmin4:9.2",
        "the backup runs the old image"
    );
    assert_eq!(deployment_image(&ns).await, "docker.io/dpage/pgadmin4:9.2");

    let backup_name = backup["metadata"]["name"].as_str().unwrap().to_owned();
    end_as_job_controller(&client, ns.name(), &backup_name, JobOutcome::Succeeded).await;
    eventually("the Deployment runs 9.3", async || {
        let image = deployment_image(&ns).await;
        if image == IMAGE { Ok(()) } else { Err(image) }
    })
    .await;
    wait_for(&api, NAME, &[("Ready", "True", "AsExpected")]).await;

    // 9.4, the annotation naming it: no backup, a Warning.
    merge(
        &api,
        NAME,
        json!({"metadata": {"annotations": {"pgtoolbox.fyannk.dev/skip-upgrade-backup": "docker.io/dpage/pgadmin4:9.4"}},
            "spec": {"image": "docker.io/dpage/pgadmin4:9.4"}}),
    )
    .await;
    eventually("the Deployment runs 9.4", async || {
        let image = deployment_image(&ns).await;
        if image == "docker.io/dpage/pgadmin4:9.4" {
            Ok(())
        } else {
            Err(image)
        }
    })
    .await;
    wait_for(&api, NAME, &[("Ready", "True", "AsExpected")]).await;
    settle().await;
    assert!(
        component_jobs(&client, ns.name(), "upgrade-backup")
            .await
            .is_empty(),
        "no backup Job is left"
    );
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(published(&events, "Normal", "UpgradeBackupCompleted"), 1);
    assert_eq!(published(&events, "Warning", "UpgradeBackupSkipped"), 1);
    assert_eq!(published(&events, "Normal", "RolloutStarted"), 2);
    assert_eq!(published(&events, "Warning", "UpgradeBackupRunning"), 0);
    host.finish();
}

#[tokio::test]
async fn a_config_database_gets_its_role_and_database_and_pgadmin_starts_once_cloudnative_pg_applied_them()
 {
    let ns = namespace("pgadmin-configdb").await;
    let client = ns.client();
    create(&client, ns.name(), pg_cluster("orders-db", json!({}))).await;
    let host = Host::start(ns.name()).await;
    create(
        &client,
        ns.name(),
        pgadmin(
            NAME,
            json!({"configDatabase": {"clusterRef": {"name": "orders-db"}}}),
        ),
    )
    .await;
    let api = pgadmins(&client, ns.name());
    wait_for(
        &api,
        NAME,
        &[("WorkloadReady", "False", "ConfigDatabaseNotReady")],
    )
    .await;
    let roles = reconciler_host_harness::objects::api(
        &client,
        ns.name(),
        "postgresql.cnpg.io/v1",
        "DatabaseRole",
    );
    let role = get(&roles, "orders-pgadmin").await;
    assert_eq!(
        role["spec"]["password"],
        json!({"generate": true}),
        "the 1.31 CRD keeps spec.password"
    );
    assert_eq!(role["spec"]["name"], "pgadmin_orders");
    let deployments =
        reconciler_host_harness::objects::api(&client, ns.name(), "apps/v1", "Deployment");
    assert_eq!(
        get(&deployments, "orders-pgadmin").await["spec"]["replicas"],
        0
    );

    report_applied_as_cloudnative_pg(
        &client,
        ns.name(),
        "DatabaseRole",
        "orders-pgadmin",
        Some("orders-pgadmin-password"),
    )
    .await;
    report_applied_as_cloudnative_pg(&client, ns.name(), "Database", "orders-pgadmin", None).await;
    wait_for(&api, NAME, &[("Ready", "True", "AsExpected")]).await;
    let d = get(&deployments, "orders-pgadmin").await;
    let env = &d["spec"]["template"]["spec"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["valueFrom"]["secretKeyRef"]["name"] == "orders-pgadmin-password"),
        "{env}"
    );
    settle().await;
    let events = events_about(&client, ns.name(), NAME).await;
    assert_eq!(
        published(&events, "Warning", "ConfigDatabaseNotReady"),
        0,
        "quiet"
    );
    assert_eq!(published(&events, "Normal", "RolloutStarted"), 1);
    host.finish();
}
