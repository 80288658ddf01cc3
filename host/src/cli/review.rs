//! The diff `plan show` prints: each effect of a plan against its live object, as the API server would apply it.

use std::collections::HashMap;
use std::fmt::Write as _;

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Api, Client};
use reconciler_host::children::bodies::Owner;
use reconciler_host::marks::FIELD_MANAGER;
use reconciler_host::operator::cluster::decode::{self, Decoded};
use reconciler_host::plan::review::{self, body, diff, gvk, overlay, title};
use serde_json::Value;

/// The `Diff:` section of `plan show`: for each effect of `plan` (its review text, or why it cannot be read), what
/// it would change in the live object. An apply is asked of the API server as a server-side apply dry run by the
/// host's field manager, so the diff is what the server would make; where the reviewer may not ask, it is
/// estimated here and says so.
pub(super) async fn section(
    client: &Client,
    plan: &DynamicObject,
    text: Result<&str, &str>,
) -> String {
    let mut out = String::from("Diff:        each change against the live object\n");
    let effects = match text.map(review::effects) {
        Ok(Ok(effects)) => effects,
        Ok(Err(e)) => {
            let _ = writeln!(out, "  not computed: the effects do not parse: {e}");
            return out;
        }
        Err(why) => {
            let _ = writeln!(out, "  not computed: {why}");
            return out;
        }
    };
    let parent = &plan.data["spec"]["parent"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let parent_api_version = GroupVersionKind::gvk(
        &text(&parent["group"]),
        &text(&parent["version"]),
        &text(&parent["kind"]),
    )
    .api_version();
    let (kind, name, uid) = (
        text(&parent["kind"]),
        text(&parent["name"]),
        text(&parent["uid"]),
    );
    let namespace = plan.metadata.namespace.clone().unwrap_or_default();
    let owner = Owner {
        api_version: &parent_api_version,
        kind: &kind,
        name: &name,
        namespace: &namespace,
        uid: &uid,
        member: None,
        slot: None,
    };
    // Each kind's resource asked of discovery once, whatever the changes of it.
    let mut resources = HashMap::new();
    for effect in &effects {
        let (what, shown) = compared(client, &mut resources, effect, &owner).await;
        let _ = writeln!(out, "  {}: {what}", title(effect));
        for line in shown.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// Each kind's resource and whether it is namespaced, or why discovery found none.
type Resources = HashMap<GroupVersionKind, Result<(ApiResource, bool), String>>;

/// What `effect` would do to its live object: a summary, and the diff (empty where there is none to show).
async fn compared(
    client: &Client,
    resources: &mut Resources,
    effect: &Value,
    owner: &Owner<'_>,
) -> (String, String) {
    let name = effect["name"].as_str().unwrap_or_default();
    if let Some(made) = made_by_host(effect) {
        return made;
    }
    let gvk = gvk(effect);
    let api = match served_api(client, resources, &gvk, owner).await {
        Ok(api) => api,
        Err(not) => return not,
    };
    let live = match live_object(&api, name).await {
        Ok(live) => live,
        Err(not) => return not,
    };
    if effect["op"] == "delete" {
        return deleted(effect, live);
    }
    let Some(body) = body(effect, owner, live.as_ref()) else {
        return (
            format!("not compared: an unknown operation {}", effect["op"]),
            String::new(),
        );
    };
    dry_run_applied(&api, name, live.as_ref(), &body).await
}

/// What an effect the host makes itself when applying the plan (a generated Secret, a serving certificate, a CA
/// bundle) would be, with no diff: `None` for any other effect.
fn made_by_host(effect: &Value) -> Option<(String, String)> {
    match effect["op"].as_str() {
        Some("generate") => {
            let keys: Vec<String> = effect["keys"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, n)| format!("{k} ({n} bytes)"))
                .collect();
            Some((
                format!(
                    "a Secret the host generates when applying the plan, keys {}; its values are never shown",
                    keys.join(", ")
                ),
                String::new(),
            ))
        }
        Some("certificate") => Some((
            format!(
                "a serving certificate the host's CA issues when applying the plan, for {}",
                effect["dnsNames"]
            ),
            String::new(),
        )),
        Some("bundle") => Some((
            format!(
                "a ConfigMap of the certificates in {}, assembled by the host when applying the plan",
                effect["sources"]
            ),
            String::new(),
        )),
        _ => None,
    }
}

/// The API of `gvk`'s resource in the owner's namespace (or cluster-wide), asking discovery once per kind; else
/// why it is not compared.
async fn served_api(
    client: &Client,
    resources: &mut Resources,
    gvk: &GroupVersionKind,
    owner: &Owner<'_>,
) -> Result<Api<Decoded>, (String, String)> {
    if !resources.contains_key(gvk) {
        let resolved = kube::discovery::pinned_kind(client, gvk)
            .await
            .map(|(resource, caps)| (resource, caps.scope == Scope::Namespaced))
            .map_err(|e| e.to_string());
        resources.insert(gvk.clone(), resolved);
    }
    match &resources[gvk] {
        Ok((resource, true)) => Ok(decode::api(client, resource, owner.namespace)),
        Ok((resource, false)) => Ok(decode::api(client, resource, "")),
        Err(e) => Err((
            format!(
                "not compared: {} is not served here: {e}",
                gvk.api_version()
            ),
            String::new(),
        )),
    }
}

/// The live object `name` (`None`: there is none), or why it is not compared.
async fn live_object(api: &Api<Decoded>, name: &str) -> Result<Option<Value>, (String, String)> {
    match api.get_opt(name).await {
        Ok(live) => Ok(live.map(Decoded::into_value)),
        Err(kube::Error::Api(e)) if e.code == 403 => Err((
            format!(
                "not compared: you may not read it (get on {}): {}",
                plural(api),
                e.message
            ),
            String::new(),
        )),
        Err(e) => Err((format!("not compared: reading it: {e}"), String::new())),
    }
}

/// What a delete `effect` would do to the `live` object: nothing where it is gone or another one now.
fn deleted(effect: &Value, live: Option<Value>) -> (String, String) {
    match live {
        None => ("deleted, but it is already gone".to_owned(), String::new()),
        Some(live) if live["metadata"]["uid"] != effect["uid"] => (
            format!(
                "not deleted: the live object is another one now (uid {}), which the host would refuse to delete",
                live["metadata"]["uid"]
            ),
            String::new(),
        ),
        Some(live) => (
            format!("deleted (uid {})", live["metadata"]["uid"]),
            diff(Some(&live), None).unwrap_or_default(),
        ),
    }
}

/// What applying `body` would do to the `live` object, as a server-side apply dry run by the host's field manager
/// answers; estimated here where the reviewer may not ask for one.
async fn dry_run_applied(
    api: &Api<Decoded>,
    name: &str,
    live: Option<&Value>,
    body: &Value,
) -> (String, String) {
    let what = if live.is_some() { "changed" } else { "created" };
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    match api.patch(name, &params, &Patch::Apply(body)).await {
        Ok(after) => {
            let after = serde_json::to_value(after).unwrap_or_default();
            match diff(live, Some(&after)) {
                Some(shown) => (format!("{what}, as a server-side apply dry run answers"), shown),
                None => (
                    "unchanged: the API server would change nothing (the object already holds the change)"
                        .to_owned(),
                    String::new(),
                ),
            }
        }
        Err(kube::Error::Api(e)) if e.code == 403 => {
            let after = match live {
                Some(live) => overlay(live, body),
                None => body.clone(),
            };
            (
                format!(
                    "{what}, estimated here: you may not ask the API server for a dry run (patch on {}), so \
                     fields the host would stop setting are not shown",
                    plural(api)
                ),
                diff(live, Some(&after)).unwrap_or_default(),
            )
        }
        Err(kube::Error::Api(e)) => (
            format!(
                "refused: the API server would not apply it ({}): {}",
                e.reason, e.message
            ),
            String::new(),
        ),
        Err(e) => (
            format!("not compared: the dry run failed: {e}"),
            String::new(),
        ),
    }
}

/// The resource an `Api` is about, as RBAC names it.
fn plural(api: &Api<Decoded>) -> String {
    let url = api.resource_url();
    url.rsplit('/').next().unwrap_or_default().to_owned()
}
