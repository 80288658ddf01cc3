//! What the soak does to the host, from one seed: the users' work (spec
//! churn, a foreign status writer, reviews of plans with tampering, access
//! requests that expire) and the faults (API server restarts, 503s and
//! latency, replicas killed and frozen, hot swaps of good and bad modules,
//! a CRD removed and reinstalled).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use reconciler_host_harness::access_requests::whoami;
use reconciler_host_harness::objects::backup_setup;
use reconciler_host_harness::operator::fixture;
use serde_json::{Value, json};

use crate::observe::{DEFAULT_IMAGE, Observed};
use crate::world::{
    self, FREE_AGENTS, GATED_AGENTS, NAMESPACE, READER, REQUESTER, World, free_agent, gated_agent,
};

/// SplitMix64: a seeded, reproducible sequence (each driver its own).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, stream: u64) -> Rng {
        Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub(crate) fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

/// How many of each thing the soak did.
#[derive(Default)]
pub(crate) struct Tally(std::sync::Mutex<BTreeMap<&'static str, u64>>);

impl Tally {
    pub(crate) fn add(&self, what: &'static str) {
        *self.0.lock().unwrap().entry(what).or_default() += 1;
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(what, n)| format!("{what}: {n}"))
            .collect()
    }
}

/// Spec changes of the free agents, one every 200 to 600 ms.
pub(crate) async fn churn(client: Client, mut rng: Rng, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let api = world::agents(&client);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(rng.millis(200, 600)).await;
        n += 1;
        let name = free_agent(rng.below(FREE_AGENTS as u64) as usize);
        let patch = json!({"spec": {"image": format!("ghcr.io/fyannk/evidence-agent:2.{n}")}});
        if api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .is_ok()
        {
            tally.add("spec changes");
        }
    }
}

/// Another controller's field on every agent's status, newer each second
/// (server-side apply under its own manager).
pub(crate) async fn foreign_writer(client: Client, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let api = world::agents(&client);
    let params = PatchParams::apply("backup-controller");
    let names: Vec<String> = (0..FREE_AGENTS)
        .map(free_agent)
        .chain((0..GATED_AGENTS).map(gated_agent))
        .collect();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        n += 1;
        for name in &names {
            let body = json!({
                "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "EvidenceAgent",
                "metadata": {"name": name},
                "status": {"lastBackupVerified": format!("v{n}")},
            });
            if api
                .patch_status(name, &params, &Patch::Apply(&body))
                .await
                .is_ok()
            {
                tally.add("foreign status writes");
            }
        }
    }
}

/// A reviewer for the gated agents: each pending plan approved (its image
/// recorded first), denied, or first tampered with (its phase set to
/// Applying by a reviewer without `manage`, which admission refuses) and
/// then denied; after each decision, a new image asked for.
pub(crate) async fn reviewer(
    world_admin: Client,
    rita: Client,
    observed: Arc<Observed>,
    mut rng: Rng,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) {
    let plans = world::api(&world_admin, "reconciler.dev/v1alpha1", "ReconcilePlan");
    let tampering = world::api(&rita, "reconciler.dev/v1alpha1", "ReconcilePlan");
    let agents = world::agents(&world_admin);
    let Ok((admin_name, _)) =
        tokio::time::timeout(Duration::from_secs(30), whoami(&world_admin)).await
    else {
        return;
    };
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(rng.millis(1000, 3000)).await;
        let agent = gated_agent(rng.below(GATED_AGENTS as u64) as usize);
        let Ok(parent) = agents.get(&agent).await.map(world::agent_json) else {
            continue;
        };
        let uid = parent["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let selector = format!("reconciler.dev/parent-uid={uid}");
        let Ok(listed) = plans
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
        else {
            continue;
        };
        let pending: Vec<Value> = listed
            .items
            .into_iter()
            .map(world::json_of)
            .filter(|p| p["status"]["phase"] == "Pending")
            .collect();
        let Some(plan) = pending.first() else {
            continue;
        };
        let name = plan["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let decide = |type_: &str| {
            json!({"status": {
                "conditions": [{"type": type_, "status": "True", "reason": format!("{type_}ByReviewer"),
                    "message": "the soak's reviewer", "lastTransitionTime": jiff::Timestamp::now().to_string()}],
                "decidedBy": {"username": admin_name},
            }})
        };
        let image = parent["spec"]["image"]
            .as_str()
            .unwrap_or(DEFAULT_IMAGE)
            .to_owned();
        let decision = match rng.below(5) {
            0..=2 => {
                observed.approve(&agent, &image);
                "Approved"
            }
            3 => "Denied",
            _ => {
                let tamper = json!({"status": {"phase": "Applying"}});
                match tampering
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&tamper))
                    .await
                {
                    Err(kube::Error::Api(s)) if s.code == 403 || s.code == 422 => {
                        tally.add("plan tamperings refused by admission")
                    }
                    Ok(_) => tally.add("plan tamperings admitted"),
                    Err(_) => {}
                }
                "Denied"
            }
        };
        if plans
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&decide(decision)),
            )
            .await
            .is_ok()
        {
            tally.add(if decision == "Approved" {
                "plans approved"
            } else {
                "plans denied"
            });
        }
        tokio::time::sleep(rng.millis(500, 2000)).await;
        n += 1;
        let patch = json!({"spec": {"image": format!("ghcr.io/fyannk/evidence-agent:3.{n}")}});
        let _ = agents
            .patch(&agent, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
    }
}

