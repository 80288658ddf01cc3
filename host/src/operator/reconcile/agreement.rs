//! One truth of a pass, as a property: for random worlds of the writer test
//! guest (its parent's data, its ConfigMap absent, as the host last applied
//! it or drifted, the parent's gates, ReconcilePlans served or not), the
//! fixture runner (`reconciler-host test` on the fixture the case makes)
//! and the operator's pass driven as a dry run (what `capture`, `shadow`
//! and promotion run) settle on the same conditions (type, status, reason,
//! message), the same Events, and ask for the same changes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kube::core::{ApiResource, GroupVersionKind};
use proptest::prelude::*;
use reconciler_conventions::kind::KindRef;
use serde_json::{Value, json};

use super::driver::Pass;
use super::dry_run::{self, Setting};
use super::evaluation::{Evaluation, World};
use crate::children::bodies::Owner;
use crate::children::pending;
use crate::facts::MemorySource;
use crate::fixture::{Fixture, run_fixture};
use crate::operator::cluster::cache::ClusterSource;
use crate::operator::cluster::past_cache_reads::PastReads;
use crate::operator::kinds::evaluator::{Evaluator, Wasm};
use crate::plan::gates::KindGates;
use crate::plan::record;
use crate::runtime::{GuestModule, Runtime, RuntimeConfig};

const NAMESPACE: &str = "team-w";
const NOW: &str = "2026-12-01T12:00:00Z";
/// The cluster's identity, as a fixture's plans bind it.
const CLUSTER: &str = "fixture-cluster";

/// The writer guest, loaded once.
fn writer() -> &'static GuestModule {
    static MODULE: OnceLock<GuestModule> = OnceLock::new();
    MODULE.get_or_init(|| {
        Runtime::new(RuntimeConfig::default())
            .unwrap()
            .load_file(&reconciler_host_harness::guests::guest_wasm("writer-guest"))
            .unwrap()
    })
}

/// What the world holds of the parent's ConfigMap.
#[derive(Clone, Copy, Debug)]
enum Child {
    Absent,
    /// As the host applied it for this very spec.
    AsAsked,
    /// The parent's, with other data.
    Drifted,
}

/// One world.
#[derive(Clone, Debug)]
struct Case {
    data: BTreeMap<String, String>,
    child: Child,
    /// The parent's `reconciler.dev/mode`.
    mode: Option<&'static str>,
    /// The parent asks for manual approval.
    manual: bool,
    plans_served: bool,
}

fn cases() -> impl Strategy<Value = Case> {
    (
        prop::collection::btree_map("[a-c]", "[0-2]", 1..3),
        prop_oneof![
            Just(Child::Absent),
            Just(Child::AsAsked),
            Just(Child::Drifted)
        ],
        prop_oneof![Just(None), Just(Some("observe")), Just(Some("apply"))],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(data, child, mode, manual, plans_served)| Case {
            data,
            child,
            mode,
            manual,
            plans_served,
        })
}

impl Case {
    fn parent(&self) -> Value {
        let mut annotations = serde_json::Map::new();
        if let Some(mode) = self.mode {
            annotations.insert("reconciler.dev/mode".into(), json!(mode));
        }
        if self.manual {
            annotations.insert("reconciler.dev/approval".into(), json!("manual"));
        }
        json!({
            "apiVersion": "testing.reconciler.dev/v1",
            "kind": "Widget",
            "metadata": {
                "name": "w", "namespace": NAMESPACE, "generation": 1,
                "uid": "7c1e0000-0000-4000-8000-0000000000aa", "resourceVersion": "10",
                "annotations": annotations,
            },
            "spec": {"data": self.data},
        })
    }
}

/// The caches of a world holding `objects`: ConfigMaps and Secrets served
/// and listed, ReconcilePlans where `plans_served`.
fn caches(objects: &[Value], plans_served: bool) -> Arc<ClusterSource> {
    let source = Arc::new(ClusterSource::watching(&[String::new()]));
    let core = |kind: &str| KindRef {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
    };
    let mut kinds = vec![
        (core("ConfigMap"), "configmaps"),
        (core("Secret"), "secrets"),
    ];
    if plans_served {
        kinds.push((record::kind_ref(), "reconcileplans"));
    }
    for (kind, plural) in kinds {
        let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
        source.set_resource(
            kind.clone(),
            ApiResource::from_gvk_with_plural(&gvk, plural),
        );
        source.add_kind(kind);
    }
    for object in objects {
        let kind = KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: object["kind"].as_str().unwrap().into(),
        };
        source.cache(&kind).unwrap().apply(object.clone());
    }
    source
}

