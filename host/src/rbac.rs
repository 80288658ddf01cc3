//! The RBAC a set of guests needs: what the host watches and writes for
//! them, as one ClusterRole, or as a Role per namespace (with a
//! ClusterRole for the cluster-scoped kinds) for an install that watches
//! named namespaces.

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

/// Where a kind's objects live and what RBAC calls them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The plural, as RBAC rules name it.
    pub plural: String,
    /// Its objects live in namespaces.
    pub namespaced: bool,
}

/// The built-in kinds guests read that are cluster-scoped.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Node"),
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
];

/// A kind's resource without asking a cluster: the plural as Kubernetes
/// derives it ([`plural`]) and the scope of the built-in kinds; any other
/// kind is taken as namespaced. `reconciler-host rbac --discover` asks the
/// cluster's discovery instead.
pub fn offline(kind: &KindRef) -> Resource {
    Resource {
        plural: plural(&kind.kind),
        namespaced: !CLUSTER_SCOPED
            .iter()
            .any(|(g, k)| *g == kind.group && *k == kind.kind),
    }
}

/// The name of the Secret holding the operator's CA
/// (`run --certificate-authority`'s default).
pub const CA_SECRET: &str = "reconciler-host-ca";

/// The rules the host needs to serve `specs`, split by where they apply:
/// (namespaced, cluster-scoped). The host lists and watches each parent
/// kind and every kind the guests read or write, patches its parents'
/// status (server-side apply), creates and patches the children guests
/// want (a server-side apply that creates is authorized as `create`) and
/// deletes the ones they no longer want, and creates Events, patching them
/// into a series when one repeats. Where guests write Secrets, it updates
/// the serving certificates it renews and gets its CA's Secret; it gets or
/// updates nothing else.
fn rules(
    specs: &[&KindSpec],
    resource_of: &dyn Fn(&KindRef) -> Resource,
) -> (Vec<Value>, Vec<Value>) {
    type Grants = BTreeMap<(bool, String), BTreeSet<String>>;
    let mut read: Grants = BTreeMap::new();
    let mut status: Grants = BTreeMap::new();
    let mut write: Grants = BTreeMap::new();
    for spec in specs {
        let parent = (spec.namespaced, spec.group.clone());
        read.entry(parent.clone())
            .or_default()
            .insert(spec.plural.clone());
        status
            .entry(parent)
            .or_default()
            .insert(format!("{}/status", spec.plural));
        for r in &spec.reads {
            let resource = resource_of(&r.kind);
            read.entry((resource.namespaced, r.kind.group.clone()))
                .or_default()
                .insert(resource.plural);
        }
        for w in &spec.writes {
            let resource = resource_of(w);
            let at = (resource.namespaced, w.group.clone());
            read.entry(at.clone())
                .or_default()
                .insert(resource.plural.clone());
            write.entry(at).or_default().insert(resource.plural);
        }
    }
    let mut namespaced = Vec::new();
    let mut cluster = Vec::new();
    for ((ns, group), resources) in &read {
        let rule =
            json!({"apiGroups": [group], "resources": resources, "verbs": ["list", "watch"]});
        if *ns {
            namespaced.push(rule)
        } else {
            cluster.push(rule)
        }
    }
    for ((ns, group), resources) in &status {
        let rule = json!({"apiGroups": [group], "resources": resources, "verbs": ["patch"]});
        if *ns {
            namespaced.push(rule)
        } else {
            cluster.push(rule)
        }
    }
    for ((ns, group), resources) in &write {
        let rule = json!({"apiGroups": [group], "resources": resources, "verbs": ["create", "delete", "patch"]});
        if *ns {
            namespaced.push(rule)
        } else {
            cluster.push(rule)
        }
    }
    // Serving certificates: renewed by an update (with the resourceVersion
    // it replaces), signed by the CA the host reads from its Secret.
    if write
        .get(&(true, String::new()))
        .is_some_and(|r| r.contains("secrets"))
    {
        namespaced.push(json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["update"]}));
        namespaced.push(json!({"apiGroups": [""], "resources": ["secrets"],
            "resourceNames": [CA_SECRET], "verbs": ["get"]}));
    }
    namespaced.push(
        json!({"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}),
    );
    (namespaced, cluster)
}

/// A ClusterRole for serving `specs` in every namespace.
pub fn cluster_role(
    name: &str,
    specs: &[&KindSpec],
    resource_of: &dyn Fn(&KindRef) -> Resource,
) -> Value {
    let (mut all, cluster) = rules(specs, resource_of);
    all.extend(cluster);
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": all,
    })
}

