//! The dashboard and alerts the chart ships (`deploy/monitoring/`, issue
//! 35): the alerts pass promtool's checks and unit tests (`alerts.test.yaml`,
//! promtool built from the Prometheus Go module), and the dashboard and the
//! alerts name only metrics the host exports, the dashboard covering what an
//! operator watches.

use std::collections::BTreeSet;
use std::process::Command;

use reconciler_host::operator::replica::metrics::{
    ChildLabels, ChildRefusalLabels, ErrorLabels, MemberLabel, Metrics, ModuleLabels,
    RefusalLabels, RequestLabels, WatchLabels,
};
use reconciler_host_harness::go_programs;
use reconciler_host_harness::makefile::workspace;

/// `promtool <args>` in `deploy/monitoring`: its output, or a panic with it.
fn promtool(args: &[&str]) -> String {
    let program =
        go_programs::build_package("promtool", "github.com/prometheus/prometheus/cmd/promtool");
    let out = Command::new(program)
        .args(args)
        .current_dir(workspace().join("deploy/monitoring"))
        .output()
        .expect("promtool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
fn the_alerts_pass_promtools_checks_and_unit_tests() {
    let checked = promtool(&["check", "rules", "alerts.yaml"]);
    assert!(checked.contains("SUCCESS: 12 rules found"), "{checked}");
    let tested = promtool(&["test", "rules", "alerts.test.yaml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
}

/// The metric names `text` uses (`reconciler_...`).
fn used(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("reconciler_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// The host's metrics with a series in every family (a family without one
/// is not in the exposition at all).
fn every_family_sampled() -> Metrics {
    let m = Metrics::new();
    let kind = Metrics::kind("K");
    let watch = WatchLabels {
        kind: "v1/Pod".into(),
        namespace: String::new(),
    };
    let child = ChildLabels {
        kind: "K".into(),
        child: "ConfigMap".into(),
    };
    let _ = m.modules.get_or_create(&ModuleLabels {
        kind: "K".into(),
        guest: "g".into(),
        digest: "d".into(),
        contract: "0.6.0".into(),
    });
    for counter in [
        &m.passes,
        &m.status_writes,
        &m.events,
        &m.swaps,
        &m.rollbacks,
        &m.withdrawals_refused,
        &m.changes_not_settling,
        &m.passes_delayed,
    ] {
        let _ = counter.get_or_create(&kind);
    }
    for gauge in [
        &m.refused_namespaces,
        &m.queue_depth,
        &m.cached_objects,
        &m.cached_bytes,
        &m.plans_pending,
        &m.plan_oldest_pending_seconds,
        &m.parent_unpassed_seconds,
    ] {
        let _ = gauge.get_or_create(&kind);
    }
    let _ = m.ring_members.get_or_create(&MemberLabel {
        state: "serving".into(),
    });
    let _ = m.guest_errors.get_or_create(&ErrorLabels {
        kind: "K".into(),
        class: "trap".into(),
    });
    let _ = m.pass_seconds.get_or_create(&kind);
    let _ = m.guest_seconds.get_or_create(&kind);
    let _ = m.swap_refusals.get_or_create(&RefusalLabels {
        kind: "K".into(),
        check: "fixtures".into(),
    });
    let _ = m.watch_connected.get_or_create(&watch);
    let _ = m.watch_last_event.get_or_create(&watch);
    let _ = m.watch_restarts.get_or_create(&watch);
    for counter in [
        &m.child_applies,
        &m.child_applies_unchanged,
        &m.child_deletes,
    ] {
        let _ = counter.get_or_create(&child);
    }
    let _ = m.child_refusals.get_or_create(&ChildRefusalLabels {
        kind: "K".into(),
        child: "ConfigMap".into(),
        class: "invalid".into(),
    });
    let _ = m.api_requests.get_or_create(&RequestLabels {
        method: "GET".into(),
        verb: "list".into(),
        resource: "pods".into(),
    });
    m
}

/// Every series name the host's /metrics can hold: each family's name,
/// with `_total` for a counter and `_bucket`, `_sum`, `_count` for a
/// histogram.
fn exported() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in every_family_sampled().encode().lines() {
        let Some(declared) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = declared.split(' ');
        let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
        match kind {
            "counter" => names.insert(format!("{name}_total")),
            "histogram" => {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"));
                }
                true
            }
            _ => names.insert(name.to_owned()),
        };
    }
    names
}

#[test]
fn the_dashboard_and_the_alerts_name_only_metrics_the_host_exports() {
    let exported = exported();
    assert!(exported.contains("reconciler_passes_total"), "{exported:?}");
    let dashboard =
        std::fs::read_to_string(workspace().join("deploy/monitoring/dashboard.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let alerts =
        std::fs::read_to_string(workspace().join("deploy/monitoring/alerts.yaml")).unwrap();
    for (file, text) in [("dashboard.json", &dashboard), ("alerts.yaml", &alerts)] {
        let unknown: Vec<String> = used(text)
            .into_iter()
            .filter(|n| !exported.contains(n))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics the host does not export: {unknown:?}"
        );
    }
    // What an operator watches, each on a panel of its own.
    let panels: Vec<(String, String)> = json["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .map(|p| {
            let exprs: Vec<&str> = p["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["expr"].as_str())
                .collect();
            (
                p["title"].as_str().unwrap_or_default().to_owned(),
                exprs.join("\n"),
            )
        })
        .collect();
    for metric in [
        "reconciler_passes_total",
        "reconciler_guest_errors_total",
        "reconciler_queue_depth",
        "reconciler_watch_connected",
        "reconciler_swaps_total",
        "reconciler_rollbacks_total",
        "reconciler_plans_pending",
        "reconciler_api_requests_total",
    ] {
        assert!(
            panels.iter().any(|(_, exprs)| exprs.contains(metric)),
            "no panel shows {metric}: {panels:?}"
        );
    }
    assert!(
        panels
            .iter()
            .any(|(_, e)| e.contains("sum by (kind, class) (rate(reconciler_guest_errors_total")),
        "guest errors by class"
    );
}
