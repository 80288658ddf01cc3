//! ConfigurationValid past the hostname: the spec, the images, the ClusterRoles, the referenced Secret and ConfigMap, the ingress policy's recent refusal, and the owners of the children.

use reconciler_guest_sdk::configuration::{owned, stalled};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{ApplyOutcome, Evaluation, Facts, KindRef, ReadError, Timestamp, read};
use serde_json::Value;

pub use reconciler_guest_sdk::configuration::NotValid;

use crate::children::{Children, kind_name};
use crate::confinement::text;
use crate::image::{self, ImageProblem};
use crate::registry::*;
use crate::spec::{self, ConsoleSpec};

/// The ClusterRole every console is bound to.
pub const CONSOLE_ROLE: &str = "pgtoolbox-console";
/// Bound unless `podLogs: false`.
pub const POD_LOGS_ROLE: &str = "pgtoolbox-console-pod-logs";
/// Bound with `restoreDrills.enabled: true`.
pub const RESTORE_DRILLS_ROLE: &str = "pgtoolbox-console-restore-drills";

/// A configuration the console can run with.
#[derive(Debug)]
pub struct Valid {
    pub spec: ConsoleSpec,
    pub image: String,
    pub proxy_image: Option<String>,
    pub roles: Vec<&'static str>,
}

/// The ClusterRoles the operator binds for `spec`.
pub fn required_roles(spec: &ConsoleSpec) -> Vec<&'static str> {
    let mut roles = vec![CONSOLE_ROLE];
    if spec.pod_logs {
        roles.push(POD_LOGS_ROLE);
    }
    if spec.restore_drills {
        roles.push(RESTORE_DRILLS_ROLE);
    }
    roles
}

/// The refusal of an image, read leniently from the parent (for the
/// HostnameNotAllowed message, which names the image's refusal too): the
/// console image first, then the OAuth2 proxy's.
pub fn image_refusal(input: &Evaluation, parent: &Value) -> Option<(&'static str, String)> {
    let allowed = input.setting_list(image::ALLOWED_REPOSITORIES);
    let spec_image = parent["spec"]["image"]
        .as_str()
        .filter(|i| !i.trim().is_empty());
    let console = image::console(
        spec_image,
        input.setting(image::DEFAULT_CONSOLE_IMAGE),
        &allowed,
    )
    .err();
    let proxy = parent["spec"]["oauthProxy"]["image"]
        .as_str()
        .filter(|i| !i.trim().is_empty())
        .and_then(|i| image::oauth_proxy(i, &allowed).err());
    console
        .or(proxy)
        .map(|p| (image_reason(&p), p.message().to_owned()))
}

fn image_reason(problem: &ImageProblem) -> &'static str {
    match problem {
        ImageProblem::Required(_) => CONSOLE_IMAGE_REQUIRED,
        ImageProblem::Refused(refusal) => refusal.reason(),
    }
}

/// Evaluates the configuration in the documented order: spec, console
/// image, proxy image, ClusterRoles, the OAuth2 client Secret, the
/// instance CA ConfigMap, the ingress policy's recent refusal (`policy`,
/// from [`policy_refusal`]), the owners of the children. The first failure
/// decides. (The hostname is checked before, by the caller.)
/// `policy_rendered`: the spec renders the ingress NetworkPolicy.
pub fn evaluate(
    input: &Evaluation,
    facts: &dyn Facts,
    console: &Parent,
    children: &Children,
    policy: Option<&PolicyRefusal>,
    policy_rendered: bool,
) -> Result<Valid, NotValid> {
    let spec =
        spec::parse(&input.parent_json()).map_err(|e| stalled(CONFIGURATION_INVALID, e.0))?;
    let allowed = input.setting_list(image::ALLOWED_REPOSITORIES);
    let image = image::console(
        spec.image.as_deref(),
        input.setting(image::DEFAULT_CONSOLE_IMAGE),
        &allowed,
    )
    .map_err(|p| stalled(image_reason(&p), p.message()))?;
    let proxy_image = match &spec.oauth_proxy {
        Some(proxy) => Some(
            image::oauth_proxy(&proxy.image, &allowed)
                .map_err(|p| stalled(image_reason(&p), p.message()))?,
        ),
        None => None,
    };
    let roles = required_roles(&spec);
    cluster_roles(facts, &roles)?;
    references(facts, console.namespace, &spec)?;
    if let Some(refused) = policy {
        return Err(stalled(EXPOSURE_POLICY_INVALID, refused.message.clone()));
    }
    ownership(facts, console, children, &spec, &roles, policy_rendered)?;
    Ok(Valid {
        spec,
        image,
        proxy_image,
        roles,
    })
}

