//! What a console with a valid configuration asks the host for: its children as the pass decided them, and the deletion of those it no longer wants.
//!
//! Bodies are written in the form the API server stores (no nulls, no
//! empty lists or maps, numbers as numbers), so a converged console costs
//! the host no request. The order of the changes: the ingress
//! NetworkPolicy first (confined before anything is published), the
//! ServiceAccount and its RoleBindings, the CA bundle the Pods mount, the
//! Deployment, the Service, the exposure object; then the deletions.

pub mod exposure;
pub mod network_policy;
pub mod rbac;
pub mod workload;

use reconciler_guest_sdk::ownership::Parent;
use reconciler_guest_sdk::{
    ApplyObject, Availability, CaBundle, Change, DeleteObject, Facts, KindRef, Object,
};
use serde_json::{Map, Value, json};

use crate::children::{CA_KEY, Children};
use crate::configuration::Valid;
use crate::confinement::PolicyPlan;
use crate::registry::*;

/// The labels of every child, and the selector of the console's Pods.
pub fn labels(console: &str) -> Value {
    let (name_key, name_value) = crate::children::POD_NAME_LABEL;
    json!({name_key: name_value, crate::children::POD_INSTANCE_LABEL: console})
}

/// `apiVersion`, `kind` and `metadata` (the name and the console's labels).
fn head(api_version: &str, kind: &str, name: &str, console: &str) -> Map<String, Value> {
    let mut head = Map::new();
    head.insert("apiVersion".into(), json!(api_version));
    head.insert("kind".into(), json!(kind));
    head.insert(
        "metadata".into(),
        json!({"name": name, "labels": labels(console)}),
    );
    head
}

/// `head` with the object's own fields.
fn object(mut head: Map<String, Value>, fields: Value) -> Value {
    if let Value::Object(fields) = fields {
        head.extend(fields);
    }
    Value::Object(head)
}

/// Where the console's instance CA bundle comes from.
#[derive(Clone, Copy, Debug)]
pub enum CaBundleSource<'a> {
    /// The operator mirrors it into `<name>-instance-ca` from these CA
    /// Secrets (key `ca.crt`).
    Mirror(&'a [String]),
    /// The user's own ConfigMap (`spec.instanceCABundleRef`).
    Reference(&'a str),
    /// None is mounted: `<name>-instance-ca` is another object's.
    NotMounted,
}

/// Everything the pass decided that the children follow.
pub struct Plan<'a> {
    pub console: &'a Parent<'a>,
    pub children: &'a Children,
    pub valid: &'a Valid,
    /// The console's Pods carry the X-Forwarded-For grant.
    pub trust_every_peer: bool,
    /// What becomes of the ingress NetworkPolicy.
    pub policy: &'a PolicyPlan,
    pub ca_bundle: CaBundleSource<'a>,
    /// The exposure objects as the pass found them.
    pub observation: &'a crate::exposure::Observation,
}

/// The changes of a pass, and the reads of children that failed: the
/// deletions they would have found wait for a later pass.
#[derive(Debug, Default)]
pub struct Rendered {
    pub changes: Vec<Change>,
    pub unread: Vec<String>,
}

fn apply(kind: KindRef, body: Value) -> Change {
    Change::Apply(ApplyObject {
        kind,
        name: body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body: body.to_string(),
    })
}

fn delete(kind: &KindRef, child: &Object) -> Change {
    Change::Delete(DeleteObject {
        kind: kind.clone(),
        name: child.meta.name.clone(),
        uid: child.meta.uid.clone(),
    })
}

/// The children of `kind` the console controls that `unwanted` picks and
/// that are not being deleted already, deleted by their UID.
fn delete_children(
    facts: &dyn Facts,
    kind: KindRef,
    what: &str,
    unwanted: impl Fn(&Object) -> bool,
    rendered: &mut Rendered,
) {
    match facts.children(&kind) {
        Ok(children) => rendered.changes.extend(
            children
                .iter()
                .filter(|c| unwanted(c) && c.meta.deletion.is_none())
                .map(|c| delete(&kind, c)),
        ),
        Err(e) => rendered
            .unread
            .push(reconciler_guest_sdk::read::failure(what, &e)),
    }
}

