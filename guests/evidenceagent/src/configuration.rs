//! ConfigurationValid: the issuer setting is known, the image is chosen and allowed, the Cluster archives to a supported ObjectStore, and the generated names are valid and free.

use reconciler_guest_sdk::configuration::{owned, stalled};
use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{Availability, Evaluation, Facts, ReadError, read};
use serde_json::Value;

pub use reconciler_guest_sdk::configuration::NotValid;

use crate::children::Children;
use crate::image::{self, ImageProblem};
use crate::issuer::{self, Issuer};
use crate::objectstore::{self, Problem, Store};
use crate::registry::*;
use crate::render::SERVING_CERT_ANNOTATION;
use crate::spec::{self, AgentSpec};

/// The name of the Barman Cloud plugin in a Cluster's `spec.plugins`.
pub const BARMAN_PLUGIN: &str = "barman-cloud.cloudnative-pg.io";

/// A configuration the agent can run with.
#[derive(Debug)]
pub struct Valid {
    pub spec: AgentSpec,
    pub image: String,
    pub object_store: String,
    pub store: Store,
    pub issuer: Issuer,
}

/// Evaluates the configuration in the order the checks are documented:
/// spec, the Service's name, the issuer setting, image, Cluster, plugin,
/// ObjectStore API, ObjectStore, profile, ownership of the generated
/// names. The first failure decides.
pub fn evaluate(
    input: &Evaluation,
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
) -> Result<Valid, NotValid> {
    let spec = spec::parse(&input.parent_json())?;
    if let Some(problem) = children.service_name_problem(agent.name) {
        return Err(stalled(CONFIGURATION_INVALID, problem));
    }
    let issuer = Issuer::from_setting(input.setting(issuer::SETTING))
        .map_err(|problem| stalled(CONFIGURATION_INVALID, problem))?;
    let allowed = input.setting_list(image::ALLOWED_REPOSITORIES);
    let image = match image::choose(
        spec.image.as_deref(),
        input.setting(image::DEFAULT_IMAGE),
        &allowed,
    ) {
        Ok(image) => image,
        Err(ImageProblem::Required) => {
            return Err(stalled(
                IMAGE_REQUIRED,
                "spec.image is not set and the operator has no defaultImage",
            ));
        }
        Err(ImageProblem::Refused(refusal)) => {
            return Err(stalled(refusal.reason(), refusal.message()));
        }
    };
    let (object_store, store) = backup_target(facts, agent.namespace, &spec.cluster.name)?;
    ownership(facts, agent, children, issuer)?;
    Ok(Valid {
        spec,
        image,
        object_store,
        store,
        issuer,
    })
}

/// The ObjectStore the Cluster's Barman Cloud plugin archives to, checked
/// against the supported profile.
fn backup_target(
    facts: &dyn Facts,
    namespace: &str,
    cluster_name: &str,
) -> Result<(String, Store), NotValid> {
    let cluster = match facts.get(&cluster_kind(), namespace, cluster_name) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => {
            return Err(stalled(
                CLUSTER_NOT_FOUND,
                format!("Cluster {cluster_name} does not exist in {namespace}"),
            ));
        }
        Err(error) => {
            return Err(NotValid::Unread(read::failure(
                &format!("Cluster {cluster_name}"),
                &error,
            )));
        }
    };
    let cluster: Value = serde_json::from_str(&cluster.json).unwrap_or_default();
    let object_store = barman_object_name(cluster_name, &cluster)
        .map_err(|message| stalled(BARMAN_PLUGIN_NOT_CONFIGURED, message))?;
    let kind = object_store_kind();
    let unavailable = |forbidden: bool| {
        let why = if forbidden {
            format!(
                "the operator may not read ObjectStores (barmancloud.cnpg.io/v1) in {namespace}"
            )
        } else {
            "the ObjectStore API (barmancloud.cnpg.io/v1) is not served: install the Barman Cloud plugin".to_owned()
        };
        stalled(
            OBJECT_STORE_API_UNAVAILABLE,
            format!("Cluster {cluster_name} archives to ObjectStore {object_store}, but {why}"),
        )
    };
    match facts.api_availability(&kind, namespace) {
        Availability::Available => {}
        Availability::NotServed => return Err(unavailable(false)),
        Availability::Forbidden => return Err(unavailable(true)),
    }
    let store = match facts.get(&kind, namespace, &object_store) {
        Ok(Some(store)) => store,
        Ok(None) => {
            return Err(stalled(
                OBJECT_STORE_NOT_FOUND,
                format!(
                    "ObjectStore {object_store}, which Cluster {cluster_name} archives to, does not exist in {namespace}"
                ),
            ));
        }
        Err(ReadError::NotServed(_)) => return Err(unavailable(false)),
        Err(ReadError::Forbidden(_)) => return Err(unavailable(true)),
        Err(error) => {
            return Err(NotValid::Unread(read::failure(
                &format!("ObjectStore {object_store}"),
                &error,
            )));
        }
    };
    let json: Value = serde_json::from_str(&store.json).unwrap_or_default();
    match objectstore::check(&object_store, &json) {
        Ok(store) => Ok((object_store, store)),
        Err(Problem::DestinationInvalid(m)) => Err(stalled(DESTINATION_INVALID, m)),
        Err(Problem::Unsupported(m)) => Err(stalled(UNSUPPORTED_OBJECT_STORE, m)),
        Err(Problem::RegionRequired(m)) => Err(stalled(REGION_REQUIRED, m)),
        Err(Problem::Malformed(m)) => Err(stalled(
            CONFIGURATION_INVALID,
            format!("ObjectStore {object_store}: {m}"),
        )),
    }
}

