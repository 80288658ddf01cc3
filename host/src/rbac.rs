//! The RBAC a set of guests needs: what the host watches and writes for
//! them, as one ClusterRole.

use std::collections::{BTreeMap, BTreeSet};

use reconciler_conventions::kind::{KindRef, KindSpec};
use serde_json::{Value, json};

/// The resource (plural) of a kind, as Kubernetes derives it for built-in
/// and custom kinds alike: lower case, then `y` → `ies`, `s`/`x`/`ch`/`sh`
/// → `es`, else `s`.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s')
        || lower.ends_with('x')
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// A ClusterRole for serving `specs`: watch each parent kind and write its
/// status, watch every kind the guests read, and publish Events.
pub fn cluster_role(name: &str, specs: &[&KindSpec]) -> Value {
    let mut read: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut status: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let add = |map: &mut BTreeMap<String, BTreeSet<String>>, kind: &KindRef, resource: String| {
        map.entry(kind.group.clone()).or_default().insert(resource);
    };
    for spec in specs {
        add(&mut read, &spec.kind_ref(), spec.plural.clone());
        add(
            &mut status,
            &spec.kind_ref(),
            format!("{}/status", spec.plural),
        );
        for r in &spec.reads {
            add(&mut read, &r.kind, plural(&r.kind.kind));
        }
    }
    let mut rules: Vec<Value> = read
        .iter()
        .map(|(group, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch"]})
        })
        .collect();
    rules.extend(status.iter().map(|(group, resources)| {
        json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "patch", "update"]})
    }));
    rules.push(json!({"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]}));
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_conventions::kind::{Profile, ReadDecl};

    #[test]
    fn cluster_scoped_reads_get_list_and_watch() {
        let kind = |group: &str, kind: &str| KindRef {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
        };
        let spec = KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            profile: Profile::Progressing,
            aspects: vec!["Ready".into()],
            advisory: vec![],
            reasons: vec![],
            negative_polarity: vec![],
            quiet_reasons: vec![],
            stalls: vec![],
            reads: [
                kind("", "Node"),
                kind("rbac.authorization.k8s.io", "ClusterRole"),
                kind("networking.k8s.io", "NetworkPolicy"),
                kind("gateway.networking.k8s.io", "HTTPRoute"),
            ]
            .into_iter()
            .map(|kind| ReadDecl {
                kind,
                optional: true,
            })
            .collect(),
            pause: None,
            spec_schema: None,
        };
        let role = cluster_role("host", &[&spec]);
        let grants = |group: &str| -> Vec<Value> {
            role["rules"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| {
                    r["apiGroups"] == json!([group])
                        && r["verbs"] == json!(["get", "list", "watch"])
                })
                .flat_map(|r| r["resources"].as_array().unwrap().clone())
                .collect()
        };
        assert_eq!(grants(""), [json!("nodes")]);
        assert_eq!(grants("rbac.authorization.k8s.io"), [json!("clusterroles")]);
        assert_eq!(grants("networking.k8s.io"), [json!("networkpolicies")]);
        assert_eq!(grants("gateway.networking.k8s.io"), [json!("httproutes")]);
    }

    #[test]
    fn plurals_follow_kubernetes() {
        for (kind, want) in [
            ("Pod", "pods"),
            ("Deployment", "deployments"),
            ("NetworkPolicy", "networkpolicies"),
            ("Ingress", "ingresses"),
            ("ObjectStore", "objectstores"),
            ("Cluster", "clusters"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural(kind), want, "{kind}");
        }
    }
}
