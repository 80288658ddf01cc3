//! ConfigurationValid: the image is chosen and allowed, the Cluster archives to a supported ObjectStore, and the generated names are free.

use reconciler_guest_sdk::{Availability, Evaluation, Facts, ReadError};
use serde_json::Value;

use crate::children::{Children, foreign_controller};
use crate::image::{self, ImageProblem};
use crate::objectstore::{self, Problem, Store};
use crate::read;
use crate::registry::*;
use crate::spec::{self, AgentSpec};

/// The name of the Barman Cloud plugin in a Cluster's `spec.plugins`.
pub const BARMAN_PLUGIN: &str = "barman-cloud.cloudnative-pg.io";

/// The parent being evaluated.
pub struct Agent<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

/// A configuration the agent can run with.
#[derive(Debug)]
pub struct Valid {
    pub spec: AgentSpec,
    pub image: String,
    pub object_store: String,
    pub store: Store,
}

/// Why ConfigurationValid is not True.
#[derive(Debug)]
pub enum NotValid {
    /// False with a stall reason: nothing is rendered until an input changes.
    Stalled {
        reason: &'static str,
        message: String,
    },
    /// A read failed: not known yet.
    Unread(String),
}

fn stalled(reason: &'static str, message: impl Into<String>) -> NotValid {
    NotValid::Stalled {
        reason,
        message: message.into(),
    }
}

/// Evaluates the configuration in the order the checks are documented:
/// spec, image, Cluster, plugin, ObjectStore API, ObjectStore, profile,
/// ownership of the generated names. The first failure decides.
pub fn evaluate(
    input: &Evaluation,
    facts: &dyn Facts,
    agent: &Agent,
    children: &Children,
) -> Result<Valid, NotValid> {
    let spec = match spec::parse(&input.parent_json()) {
        Ok(spec) => spec,
        Err(error) => return Err(stalled(CONFIGURATION_INVALID, error.0)),
    };
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
        Err(ImageProblem::Invalid(message)) => return Err(stalled(CONFIGURATION_INVALID, message)),
        Err(ImageProblem::NotAllowed(message)) => return Err(stalled(IMAGE_NOT_ALLOWED, message)),
    };
    let (object_store, store) = backup_target(facts, agent.namespace, &spec.cluster)?;
    if let Some(refused) = ownership(facts, agent, children) {
        return Err(refused);
    }
    Ok(Valid {
        spec,
        image,
        object_store,
        store,
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

/// ResourceNotOwned when an object under a generated name is controlled by
/// another object: the Deployment, the Service, the CA bundle ConfigMap.
fn ownership(facts: &dyn Facts, agent: &Agent, children: &Children) -> Option<NotValid> {
    let ns = agent.namespace;
    let refused = |kind: &str, name: &str, meta: &reconciler_guest_sdk::ObjectMeta| {
        foreign_controller(meta, agent.uid).map(|c| {
            stalled(
                RESOURCE_NOT_OWNED,
                format!(
                    "{kind} {name} exists and is controlled by {} {}, not by EvidenceAgent {}",
                    c.kind, c.name, agent.name
                ),
            )
        })
    };
    let unread = |what: &str, error: ReadError| Some(NotValid::Unread(read::failure(what, &error)));
    match facts.workload(ns, &children.workload) {
        Ok(Some(w)) => refused("Deployment", &children.workload, &w.meta),
        Ok(None) => None,
        Err(error) => unread(&format!("Deployment {}", children.workload), error),
    }
    .or_else(
        || match facts.get(&service_kind(), ns, &children.workload) {
            Ok(Some(s)) => refused("Service", &children.workload, &s.meta),
            Ok(None) => None,
            Err(error) => unread(&format!("Service {}", children.workload), error),
        },
    )
    .or_else(|| match facts.config_map(ns, &children.ca_bundle) {
        Ok(Some(c)) => refused("ConfigMap", &children.ca_bundle, &c.meta),
        Ok(None) => None,
        Err(error) => unread(&format!("ConfigMap {}", children.ca_bundle), error),
    })
}