/// ConsoleRoleMissing naming every missing ClusterRole.
fn cluster_roles(facts: &dyn Facts, roles: &[&'static str]) -> Result<(), NotValid> {
    let mut missing = Vec::new();
    for role in roles {
        match facts.cluster_role(role) {
            Ok(Some(_)) => {}
            Ok(None) => missing.push(*role),
            Err(e) => {
                return Err(NotValid::Unread(read::failure(
                    &format!("ClusterRole {role}"),
                    &e,
                )));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let (noun, verb) = if missing.len() == 1 {
        ("ClusterRole", "does")
    } else {
        ("ClusterRoles", "do")
    };
    Err(stalled(
        CONSOLE_ROLE_MISSING,
        format!(
            "{noun} {} {verb} not exist: the operator installation is incomplete (looked at again every two minutes)",
            missing.join(", ")
        ),
    ))
}

/// SecretNotFound for the OAuth2 client Secret, ConfigMapNotFound for the
/// instance CA bundle the user names.
fn references(facts: &dyn Facts, namespace: &str, spec: &ConsoleSpec) -> Result<(), NotValid> {
    if let Some(proxy) = &spec.oauth_proxy {
        let name = &proxy.client_secret;
        match facts.secret(namespace, name) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(stalled(
                    SECRET_NOT_FOUND,
                    format!(
                        "Secret {name} (spec.oauthProxy.clientSecretRef) does not exist in {namespace}: the console Pod mounts it"
                    ),
                ));
            }
            Err(e) => {
                return Err(NotValid::Unread(read::failure(
                    &format!("Secret {name}"),
                    &e,
                )));
            }
        }
    }
    if let Some(name) = &spec.instance_ca_bundle_ref {
        match facts.config_map(namespace, name) {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(stalled(
                    CONFIG_MAP_NOT_FOUND,
                    format!(
                        "ConfigMap {name} (spec.instanceCABundleRef) does not exist in {namespace}: the console Pod mounts it (looked at again every two minutes)"
                    ),
                ));
            }
            Err(e) => {
                return Err(NotValid::Unread(read::failure(
                    &format!("ConfigMap {name}"),
                    &e,
                )));
            }
        }
    }
    Ok(())
}

/// The API server's refusal (Invalid or Forbidden: validation, an
/// admission policy or webhook) of the ingress NetworkPolicy the console
/// asked for, less than five minutes ago and for the spec of now: the
/// policy is held back meanwhile (ExposurePolicyInvalid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRefusal {
    pub message: String,
    /// Seconds until the policy is asked for again.
    pub retry_in: u32,
}

/// The refusal of the `<name>-ingress` policy that holds it back, if any:
/// the host's last apply of it was refused as Invalid or Forbidden less
/// than [`POLICY_RECHECK_SECONDS`] ago, and the spec has not changed since
/// (`metadata.generation` is the `status.observedGeneration` of the pass
/// before). Call it only while the policy is rendered: a refusal of a
/// policy no longer wanted says nothing about the spec. A refusal with no
/// time known, five minutes old, or of an earlier spec holds nothing back:
/// the policy is asked for again.
pub fn policy_refusal(
    facts: &dyn Facts,
    console: &Parent,
    children: &Children,
    spec_changed: bool,
) -> Option<PolicyRefusal> {
    let name = &children.network_policy;
    let kind = network_policy_kind();
    let Some(ApplyOutcome::Refused(r)) = facts.last_apply(&kind, console.namespace, name) else {
        return None;
    };
    if !(r.reason == "Invalid" || r.reason == "Forbidden") || spec_changed {
        return None;
    }
    let at = facts.last_apply_time(&kind, console.namespace, name)?;
    let retry_at = at.seconds + i64::from(POLICY_RECHECK_SECONDS);
    let retry_in = u32::try_from(retry_at - facts.now().seconds)
        .ok()
        .filter(|s| *s > 0)?;
    let when = text::rfc3339(&Timestamp {
        seconds: retry_at,
        nanos: 0,
    });
    Some(PolicyRefusal {
        message: format!(
            "the API server refused NetworkPolicy {name} rendered from spec.exposure.networkPolicy ({} {}): {}; it is held back and asked for again at {when}, five minutes after the refusal, or at the next change of the spec",
            r.code, r.reason, r.message
        ),
        retry_in,
    })
}