/// The ObjectStore named by the Cluster's enabled Barman Cloud plugin entry.
fn barman_object_name(cluster_name: &str, cluster: &Value) -> Result<String, String> {
    let entry = cluster["spec"]["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"].as_str() == Some(BARMAN_PLUGIN));
    let Some(entry) = entry else {
        let in_tree = if cluster["spec"]["backup"]["barmanObjectStore"].is_null() {
            ""
        } else {
            " (it backs up with the in-tree spec.backup.barmanObjectStore, which the agent does not read)"
        };
        return Err(format!(
            "Cluster {cluster_name} has no spec.plugins entry {BARMAN_PLUGIN}{in_tree}"
        ));
    };
    if entry["enabled"].as_bool() == Some(false) {
        return Err(format!(
            "Cluster {cluster_name}'s spec.plugins entry {BARMAN_PLUGIN} is disabled (enabled: false)"
        ));
    }
    entry["parameters"]["barmanObjectName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "Cluster {cluster_name}'s spec.plugins entry {BARMAN_PLUGIN} names no ObjectStore in parameters.barmanObjectName"
            )
        })
}

/// ResourceNotOwned when an object the agent writes under a generated name
/// is controlled by another object: the Deployment, the Service, and the
/// CA bundle ConfigMap under the service CA (whose serving Secret is the
/// service CA's), or the serving Secret under the operator (see
/// [`serving_secret`]).
fn ownership(
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
    issuer: Issuer,
) -> Result<(), NotValid> {
    let ns = agent.namespace;
    let workload = &children.workload;
    owned(
        agent,
        "Deployment",
        workload,
        facts.workload(ns, workload).map(|w| w.map(|w| w.meta)),
    )?;
    owned(
        agent,
        "Service",
        workload,
        facts
            .get(&service_kind(), ns, workload)
            .map(|s| s.map(|s| s.meta)),
    )?;
    match issuer {
        Issuer::Operator => serving_secret(facts, agent, children),
        Issuer::ServiceCa => owned(
            agent,
            "ConfigMap",
            &children.ca_bundle,
            facts
                .config_map(ns, &children.ca_bundle)
                .map(|c| c.map(|c| c.meta)),
        ),
    }
}

/// The Secret the operator issues the serving certificate into is the
/// agent's or does not exist: the host replaces only a certificate Secret
/// its parent controls, so one that nobody controls is not the agent's
/// either, and is left for a person to delete. When it is the service
/// CA's, for the agent's Service (after servingCertificate: service-ca),
/// the message says to take the Service's annotation off first: while it
/// is on, the service CA issues the Secret again as soon as it is deleted.
fn serving_secret(facts: &dyn Facts, agent: &Parent, children: &Children) -> Result<(), NotValid> {
    let name = &children.serving_secret;
    let secret = match facts.secret(agent.namespace, name) {
        Ok(secret) => secret,
        Err(error) => {
            return Err(NotValid::Unread(read::failure(
                &format!("Secret {name}"),
                &error,
            )));
        }
    };
    let Some(secret) = secret else {
        return Ok(());
    };
    if let Some(refusal) = agent.foreign("Secret", name, &secret.meta) {
        return Err(stalled(RESOURCE_NOT_OWNED, refusal));
    }
    if secret.meta.controller.is_some() {
        return Ok(());
    }
    let service_cas = secret
        .meta
        .annotations
        .iter()
        .any(|(k, v)| k == issuer::SERVICE_CA_ORIGIN_ANNOTATION && *v == children.workload);
    let what_to_do = if service_cas {
        format!(
            "it is the OpenShift service CA's, for Service {}: remove the Service's annotation {SERVING_CERT_ANNOTATION}, then delete the Secret",
            children.workload
        )
    } else {
        "delete it".to_owned()
    };
    Err(stalled(
        RESOURCE_NOT_OWNED,
        format!(
            "Secret {name} exists and {} {} does not control it: the operator issues the serving certificate only into a Secret of its own; {what_to_do}",
            agent.kind, agent.name
        ),
    ))
}
