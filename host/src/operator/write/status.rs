//! Status writes and Events: one server-side apply of `.status` under the
//! host's field manager, preconditioned on the version the pass read, then
//! the pass's Events, only once it succeeded.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{Patch, PatchParams};
use kube::core::ApiResource;
use reconciler_conventions::engine::Event;
use reconciler_conventions::status::Status;
use serde_json::{Value, json};

use crate::operator::cluster::decode;
use crate::operator::write::events::EventPublisher;

pub use crate::marks::FIELD_MANAGER;

/// Writes statuses and Events for one kind.
#[derive(Clone)]
pub struct StatusWriter {
    client: Client,
    resource: ApiResource,
    events: Arc<EventPublisher>,
}

impl StatusWriter {
    pub fn new(client: Client, resource: ApiResource) -> Self {
        StatusWriter {
            events: Arc::new(EventPublisher::new(client.clone())),
            client,
            resource,
        }
    }

    /// The client the host writes with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Applies `.status`; returns the object as the server stored it (as
    /// the host decodes it: a parent nested too deep is cut and marked).
    /// The apply is preconditioned on the `resourceVersion` of `parent`,
    /// the version the pass evaluated: a writer whose view is stale (a
    /// deposed leader, a pass overtaken by a change) gets a conflict and
    /// writes nothing; its pass runs again on the newer version.
    pub(crate) async fn write_status(
        &self,
        parent: &Value,
        status: &Status,
    ) -> Result<Value, kube::Error> {
        let md = &parent["metadata"];
        let namespace = md["namespace"].as_str().unwrap_or_default();
        let name = md["name"].as_str().unwrap_or_default();
        let body = json!({
            "apiVersion": self.resource.api_version,
            "kind": self.resource.kind,
            "metadata": {
                "name": name,
                "namespace": md["namespace"],
                "resourceVersion": md["resourceVersion"],
            },
            "status": status.to_json(),
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let stored = decode::api(&self.client, &self.resource, namespace)
            .patch_status(name, &params, &Patch::Apply(&body))
            .await?;
        Ok(stored.into_value())
    }

    /// Publishes Events (events.k8s.io/v1) about `parent`. A failure is
    /// logged: the status, already written, is the record that counts.
    pub async fn publish(&self, parent: &Value, events: &[Event]) {
        let md = &parent["metadata"];
        let reference = ObjectReference {
            api_version: Some(self.resource.api_version.clone()),
            kind: Some(self.resource.kind.clone()),
            name: md["name"].as_str().map(str::to_owned),
            namespace: md["namespace"].as_str().map(str::to_owned),
            uid: md["uid"].as_str().map(str::to_owned),
            resource_version: None,
            field_path: None,
        };
        for e in events {
            if let Err(err) = self.events.publish(&reference, e).await {
                tracing::warn!(reason = %e.reason, error = %err, "cannot publish an Event");
            }
        }
    }
}
