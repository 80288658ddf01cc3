//! `plan show`, `plan approve` and `plan deny`: a reviewer's view of a ReconcilePlan, and their decision.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, UserInfo};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use reconciler_host::operator::cluster::decode::{self, Decoded};
use serde_json::{Value, json};

/// `plan`'s arguments.
#[derive(clap::Args)]
pub(super) struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(clap::Subcommand)]
enum PlanCommand {
    /// Print a plan: its parent, mode, phase, digest, counts, effects and
    /// decision; then what each change would do to its live object (a
    /// server-side apply dry run, or estimated where you may not ask one).
    Show(PlanName),
    /// Approve a plan, as the user the cluster authenticates you as
    /// (SelfSubjectReview): Approved=True and decidedBy, in one status write.
    Approve(PlanName),
    /// Deny a plan, as the user the cluster authenticates you as:
    /// Denied=True and decidedBy, in one status write.
    Deny {
        #[command(flatten)]
        target: PlanName,
        /// Why: the message of the Denied condition.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// The plan a command is about (KUBECONFIG, ~/.kube/config or in-cluster
/// says which cluster, and who you are).
#[derive(clap::Args)]
struct PlanName {
    /// The plan's name.
    name: String,
    /// Its namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
}

pub(super) fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    tokio::runtime::Runtime::new()?.block_on(async {
        let client = Client::try_default()
            .await
            .context("plan needs a cluster (KUBECONFIG, ~/.kube/config or in-cluster)")?;
        match args.command {
            PlanCommand::Show(target) => {
                let plans = Plans::new(&client, target);
                let plan = plans.get().await?;
                let effects = plans.effects(&client, &plan).await;
                print!("{}", render(&plan, effects.as_ref()));
                let spec_effects = &plan.data["spec"]["effects"];
                let text = match (spec_effects["inline"].as_str(), &effects) {
                    (Some(inline), _) => Ok(inline),
                    (None, Some(Ok(text))) => Ok(text.as_str()),
                    (None, Some(Err(_))) => Err("the effects are not provably the plan's"),
                    (None, None) if spec_effects.get("preview").is_some() => Err(
                        "the plan holds a truncated preview of its effects (the whole did not fit a ConfigMap)",
                    ),
                    (None, None) => Err("the plan records no effects"),
                };
                print!("{}", super::review::section(&client, &plan, text).await);
            }
            PlanCommand::Approve(target) => {
                Plans::new(&client, target)
                    .decide(&client, Decision::Approve)
                    .await?;
            }
            PlanCommand::Deny { target, reason } => {
                Plans::new(&client, target)
                    .decide(&client, Decision::Deny(reason))
                    .await?;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

enum Decision {
    Approve,
    /// With the reviewer's reason, if they gave one.
    Deny(Option<String>),
}

impl Decision {
    /// The condition type it sets True.
    fn kind(&self) -> &'static str {
        match self {
            Decision::Approve => "Approved",
            Decision::Deny(_) => "Denied",
        }
    }
}

/// One plan, by name and namespace.
struct Plans {
    api: Api<Decoded>,
    namespace: String,
    name: String,
}

impl Plans {
    fn new(client: &Client, target: PlanName) -> Plans {
        let namespace = target
            .namespace
            .unwrap_or_else(|| client.default_namespace().to_string());
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("reconciler.dev", "v1alpha1", "ReconcilePlan"),
            "reconcileplans",
        );
        Plans {
            api: decode::api(client, &resource, &namespace),
            namespace,
            name: target.name,
        }
    }

    /// `<namespace>/<name>`.
    fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    async fn get(&self) -> anyhow::Result<DynamicObject> {
        match self.api.get(&self.name).await {
            Ok(plan) => Ok(plan.into_inner()),
            Err(kube::Error::Api(e))
                if e.code == 404 && e.message.contains("could not find the requested resource") =>
            {
                bail!(
                    "this cluster does not serve ReconcilePlans (reconcileplans.reconciler.dev): \
                     deploy/plans-crd.yaml is not installed"
                )
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                bail!(
                    "plan {} not found in namespace {}",
                    self.name,
                    self.namespace
                )
            }
            Err(kube::Error::Api(e)) if e.code == 403 => bail!(
                "no permission to read plan {} (reviewers need the role \
                 reconciler-plan-reviewer bound in namespace {}): {}",
                self.id(),
                self.namespace,
                e.message
            ),
            Err(e) => Err(e).with_context(|| format!("reading plan {}", self.id())),
        }
    }

    /// The effects of `plan` kept in its ConfigMap, checked against the
    /// SHA-256 its spec records (`None` when they are inline): the text,
    /// or why it is not the plan's.
    async fn effects(
        &self,
        client: &Client,
        plan: &DynamicObject,
    ) -> Option<Result<String, String>> {
        let reference = plan.data["spec"]["effects"].get("configMapRef")?;
        let name = reference["name"].as_str().unwrap_or_default();
        let api = decode::api(
            client,
            &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
            &self.namespace,
        );
        let checked = match api.get_opt(name).await {
            Ok(Some(config_map)) => {
                reconciler_host::plan::artifact::verify(reference, &config_map.into_value())
                    .map_err(|e| e.to_string())
            }
            Ok(None) => Err(reconciler_host::plan::artifact::ArtifactError::Missing(
                name.to_owned(),
            )
            .to_string()),
            Err(kube::Error::Api(e)) if e.code == 403 => Err(format!(
                "ConfigMap {name} cannot be read (reading a large plan's effects needs get on \
                 configmaps in namespace {}): {}",
                self.namespace, e.message
            )),
            Err(e) => Err(format!("reading ConfigMap {name}: {e}")),
        };
        Some(checked)
    }

    /// Writes the decision and decidedBy (you, as the cluster says) in one
    /// JSON merge patch of the status, conditional on the plan read
    /// (resourceVersion): a plan decided or superseded meanwhile is read
    /// again and reported, never overwritten.
    async fn decide(&self, client: &Client, decision: Decision) -> anyhow::Result<()> {
        let user = whoami(client).await?;
        let username = user.username.clone().unwrap_or_default();
        let kind = decision.kind();
        let verb = match decision {
            Decision::Approve => "approve",
            Decision::Deny(_) => "deny",
        };
        for _ in 0..5 {
            let plan = self.get().await?;
            let status = &plan.data["status"];
            if let Some(decided) = decided(status) {
                bail!(
                    "plan {} was already {decided}: a decision is final (a new decision needs a new plan)",
                    self.id()
                );
            }
            if status["phase"] == "Superseded" || condition_true(status, "Superseded") {
                bail!(
                    "plan {} is superseded: there is nothing to decide (decide the plan that replaced it)",
                    self.id()
                );
            }
            // What is approved is what was read: effects that cannot be
            // checked against the plan's record are not approved.
            if matches!(decision, Decision::Approve)
                && let Some(Err(why)) = self.effects(client, &plan).await
            {
                bail!(
                    "plan {} is not approved: its effects are not provably the plan's: {why}",
                    self.id()
                );
            }
            if matches!(decision, Decision::Approve) && plan.data["spec"]["mode"] == "observe" {
                eprintln!(
                    "note: plan {} was made in mode observe: it is never executed, the approval is recorded only",
                    self.id()
                );
            }
            let message = match &decision {
                Decision::Deny(Some(reason)) => reason.clone(),
                _ => format!("{kind} by {username} with reconciler-host plan {verb}"),
            };
            let now = jiff::Timestamp::now().round(jiff::Unit::Second)?;
            let mut condition = json!({
                "type": kind,
                "status": "True",
                "reason": format!("{kind}ByReviewer"),
                "message": message,
                "lastTransitionTime": now.to_string(),
            });
            if let Some(generation) = plan.metadata.generation {
                condition["observedGeneration"] = json!(generation);
            }
            // A merge patch replaces the whole list: keep the others (the
            // host's Superseded, the Approved=False of a plan denied),
            // replace the one of this type (the host's Approved=False).
            let mut conditions: Vec<Value> = status["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["type"] != kind)
                .cloned()
                .collect();
            conditions.push(condition);
            let mut decided_by = json!({"username": username});
            if let Some(uid) = user.uid.as_ref().filter(|u| !u.is_empty()) {
                decided_by["uid"] = json!(uid);
            }
            if let Some(groups) = user.groups.as_ref().filter(|g| !g.is_empty()) {
                decided_by["groups"] = json!(groups);
            }
            let patch = json!({
                "metadata": {"resourceVersion": plan.metadata.resource_version},
                "status": {"conditions": conditions, "decidedBy": decided_by},
            });
            match self
                .api
                .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    println!("plan {} {} by {username}", self.id(), kind.to_lowercase());
                    return Ok(());
                }
                // Written meanwhile (the host, another reviewer): read again.
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(kube::Error::Api(e)) if e.code == 404 => bail!(
                    "plan {} not found in namespace {} (deleted meanwhile)",
                    self.name,
                    self.namespace
                ),
                Err(kube::Error::Api(e))
                    if e.code == 403 && e.message.contains("ValidatingAdmissionPolicy") =>
                {
                    bail!(
                        "refused by admission: {username} may not {verb} plan {}: {}",
                        self.id(),
                        e.message
                    )
                }
                Err(kube::Error::Api(e)) if e.code == 403 => bail!(
                    "no permission to {verb} plan {} (deciding needs patch on \
                     reconcileplans/status, the role reconciler-plan-reviewer, \
                     and approve on the parent's kind): {}",
                    self.id(),
                    e.message
                ),
                Err(kube::Error::Api(e)) => bail!(
                    "the API server refused to {verb} plan {}: {}",
                    self.id(),
                    e.message
                ),
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("writing the decision on plan {}", self.id()));
                }
            }
        }
        bail!(
            "plan {} kept changing while the decision was written; try again",
            self.id()
        )
    }
}

/// Who the cluster authenticates this client as.
async fn whoami(client: &Client) -> anyhow::Result<UserInfo> {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .context("asking the cluster who you are (SelfSubjectReview, authentication.k8s.io/v1)")?;
    review
        .status
        .and_then(|s| s.user_info)
        .filter(|u| u.username.as_deref().is_some_and(|n| !n.is_empty()))
        .context("the cluster's SelfSubjectReview named no user: a decision must name who makes it")
}

fn condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn condition_true(status: &Value, kind: &str) -> bool {
    condition(status, kind).is_some_and(|c| c["status"] == "True")
}

/// The decision, if there is one: "approved by alice at ... (Reason: message)".
fn decided(status: &Value) -> Option<String> {
    let (kind, c) = ["Approved", "Denied"].into_iter().find_map(|k| {
        condition(status, k)
            .filter(|c| c["status"] == "True")
            .map(|c| (k, c))
    })?;
    let by = &status["decidedBy"];
    let mut out = format!(
        "{} by {}",
        kind.to_lowercase(),
        by["username"].as_str().unwrap_or("(nobody recorded)")
    );
    if let Some(uid) = by["uid"].as_str().filter(|u| !u.is_empty()) {
        let _ = write!(out, " (uid {uid})");
    }
    if let Some(at) = c["lastTransitionTime"].as_str() {
        let _ = write!(out, " at {at}");
    }
    let _ = write!(out, " ({}", c["reason"].as_str().unwrap_or(""));
    if let Some(message) = c["message"].as_str().filter(|m| !m.is_empty()) {
        let _ = write!(out, ": {message}");
    }
    out.push(')');
    Some(out)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// A plan, for a reviewer to read.
/// `plan` as a reviewer reads it; `effects`: those kept in its ConfigMap,
/// checked (the text, or why it is not the plan's).
fn render(plan: &DynamicObject, effects: Option<&Result<String, String>>) -> String {
    let spec = &plan.data["spec"];
    let status = &plan.data["status"];
    let parent = &spec["parent"];
    let mut out = String::new();
    let namespace = plan.metadata.namespace.as_deref().unwrap_or("");
    let name = plan.metadata.name.as_deref().unwrap_or("");
    let group = text(&parent["group"]);
    let resource = if group.is_empty() || group == "-" {
        text(&parent["resource"]).to_string()
    } else {
        format!("{}.{group}", text(&parent["resource"]))
    };
    let _ = writeln!(out, "Plan:        {namespace}/{name}");
    let _ = writeln!(
        out,
        "Parent:      {} {} ({resource}, uid {})",
        text(&parent["kind"]),
        text(&parent["name"]),
        text(&parent["uid"])
    );
    let _ = writeln!(out, "Mode:        {}", text(&spec["mode"]));
    let _ = writeln!(
        out,
        "Phase:       {}",
        status["phase"].as_str().unwrap_or("(none yet)")
    );
    let _ = writeln!(
        out,
        "Digest:      {} ({})",
        text(&spec["digest"]),
        text(&spec["digestEncoding"])
    );
    let _ = writeln!(
        out,
        "Target:      cluster {}, parent {}",
        text(&spec["target"]["clusterUID"]),
        text(&spec["target"]["parentUID"])
    );
    let changes = &spec["changes"];
    let _ = writeln!(
        out,
        "Changes:     {} applies, {} deletions, {} generated",
        changes["applies"], changes["deletions"], changes["generated"]
    );
    let _ = writeln!(
        out,
        "Decision:    {}",
        decided(status).unwrap_or_else(|| "none yet".to_string())
    );
    if let Some(conditions) = status["conditions"].as_array().filter(|c| !c.is_empty()) {
        let _ = writeln!(out, "Conditions:");
        for c in conditions {
            let _ = write!(
                out,
                "  {}={} {}",
                text(&c["type"]),
                text(&c["status"]),
                text(&c["reason"])
            );
            if let Some(message) = c["message"].as_str().filter(|m| !m.is_empty()) {
                let _ = write!(out, ": {message}");
            }
            out.push('\n');
        }
    }
    if let Some(generation) = status["revalidatedGeneration"].as_i64() {
        let _ = writeln!(
            out,
            "Revalidated: generation {generation} at {}",
            text(&status["revalidatedAt"])
        );
    }
    let spec_effects = &spec["effects"];
    if let Some(inline) = spec_effects["inline"].as_str() {
        let _ = writeln!(out, "Effects:");
        push_indented(&mut out, inline);
    } else if let Some(reference) = spec_effects.get("configMapRef") {
        let at = format!(
            "ConfigMap {namespace}/{}, key {}",
            text(&reference["name"]),
            text(&reference["key"])
        );
        match effects {
            Some(Ok(effects)) => {
                let _ = writeln!(
                    out,
                    "Effects:     from {at}: SHA-256 {}, as the plan records",
                    text(&reference["sha256"])
                );
                push_indented(&mut out, effects);
            }
            Some(Err(why)) => {
                let _ = writeln!(
                    out,
                    "Effects:     NOT SHOWN: {at} is not provably the plan's effects: {why}"
                );
            }
            None => {
                let _ = writeln!(out, "Effects:     gzipped in {at}");
            }
        }
    } else if let Some(preview) = spec_effects["preview"].as_str() {
        let truncated = spec_effects["truncated"].as_bool().unwrap_or(false);
        let _ = writeln!(
            out,
            "Effects:     a preview{}",
            if truncated {
                " (truncated: the whole effects did not fit)"
            } else {
                ""
            }
        );
        push_indented(&mut out, preview);
    }
    out
}

fn push_indented(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(status: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "reconciler.dev/v1alpha1",
            "kind": "ReconcilePlan",
            "metadata": {"name": "p", "namespace": "team-a"},
            "spec": {
                "parent": {"group": "pgtoolbox.fyannk.dev", "version": "v1alpha1",
                    "resource": "evidenceagents", "kind": "EvidenceAgent",
                    "name": "orders", "uid": "u1"},
                "mode": "apply",
                "digest": "rhd1-sha256:9f2c",
                "digestEncoding": "rhd1",
                "target": {"clusterUID": "c1", "parentUID": "u1"},
                "effects": {"configMapRef": {"name": "p-effects", "key": "effects.gz"}},
                "changes": {"applies": 2, "deletions": 1, "generated": 0},
            },
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_decided_plan_reads_with_its_decider() {
        let shown = render(
            &plan(json!({
                "phase": "Rejected",
                "conditions": [{"type": "Denied", "status": "True", "reason": "DeniedByReviewer",
                    "message": "not now", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "decidedBy": {"username": "alice@example.com"},
            })),
            None,
        );
        assert!(
            shown.contains(
                "Parent:      EvidenceAgent orders (evidenceagents.pgtoolbox.fyannk.dev, uid u1)"
            ),
            "{shown}"
        );
        assert!(shown.contains("Phase:       Rejected"), "{shown}");
        assert!(
            shown.contains("Changes:     2 applies, 1 deletions, 0 generated"),
            "{shown}"
        );
        assert!(
            shown.contains(
                "Decision:    denied by alice@example.com at 2026-01-01T00:00:00Z (DeniedByReviewer: not now)"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("Effects:     gzipped in ConfigMap team-a/p-effects, key effects.gz"),
            "{shown}"
        );
    }

    #[test]
    fn an_open_plan_has_no_decision() {
        let status = json!({"phase": "Pending", "conditions": [
            {"type": "Approved", "status": "False", "reason": "Pending"}]});
        assert_eq!(decided(&status), None);
        assert!(render(&plan(status), None).contains("Decision:    none yet"));
    }

    #[test]
    fn effects_kept_in_a_configmap_are_shown_only_when_they_are_the_plans() {
        let status = json!({"phase": "Pending"});
        let shown = render(&plan(status.clone()), Some(&Ok("- name: a\n".to_owned())));
        assert!(
            shown.contains("Effects:     from ConfigMap team-a/p-effects, key effects.gz: SHA-256"),
            "{shown}"
        );
        assert!(shown.contains("  - name: a"), "{shown}");
        let forged = render(
            &plan(status),
            Some(&Err(
                "ConfigMap p-effects holds effects of SHA-256 aa".to_owned()
            )),
        );
        assert!(
            forged.contains(
                "Effects:     NOT SHOWN: ConfigMap team-a/p-effects, key effects.gz is not provably \
                 the plan's effects: ConfigMap p-effects holds effects of SHA-256 aa"
            ),
            "{forged}"
        );
        assert!(!forged.contains("name: a"), "{forged}");
    }
}