/// Access requests: asked by the requester, approved by the approver
/// (the RoleBinding, then the decision), each expiring 10 to 25 s later.
pub(crate) async fn access(
    dave: Client,
    carol: Client,
    mut rng: Rng,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) {
    let requests = |c: &Client| world::api(c, "pgtoolbox.fyannk.dev/v1alpha1", "PgAccessRequest");
    let bindings = world::api(&carol, "rbac.authorization.k8s.io/v1", "RoleBinding");
    let Ok((carol_name, carol_groups)) =
        tokio::time::timeout(Duration::from_secs(30), whoami(&carol)).await
    else {
        return;
    };
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(rng.millis(3000, 8000)).await;
        n += 1;
        let name = format!("access-{n}");
        let expires =
            jiff::Timestamp::now() + jiff::SignedDuration::from_secs(10 + rng.below(16) as i64);
        let expires = jiff::Timestamp::from_second(expires.as_second()).expect("a time");
        let request = json!({
            "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
            "metadata": {"name": name},
            "spec": {"cluster": {"name": "orders"}, "clusterRole": READER,
                     "subject": {"kind": "User", "name": REQUESTER},
                     "expiresAt": expires.to_string(), "reason": "the soak"},
        });
        let Ok(created) = requests(&dave)
            .create(
                &PostParams::default(),
                &serde_json::from_value(request).expect("a request"),
            )
            .await
        else {
            continue;
        };
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {
                "name": name,
                "labels": {"pgtoolbox.fyannk.dev/access-request": name},
                "ownerReferences": [{
                    "apiVersion": "pgtoolbox.fyannk.dev/v1alpha1", "kind": "PgAccessRequest",
                    "name": name, "uid": created.metadata.uid, "controller": true,
                }],
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": REQUESTER}],
        });
        if bindings
            .create(
                &PostParams::default(),
                &serde_json::from_value(binding).expect("a RoleBinding"),
            )
            .await
            .is_err()
        {
            continue;
        }
        let decision = json!({"status": {"decision": {
            "outcome": "Approved",
            "decidedBy": {"username": carol_name, "groups": carol_groups},
            "comment": "the soak",
        }}});
        if requests(&carol)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&decision))
            .await
            .is_ok()
        {
            tally.add("access requests approved");
        }
    }
}

/// The fault to inject next.
#[derive(Clone, Copy, Debug)]
enum Fault {
    RestartApiServer,
    Inject503s,
    AddLatency,
    KillReplica,
    FreezeReplica,
    SwapGoodModule,
    SwapBadModule,
    ReinstallCrd,
}

const FAULTS: [Fault; 8] = [
    Fault::RestartApiServer,
    Fault::Inject503s,
    Fault::AddLatency,
    Fault::KillReplica,
    Fault::FreezeReplica,
    Fault::SwapGoodModule,
    Fault::SwapBadModule,
    Fault::ReinstallCrd,
];