/// For an install watching only `namespaces` (`run --namespaces`): a Role
/// in each with the namespaced rules, and a ClusterRole with the rules of
/// cluster-scoped kinds (Nodes, ClusterRoles), if any: those are read
/// cluster-wide whatever `--namespaces` says.
pub fn namespaced_roles(
    name: &str,
    specs: &[&KindSpec],
    namespaces: &[String],
    resource_of: &dyn Fn(&KindRef) -> Resource,
) -> Vec<Value> {
    let (namespaced, cluster) = rules(specs, resource_of);
    let mut roles: Vec<Value> = namespaces
        .iter()
        .map(|ns| {
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": ns},
                "rules": namespaced,
            })
        })
        .collect();
    if !cluster.is_empty() {
        roles.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": format!("{name}-cluster-scoped")},
            "rules": cluster,
        }));
    }
    roles
}

/// The label joining a role to the aggregated `reconciler-plan-approver`
/// (deploy/plans-rbac.yaml).
pub const AGGREGATE_TO_PLAN_APPROVER: &str = "reconciler.dev/aggregate-to-plan-approver";

/// Each kind's plan approver role: a ClusterRole
/// `reconciler-plan-approver-<plural>` granting the verb `approve` on the
/// kind, which deploy/plans-admission.yaml asks of whoever decides one of
/// its parents' plans; labelled to join the aggregated
/// `reconciler-plan-approver`. Bound per namespace (a RoleBinding) or
/// cluster-wide; a kind whose plural another kind of `specs` shares is
/// told apart by its group (`<plural>.<group>`).
pub fn approver_roles(specs: &[&KindSpec]) -> Vec<Value> {
    let kinds: BTreeSet<(&str, &str)> = specs
        .iter()
        .map(|spec| (spec.plural.as_str(), spec.group.as_str()))
        .collect();
    kinds
        .iter()
        .map(|(plural, group)| {
            let shared = kinds.iter().filter(|(p, _)| p == plural).count() > 1;
            let name = if shared {
                format!("reconciler-plan-approver-{plural}.{group}")
            } else {
                format!("reconciler-plan-approver-{plural}")
            };
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name, "labels": {AGGREGATE_TO_PLAN_APPROVER: "true"}},
                "rules": [{"apiGroups": [group], "resources": [plural], "verbs": ["approve"]}],
            })
        })
        .collect()
}

/// What `reconciler-host rbac` prints: the host's roles (one ClusterRole,
/// or with `namespaces` a Role in each) and each kind's plan approver role.
pub fn documents(
    name: &str,
    specs: &[&KindSpec],
    namespaces: &[String],
    resource_of: &dyn Fn(&KindRef) -> Resource,
) -> Vec<Value> {
    let mut documents = if namespaces.is_empty() {
        vec![cluster_role(name, specs, resource_of)]
    } else {
        namespaced_roles(name, specs, namespaces, resource_of)
    };
    documents.extend(approver_roles(specs));
    documents
}

/// `documents` as one YAML stream.
pub fn yaml(documents: &[Value]) -> Result<String, serde_yaml::Error> {
    let texts: Vec<String> = documents
        .iter()
        .map(serde_yaml::to_string)
        .collect::<Result<_, _>>()?;
    Ok(texts.join("---\n"))
}