/// ResourceNotOwned when an object under one of the console's generated
/// names is controlled by another object: the Deployment, the
/// ServiceAccount, the Service, each RoleBinding the spec needs, the
/// ingress NetworkPolicy while it is rendered, and the exposure object of
/// the requested kind (when its API is readable: a kind not served or
/// refused is not written either). The first found decides.
fn ownership(
    facts: &dyn Facts,
    console: &Parent,
    children: &Children,
    spec: &ConsoleSpec,
    roles: &[&'static str],
    policy_rendered: bool,
) -> Result<(), NotValid> {
    let ns = console.namespace;
    let name = &children.workload;
    owned(
        console,
        "Deployment",
        name,
        facts.workload(ns, name).map(|w| w.map(|w| w.meta)),
    )?;
    let meta = |kind: &KindRef, name: &str| facts.get(kind, ns, name).map(|o| o.map(|o| o.meta));
    owned(
        console,
        "ServiceAccount",
        name,
        meta(&service_account_kind(), name),
    )?;
    owned(console, "Service", name, meta(&service_kind(), name))?;
    for role in roles {
        let binding = children.role_binding(role);
        owned(
            console,
            "RoleBinding",
            &binding,
            meta(&role_binding_kind(), &binding),
        )?;
    }
    if policy_rendered {
        let policy = &children.network_policy;
        owned(
            console,
            "NetworkPolicy",
            policy,
            meta(&network_policy_kind(), policy),
        )?;
    }
    if let Some(kind) = spec.exposure.type_.kind() {
        let object = &children.exposure;
        match meta(&exposure_kind(kind), object) {
            Err(ReadError::NotServed(_) | ReadError::Forbidden(_)) => {}
            read => owned(console, kind_name(kind), object, read)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roles_follow_pod_logs_and_restore_drills() {
        let spec = |s| spec::parse(&json!({ "spec": s })).unwrap();
        assert_eq!(
            required_roles(&spec(json!({}))),
            [CONSOLE_ROLE, POD_LOGS_ROLE]
        );
        assert_eq!(
            required_roles(&spec(json!({"podLogs": false}))),
            [CONSOLE_ROLE]
        );
        assert_eq!(
            required_roles(&spec(json!({"restoreDrills": {"enabled": true}}))),
            [CONSOLE_ROLE, POD_LOGS_ROLE, RESTORE_DRILLS_ROLE]
        );
    }

    #[test]
    fn the_lenient_image_refusal_names_the_console_image_first() {
        let input = reconciler_guest_sdk::mock::evaluation(
            json!({}),
            &[("allowedImageRepositories", "ghcr.io/fyannk/")],
        );
        let parent = json!({"spec": {"image": "docker.io/x/c:1", "oauthProxy": {"image": "docker.io/x/p:1"}}});
        let (reason, message) = image_refusal(&input, &parent).unwrap();
        assert_eq!(reason, IMAGE_NOT_ALLOWED);
        assert!(message.contains("spec.image"));
        let parent = json!({"spec": {"oauthProxy": {"image": "docker.io/x/p:1"}}});
        let (reason, _) = image_refusal(&input, &parent).unwrap();
        assert_eq!(reason, CONSOLE_IMAGE_REQUIRED);
    }
}
