//! `reconciler-host capture` end to end, against the real local
//! kube-apiserver (`tests/apiserver`): a PgToolBoxConsole served by
//! `reconciler-host run` until it settles, the host stopped, the console
//! captured; the capture writes nothing to the cluster, and
//! `reconciler-host test` replays its fixture offline with the golden the
//! capture wrote, whose status is the one the host wrote. The fixture holds
//! exactly what the pass read (the selected Clusters and their CA Secrets,
//! not the other ones) and no Secret value. And the capture names what is
//! wrong: an unknown kind, an object not found, a read the credentials may
//! not make.

use std::path::{Path, PathBuf};
use std::process::Output;

use reconciler_host_harness::console_objects::{
    CA_PEM, CONSOLE, CONSOLE_ROLE, b64, ca_secret, console, consoles, ensure_cluster_role,
    pg_cluster,
};
use reconciler_host_harness::identity;
use reconciler_host_harness::objects::{create, create_all};
use reconciler_host_harness::operator::{
    Host, Published, cli_command, condition, events_about, fixture_of, get, install_crds,
    resource_version, settle, summary, wait_for,
};
use reconciler_host_harness::paths;
use reconciler_testsupport::TestNamespace;
use serde_json::{Value, json};

/// The console of every test.
const NAME: &str = "orders";
/// The value of every CA Secret's `ca.key` (`console_objects::ca_secret`).
const CA_KEY: &str = "not a key: the host never reads it";

/// A namespace with the CRDs and the console ClusterRole installed.
async fn namespace(prefix: &str) -> TestNamespace {
    fixture_of(&CONSOLE);
    let ns = TestNamespace::new(prefix).await.expect("a test namespace");
    install_crds(&ns.client()).await;
    ensure_cluster_role(&ns.client(), CONSOLE_ROLE).await;
    ns
}

