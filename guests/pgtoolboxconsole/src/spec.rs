//! The PgToolBoxConsole's `spec`, parsed from the parent with errors that name the field.

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
    pub fn parse(text: &str) -> Option<ExposureType> {
        match text {
            "clusterIP" => Some(ExposureType::ClusterIp),
            "route" => Some(ExposureType::Route),
            "ingress" => Some(ExposureType::Ingress),
            "gateway" => Some(ExposureType::Gateway),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ExposureType::ClusterIp => "clusterIP",
            ExposureType::Route => "route",
            ExposureType::Ingress => "ingress",
            ExposureType::Gateway => "gateway",
        }
    }

    /// The exposure object the type publishes; `None` for clusterIP.
    pub fn kind(self) -> Option<ExposureKind> {
        match self {
            ExposureType::ClusterIp => None,
            ExposureType::Route => Some(ExposureKind::Route),
            ExposureType::Ingress => Some(ExposureKind::Ingress),
            ExposureType::Gateway => Some(ExposureKind::HttpRoute),
        }
    }

    /// The type the parent asks for, read leniently (for the checks that
    /// run before, or without, a full parse: the hostname, confinement).
    /// An omitted exposure or type is clusterIP; an unknown one is `None`.
    pub fn of(parent: &Value) -> Option<ExposureType> {
        match &parent["spec"]["exposure"]["type"] {
            Value::Null => Some(ExposureType::ClusterIp),
            Value::String(t) => ExposureType::parse(t),
            _ => None,
        }
    }
}

/// `spec.oauthProxy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthProxy {
    pub image: String,
    /// `spec.oauthProxy.clientSecretRef.name`.
    pub client_secret: String,
}

/// `spec.exposure`.
#[derive(Clone, Debug, PartialEq)]
pub struct Exposure {
    pub type_: ExposureType,
    /// Required unless the type is clusterIP.
    pub hostname: Option<String>,
    /// `spec.exposure.tls.secretName` (the Ingress's TLS Secret).
    pub tls_secret: Option<String>,
    /// `spec.exposure.gateway.parentRef`: the Gateway's name, and its
    /// namespace when given. Required for gateway.
    pub gateway: Option<(String, Option<String>)>,
}

/// What a PgToolBoxConsole asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsoleSpec {
    /// `spec.image`, when set.
    pub image: Option<String>,
    pub oauth_proxy: Option<OAuthProxy>,
    pub exposure: Exposure,
    /// `spec.clusterSelector.matchLabels`; `None` when no selector is given
    /// (no Cluster is selected), empty to select every Cluster.
    pub cluster_selector: Option<Vec<(String, String)>>,
    /// `spec.instanceCABundleRef.name`: a ConfigMap the user maintains.
    pub instance_ca_bundle_ref: Option<String>,
    /// `spec.podLogs` (default true).
    pub pod_logs: bool,
    /// `spec.restoreDrills.enabled` (default false).
    pub restore_drills: bool,
}

/// A spec the CRD schema let through but the console cannot use; the text
/// names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

fn error(text: impl Into<String>) -> SpecError {
    SpecError(text.into())
}

/// An optional string field: absent, null or blank is `None`.
fn string(value: &Value, field: &str) -> Result<Option<String>, SpecError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(error(format!("{field} must be a string, not {other}"))),
    }
}

fn boolean(value: &Value, field: &str, default: bool) -> Result<bool, SpecError> {
    match value {
        Value::Null => Ok(default),
        Value::Bool(b) => Ok(*b),
        other => Err(error(format!("{field} must be true or false, not {other}"))),
    }
}

fn object<'a>(value: &'a Value, field: &str) -> Result<Option<&'a Value>, SpecError> {
    match value {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(value)),
        other => Err(error(format!("{field} must be an object, not {other}"))),
    }
}

/// A `{name}` reference: the name, required when the reference is given.
fn name_ref(value: &Value, field: &str) -> Result<Option<String>, SpecError> {
    let Some(r) = object(value, field)? else {
        return Ok(None);
    };
    match string(&r["name"], &format!("{field}.name"))? {
        Some(name) => Ok(Some(name)),
        None => Err(error(format!("{field}.name is required"))),
    }
}

