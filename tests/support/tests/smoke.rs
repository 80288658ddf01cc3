//! Smoke test of the test apiserver: CRD + status subresource via server-side
//! apply, a watch that sees the status change, events.k8s.io/v1 Events, and
//! RBAC under an impersonated least-privilege identity.

use std::time::Duration;

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use reconciler_testsupport::{Access, TestNamespace, await_access, client_as, install_crd};
use serde_json::json;

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.smoke.reconciler.test"},
        "spec": {
            "group": "smoke.reconciler.test",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                    }
                }}
            }]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn crd_status_watch_and_events() -> Result<()> {
    let ns = TestNamespace::new("smoke").await?;
    let client = ns.client();
    install_crd(&client, widget_crd()).await?;

    let gvk = GroupVersionKind::gvk("smoke.reconciler.test", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &ar);

    // Create the object with server-side apply.
    let manager = PatchParams::apply("smoke-test").force();
    widgets
        .patch(
            "w1",
            &manager,
            &Patch::Apply(json!({
                "apiVersion": "smoke.reconciler.test/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 3}
            })),
        )
        .await?;

    // Watch it, then write the status subresource and see the change arrive.
    let mut stream = watcher(
        widgets.clone(),
        watcher::Config::default().fields("metadata.name=w1"),
    )
    .applied_objects()
    .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await??
        .context("watch ended")?;
    assert_eq!(first.data["spec"]["size"], 3);
    assert!(
        first
            .data
            .get("status")
            .is_none_or(|s| s.get("phase").is_none())
    );

    widgets
        .patch_status(
            "w1",
            &manager,
            &Patch::Apply(json!({
                "apiVersion": "smoke.reconciler.test/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "status": {"phase": "Ready"}
            })),
        )
        .await?;
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(obj) = stream.try_next().await? {
            if obj.data["status"]["phase"] == "Ready" {
                return anyhow::Ok(obj);
            }
        }
        anyhow::bail!("watch ended")
    })
    .await
    .context("status change not seen by the watch within 10s")??;
    assert_eq!(
        seen.data["spec"]["size"], 3,
        "status write must not touch spec"
    );
    let managers: Vec<_> = seen
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.subresource.clone())
        .collect();
    assert!(
        managers.contains(&"status".to_string()),
        "status field manager recorded: {managers:?}"
    );

    // events.k8s.io/v1 Event: create and read back.
    let events: Api<Event> = ns.api();
    let event = Event {
        metadata: ObjectMeta {
            name: Some("w1.smoke".into()),
            ..Default::default()
        },
        event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
        reporting_controller: Some("reconciler.test/smoke".into()),
        reporting_instance: Some("smoke-1".into()),
        action: Some("Reconcile".into()),
        reason: Some("Ready".into()),
        type_: Some("Normal".into()),
        note: Some("widget is ready".into()),
        regarding: Some(k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("smoke.reconciler.test/v1".into()),
            kind: Some("Widget".into()),
            name: Some("w1".into()),
            namespace: Some(ns.name().into()),
            uid: seen.metadata.uid.clone(),
            ..Default::default()
        }),
        ..Default::default()
    };
    events.create(&PostParams::default(), &event).await?;
    let back = events.get("w1.smoke").await?;
    assert_eq!(back.reason.as_deref(), Some("Ready"));
    assert_eq!(back.note.as_deref(), Some("widget is ready"));
    assert_eq!(back.regarding.and_then(|r| r.name).as_deref(), Some("w1"));

    ns.cleanup().await
}

#[tokio::test]
async fn rbac_applies_to_impersonated_user() -> Result<()> {
    let ns = TestNamespace::new("rbac").await?;
    let alice = client_as("alice", &["testers"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(alice, ns.name());
    let err = cms
        .list(&Default::default())
        .await
        .expect_err("alice has no role yet");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );

    let role: k8s_openapi::api::rbac::v1::Role = serde_json::from_value(json!({
        "metadata": {"name": "cm-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
    }))?;
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "testers-cm-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "testers"}]
    }))?;
    ns.api::<k8s_openapi::api::rbac::v1::Role>()
        .create(&PostParams::default(), &role)
        .await?;
    ns.api::<k8s_openapi::api::rbac::v1::RoleBinding>()
        .create(&PostParams::default(), &binding)
        .await?;

    let list = Access {
        verb: "list",
        group: "",
        resource: "configmaps",
        namespace: Some(ns.name()),
    };
    await_access(&ns.client(), "alice", &["testers"], &[list]).await?;
    cms.list(&Default::default())
        .await
        .context("alice may list once the authorizer has the binding")?;
    let err = cms
        .create(&PostParams::default(), &ConfigMap::default())
        .await
        .expect_err("no create verb");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    ns.cleanup().await
}