/// Injects faults, one every 5 to 12 s, until `until`. In the second half
/// replica `b` is left alone (its RSS is measured); before, the leader is
/// the one killed or frozen.
pub(crate) struct Faults {
    rng: Rng,
    swaps: u64,
    original: Vec<u8>,
    tally: Arc<Tally>,
    observed: Arc<Observed>,
}

impl Faults {
    pub(crate) fn new(rng: Rng, tally: Arc<Tally>, observed: Arc<Observed>) -> Faults {
        let original = std::fs::read(module_path()).expect("the agents' module");
        Faults {
            rng,
            swaps: 0,
            original,
            tally,
            observed,
        }
    }

    /// Waits, then injects one fault.
    pub(crate) async fn next(&mut self, world: &mut World, second_half: bool) {
        tokio::time::sleep(self.rng.millis(5000, 12000)).await;
        world.revive();
        let fault = FAULTS[self.rng.below(FAULTS.len() as u64) as usize];
        // The timeline, to read beside the replicas' logs.
        eprintln!("soak: {} {fault:?}", jiff::Timestamp::now());
        match fault {
            Fault::RestartApiServer => {
                let from = jiff::Timestamp::now();
                world.restart_api_server().await;
                self.observed.outage(from, jiff::Timestamp::now());
                self.tally.add("API server restarts");
            }
            Fault::Inject503s => {
                world.http.fail_every(3);
                tokio::time::sleep(Duration::from_secs(5)).await;
                world.http.fail_every(0);
                self.tally.add("503 bursts");
            }
            Fault::AddLatency => {
                world.tcp.set_latency(Duration::from_millis(200));
                tokio::time::sleep(Duration::from_secs(5)).await;
                world.tcp.set_latency(Duration::ZERO);
                self.tally.add("latency bursts");
            }
            Fault::KillReplica => {
                let target = target(world, second_half);
                target.host.kill();
                self.tally.add("replicas killed");
            }
            Fault::FreezeReplica => {
                let target = target(world, second_half);
                if target.host.is_alive() {
                    target.host.signal("STOP");
                    tokio::time::sleep(Duration::from_secs(6)).await;
                    target.host.signal("CONT");
                    self.tally.add("replicas frozen past their Lease");
                }
            }
            Fault::SwapGoodModule => {
                self.swaps += 1;
                place(
                    &module_path(),
                    &with_custom_section(&self.original, self.swaps),
                );
                self.tally.add("good modules swapped in");
            }
            Fault::SwapBadModule => {
                let junk: Vec<u8> = (0..4096).map(|_| self.rng.next() as u8).collect();
                let path = fixture().guests_dir.join("junk.wasm");
                place(&path, &junk);
                tokio::time::sleep(Duration::from_secs(3)).await;
                let _ = std::fs::remove_file(&path);
                self.tally.add("bad modules dropped in");
            }
            Fault::ReinstallCrd => {
                if reinstall_object_store_crd(&world.admin().await).await {
                    self.tally.add("CRDs removed and reinstalled");
                }
            }
        }
    }
}

/// The replica a kill or freeze hits: the leader in the first half, `a`
/// in the second.
fn target(world: &mut World, second_half: bool) -> &mut crate::world::Replica {
    if !second_half && world.b.leads() {
        &mut world.b
    } else {
        &mut world.a
    }
}

fn module_path() -> std::path::PathBuf {
    fixture().guests_dir.join("evidenceagent_guest.wasm")
}

/// Written beside, then renamed into place: the host never reads half.
fn place(path: &std::path::Path, bytes: &[u8]) {
    let tmp = path.with_extension("soak-tmp");
    std::fs::write(&tmp, bytes).expect("writing a module");
    std::fs::rename(&tmp, path).expect("placing a module");
}

