//! The PgAdmin's `spec`, parsed from the parent with errors that name the field.

use reconciler_guest_sdk::ExposureKind;
use serde_json::Value;

/// `spec.exposure.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExposureType {
    ClusterIp,
    Route,
    Ingress,
    Gateway,
}

impl ExposureType {
    /// The exposure type the parent asks for, read leniently (absent:
    /// clusterIP; a value the CRD would refuse: None).
    pub fn of(parent: &Value) -> Option<ExposureType> {
        match parent["spec"]["exposure"]["type"].as_str() {
            None | Some("clusterIP") => Some(ExposureType::ClusterIp),
            Some("route") => Some(ExposureType::Route),
            Some("ingress") => Some(ExposureType::Ingress),
            Some("gateway") => Some(ExposureType::Gateway),
            Some(_) => None,
        }
    }

    /// The kind of object that publishes it, if any.
    pub fn kind(self) -> Option<ExposureKind> {
        match self {
            ExposureType::ClusterIp => None,
            ExposureType::Route => Some(ExposureKind::Route),
            ExposureType::Ingress => Some(ExposureKind::Ingress),
            ExposureType::Gateway => Some(ExposureKind::HttpRoute),
        }
    }
}

/// `spec.exposure.gateway`: the Gateway an HTTPRoute attaches to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayRef {
    pub name: String,
    pub namespace: Option<String>,
}

/// What is published, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exposure {
    pub kind: ExposureKind,
    pub hostname: String,
    pub ingress_class: Option<String>,
    pub gateway: Option<GatewayRef>,
}

/// One endpoint of a Cluster pgAdmin connects to: CloudNativePG's
/// Services `<cluster>-rw`, `-ro`, `-r`, or a Pooler's (`pooler:<name>`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Endpoint {
    Rw,
    Ro,
    R,
    Pooler(String),
}

impl Endpoint {
    /// Parses one `endpoints` entry.
    pub fn parse(text: &str) -> Option<Endpoint> {
        match text {
            "rw" => Some(Endpoint::Rw),
            "ro" => Some(Endpoint::Ro),
            "r" => Some(Endpoint::R),
            _ => text
                .strip_prefix("pooler:")
                .filter(|name| !name.is_empty())
                .map(|name| Endpoint::Pooler(name.to_owned())),
        }
    }

    /// As written in the spec and in `status.servers`.
    pub fn text(&self) -> String {
        match self {
            Endpoint::Rw => "rw".to_owned(),
            Endpoint::Ro => "ro".to_owned(),
            Endpoint::R => "r".to_owned(),
            Endpoint::Pooler(name) => format!("pooler:{name}"),
        }
    }
}

/// A `spec.clusterRefs` entry: a Cluster of the namespace, by name, and
/// the endpoints offered for it (`[rw]` when left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRef {
    pub name: String,
    pub endpoints: Vec<Endpoint>,
}

/// A `spec.crossNamespaceClusterRefs` entry: a Cluster of another
/// namespace, offered once a PgAdminAccess of that namespace grants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrossNamespaceClusterRef {
    pub namespace: String,
    pub cluster: ClusterRef,
}

/// The parsed spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgAdminSpec {
    pub image: Option<String>,
    /// None: clusterIP.
    pub exposure: Option<Exposure>,
    /// `spec.oauth2.clientSecretRef.name`.
    pub oauth2_secret: Option<String>,
    /// `spec.clusterSelector.matchLabels`: None selects no Cluster, an
    /// empty list every Cluster of the namespace.
    pub cluster_selector: Option<Vec<(String, String)>>,
    /// `spec.clusterRefs`.
    pub cluster_refs: Vec<ClusterRef>,
    /// `spec.crossNamespaceClusterRefs`.
    pub cross_namespace_refs: Vec<CrossNamespaceClusterRef>,
    /// `spec.configDatabase.clusterRef.name`: the Cluster holding pgAdmin's
    /// settings; None keeps them in SQLite on the data claim.
    pub config_database: Option<String>,
}

