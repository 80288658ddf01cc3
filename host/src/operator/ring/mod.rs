//! The ring (`--ring`): replicas that join and leave while the host runs,
//! each serving only the parents assigned to it. A member holds a Lease of
//! its own ([`members`]); the member holding the ring's coordinator Lease
//! assigns every parent to a live member by rendezvous hashing
//! ([`assignment`]) with a label the host owns ([`MEMBER`]), which the
//! member's parent watch selects on, as its watches of the kinds guests
//! only write select their children, labelled alike; a parent moves only
//! after its old owner, asked with [`DRAIN`], finished its pass in flight
//! and relabelled its children and it ([`coordinator`]; docs/design.md,
//! "The ring"). Where the API server selects (KEP-5866), nothing is
//! relabelled: members own slots of the uid hash space ([`slots`]), moved
//! between them one published view at a time ([`view`], [`passing`]).
//! Either way a member is given parents only once it proved it serves by
//! acknowledging a view ([`acks`]), and only a Lease the ring wrote makes
//! a member ([`members::accepted`]). Whether a replica, in the ring or
//! not, passes a parent is its [`partition`]'s claim, asked once per pass.

pub mod acks;
pub mod assignment;
pub mod coordinator;
pub mod members;
pub(crate) mod partition;
pub mod passing;
pub mod slots;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::operator::cluster::decode::{self, Decoded};
use crate::operator::cluster::selection::Selecting;
use passing::Passing;

/// The label naming the member a parent (and each of its children) is
/// assigned to.
pub use crate::marks::RING_MEMBER as MEMBER;

/// The label by which the coordinator asks the member a parent is assigned
/// to to hand it over to the member the label names: the member finishes
/// its pass in flight, relabels the parent's children, then the parent
/// (its acknowledgement).
pub use crate::marks::RING_DRAIN as DRAIN;

/// How a member's watches select its parents and their children.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Selection {
    /// By the API server's `shardSelector` where it serves it, else by
    /// labels.
    #[default]
    Auto,
    /// By the labels the coordinator writes.
    Labels,
    /// By the API server's `shardSelector` (KEP-5866, alpha
    /// `ShardedListAndWatch`): refused at start where it is not served.
    Server,
}

impl std::str::FromStr for Selection {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Selection::Auto),
            "labels" => Ok(Selection::Labels),
            "server" => Ok(Selection::Server),
            other => Err(format!(
                "{other:?} is not a ring selection: auto, labels or server"
            )),
        }
    }
}

/// Whether the API server selects by `shardSelector` (KEP-5866): a
/// listing of the Leases in `namespace` (the ring's own, which a member
/// may list) asking for the whole hash space says which selector it
/// applied (`metadata.shardInfo`) only where the server reads the
/// parameter; elsewhere it is ignored. (Custom resources' listings do not
/// say it: the server filters them all the same.)
pub async fn server_selects(client: &Client, namespace: &str) -> Result<bool, kube::Error> {
    let leases = decode::leases(client, namespace);
    let everything = crate::operator::cluster::selection::WatchSelector {
        labels: None,
        shards: slots::shard_selector(&slots::all()),
    };
    let request = kube::core::Request::new(leases.resource_url())
        .list(&kube::api::ListParams::default().limit(1))
        .map_err(kube::Error::BuildRequest)?;
    let listed: Value = everything.client(client).request(request).await?;
    Ok(listed["metadata"]["shardInfo"]["selector"].is_string())
}

/// The field manager of the ring's label writes.
pub const FIELD_MANAGER: &str = "reconciler-host-ring";

/// This replica as a member of the ring.
pub struct Member {
    /// The ring's name (the `--lease-name`), the prefix of its Leases.
    pub ring: String,
    /// This member's identity: its Lease's holder and its label value.
    pub identity: String,
    client: Client,
    /// Where the API server selects: the slots this member passes.
    passing: Option<Arc<Passing>>,
}

/// Why a member could not hand a parent over.
#[derive(Debug, thiserror::Error)]
#[error("handing {kind} {namespace}/{name} over: {source}")]
pub struct HandoverError {
    kind: String,
    namespace: String,
    name: String,
    /// Retryable: a conflict means the parent changed (its next pass acks
    /// again), anything else is the API server's.
    source: kube::Error,
}

impl HandoverError {
    /// The parent changed since it was cached (the next pass, on the new
    /// version, hands it over): not worth a warning.
    pub fn is_conflict(&self) -> bool {
        matches!(&self.source, kube::Error::Api(s) if s.code == 409)
    }
}

impl Member {
    /// Member `identity` of the ring `ring`, writing with `client`, its
    /// watches selecting by the API server's `shardSelector` if
    /// `server_selects`, else by the labels the coordinator writes.
    /// Refused when `identity` cannot be a label value.
    pub fn new(
        ring: &str,
        identity: &str,
        client: Client,
        server_selects: bool,
    ) -> Result<Member, String> {
        let valid = !identity.is_empty()
            && identity.len() <= 63
            && identity
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && identity.starts_with(|c: char| c.is_ascii_alphanumeric())
            && identity.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !valid {
            return Err(format!(
                "the ring member's identity {identity:?} is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit): give a shorter --identity"
            ));
        }
        Ok(Member {
            ring: ring.to_owned(),
            identity: identity.to_owned(),
            client,
            passing: server_selects.then(|| Passing::new(identity)),
        })
    }

