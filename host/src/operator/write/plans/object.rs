//! The ReconcilePlan object's writes: created (with the ConfigMap of a
//! large plan's effects), its status written under the version it was
//! read at, approved by the host, and read back into the cache.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::plan::artifact::{self, Artifact, Counts};
use crate::plan::digest::{Digest, Mode, Target};
use crate::plan::record::{self, Phase, Plan};

use super::{PlanError, Run};
use crate::operator::cluster::decode::{self, Decoded};
use crate::plan::lifecycle::AUTO_APPROVED;

impl Run<'_, '_> {
    pub(super) fn api(&self) -> Api<Decoded> {
        decode::api(&self.planner.client, &record::resource(), self.namespace)
    }

    /// The ConfigMaps of the plan's namespace.
    fn config_maps(&self) -> Api<Decoded> {
        decode::api(
            &self.planner.client,
            &ApiResource::erase::<ConfigMap>(&()),
            self.namespace,
        )
    }

    /// Creates the plan `name` of the parent.
    pub(super) async fn create_plan(
        &self,
        name: &str,
        mode: Mode,
        digest: &Digest,
        target: &Target,
        artifact: &Artifact,
        counts: Counts,
    ) -> Result<Decoded, PlanError> {
        let object = record::new_plan(
            name,
            &record::ParentRef::of(self.at.resource, self.at.parent),
            mode,
            digest,
            target,
            artifact,
            counts,
        );
        let object: DynamicObject =
            serde_json::from_value(object).expect("a plan object deserializes");
        self.api()
            .create(&PostParams::default(), &Decoded::new(object))
            .await
            .map_err(|e| PlanError::api(format!("creating plan {name}"), &e))
    }

    /// The ConfigMap holding a large plan's gzipped effects, owned by the
    /// plan (it goes with it), immutable: its text's SHA-256 is in the
    /// plan's spec, checked before the plan is executed.
    pub(super) async fn effects_config_map(
        &self,
        plan: &Decoded,
        gz: &[u8],
    ) -> Result<(), PlanError> {
        use base64::Engine as _;
        let name = artifact::config_map_name(plan.metadata.name.as_deref().unwrap_or_default());
        let config_map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {record::PARENT_UID_LABEL: self.parent_uid()},
                "ownerReferences": [{
                    "apiVersion": format!("{}/{}", record::GROUP, record::VERSION),
                    "kind": record::KIND,
                    "name": plan.metadata.name,
                    "uid": plan.metadata.uid,
                    "controller": true,
                }],
            },
            "immutable": true,
            "binaryData": {artifact::CONFIG_MAP_KEY:
                base64::engine::general_purpose::STANDARD.encode(gz)},
        });
        let config_map: DynamicObject =
            serde_json::from_value(config_map).expect("a ConfigMap deserializes");
        self.config_maps()
            .create(&PostParams::default(), &Decoded::new(config_map))
            .await
            .map(|_| ())
            .map_err(|e| {
                PlanError::api(
                    format!("creating ConfigMap {name} of the plan's effects"),
                    &e,
                )
            })
    }

    /// Approved by the host (approval auto), and marked Applying, in one
    /// write: `decidedBy` is the host's authenticated name.
    pub(super) async fn approve_as_host(&self, plan: &Plan) -> Result<Plan, PlanError> {
        let now = self.stamp();
        let conditions = record::with_condition(
            &plan.conditions,
            record::condition(
                "Approved",
                "True",
                AUTO_APPROVED,
                "approval auto: approved by the host",
                &now,
            ),
        );
        self.write_status(
            plan,
            json!({
                "phase": Phase::Applying.as_str(),
                "decidedBy": {"username": self.identity.username},
                "revalidatedGeneration": self.generation(),
                "revalidatedAt": now,
            }),
            conditions,
        )
        .await
    }

    /// Whether `plan` is gone from the API server (a read past the cache).
    pub(super) async fn plan_gone(&self, plan: &Plan) -> bool {
        match self.api().get_opt(&plan.name).await {
            Ok(None) => true,
            Ok(Some(stored)) => {
                stored.metadata.uid.as_deref() != Some(plan.uid.as_str())
                    || stored.metadata.deletion_timestamp.is_some()
            }
            Err(_) => false,
        }
    }

    /// Whether the plan's effects, where they are in a ConfigMap, are the
    /// ones its spec records (artifact::verify). A ConfigMap gone or
    /// changed is not: the plan is not executed.
    pub(super) async fn effects_intact(&self, plan: &Plan) -> Result<bool, PlanError> {
        let Some(reference) = &plan.effects_ref else {
            return Ok(true);
        };
        let name = reference["name"].as_str().unwrap_or_default();
        let stored = self.config_maps().get_opt(name).await.map_err(|e| {
            PlanError::api(
                format!(
                    "reading ConfigMap {name} of the effects of plan {}",
                    plan.name
                ),
                &e,
            )
        })?;
        let verdict = match stored.map(Decoded::into_value) {
            Some(config_map) => artifact::verify(reference, &config_map).map(|_| ()),
            None => Err(artifact::ArtifactError::Missing(name.to_owned())),
        };
        match verdict {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!(plan = %plan.name, error = %e, "the plan's effects are not the ones it recorded");
                Ok(false)
            }
        }
    }

    /// Writes `status` and the whole `conditions` list over `plan` as read;
    /// the stored plan enters the cache.
    pub(super) async fn write_status(
        &self,
        plan: &Plan,
        mut status: Value,
        conditions: Vec<Value>,
    ) -> Result<Plan, PlanError> {
        status["conditions"] = json!(conditions);
        let patch = record::status_patch(&plan.resource_version, status);
        let stored = self
            .api()
            .patch_status(&plan.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| PlanError::api(format!("writing the status of plan {}", plan.name), &e))?;
        Ok(self
            .cached(stored.into_value())
            .unwrap_or_else(|| plan.clone()))
    }

    /// Puts a stored plan in the cache (the next pass starts from it even
    /// before the watch delivers it).
    pub(super) fn cached(&self, stored: Value) -> Option<Plan> {
        let plan = Plan::of(&stored);
        if let Some(cache) = self.at.source.cache(&record::kind_ref()) {
            cache.apply_if_newer(crate::operator::cluster::cache::slim(stored));
        }
        plan
    }
}

/// `<parent>-<5 random characters>`, within the 253 characters of a name.
pub fn plan_name(parent: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = [0u8; 5];
    // Uniqueness, not secrecy: a failing generator falls back to the clock.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = jiff::Timestamp::now().subsec_nanosecond().unsigned_abs();
        bytes = nanos.to_le_bytes()[..4]
            .iter()
            .chain([&0u8])
            .copied()
            .collect::<Vec<_>>()
            .try_into()
            .unwrap_or([0; 5]);
    }
    let suffix: String = bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    let prefix: String = parent.chars().take(253 - 6).collect();
    format!("{prefix}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_is_named_for_its_parent() {
        let name = plan_name("web");
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        let long = plan_name(&"a".repeat(253));
        assert_eq!(long.len(), 253);
    }
}