/// The changes a console with a valid configuration asks for.
pub fn changes(plan: &Plan, facts: &dyn Facts) -> Rendered {
    let console = plan.console.name;
    let namespace = plan.console.namespace;
    let children = plan.children;
    let spec = &plan.valid.spec;
    let mut rendered = Rendered::default();
    let out = &mut rendered.changes;

    if let PolicyPlan::Render(from) = plan.policy {
        out.push(apply(
            network_policy_kind(),
            network_policy::network_policy(console, &children.network_policy, from),
        ));
    }
    out.push(apply(
        service_account_kind(),
        workload::service_account(console, children),
    ));
    for role in &plan.valid.roles {
        out.push(apply(
            role_binding_kind(),
            rbac::role_binding(console, namespace, children, role),
        ));
    }
    let mounted = match plan.ca_bundle {
        CaBundleSource::Mirror(secrets) => {
            out.push(Change::Bundle(CaBundle {
                name: children.ca_bundle.clone(),
                key: CA_KEY.to_owned(),
                sources: secrets
                    .iter()
                    .map(|s| (s.clone(), CA_KEY.to_owned()))
                    .collect(),
                labels: labels(console)
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect(),
            }));
            Some(children.ca_bundle.as_str())
        }
        CaBundleSource::Reference(name) => Some(name),
        CaBundleSource::NotMounted => None,
    };
    let pod = workload::Pod {
        image: &plan.valid.image,
        proxy: plan
            .valid
            .proxy_image
            .as_deref()
            .zip(spec.oauth_proxy.as_ref())
            .map(|(image, proxy)| workload::Proxy {
                image,
                client_secret: &proxy.client_secret,
            }),
        trust_every_peer: plan.trust_every_peer,
        ca_bundle: mounted,
    };
    out.push(apply(
        deployment_kind(),
        workload::deployment(console, children, &pod),
    ));
    out.push(apply(service_kind(), workload::service(console, children)));

    // The requested exposure object, where its API can be written.
    let requested = spec.exposure.type_.kind();
    if let (Some(kind), Some(hostname)) = (requested, spec.exposure.hostname.as_deref())
        && facts.api_availability(&exposure_kind(kind), namespace) == Availability::Available
    {
        let published = exposure::Published {
            object: &children.exposure,
            hostname,
            tls_secret: spec.exposure.tls_secret.as_deref(),
            gateway: spec
                .exposure
                .gateway
                .as_ref()
                .map(|(name, namespace)| (name.as_str(), namespace.as_deref())),
        };
        out.push(apply(
            exposure_kind(kind),
            exposure::body(console, kind, &published),
        ));
    }

    // What is no longer wanted: the other exposure kinds, the RoleBindings
    // of roles no longer bound, the policy the plan removes, the mirror
    // once the user names a bundle of their own.
    let withdrawal = exposure::withdraw(facts, plan.observation, requested);
    rendered.changes.extend(withdrawal.deletes);
    rendered.unread.extend(withdrawal.unread);
    let bindings: Vec<String> = plan
        .valid
        .roles
        .iter()
        .map(|r| children.role_binding(r))
        .collect();
    delete_children(
        facts,
        role_binding_kind(),
        "the console's RoleBindings",
        |c| !bindings.contains(&c.meta.name),
        &mut rendered,
    );
    if *plan.policy == PolicyPlan::Remove {
        delete_children(
            facts,
            network_policy_kind(),
            "the console's NetworkPolicies",
            |c| c.meta.name == children.network_policy,
            &mut rendered,
        );
    }
    if let CaBundleSource::Reference(own) = plan.ca_bundle
        && own != children.ca_bundle
    {
        delete_children(
            facts,
            config_map_kind(),
            "the console's ConfigMaps",
            |c| c.meta.name == children.ca_bundle,
            &mut rendered,
        );
    }
    rendered
}
