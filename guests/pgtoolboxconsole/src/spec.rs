//! The PgToolBoxConsole's `spec`: one Rust type, the CRD's schema and the parse with errors that name the field.

use std::collections::BTreeMap;

use reconciler_guest_sdk::{ExposureKind, spec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `spec.exposure.type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum ExposureType {
    #[default]
    #[serde(rename = "clusterIP")]
    ClusterIp,
    #[serde(rename = "route")]
    Route,
    #[serde(rename = "ingress")]
    Ingress,
    #[serde(rename = "gateway")]
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

/// `.spec` as it is written: the CRD's schema ([`schema`]) and the parse
/// ([`parse`]) both come from this type and the ones below (their fields'
/// doc comments are the CRD's descriptions); [`parse`] makes it a
/// [`ConsoleSpec`], with the rules between fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.exposure) || !has(self.exposure.type) || self.exposure.type == 'clusterIP' || has(self.exposure.hostname)",
        "message": "spec.exposure.hostname is required unless spec.exposure.type is clusterIP"
    },
    {
        "rule": "!has(self.exposure) || !has(self.exposure.type) || self.exposure.type != 'gateway' || has(self.exposure.gateway)",
        "message": "spec.exposure.gateway.parentRef is required when spec.exposure.type is gateway"
    }
]))]
pub struct Spec {
    /// The console's image; defaults to the operator's defaultConsoleImage. Its repository must be within allowedImageRepositories when the operator sets it.
    #[schemars(length(min = 1))]
    pub image: Option<String>,
    /// An OAuth2 proxy in front of the console, in the console Pod.
    pub oauth_proxy: Option<OAuthProxySpec>,
    /// How the console is reached from outside the namespace.
    pub exposure: Option<ExposureSpec>,
    /// The CloudNativePG Clusters of the namespace whose server CA the operator mirrors into <name>-instance-ca (matchLabels; {} selects every Cluster; omitted selects none).
    pub cluster_selector: Option<MatchLabels>,
    /// A ConfigMap you maintain with the instances' CA bundle; when set the operator mirrors nothing (no InstanceCABundleComplete).
    #[serde(rename = "instanceCABundleRef")]
    pub instance_ca_bundle_ref: Option<NameRef>,
    /// The console may read the Clusters' Pod logs (binds ClusterRole pgtoolbox-console-pod-logs).
    #[serde(default = "yes")]
    pub pod_logs: bool,
    // Whether the console may run restore drills.
    pub restore_drills: Option<RestoreDrills>,
}

fn yes() -> bool {
    true
}

/// `spec.oauthProxy`, as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthProxySpec {
    /// The proxy's image, held to allowedImageRepositories too.
    #[schemars(length(min = 1))]
    pub image: String,
    /// The Secret, in the console's namespace, holding the OAuth2 client: keys client-id and client-secret.
    pub client_secret_ref: NameRef,
}

// A reference to an object of the console's namespace by name.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NameRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// `spec.exposure`, as written.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureSpec {
    /// clusterIP: the Service only; route: an OpenShift Route; ingress: a networking.k8s.io Ingress; gateway: a Gateway API HTTPRoute. Each is named <name>-console.
    #[serde(default, rename = "type")]
    pub type_: ExposureType,
    /// The host name the exposure publishes; must end with one of the operator's allowedHostSuffixes at a label boundary.
    #[schemars(
        length(min = 1, max = 253),
        pattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub hostname: Option<String>,
    /// TLS of the exposure.
    pub tls: Option<TlsSpec>,
    // The Gateway of an HTTPRoute (type gateway).
    pub gateway: Option<GatewaySpec>,
    /// The <name>-ingress NetworkPolicy that admits only the router, ingress controller or gateway to the console port (8080, http).
    pub network_policy: Option<NetworkPolicySpec>,
}

// `spec.exposure.tls`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// A kubernetes.io/tls Secret for the host name (Ingress and Gateway; a Route without it uses the router's default certificate).
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: Option<String>,
}

// `spec.exposure.gateway`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// The Gateway the HTTPRoute attaches to.
    // Required by the schema; read as optional, so that its absence says
    // the exposure type that needs it (and is not read for another type).
    #[schemars(required)]
    pub parent_ref: Option<ParentRef>,
}

// `spec.exposure.gateway.parentRef`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ParentRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Defaults to the console's namespace.
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
}

// `spec.exposure.networkPolicy`: validated only (the confinement reads it
// leniently from the parent).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NetworkPolicySpec {
    /// false: no policy is rendered and any Pod can reach the console port (ExposureConfined says ExposureOpen).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The peers admitted to the console port (Kubernetes NetworkPolicyPeer): the console trusts them with X-Forwarded-For.
    #[schemars(with = "Option<Vec<Peer>>", length(max = 32))]
    pub from: Option<Vec<Value>>,
}

// A Kubernetes NetworkPolicyPeer: in the schema only.
#[derive(JsonSchema)]
#[schemars(rename_all = "camelCase")]
#[allow(dead_code)]
struct Peer {
    /// Pods admitted (in the console's namespace unless namespaceSelector is set).
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pod_selector: Option<LabelSelector>,
    /// Namespaces whose Pods are admitted.
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    namespace_selector: Option<LabelSelector>,
    ip_block: Option<IpBlock>,
}

#[derive(JsonSchema)]
#[schemars(rename_all = "camelCase")]
#[allow(dead_code)]
struct LabelSelector {
    match_labels: Option<BTreeMap<String, String>>,
    match_expressions: Option<Vec<Requirement>>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Option<Vec<String>>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct IpBlock {
    cidr: String,
    except: Option<Vec<String>>,
}

// `spec.clusterSelector`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchLabels {
    pub match_labels: Option<BTreeMap<String, String>>,
}

// `spec.restoreDrills`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RestoreDrills {
    /// The console may run restore drills (binds ClusterRole pgtoolbox-console-restore-drills).
    #[serde(default)]
    pub enabled: bool,
}

/// The OpenAPI v3 schema of `spec` (see the README for every field):
/// `src/spec-schema.json`, the schema of [`Spec`] generated natively (the test
/// `the_shipped_schema_is_the_spec_types` holds it so; `BLESS=1 cargo test
/// -p pgtoolboxconsole-guest` rewrites it), so that the component carries
/// no schema generator.
pub fn schema() -> String {
    include_str!("spec-schema.json").to_owned()
}

/// Parses the parent's `spec`: [`Spec`] as the SDK reads it (an absent
/// spec is empty; a null or blank field is absent), then the rules between
/// fields. The gateway is read only for type gateway, the TLS Secret only
/// for ingress.
pub fn parse(parent: &Value) -> Result<ConsoleSpec, SpecError> {
    let written: Spec = spec::parse(parent).map_err(|e| error(e.message()))?;
    let exposure = written.exposure.unwrap_or_default();
    let type_ = exposure.type_;
    if type_ != ExposureType::ClusterIp && exposure.hostname.is_none() {
        return Err(error(format!(
            "spec.exposure.hostname is required for spec.exposure.type {}",
            type_.as_str()
        )));
    }
    let gateway = match type_ {
        ExposureType::Gateway => Some(
            exposure
                .gateway
                .and_then(|g| g.parent_ref)
                .map(|p| (p.name, p.namespace))
                .ok_or_else(|| {
                    error(
                        "spec.exposure.gateway.parentRef is required for spec.exposure.type gateway",
                    )
                })?,
        ),
        _ => None,
    };
    let tls_secret = match type_ {
        ExposureType::Ingress => exposure.tls.and_then(|t| t.secret_name),
        _ => None,
    };
    Ok(ConsoleSpec {
        image: written.image,
        oauth_proxy: written.oauth_proxy.map(|p| OAuthProxy {
            image: p.image,
            client_secret: p.client_secret_ref.name,
        }),
        exposure: Exposure {
            type_,
            hostname: exposure.hostname,
            tls_secret,
            gateway,
        },
        cluster_selector: written
            .cluster_selector
            .map(|s| s.match_labels.unwrap_or_default().into_iter().collect()),
        instance_ca_bundle_ref: written.instance_ca_bundle_ref.map(|r| r.name),
        pod_logs: written.pod_logs,
        restore_drills: written.restore_drills.is_some_and(|r| r.enabled),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_shipped_schema_is_the_spec_types() {
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/spec-schema.json");
        reconciler_guest_sdk::testing::schema_golden::<Spec>(&golden, env!("CARGO_PKG_NAME"));
    }

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
