//! What each watched kind's cache holds: the union of what the modules
//! serving (or about to serve) read of it and what the host's own facts
//! read of it (`crate::facts::fields`), whole where the host needs more:
//! a kind a module serves or writes, and the host's own plans.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reconciler_conventions::kind::{KindRef, KindSpec};
use reconciler_conventions::projection::Projection;

use crate::facts::fields::fact_fields;
use crate::operator::cluster::cache::{ClusterSource, ObjectCache};

/// Whether the host reads more of `kind` than its facts: its own
/// ReconcilePlans, held whole.
fn host_reads_whole(kind: &KindRef) -> bool {
    let plan = crate::plan::record::kind_ref();
    kind.group == plan.group && kind.kind == plan.kind
}

/// What the host keeps of a kind a module reads as `read`: the read's
/// projection with the fields the host's facts read of the kind, or whole.
fn with_facts(kind: &KindRef, read: Projection) -> Projection {
    if host_reads_whole(kind) {
        return Projection::Whole;
    }
    match fact_fields(kind) {
        Some(facts) => read.union(&facts),
        None => read,
    }
}

/// What each kind read, written or served by `specs` is to be held as:
/// the union of their reads' projections, each with the fields the host's
/// facts read of the kind (`fact_fields`); whole for a kind one of them
/// serves or writes, or a plan.
pub(crate) fn union<'a>(
    specs: impl IntoIterator<Item = &'a KindSpec>,
) -> BTreeMap<KindRef, Projection> {
    let mut union: BTreeMap<KindRef, Projection> = BTreeMap::new();
    let mut hold = |kind: &KindRef, projection: Projection| {
        let held = match union.get(kind) {
            Some(before) => before.union(&projection),
            None => projection,
        };
        union.insert(kind.clone(), held);
    };
    for spec in specs {
        hold(&spec.kind_ref(), Projection::Whole);
        for write in &spec.writes {
            hold(write, Projection::Whole);
        }
        for read in &spec.reads {
            hold(&read.kind, with_facts(&read.kind, read.projection()));
        }
    }
    union
}

/// How long a widened cache's watches may take to list everything again
/// before the module waiting for them is served anyway (what it reads
/// then arrives with the listing).
const RELIST_TIMEOUT: Duration = Duration::from_secs(60);

/// Holds in `source`'s caches what `specs` read ([`union`]; a kind none
/// of them reads is held whole), and waits (bounded) until every cache
/// that widened was listed again: what a module newly reads is in the
/// cache before its first pass. A cache that narrowed shrinks as each
/// object's next version arrives.
pub(crate) async fn hold<'a>(
    source: &ClusterSource,
    specs: impl IntoIterator<Item = &'a KindSpec>,
) {
    let widened = set(source, specs);
    for (cache, epoch) in widened {
        tracing::info!(kind = %cache.kind(), "a module reads more of the kind than its cache holds: listing it again");
        let listed = cache.projected().listed_at(epoch);
        if tokio::time::timeout(RELIST_TIMEOUT, listed).await.is_err() {
            tracing::warn!(kind = %cache.kind(), timeout_s = RELIST_TIMEOUT.as_secs(), "the kind's watches did not list it again in time; its wider fields arrive with the listing");
        }
    }
}

/// [`hold`] without waiting: the caches that widened, with the epoch their
/// watches are to list at.
pub(crate) fn set<'a>(
    source: &ClusterSource,
    specs: impl IntoIterator<Item = &'a KindSpec>,
) -> Vec<(Arc<ObjectCache>, u32)> {
    let union = union(specs);
    source.set_projections(union)
}

#[cfg(test)]
mod tests {
    use reconciler_conventions::kind::ReadDecl;

    use super::*;

    fn kind(group: &str, kind: &str) -> KindRef {
        KindRef {
            group: group.to_owned(),
            version: "v1".to_owned(),
            kind: kind.to_owned(),
        }
    }

    fn read(kind: KindRef, fields: Option<&[&str]>) -> ReadDecl {
        ReadDecl {
            kind,
            optional: false,
            cross_namespace: false,
            fields: fields.map(|f| f.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    fn spec(name: &str, reads: Vec<ReadDecl>, writes: Vec<KindRef>) -> KindSpec {
        let mut spec: KindSpec = serde_json::from_value(serde_json::json!({
            "group": "testing.reconciler.dev", "version": "v1", "kind": name,
            "plural": format!("{}s", name.to_lowercase()), "namespaced": true,
            "profile": "progressing", "aspects": ["Served"], "advisory": [], "reasons": [],
            "negative_polarity": [], "quiet_reasons": [], "stalls": [], "reads": [],
            "pause": null, "spec_schema": null,
        }))
        .expect("a spec");
        spec.reads = reads;
        spec.writes = writes;
        spec
    }

    fn fields(paths: &[&str]) -> Projection {
        Projection::of_paths(paths.iter().copied()).unwrap()
    }

    #[test]
    fn a_kind_is_held_as_the_union_of_its_reads_and_the_facts_and_whole_where_the_host_needs_it() {
        let service = kind("", "Service");
        let cluster = kind("postgresql.cnpg.io", "Cluster");
        let a = spec(
            "A",
            vec![
                read(service.clone(), Some(&["spec.ports"])),
                read(cluster.clone(), Some(&["status.phase"])),
                read(kind("apps", "Deployment"), Some(&["spec.replicas"])),
                read(kind("", "ConfigMap"), Some(&["data"])),
            ],
            vec![],
        );
        let b = spec(
            "B",
            vec![
                read(service.clone(), Some(&["spec.clusterIP"])),
                read(cluster.clone(), None),
            ],
            vec![kind("", "ServiceAccount")],
        );
        let union = union([&a, &b]);
        assert_eq!(union[&service], fields(&["spec.ports", "spec.clusterIP"]));
        assert!(union[&cluster].is_whole(), "B reads every Cluster whole");
        let deployment = kind("apps", "Deployment");
        let workload = fact_fields(&deployment).expect("the workload fact reads Deployments");
        assert_eq!(
            union[&deployment],
            fields(&["spec.replicas"]).union(&workload),
            "what A reads, and what the workload fact reads"
        );
        assert!(!union[&deployment].is_whole());
        assert_eq!(
            union[&kind("", "ConfigMap")],
            fields(&["data"]).union(&fact_fields(&kind("", "ConfigMap")).unwrap()),
            "what A reads, and the config-map fact's key names"
        );
        assert!(
            union[&kind("", "ServiceAccount")].is_whole(),
            "B writes them"
        );
        assert!(union[&a.kind_ref()].is_whole(), "A's own objects");
        let only_a = super::union([&a]);
        assert_eq!(only_a[&cluster], fields(&["status.phase"]));
    }
}