/// A spec the CRD admits but the guest cannot use: the message names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

fn string(value: &Value, field: &str) -> Result<Option<String>, SpecError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(SpecError(format!("{field} is {other}, not a string"))),
    }
}

/// Parses `spec`.
pub fn parse(parent: &Value) -> Result<PgAdminSpec, SpecError> {
    let spec = &parent["spec"];
    let exposure = &spec["exposure"];
    let kind = ExposureType::of(parent)
        .ok_or_else(|| {
            SpecError(format!(
                "spec.exposure.type {} is none of clusterIP, route, ingress, gateway",
                exposure["type"]
            ))
        })?
        .kind();
    let exposure = match kind {
        None => None,
        Some(kind) => {
            let hostname = string(&exposure["hostname"], "spec.exposure.hostname")?
                .ok_or_else(|| {
                    SpecError(format!(
                        "spec.exposure.type is {}, but spec.exposure.hostname is not set: there is no host name to publish",
                        exposure["type"].as_str().unwrap_or_default()
                    ))
                })?;
            let gateway = match &exposure["gateway"] {
                Value::Null => None,
                g => Some(GatewayRef {
                    name: string(&g["name"], "spec.exposure.gateway.name")?.ok_or_else(|| {
                        SpecError("spec.exposure.gateway.name is not set".to_owned())
                    })?,
                    namespace: string(&g["namespace"], "spec.exposure.gateway.namespace")?,
                }),
            };
            if kind == ExposureKind::HttpRoute && gateway.is_none() {
                return Err(SpecError(
                    "spec.exposure.type is gateway, but spec.exposure.gateway names no Gateway for the HTTPRoute to attach to".to_owned(),
                ));
            }
            Some(Exposure {
                kind,
                hostname,
                ingress_class: string(
                    &exposure["ingressClassName"],
                    "spec.exposure.ingressClassName",
                )?,
                gateway,
            })
        }
    };
    Ok(PgAdminSpec {
        image: string(&spec["image"], "spec.image")?,
        exposure,
        oauth2_secret: string(
            &spec["oauth2"]["clientSecretRef"]["name"],
            "spec.oauth2.clientSecretRef.name",
        )?,
        cluster_selector: cluster_selector(&spec["clusterSelector"])?,
        cluster_refs: cluster_refs(&spec["clusterRefs"])?,
        cross_namespace_refs: cross_namespace_refs(
            &spec["crossNamespaceClusterRefs"],
            parent["metadata"]["namespace"].as_str().unwrap_or_default(),
        )?,
        config_database: match &spec["configDatabase"] {
            Value::Null => None,
            c => Some(
                string(
                    &c["clusterRef"]["name"],
                    "spec.configDatabase.clusterRef.name",
                )?
                .ok_or_else(|| {
                    SpecError("spec.configDatabase.clusterRef.name is not set".to_owned())
                })?,
            ),
        },
    })
}