/// Parses the parent's `spec`.
pub fn parse(parent: &Value) -> Result<ConsoleSpec, SpecError> {
    let spec = match &parent["spec"] {
        Value::Object(_) => &parent["spec"],
        Value::Null => &Value::Null,
        other => return Err(error(format!("spec must be an object, not {other}"))),
    };
    let image = string(&spec["image"], "spec.image")?;
    let oauth_proxy = match object(&spec["oauthProxy"], "spec.oauthProxy")? {
        None => None,
        Some(p) => Some(OAuthProxy {
            image: string(&p["image"], "spec.oauthProxy.image")?
                .ok_or_else(|| error("spec.oauthProxy.image is required"))?,
            client_secret: name_ref(&p["clientSecretRef"], "spec.oauthProxy.clientSecretRef")?
                .ok_or_else(|| error("spec.oauthProxy.clientSecretRef is required"))?,
        }),
    };
    let exposure = object(&spec["exposure"], "spec.exposure")?.unwrap_or(&Value::Null);
    let type_ = match string(&exposure["type"], "spec.exposure.type")? {
        None => ExposureType::ClusterIp,
        Some(t) => ExposureType::parse(&t).ok_or_else(|| {
            error(format!(
                "spec.exposure.type {t:?} is not one of clusterIP, route, ingress, gateway"
            ))
        })?,
    };
    let hostname = string(&exposure["hostname"], "spec.exposure.hostname")?;
    if type_ != ExposureType::ClusterIp && hostname.is_none() {
        return Err(error(format!(
            "spec.exposure.hostname is required for spec.exposure.type {}",
            type_.as_str()
        )));
    }
    // Each read only for the type that uses it.
    let parent_ref = &exposure["gateway"]["parentRef"];
    let gateway = match (type_ == ExposureType::Gateway)
        .then(|| name_ref(parent_ref, "spec.exposure.gateway.parentRef"))
        .transpose()?
        .flatten()
    {
        Some(name) => Some((
            name,
            string(
                &parent_ref["namespace"],
                "spec.exposure.gateway.parentRef.namespace",
            )?,
        )),
        None => None,
    };
    if type_ == ExposureType::Gateway && gateway.is_none() {
        return Err(error(
            "spec.exposure.gateway.parentRef is required for spec.exposure.type gateway",
        ));
    }
    let tls_secret = match (type_ == ExposureType::Ingress)
        .then(|| object(&exposure["tls"], "spec.exposure.tls"))
        .transpose()?
        .flatten()
    {
        Some(tls) => string(&tls["secretName"], "spec.exposure.tls.secretName")?,
        None => None,
    };
    // Validated only: the confinement reads it leniently from the parent.
    if let Some(policy) = object(&exposure["networkPolicy"], "spec.exposure.networkPolicy")? {
        boolean(
            &policy["enabled"],
            "spec.exposure.networkPolicy.enabled",
            true,
        )?;
        if !(policy["from"].is_null() || policy["from"].is_array()) {
            return Err(error("spec.exposure.networkPolicy.from must be a list"));
        }
    }
    let cluster_selector = match object(&spec["clusterSelector"], "spec.clusterSelector")? {
        None => None,
        Some(s) => Some(match &s["matchLabels"] {
            Value::Null => Vec::new(),
            Value::Object(labels) => labels
                .iter()
                .map(|(k, v)| match v {
                    Value::String(v) => Ok((k.clone(), v.clone())),
                    other => Err(error(format!(
                        "spec.clusterSelector.matchLabels.{k} must be a string, not {other}"
                    ))),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(error(format!(
                    "spec.clusterSelector.matchLabels must be an object, not {other}"
                )));
            }
        }),
    };
    let restore_drills = match object(&spec["restoreDrills"], "spec.restoreDrills")? {
        None => false,
        Some(r) => boolean(&r["enabled"], "spec.restoreDrills.enabled", false)?,
    };
    Ok(ConsoleSpec {
        image,
        oauth_proxy,
        exposure: Exposure {
            type_,
            hostname,
            tls_secret,
            gateway,
        },
        cluster_selector,
        instance_ca_bundle_ref: name_ref(&spec["instanceCABundleRef"], "spec.instanceCABundleRef")?,
        pod_logs: boolean(&spec["podLogs"], "spec.podLogs", true)?,
        restore_drills,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_spec_is_a_cluster_ip_console_with_pod_logs() {
        let spec = parse(&json!({"spec": {}})).unwrap();
        assert_eq!(spec.exposure.type_, ExposureType::ClusterIp);
        assert!(spec.pod_logs && !spec.restore_drills);
        assert_eq!(spec.cluster_selector, None);
    }

    #[test]
    fn a_full_spec_parses() {
        let spec = parse(&json!({"spec": {
            "image": "ghcr.io/fyannk/console:1",
            "oauthProxy": {"image": "quay.io/oauth2-proxy/oauth2-proxy:v7", "clientSecretRef": {"name": "oidc"}},
            "exposure": {"type": "gateway", "hostname": "c.apps.example.com",
                         "gateway": {"parentRef": {"name": "gw", "namespace": "infra"}},
                         "networkPolicy": {"from": [{"namespaceSelector": {"matchLabels": {"a": "b"}}}]}},
            "clusterSelector": {"matchLabels": {"team": "a"}},
            "instanceCABundleRef": {"name": "cas"},
            "podLogs": false,
            "restoreDrills": {"enabled": true},
        }}))
        .unwrap();
        assert_eq!(spec.exposure.type_.kind(), Some(ExposureKind::HttpRoute));
        assert_eq!(
            spec.exposure.gateway,
            Some(("gw".to_owned(), Some("infra".to_owned())))
        );
        assert_eq!(spec.exposure.tls_secret, None);
        assert_eq!(spec.oauth_proxy.unwrap().client_secret, "oidc");
        assert_eq!(
            spec.cluster_selector,
            Some(vec![("team".into(), "a".into())])
        );
        assert_eq!(spec.instance_ca_bundle_ref.as_deref(), Some("cas"));
        assert!(!spec.pod_logs && spec.restore_drills);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"spec": 3}), "spec must be an object"),
            (json!({"spec": {"image": 1}}), "spec.image must be a string"),
            (
                json!({"spec": {"oauthProxy": {"clientSecretRef": {"name": "x"}}}}),
                "spec.oauthProxy.image is required",
            ),
            (
                json!({"spec": {"oauthProxy": {"image": "a/b"}}}),
                "spec.oauthProxy.clientSecretRef is required",
            ),
            (
                json!({"spec": {"exposure": {"type": "nodePort"}}}),
                "spec.exposure.type \"nodePort\"",
            ),
            (
                json!({"spec": {"exposure": {"type": "route"}}}),
                "spec.exposure.hostname is required for spec.exposure.type route",
            ),
            (
                json!({"spec": {"exposure": {"type": "gateway", "hostname": "h"}}}),
                "parentRef is required",
            ),
            (
                json!({"spec": {"podLogs": "yes"}}),
                "spec.podLogs must be true or false",
            ),
            (
                json!({"spec": {"clusterSelector": {"matchLabels": {"a": 1}}}}),
                "matchLabels.a must be a string",
            ),
            (
                json!({"spec": {"instanceCABundleRef": {}}}),
                "spec.instanceCABundleRef.name is required",
            ),
        ];
        for (parent, expected) in cases {
            let e = parse(&parent).unwrap_err();
            assert!(e.0.contains(expected), "{parent}: {}", e.0);
        }
    }

    #[test]
    fn the_lenient_type_reads_what_the_parse_would() {
        assert_eq!(ExposureType::of(&json!({})), Some(ExposureType::ClusterIp));
        assert_eq!(
            ExposureType::of(&json!({"spec": {"exposure": {"type": "route"}}})),
            Some(ExposureType::Route)
        );
        assert_eq!(
            ExposureType::of(&json!({"spec": {"exposure": {"type": "x"}}})),
            None
        );
    }
}
