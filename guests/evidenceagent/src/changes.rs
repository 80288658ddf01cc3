//! The change set of a valid agent: what the issuer's mode left behind deleted, the serving certificate asked for, and the children applied.

use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{
    ApplyObject, Change, DeleteObject, Facts, KindRef, ReadError, ServingCertificate,
    VerdictBuilder, read,
};
use serde_json::Value;

use crate::children::Children;
use crate::configuration::Valid;
use crate::issuer::Issuer;
use crate::registry::{config_map_kind, deployment_kind, secret_kind, service_kind};
use crate::render;

/// The changes for `agent`, whose configuration is `valid` (its generated
/// names are free: checked by the configuration). Deletions come first, so
/// the service CA finds no operator Secret under the name it will issue.
/// A failed read leaves the deletion for the retry.
pub fn of(
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
    valid: &Valid,
    verdict: &mut VerdictBuilder,
) -> Vec<Change> {
    let mut changes = Vec::new();
    match leftover(facts, agent, children, valid.issuer) {
        Ok(delete) => changes.extend(delete.map(Change::Delete)),
        Err(_) => {
            verdict.requeue_after(read::RETRY_SECONDS);
        }
    }
    match valid.issuer {
        Issuer::Operator => changes.push(Change::Certificate(ServingCertificate {
            name: children.serving_secret.clone(),
            dns_names: children.dns_names(agent.namespace),
        })),
        Issuer::ServiceCa => changes.push(apply(
            config_map_kind(),
            &children.ca_bundle,
            &render::ca_bundle(agent.name, children),
        )),
    }
    changes.push(apply(
        service_kind(),
        &children.workload,
        &render::service(agent.name, children, valid.issuer),
    ));
    changes.push(apply(
        deployment_kind(),
        &children.workload,
        &render::deployment(agent.name, children, valid),
    ));
    changes
}

/// The child the other mode made, if the agent still controls it: the CA
/// bundle ConfigMap under the operator (among the agent's children), the
/// operator's Secret under the service CA (read by name: the host lists no
/// Secrets; the service CA's own Secret is the Service's, not the agent's).
fn leftover(
    facts: &dyn Facts,
    agent: &Parent,
    children: &Children,
    issuer: Issuer,
) -> Result<Option<DeleteObject>, ReadError> {
    let (kind, name, found) = match issuer {
        Issuer::Operator => {
            let name = &children.ca_bundle;
            let owned = facts.children(&config_map_kind())?;
            let found = owned.into_iter().find(|o| o.meta.name == *name);
            (config_map_kind(), name, found.map(|o| o.meta))
        }
        Issuer::ServiceCa => {
            let name = &children.serving_secret;
            let secret = facts.secret(agent.namespace, name)?;
            let operators = secret
                .map(|s| s.meta)
                .filter(|m| m.controller.as_ref().is_some_and(|c| c.uid == agent.uid));
            (secret_kind(), name, operators)
        }
    };
    Ok(found.map(|meta| DeleteObject {
        kind,
        name: name.clone(),
        uid: meta.uid,
    }))
}

fn apply(kind: KindRef, name: &str, body: &Value) -> Change {
    Change::Apply(ApplyObject {
        kind,
        name: name.to_owned(),
        body: body.to_string(),
    })
}
