//! Every reason a guest registers for its kind is reached by one of its
//! fixtures: the reasons in its `reasons.golden` (less the host's own,
//! which the conventions engine and the operator tests reach) each appear
//! as a `reason` somewhere in the fixtures' goldens — a condition, an
//! Event, or a reason the kind reports inside a status field. The reasons
//! seed 000 registers while no reconciler sets them are exempt: no fixture
//! can reach them, and a golden naming one would contradict the seed.

use reconciler_host_harness::makefile;

use std::collections::BTreeSet;

use reconciler_conventions::kind::HOST_REASONS;
use serde_yaml::Value;

use makefile::{guests, workspace};

/// Seed 000: ScaledToZero "Registered; no current reconciler sets it.";
/// GatewayNotFound, HostnameConflict "Registered; the current reconcilers
/// do not set them."
const REGISTERED_UNSET: &[&str] = &["ScaledToZero", "GatewayNotFound", "HostnameConflict"];

/// Every value of a `reason` key, at any depth.
fn reasons_in(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::Mapping(map) => {
            for (k, v) in map {
                if k.as_str() == Some("reason")
                    && let Some(r) = v.as_str()
                {
                    found.insert(r.to_owned());
                }
                reasons_in(v, found);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|v| reasons_in(v, found)),
        _ => {}
    }
}

fn reached(guest: &str) -> BTreeSet<String> {
    let dir = workspace().join("guests").join(guest).join("fixtures");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "golden") {
            let text = std::fs::read_to_string(&path).expect("a golden");
            let value: Value =
                serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            reasons_in(&value, &mut found);
        }
    }
    found
}

fn registered(guest: &str) -> Vec<String> {
    let path = workspace()
        .join("guests")
        .join(guest)
        .join("reasons.golden");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|r| !r.starts_with('#'))
        .filter(|r| !HOST_REASONS.iter().any(|(h, _)| h == r))
        .filter(|r| !REGISTERED_UNSET.contains(r))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_kind_reason_is_reached_by_a_fixture() {
    let guests = guests();
    assert!(!guests.is_empty());
    for guest in guests {
        let reached = reached(&guest);
        let missing: Vec<String> = registered(&guest)
            .into_iter()
            .filter(|r| !reached.contains(r))
            .collect();
        assert!(
            missing.is_empty(),
            "{guest}: registered reasons no fixture golden reaches: {missing:?}"
        );
    }
}