/// What a ring member (`run --ring`) needs beside [`cluster_role`]: to
/// patch the labels by which the ring assigns each parent of `specs`, and
/// the verb `assign` on the parents and on the kinds they write (their
/// children carry the same label), which deploy/ring-admission.yaml asks
/// of whoever changes those labels (a ClusterRole `<name>-ring`,
/// cluster-wide as the ring's coordinator watches). The member Leases are
/// in the host's namespace, under its Lease Role.
pub fn ring_role(
    name: &str,
    specs: &[&KindSpec],
    resource_of: &dyn Fn(&KindRef) -> Resource,
) -> Value {
    let mut parents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for spec in specs {
        parents
            .entry(spec.group.clone())
            .or_default()
            .insert(spec.plural.clone());
        for w in &spec.writes {
            children
                .entry(w.group.clone())
                .or_default()
                .insert(resource_of(w).plural);
        }
    }
    let mut rules: Vec<Value> = parents
        .iter()
        .map(|(group, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": ["assign", "patch"]})
        })
        .collect();
    rules.extend(children.iter().map(|(group, resources)| {
        json!({"apiGroups": [group], "resources": resources, "verbs": ["assign"]})
    }));
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": format!("{name}-ring")},
        "rules": rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconciler_conventions::kind::ReadDecl;

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
            aspects: vec!["Ready".into()],
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
                cross_namespace: false,
                fields: None,
            })
            .collect(),
            ..KindSpec::default()
        };
        let role = cluster_role("host", &[&spec], &offline);
        let grants = |rules: &Value, group: &str| -> Vec<Value> {
            rules
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| {
                    r["apiGroups"] == json!([group]) && r["verbs"] == json!(["list", "watch"])
                })
                .flat_map(|r| r["resources"].as_array().unwrap().clone())
                .collect()
        };
        let rules = &role["rules"];
        assert_eq!(grants(rules, ""), [json!("nodes")]);
        assert_eq!(
            grants(rules, "rbac.authorization.k8s.io"),
            [json!("clusterroles")]
        );
        assert_eq!(
            grants(rules, "networking.k8s.io"),
            [json!("networkpolicies")]
        );
        assert_eq!(
            grants(rules, "gateway.networking.k8s.io"),
            [json!("httproutes")]
        );
        let verbs: BTreeSet<&str> = rules
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["verbs"].as_array().unwrap())
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            verbs,
            BTreeSet::from(["create", "list", "patch", "watch"]),
            "only the verbs the host uses"
        );

        // Named namespaces: a Role each, the cluster-scoped reads apart.
        let roles = namespaced_roles("host", &[&spec], &["a".into(), "b".into()], &offline);
        let kinds: Vec<(&str, &str)> = roles
            .iter()
            .map(|r| {
                (
                    r["kind"].as_str().unwrap(),
                    r["metadata"]["namespace"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(kinds, [("Role", "a"), ("Role", "b"), ("ClusterRole", "")]);
        assert_eq!(grants(&roles[0]["rules"], ""), Vec::<Value>::new());
        assert_eq!(
            grants(&roles[0]["rules"], "networking.k8s.io"),
            [json!("networkpolicies")]
        );
        assert_eq!(grants(&roles[2]["rules"], ""), [json!("nodes")]);
        assert_eq!(
            grants(&roles[2]["rules"], "rbac.authorization.k8s.io"),
            [json!("clusterroles")]
        );
    }

    #[test]
    fn a_guest_writing_secrets_may_renew_certificates_and_read_the_ca_only() {
        let secret = KindRef {
            group: String::new(),
            version: "v1".into(),
            kind: "Secret".into(),
        };
        let spec = KindSpec {
            group: "example.dev".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            aspects: vec!["Ready".into()],
            writes: vec![secret],
            ..KindSpec::default()
        };
        let role = cluster_role("host", &[&spec], &offline);
        let on_secrets: Vec<&Value> = role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resources"] == json!(["secrets"]))
            .collect();
        assert!(
            on_secrets.contains(&&json!({"apiGroups": [""], "resources": ["secrets"],
            "resourceNames": [CA_SECRET], "verbs": ["get"]}))
        );
        assert!(
            on_secrets.contains(
                &&json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["update"]})
            )
        );
        let gets = on_secrets
            .iter()
            .filter(|r| r["verbs"].as_array().unwrap().contains(&json!("get")));
        assert!(
            gets.clone()
                .all(|r| r["resourceNames"] == json!([CA_SECRET])),
            "no other Secret is read"
        );
        let without = KindSpec {
            writes: vec![],
            ..spec
        };
        let role = cluster_role("host", &[&without], &offline);
        assert!(!role.to_string().contains("update"), "{role}");
    }

    #[test]
    fn each_kind_has_an_approver_role_told_apart_by_group_when_plurals_meet() {
        let spec = |group: &str, plural: &str| KindSpec {
            group: group.into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: plural.into(),
            namespaced: true,
            aspects: vec!["Ready".into()],
            ..KindSpec::default()
        };
        let (a, b, c) = (
            spec("a.example.dev", "widgets"),
            spec("b.example.dev", "widgets"),
            spec("a.example.dev", "gadgets"),
        );
        let roles = approver_roles(&[&a, &b, &c]);
        let names: Vec<&str> = roles
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "reconciler-plan-approver-gadgets",
                "reconciler-plan-approver-widgets.a.example.dev",
                "reconciler-plan-approver-widgets.b.example.dev",
            ]
        );
        assert_eq!(
            roles[1]["rules"],
            json!([{"apiGroups": ["a.example.dev"], "resources": ["widgets"], "verbs": ["approve"]}])
        );
        assert!(
            roles
                .iter()
                .all(|r| r["metadata"]["labels"][AGGREGATE_TO_PLAN_APPROVER] == "true")
        );
        let all = documents("host", &[&a, &c], &["ns".into()], &offline);
        let kinds: Vec<&str> = all.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Role", "ClusterRole", "ClusterRole"]);
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