/// The parent's ConfigMap as `child` says, as the cache holds it.
fn config_map(case: &Case, parent: &Value) -> Option<Value> {
    let change = writer()
        .evaluate(crate::runtime::EvaluateRequest {
            parent,
            paused: false,
            settings: &[],
            source: Arc::new(MemorySource::new()),
            now: NOW.parse().unwrap(),
        })
        .changes
        .into_iter()
        .next()
        .expect("the writer asks for its ConfigMap");
    let md = &parent["metadata"];
    let owner = Owner {
        api_version: "testing.reconciler.dev/v1",
        kind: "Widget",
        name: md["name"].as_str().unwrap(),
        namespace: NAMESPACE,
        uid: md["uid"].as_str().unwrap(),
        member: None,
        slot: None,
    };
    let mut body = pending::desired(&change, &MemorySource::new(), &owner)?;
    body["metadata"]["uid"] = json!("cm-uid");
    body["metadata"]["resourceVersion"] = json!("5");
    match case.child {
        Child::Absent => None,
        Child::AsAsked => Some(body),
        Child::Drifted => {
            body["data"] = json!({"drifted": "yes"});
            Some(body)
        }
    }
}

/// What a pass settled on, as compared: the conditions, the Events, the
/// changes asked for.
#[derive(Debug, PartialEq)]
struct Settled {
    conditions: Vec<(String, String, String, String)>,
    events: Vec<(String, String, String)>,
    changes: Vec<String>,
}

fn conditions(status: &Value) -> Vec<(String, String, String, String)> {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (s("type"), s("status"), s("reason"), s("message"))
        })
        .collect()
}

fn events(events: &Value) -> Vec<(String, String, String)> {
    events
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (s("type"), s("reason"), s("note"))
        })
        .collect()
}

/// The case's fixture through `reconciler-host test`'s runner.
fn by_the_runner(case: &Case, parent: &Value, objects: &[Value]) -> Settled {
    let mut fixture = json!({
        "name": "a random world", "now": NOW, "parent": parent, "objects": objects,
        "expect": {},
    });
    if case.plans_served {
        fixture["plans"] = json!({});
    }
    let text = serde_yaml::to_string(&fixture).unwrap();
    let fixture = Fixture::parse(&text, Path::new("a random world")).unwrap();
    let report = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_fixture(writer(), &fixture));
    let outcome = &report.outcomes[0];
    Settled {
        conditions: conditions(&outcome["status"]),
        events: events(&outcome["events"]),
        changes: outcome["changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c.to_string())
            .collect(),
    }
}

/// The operator's pass of the case's world, driven as a dry run.
fn by_the_driver(parent: &Value, source: &Arc<ClusterSource>) -> Settled {
    let module = writer();
    let spec = module.spec();
    let gvk = GroupVersionKind::gvk(&spec.group, &spec.version, &spec.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &spec.plural);
    let evaluator: Arc<dyn Evaluator> = Arc::new(Wasm);
    let parent = Arc::new(parent.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let passed = runtime.block_on(async {
        // Never asked: the writer reads nothing past the cache.
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap();
        let pass = Pass {
            evaluation: Evaluation {
                world: World {
                    source,
                    past: PastReads::Server(&client),
                },
                evaluator: &evaluator,
                module,
                settings: &[],
                parent: &parent,
                paused: spec.is_paused(&parent),
                now: NOW.parse().unwrap(),
            },
            spec,
            resource: &resource,
            kind_gates: KindGates::default(),
            slot: None,
        };
        let setting = Setting {
            source,
            resource: &resource,
            authority: None,
            kind_gates: KindGates::default(),
            cluster: CLUSTER,
            replan_after: Duration::from_secs(60),
        };
        dry_run::pass(&pass, &setting).await
    });
    let changes = if passed.evaluated.failed_read.is_none() {
        passed.evaluated.changes.iter().map(change_json).collect()
    } else {
        Vec::new()
    };
    Settled {
        conditions: conditions(&passed.status.to_json()),
        events: events(&serde_json::to_value(&passed.events).unwrap()),
        changes,
    }
}

/// A change as the runner's golden writes it.
fn change_json(change: &crate::contract::model::Change) -> String {
    match change {
        crate::contract::model::Change::Apply { kind, name, body } => {
            json!({"apply": {"kind": kind.to_string(), "name": name, "body": body}}).to_string()
        }
        other => format!("{other}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_runner_and_the_operators_dry_run_settle_alike(case in cases()) {
        let parent = case.parent();
        let objects: Vec<Value> = config_map(&case, &parent).into_iter().collect();
        let source = caches(&objects, case.plans_served);
        // The fixture holds the objects as the operator's cache holds them.
        let cached: Vec<Value> = objects
            .iter()
            .filter_map(|o| {
                let kind = KindRef { group: String::new(), version: "v1".into(), kind: o["kind"].as_str()?.into() };
                source.cache(&kind)?.get(NAMESPACE, o["metadata"]["name"].as_str()?)
            })
            .map(|o| (*o).clone())
            .collect();
        let runner = by_the_runner(&case, &parent, &cached);
        let driver = by_the_driver(&parent, &source);
        prop_assert_eq!(runner, driver, "{:?}", case);
    }
}