/// The module with a custom section `soak` numbered `n` appended: the same
/// guest, another digest, so the host swaps it in.
fn with_custom_section(module: &[u8], n: u64) -> Vec<u8> {
    let name = b"soak";
    let payload = n.to_le_bytes();
    let size = 1 + name.len() + payload.len();
    let mut out = module.to_vec();
    out.push(0);
    out.push(u8::try_from(size).expect("a short section"));
    out.push(u8::try_from(name.len()).expect("a short name"));
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

/// The ObjectStore CRD deleted (its objects with it), then installed again
/// and the agents' ObjectStore created again.
async fn reinstall_object_store_crd(admin: &Client) -> bool {
    let Some(crd) = fixture()
        .crds
        .iter()
        .find(|c| c.spec.names.kind == "ObjectStore")
        .cloned()
    else {
        return false;
    };
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    if crds.delete(&name, &DeleteParams::default()).await.is_err() {
        return false;
    }
    for _ in 0..100 {
        if matches!(crds.get_opt(&name).await, Ok(None)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    restore_object_store(admin, crd).await;
    true
}

/// The ObjectStore CRD installed and the agents' ObjectStore there
/// (whatever a fault left).
pub(crate) async fn restore_object_store(admin: &Client, crd: CustomResourceDefinition) {
    let _ = reconciler_testsupport::install_crd(admin, crd).await;
    let store = backup_setup().remove(1);
    let api = world::api(
        admin,
        store["apiVersion"].as_str().unwrap_or_default(),
        "ObjectStore",
    );
    let _ = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(store).expect("an ObjectStore"),
        )
        .await;
}

/// Everything the faults may have left as the soak ends: proxies passing,
/// the ObjectStore back, no junk module, the original module, both
/// replicas running.
pub(crate) async fn restore(world: &mut World, original: &Faults) {
    world.tcp.up();
    world.tcp.set_latency(Duration::ZERO);
    world.http.fail_every(0);
    let _ = std::fs::remove_file(fixture().guests_dir.join("junk.wasm"));
    place(&module_path(), &original.original);
    if let Some(crd) = fixture()
        .crds
        .iter()
        .find(|c| c.spec.names.kind == "ObjectStore")
        .cloned()
    {
        restore_object_store(&world.admin().await, crd).await;
    }
    world.revive();
}

/// How long the Mirror whose child never settles has to say so.
const UNSETTLING_BOUND: Duration = Duration::from_secs(120);

/// A parent whose change never settles (issue 51): 15 s in, a Mirror asks
/// for a ConfigMap with `metadata.creationTimestamp`, which the API server
/// sets itself on every write. Whether, through the faults, it was stopped
/// (Stalled ChangeNotSettling) within [`UNSETTLING_BOUND`].
pub(crate) async fn unsettling(client: Client, tally: Arc<Tally>) -> bool {
    tokio::time::sleep(Duration::from_secs(15)).await;
    let api = reconciler_host_harness::objects::api(
        &client,
        NAMESPACE,
        "testing.reconciler.dev/v1",
        "Mirror",
    );
    let mirror: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.reconciler.dev/v1", "kind": "Mirror",
        "metadata": {"name": "never", "namespace": NAMESPACE},
        "spec": {"children": [{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "never-stamped", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "data": {"a": "1"}}]}}))
    .expect("a Mirror");
    let created = tokio::time::Instant::now();
    let stopped = loop {
        if created.elapsed() > UNSETTLING_BOUND {
            break false;
        }
        match api.get_opt("never").await {
            Ok(None) => {
                let _ = api.create(&PostParams::default(), &mirror).await;
            }
            Ok(Some(o)) => {
                let o = serde_json::to_value(o).unwrap_or_default();
                let conditions = o["status"]["conditions"].as_array().cloned();
                if conditions.into_iter().flatten().any(|c| {
                    c["type"] == "Stalled"
                        && c["status"] == "True"
                        && c["reason"] == "ChangeNotSettling"
                }) {
                    break true;
                }
            }
            // The API server restarting: asked again.
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    eprintln!(
        "soak: {} the Mirror whose child never settles {} after {:?}",
        jiff::Timestamp::now(),
        if stopped {
            "stopped"
        } else {
            "was not stopped"
        },
        created.elapsed()
    );
    if stopped {
        tally.add("unsettling parents stopped");
    }
    stopped
}