fn cluster_selector(selector: &Value) -> Result<Option<Vec<(String, String)>>, SpecError> {
    match selector {
        Value::Null => Ok(None),
        Value::Object(_) => match &selector["matchLabels"] {
            Value::Null => Ok(Some(Vec::new())),
            Value::Object(labels) => labels
                .iter()
                .map(|(k, v)| match v {
                    Value::String(v) => Ok((k.clone(), v.clone())),
                    other => Err(SpecError(format!(
                        "spec.clusterSelector.matchLabels.{k} is {other}, not a string"
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            other => Err(SpecError(format!(
                "spec.clusterSelector.matchLabels is {other}, not a map"
            ))),
        },
        other => Err(SpecError(format!(
            "spec.clusterSelector is {other}, not a label selector"
        ))),
    }
}

/// The entries of a list field (`spec.clusterRefs`), empty when left out.
fn entries<'a>(refs: &'a Value, field: &str) -> Result<&'a [Value], SpecError> {
    match refs {
        Value::Null => Ok(&[]),
        Value::Array(entries) => Ok(entries),
        other => Err(SpecError(format!("{field} is {other}, not a list"))),
    }
}

fn cluster_refs(refs: &Value) -> Result<Vec<ClusterRef>, SpecError> {
    let mut out: Vec<ClusterRef> = Vec::new();
    for (i, entry) in entries(refs, "spec.clusterRefs")?.iter().enumerate() {
        let field = format!("spec.clusterRefs[{i}]");
        let cluster = cluster_ref(entry, &field)?;
        if out.iter().any(|r| r.name == cluster.name) {
            return Err(SpecError(format!(
                "{field} names Cluster {} a second time: give its endpoints in one entry",
                cluster.name
            )));
        }
        out.push(cluster);
    }
    Ok(out)
}

/// `spec.crossNamespaceClusterRefs`: each a Cluster of another namespace
/// than `own`, named once.
fn cross_namespace_refs(
    refs: &Value,
    own: &str,
) -> Result<Vec<CrossNamespaceClusterRef>, SpecError> {
    let mut out: Vec<CrossNamespaceClusterRef> = Vec::new();
    let entries = entries(refs, "spec.crossNamespaceClusterRefs")?;
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("spec.crossNamespaceClusterRefs[{i}]");
        let namespace = string(&entry["namespace"], &format!("{field}.namespace"))?
            .ok_or_else(|| SpecError(format!("{field}.namespace is not set")))?;
        if namespace == own {
            return Err(SpecError(format!(
                "{field}.namespace is the PgAdmin's own namespace {own}: name the Cluster in spec.clusterRefs"
            )));
        }
        let cluster = cluster_ref(entry, &field)?;
        if out
            .iter()
            .any(|r| r.namespace == namespace && r.cluster.name == cluster.name)
        {
            return Err(SpecError(format!(
                "{field} names Cluster {} of {namespace} a second time: give its endpoints in one entry",
                cluster.name
            )));
        }
        out.push(CrossNamespaceClusterRef { namespace, cluster });
    }
    Ok(out)
}

/// One entry naming a Cluster (`name`) and its `endpoints`.
fn cluster_ref(entry: &Value, field: &str) -> Result<ClusterRef, SpecError> {
    let name = string(&entry["name"], &format!("{field}.name"))?
        .ok_or_else(|| SpecError(format!("{field}.name is not set")))?;
    let mut endpoints = Vec::new();
    match &entry["endpoints"] {
        Value::Null => endpoints.push(Endpoint::Rw),
        Value::Array(list) => {
            for (j, e) in list.iter().enumerate() {
                let at = format!("{field}.endpoints[{j}]");
                let endpoint = e.as_str().and_then(Endpoint::parse).ok_or_else(|| {
                    SpecError(format!("{at} is {e}, none of rw, ro, r, pooler:<name>"))
                })?;
                if !endpoints.contains(&endpoint) {
                    endpoints.push(endpoint);
                }
            }
        }
        other => {
            return Err(SpecError(format!(
                "{field}.endpoints is {other}, not a list"
            )));
        }
    }
    Ok(ClusterRef { name, endpoints })
}

/// The hostname an exposure asks to publish, read leniently so it is
/// checked first, whatever the rest of the spec parses to.
pub fn requested_hostname(parent: &Value) -> Option<&str> {
    match ExposureType::of(parent) {
        Some(ExposureType::ClusterIp) => None,
        _ => parent["spec"]["exposure"]["hostname"]
            .as_str()
            .filter(|h| !h.trim().is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parent(spec: Value) -> Value {
        json!({"spec": spec})
    }

    #[test]
    fn an_empty_spec_is_cluster_ip_with_internal_login() {
        let s = parse(&parent(json!({}))).unwrap();
        assert_eq!(
            s,
            PgAdminSpec {
                image: None,
                exposure: None,
                oauth2_secret: None,
                cluster_selector: None,
                cluster_refs: Vec::new(),
                cross_namespace_refs: Vec::new(),
                config_database: None,
            }
        );
    }

    #[test]
    fn an_exposure_needs_a_hostname_and_a_gateway_exposure_its_gateway() {
        let e = parse(&parent(json!({"exposure": {"type": "route"}}))).unwrap_err();
        assert!(e.0.contains("spec.exposure.hostname is not set"), "{e:?}");
        let e = parse(&parent(
            json!({"exposure": {"type": "gateway", "hostname": "a.b"}}),
        ))
        .unwrap_err();
        assert!(e.0.contains("spec.exposure.gateway"), "{e:?}");
        let s = parse(&parent(
            json!({"exposure": {"type": "gateway", "hostname": "a.b",
            "gateway": {"name": "public", "namespace": "infra"}}}),
        ))
        .unwrap();
        assert_eq!(s.exposure.unwrap().kind, ExposureKind::HttpRoute);
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let e = parse(&parent(json!({"image": 7}))).unwrap_err();
        assert_eq!(e.0, "spec.image is 7, not a string");
        let e = parse(&parent(json!({"exposure": {"type": "nodePort"}}))).unwrap_err();
        assert!(e.0.starts_with("spec.exposure.type \"nodePort\""), "{e:?}");
    }

    #[test]
    fn cluster_refs_default_to_rw_and_name_a_bad_endpoint() {
        let s = parse(&parent(json!({"clusterSelector": {},
            "clusterRefs": [{"name": "a"}, {"name": "b", "endpoints": ["ro", "pooler:p", "ro"]}]})))
        .unwrap();
        assert_eq!(s.cluster_selector, Some(vec![]));
        assert_eq!(s.cluster_refs[0].endpoints, vec![Endpoint::Rw]);
        assert_eq!(
            s.cluster_refs[1].endpoints,
            vec![Endpoint::Ro, Endpoint::Pooler("p".into())]
        );
        let e = parse(&parent(
            json!({"clusterRefs": [{"name": "a", "endpoints": ["pooler:"]}]}),
        ))
        .unwrap_err();
        assert_eq!(
            e.0,
            "spec.clusterRefs[0].endpoints[0] is \"pooler:\", none of rw, ro, r, pooler:<name>"
        );
    }

    #[test]
    fn a_cross_namespace_ref_names_another_namespace_once() {
        let p = |refs: Value| json!({"metadata": {"namespace": "team-a"}, "spec": {"crossNamespaceClusterRefs": refs}});
        let s = parse(&p(json!([{"namespace": "team-b", "name": "a"},
            {"namespace": "team-c", "name": "a", "endpoints": ["ro"]}])))
        .unwrap();
        assert_eq!(s.cross_namespace_refs[1].namespace, "team-c");
        assert_eq!(s.cross_namespace_refs[1].cluster.endpoints, [Endpoint::Ro]);
        let e = parse(&p(json!([{"namespace": "team-a", "name": "a"}]))).unwrap_err();
        assert_eq!(
            e.0,
            "spec.crossNamespaceClusterRefs[0].namespace is the PgAdmin's own namespace team-a: name the Cluster in spec.clusterRefs"
        );
        let e = parse(&p(json!([{"name": "a"}]))).unwrap_err();
        assert_eq!(
            e.0,
            "spec.crossNamespaceClusterRefs[0].namespace is not set"
        );
        let e = parse(&p(json!([{"namespace": "team-b", "name": "a"},
            {"namespace": "team-b", "name": "a"}])))
        .unwrap_err();
        assert!(
            e.0.contains("[1] names Cluster a of team-b a second time"),
            "{e:?}"
        );
    }

    #[test]
    fn only_an_exposure_requests_a_hostname() {
        let p = |e: Value| parent(json!({ "exposure": e }));
        assert_eq!(requested_hostname(&p(json!({"hostname": "h.x"}))), None);
        assert_eq!(
            requested_hostname(&p(json!({"type": "ingress", "hostname": "h.x"}))),
            Some("h.x")
        );
    }
}
