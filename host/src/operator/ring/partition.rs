//! Which parents this replica passes (all, a static shard's, a ring member's by label or by slot), claimed once per pass.

use std::sync::Arc;

use serde_json::Value;

use super::passing::InFlight;
use super::{DRAIN, MEMBER, Member};
use crate::operator::replica::leadership::Shard;
use crate::operator::schedule::ParentKey;

/// Which parents this replica passes.
pub(crate) enum Partition {
    /// One replica: every parent.
    Whole,
    /// A static shard (`--shards`): the parents whose namespace/name
    /// hashes to it ([`Shard::owns`]).
    Shard(Shard),
    /// A member of the ring (`--ring`): the parents labelled with its
    /// identity, or, where the API server selects ([`Member::passing`]),
    /// those in the slots the view it follows lets it pass.
    Ring(Arc<Member>),
}

/// Whether a parent is this replica's to pass.
pub(crate) enum Claim<'a> {
    /// This replica's: the pass goes on, counted in flight until this is
    /// dropped where the API server selects (a member gives a slot up
    /// once no pass of it is in flight).
    Mine(Option<InFlight>),
    /// Another replica's, or no member's yet: the pass ends.
    Other,
    /// This ring member's, which is asked to hand it over: the pass hands
    /// it over.
    HandOver(HandOver<'a>),
}

/// A parent a ring member is asked to hand over, and to whom.
pub(crate) struct HandOver<'a> {
    pub(crate) member: &'a Member,
    /// The parent as cached.
    pub(crate) parent: &'a Value,
    /// The member taking it over.
    pub(crate) to: String,
}

impl Partition {
    /// The partition of a replica serving `shard` alone: every parent when
    /// parents are not sharded.
    pub(crate) fn sharded(shard: Shard) -> Partition {
        if shard == Shard::default() {
            Partition::Whole
        } else {
            Partition::Shard(shard)
        }
    }

    /// This replica as a member of the ring, if it is one.
    pub(crate) fn member(&self) -> Option<&Member> {
        match self {
            Partition::Ring(member) => Some(member),
            Partition::Whole | Partition::Shard(_) => None,
        }
    }

    /// The static shard this replica serves (every parent's unless
    /// `--shards`).
    pub(crate) fn shard(&self) -> Shard {
        match self {
            Partition::Shard(shard) => *shard,
            Partition::Whole | Partition::Ring(_) => Shard::default(),
        }
    }

    /// Whether the parent `key`, as cached (`cached`), is this replica's to
    /// pass. A ring member decides on the cached parent: one not cached is
    /// passed (the pass finds it gone and forgets it).
    pub(crate) fn claim<'a>(&'a self, key: &ParentKey, cached: Option<&'a Value>) -> Claim<'a> {
        match self {
            Partition::Whole => Claim::Mine(None),
            Partition::Shard(shard) if shard.owns(&key.namespace, &key.name) => Claim::Mine(None),
            Partition::Shard(_) => Claim::Other,
            Partition::Ring(member) => {
                cached.map_or(Claim::Mine(None), |parent| ring_claim(member, parent))
            }
        }
    }
}

/// Whether `parent` is `member`'s to pass: by its slot where the API
/// server selects (the pass counted in flight), else by its labels.
fn ring_claim<'a>(member: &'a Member, parent: &'a Value) -> Claim<'a> {
    if let Some(passing) = member.passing() {
        return match member.slot_of(parent).and_then(|slot| passing.enter(slot)) {
            Some(in_flight) => Claim::Mine(Some(in_flight)),
            None => Claim::Other,
        };
    }
    let labels = &parent["metadata"]["labels"];
    if labels[MEMBER].as_str() != Some(member.identity.as_str()) {
        return Claim::Other;
    }
    match labels[DRAIN].as_str() {
        Some(to) if to != member.identity => Claim::HandOver(HandOver {
            member,
            parent,
            to: to.to_owned(),
        }),
        _ => Claim::Mine(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::ring::view::View;
    use crate::operator::schedule::KindId;
    use serde_json::json;

    fn member(server_selects: bool) -> Arc<Member> {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        Arc::new(Member::new("r", "a", client, server_selects).unwrap())
    }

    fn key(name: &str) -> ParentKey {
        ParentKey {
            kind: KindId(0),
            namespace: "team-a".to_owned(),
            name: name.to_owned(),
        }
    }

    /// The claim as text: `mine`, `mine (in flight)`, `other` or
    /// `hand over to <to>`.
    fn said(claim: &Claim<'_>) -> String {
        match claim {
            Claim::Mine(None) => "mine".to_owned(),
            Claim::Mine(Some(_)) => "mine (in flight)".to_owned(),
            Claim::Other => "other".to_owned(),
            Claim::HandOver(asked) => format!("hand over to {}", asked.to),
        }
    }

    #[test]
    fn a_static_shard_claims_its_hash_whatever_is_cached() {
        let partition = Partition::sharded(Shard { count: 3, index: 1 });
        assert_eq!(said(&partition.claim(&key("agent-0"), None)), "mine");
        assert_eq!(said(&partition.claim(&key("agent-2"), None)), "other");
        assert!(matches!(
            Partition::sharded(Shard::default()),
            Partition::Whole
        ));
        assert_eq!(said(&Partition::Whole.claim(&key("agent-2"), None)), "mine");
    }

    #[tokio::test]
    async fn a_ring_member_claims_a_parent_by_its_label() {
        let partition = Partition::Ring(member(false));
        let parent = |labels: Value| json!({"metadata": {"name": "p", "labels": labels}});
        let claim = |p: &Value| said(&partition.claim(&key("p"), Some(p)));
        assert_eq!(claim(&parent(json!({MEMBER: "a"}))), "mine");
        assert_eq!(
            claim(&parent(json!({MEMBER: "a", DRAIN: "b"}))),
            "hand over to b"
        );
        assert_eq!(claim(&parent(json!({MEMBER: "a", DRAIN: "a"}))), "mine");
        assert_eq!(claim(&parent(json!({MEMBER: "b"}))), "other");
        assert_eq!(claim(&parent(json!({}))), "other");
        assert_eq!(claim(&json!({"metadata": {"name": "p"}})), "other");
        // Not cached: the pass finds it gone.
        assert_eq!(said(&partition.claim(&key("p"), None)), "mine");
    }

    #[tokio::test]
    async fn a_ring_member_claims_a_parent_by_its_slot_once_it_follows_a_view() {
        let member = member(true);
        let partition = Partition::Ring(member.clone());
        let parent = json!({"metadata": {"name": "p", "uid": "u-1"}});
        assert_eq!(said(&partition.claim(&key("p"), Some(&parent))), "other");
        let alone = View {
            epoch: 1,
            members: vec!["a".to_owned()],
            next: None,
        };
        assert!(member.passing().expect("slots").follow(&alone).await);
        assert_eq!(
            said(&partition.claim(&key("p"), Some(&parent))),
            "mine (in flight)"
        );
    }
}