/// A scratch directory of the test.
fn scratch(name: &str) -> PathBuf {
    let dir = paths::target_tmpdir().join("capture-tests").join(name);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// `reconciler-host <args>` under `kubeconfig`, with the binary's compiled
/// guests.
async fn cli(kubeconfig: &Path, args: Vec<String>) -> Output {
    fixture_of(&CONSOLE);
    let mut command = cli_command(kubeconfig);
    command.args(args);
    tokio::task::spawn_blocking(move || command.output().expect("the host binary runs"))
        .await
        .expect("the command's thread")
}

/// `capture PgToolBoxConsole <target>` with the binary's guests and
/// settings, watching `namespace`, writing `output`.
async fn capture(
    kubeconfig: &Path,
    kind: &str,
    target: &str,
    namespace: &str,
    output: &Path,
) -> Output {
    let f = fixture_of(&CONSOLE);
    let mut args: Vec<String> = vec![
        "capture".into(),
        kind.into(),
        target.into(),
        "--guests".into(),
        f.guests_dir.display().to_string(),
        "--namespaces".into(),
        namespace.into(),
        "-o".into(),
        output.display().to_string(),
    ];
    for setting in CONSOLE.settings {
        args.extend(["--setting".to_owned(), (*setting).to_owned()]);
    }
    cli(kubeconfig, args).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn admin() -> PathBuf {
    reconciler_testsupport::kubeconfig_path().expect("the test apiserver")
}

/// The names of the fixture's objects of `kind`.
fn names_of(fixture: &Value, kind: &str) -> Vec<String> {
    fixture["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| o["metadata"]["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// A console selecting two Clusters (one CA Secret without `ca.crt`) of
/// three, served until it settles; the host stopped; the capture writes
/// nothing, its fixture replays with its golden, and its golden's status
/// is the console's as the host wrote it; no Secret value is in either
/// file.
#[tokio::test]
async fn a_live_console_is_captured_and_replayed_offline_without_secret_values() {
    let ns = namespace("capture").await;
    let client = ns.client();
    serve_until_settled(&client, ns.name()).await;

    let consoles = consoles(&client, ns.name());
    let live = get(&consoles, NAME).await;
    let events = events_about(&client, ns.name(), NAME).await;
    let dir = scratch(ns.name());
    let output = dir.join("orders.yaml");
    captured_writing_nothing(&client, ns.name(), &output, &live, &events).await;

    // Replayed offline, with the golden written beside the fixture.
    replayed_offline(&output).await;

    // The golden's pass derives the status the host wrote, so it writes
    // nothing and publishes nothing.
    let fixture_text = std::fs::read_to_string(&output).expect("the fixture");
    let golden_path = output.with_extension("golden");
    let golden_text = std::fs::read_to_string(&golden_path).expect("the golden");
    golden_is_the_live_status(&golden_text, &live);

    // The fixture: exactly what the pass read, what was left out, and the
    // expect block captured.
    fixture_holds_what_the_pass_read(&fixture_text);

    // No Secret value: keys with empty values, certificates as hashes.
    no_secret_value_in(&fixture_text, &golden_text);
    // KEEP_CAPTURE=1 keeps the files, to read a capture.
    if std::env::var_os("KEEP_CAPTURE").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    ns.cleanup().await.unwrap();
}

/// A console selecting two Clusters (one CA Secret without `ca.crt`) of
/// three, served until it settles; then the host stopped.
async fn serve_until_settled(client: &kube::Client, ns: &str) {
    create_all(
        client,
        ns,
        vec![
            pg_cluster("alpha", json!({"team": "b"})),
            ca_secret("alpha", true),
            pg_cluster("beta", json!({"team": "b"})),
            ca_secret("beta", false),
            // Not selected: the pass reads neither, the fixture holds neither.
            pg_cluster("gamma", json!({"team": "c"})),
            ca_secret("gamma", true),
        ],
    )
    .await;
    create(
        client,
        ns,
        console(
            NAME,
            json!({"clusterSelector": {"matchLabels": {"team": "b"}}, "podLogs": false}),
        ),
    )
    .await;
    let host = Host::start(ns).await;
    let consoles = consoles(client, ns);
    wait_for(
        &consoles,
        NAME,
        &[
            ("InstanceCABundleComplete", "False", "InstanceCAMissing"),
            ("ExposureReady", "True", "NotRequested"),
            ("WorkloadReady", "True", "AsExpected"),
            ("Ready", "True", "AsExpected"),
            ("Progressing", "False", "AsExpected"),
        ],
    )
    .await;
    // Settled: nothing left to write; then the host stops, so the capture
    // is the only one passing the console.
    settle().await;
    host.finish();
}

/// The live console captured as the admin into `output`: the capture says
/// it wrote nothing, and wrote nothing to the console nor published an
/// Event.
async fn captured_writing_nothing(
    client: &kube::Client,
    ns: &str,
    output: &Path,
    live: &Value,
    events: &[Published],
) {
    let consoles = consoles(client, ns);
    let target = format!("{ns}/{NAME}");
    let out = capture(&admin(), "PgToolBoxConsole", &target, ns, output).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "capture failed:\n{stdout}\n{stderr}");
    assert!(
        !stderr.contains("loaded guest") && !stderr.contains("no golden list"),
        "capture (as shadow) says nothing of each guest of the directory, \
         which would bury its summary:\n{stderr}"
    );
    assert!(
        stdout.contains("nothing written to the cluster")
            && stdout.contains("Ready=True/AsExpected"),
        "{stdout}"
    );
    let after = get(&consoles, NAME).await;
    assert_eq!(
        resource_version(&after),
        resource_version(live),
        "the capture wrote nothing to the console: {:?}",
        summary(&after)
    );
    assert_eq!(
        events_about(client, ns, NAME).await,
        events,
        "and published no Event"
    );
}

/// The capture's fixture replays offline with `test`, its golden written
/// beside it.
async fn replayed_offline(output: &Path) {
    let wasm = fixture_of(&CONSOLE)
        .guests_dir
        .join("pgtoolboxconsole_guest.wasm");
    let replay = cli(
        &admin(),
        vec![
            "test".into(),
            wasm.display().to_string(),
            output.display().to_string(),
        ],
    )
    .await;
    let replayed = text(&replay.stdout);
    assert!(
        replay.status.success() && replayed.contains("1 passed, 0 failed"),
        "{replayed}\n{}",
        text(&replay.stderr)
    );
}

/// The golden's status is the live one: its conditions (transition times
/// and generations included), its CA bundle; no write, no Event.
fn golden_is_the_live_status(golden_text: &str, live: &Value) {
    let golden: Vec<Value> = serde_yaml::from_str(golden_text).expect("the golden is YAML");
    let produced = &golden[0];
    let mut want = summary(live);
    let mut got = summary(produced);
    want.sort();
    got.sort();
    assert_eq!(got, want, "the golden's conditions are the live ones");
    for c in live["status"]["conditions"].as_array().expect("conditions") {
        let type_ = c["type"].as_str().expect("a type");
        assert_eq!(
            condition(produced, type_),
            condition(live, type_),
            "{type_}, its transition time and generation included"
        );
    }
    assert_eq!(
        produced["status"]["instanceCABundle"],
        live["status"]["instanceCABundle"]
    );
    assert_eq!(produced["writes"], false, "{golden_text}");
    assert_eq!(produced["events"], json!([]), "{golden_text}");
}

/// The fixture holds exactly the Clusters and Secrets the pass read, says
/// what was left out, and carries the expect block captured.
fn fixture_holds_what_the_pass_read(fixture_text: &str) {
    let fixture: Value = serde_yaml::from_str(fixture_text).expect("the fixture is YAML");
    assert_eq!(names_of(&fixture, "Cluster"), ["alpha", "beta"]);
    assert_eq!(names_of(&fixture, "Secret"), ["alpha-ca", "beta-ca"]);
    assert!(
        fixture_text.starts_with("# Captured from a live pass")
            && fixture_text.contains("# Left out:")
            && fixture_text.contains("every Secret's values")
            && fixture_text.contains("# Captured, not written from the seed"),
        "{fixture_text}"
    );
    assert_eq!(fixture["parent"]["metadata"]["name"], NAME);
    assert_eq!(
        fixture["expect"]["conditions"]["Ready"],
        json!({"status": "True", "reason": "AsExpected"})
    );
    assert_eq!(
        fixture["expect"]["aspects"]["ExposureReady"],
        json!({"status": "True", "reason": "NotRequested"})
    );
    assert_eq!(
        fixture["expect"]["advisory"]["InstanceCABundleComplete"],
        json!({"status": "False", "reason": "InstanceCAMissing"})
    );
}

/// No Secret value in either file: the fixture's Secrets keep their keys
/// with empty values, and neither holds the certificate nor the key in any
/// form.
fn no_secret_value_in(fixture_text: &str, golden_text: &str) {
    let fixture: Value = serde_yaml::from_str(fixture_text).expect("the fixture is YAML");
    for secret in fixture["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["kind"] == "Secret")
    {
        let data = secret["data"].as_object().expect("data");
        assert!(data.contains_key("ca.key"), "{secret}");
        assert!(data.values().all(|v| v == ""), "{secret}");
    }
    let pem_body = CA_PEM.lines().nth(1).expect("a PEM body line");
    for value in [
        CA_PEM.to_owned(),
        pem_body.to_owned(),
        b64(CA_PEM),
        CA_KEY.to_owned(),
        b64(CA_KEY),
    ] {
        assert!(!fixture_text.contains(&value), "{value:?} in the fixture");
        assert!(!golden_text.contains(&value), "{value:?} in the golden");
    }
}

/// What is wrong is named: a kind no guest serves (with the kinds served),
/// a console that does not exist, and one the credentials may not read.
#[tokio::test]
async fn a_capture_names_what_is_wrong() {
    let ns = namespace("capture-errors").await;
    let client = ns.client();
    create(&client, ns.name(), console(NAME, json!({"podLogs": false}))).await;
    let dir = scratch(ns.name());
    let output = dir.join("out.yaml");
    let target = format!("{}/{NAME}", ns.name());
    for (kubeconfig, kind, target, want) in [
        (
            admin(),
            "Greeting",
            target.clone(),
            "no guest in".to_owned(),
        ),
        (
            admin(),
            "PgToolBoxConsole",
            format!("{}/absent", ns.name()),
            format!("PgToolBoxConsole {}/absent not found", ns.name()),
        ),
        (
            identity::kubeconfig_as("capture-nobody", &dir),
            "PgToolBoxConsole",
            target.clone(),
            format!("forbidden: you may not get PgToolBoxConsole {target}"),
        ),
    ] {
        let out = capture(&kubeconfig, kind, &target, ns.name(), &output).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{kind} {target}: {stderr}");
        assert!(stderr.contains(&want), "{kind} {target}: {stderr}");
        if kind == "Greeting" {
            assert!(
                stderr.contains("serves kind Greeting (its guests serve PgToolBoxConsole)"),
                "{stderr}"
            );
        }
        assert!(!output.exists(), "nothing written for {kind} {target}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    ns.cleanup().await.unwrap();
}