    /// Where the API server selects: the slots this member passes.
    pub fn passing(&self) -> Option<&Arc<Passing>> {
        self.passing.as_ref()
    }

    /// What this member's parent watches select.
    pub fn parents(&self) -> Selecting {
        match &self.passing {
            Some(passing) => Selecting::Following(passing.parents()),
            None => Selecting::Labels(format!("{MEMBER}={}", self.identity)),
        }
    }

    /// What this member's watches of the kinds guests only write select.
    pub fn children(&self) -> Selecting {
        match &self.passing {
            Some(passing) => Selecting::Following(passing.children()),
            None => self.parents(),
        }
    }

    /// The slot label of `parent`'s children, where the API server selects.
    pub fn slot_of(&self, parent: &Value) -> Option<slots::Slot> {
        self.passing.as_ref()?;
        Some(slots::of_uid(parent["metadata"]["uid"].as_str()?))
    }

    /// Hands `parent` over to member `to`: labels each of its `children`
    /// (as cached here) with `to`, then the parent, unless it changed
    /// since it was cached (its resourceVersion is the precondition); the
    /// new owner's watches then bring the children before the parent.
    /// Called from a pass of the parent, so no other pass of it is in
    /// flight on this member.
    pub async fn hand_over(
        &self,
        resource: &ApiResource,
        parent: &Value,
        to: &str,
        children: &[(ApiResource, Arc<Value>)],
    ) -> Result<(), HandoverError> {
        let md = &parent["metadata"];
        let namespace = md["namespace"].as_str().unwrap_or_default();
        let name = md["name"].as_str().unwrap_or_default();
        let failed = |source| HandoverError {
            kind: resource.kind.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        };
        let relabel = json!({"metadata": {"labels": {MEMBER: to}}});
        for (child_resource, child) in children {
            let child_name = child["metadata"]["name"].as_str().unwrap_or_default();
            self.api(child_resource, namespace)
                .patch(
                    child_name,
                    &PatchParams::apply(FIELD_MANAGER),
                    &Patch::Merge(&relabel),
                )
                .await
                .map(drop)
                .or_else(|e| match e {
                    // Gone meanwhile: nothing to hand over.
                    kube::Error::Api(s) if s.code == 404 => Ok(()),
                    e => Err(e),
                })
                .map_err(failed)?;
        }
        let patch = json!({"metadata": {
            "resourceVersion": md["resourceVersion"],
            "labels": {MEMBER: to, DRAIN: null},
        }});
        self.api(resource, namespace)
            .patch(
                name,
                &PatchParams::apply(FIELD_MANAGER),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(failed)?;
        tracing::info!(
            parent.kind = %resource.kind,
            parent.namespace = namespace,
            parent.name = name,
            to,
            children = children.len(),
            "ring: handed over after the last pass"
        );
        Ok(())
    }

    /// Leaves the ring (at shutdown, before the passes stop): marks this
    /// member's Lease in `namespace` [`members::LEAVING`], so the
    /// coordinator has it hand every parent over, and waits (at most
    /// `within`) until it holds none (`owned` counts them) or no other
    /// member is there to take them. Its Lease is released afterwards.
    pub async fn leave(&self, namespace: &str, owned: impl Fn() -> usize, within: Duration) {
        let leases = decode::leases(&self.client, namespace);
        let lease = members::lease_name(&self.ring, &self.identity);
        let mark = json!({"metadata": {"annotations": {members::LEAVING: "true"}}});
        if let Err(e) = leases
            .patch(
                &lease,
                &PatchParams::apply(FIELD_MANAGER),
                &Patch::Merge(&mark),
            )
            .await
        {
            tracing::warn!(error = %e, "ring: could not say this member leaves; its parents are taken over once its Lease is released");
            return;
        }
        tracing::info!(member = %self.identity, parents = owned(), "ring: leaving; handing every parent over");
        let deadline = tokio::time::Instant::now() + within;
        while owned() > 0 && tokio::time::Instant::now() < deadline {
            let others = match leases.list(&Default::default()).await {
                Ok(list) => {
                    let items: Vec<Lease> =
                        list.items.into_iter().map(Decoded::into_inner).collect();
                    let live = members::live(&self.ring, &items, jiff::Timestamp::now());
                    let leaving = members::leaving(&self.ring, &items, &live);
                    live.iter().filter(|m| !leaving.contains(m)).count()
                }
                Err(_) => 1,
            };
            if others == 0 {
                tracing::info!("ring: no other member to take this one's parents");
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        tracing::info!(member = %self.identity, parents = owned(), "ring: left");
    }

    fn api(&self, resource: &ApiResource, namespace: &str) -> Api<Decoded> {
        decode::api(&self.client, resource, namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(identity: &str) -> Result<Member, String> {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        Member::new("r", identity, client, false)
    }

    #[tokio::test]
    async fn a_members_parent_watches_select_its_label() {
        let me = member("a").unwrap();
        assert_eq!(
            me.parents().now().labels.as_deref(),
            Some("ring.reconciler.dev/member=a")
        );
    }

    #[tokio::test]
    async fn an_identity_must_be_a_label_value() {
        assert!(member("replica-0.abc_1").is_ok());
        for bad in ["", "-a", "a-", "a/b", &"x".repeat(64)] {
            let e = member(bad).err().expect("refused");
            assert!(e.contains("--identity"), "{e}");
        }
    }
}
