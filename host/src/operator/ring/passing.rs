//! What a member passes where the API server selects: the view it
//! follows, the slots that view lets it pass, its passes in flight per
//! slot, and what its watches select; it acknowledges a view on its Lease
//! only once no pass of a slot it gave up is in flight.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::Client;
use tokio::sync::{Notify, watch};

use super::acks::OwnLease;
use super::slots::{self, Slot, Slots};
use super::view::View;
use crate::operator::cluster::selection::WatchSelector;

/// A member's passes, where the API server selects.
pub struct Passing {
    identity: String,
    state: Mutex<State>,
    ended: Notify,
    parents: watch::Sender<WatchSelector>,
    children: watch::Sender<WatchSelector>,
    /// The slots the last view followed let the member pass anew.
    gained: watch::Sender<Slots>,
}

#[derive(Default)]
struct State {
    /// The epoch of the view followed (none yet: nothing is passed).
    epoch: Option<u64>,
    passable: Slots,
    in_flight: BTreeMap<Slot, usize>,
}

/// A pass in flight of a parent in `slot`: counted until dropped.
pub struct InFlight {
    passing: Arc<Passing>,
    slot: Slot,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.passing.state.lock().expect("passing lock");
        if let Some(n) = state.in_flight.get_mut(&self.slot) {
            *n -= 1;
            if *n == 0 {
                state.in_flight.remove(&self.slot);
            }
        }
        drop(state);
        self.passing.ended.notify_waiters();
    }
}

/// The selection of the parents in `slots`: the API server's shard
/// selector of their uid ranges (for no slot, a label no parent has).
fn parents_of(slots: &Slots) -> WatchSelector {
    match slots::shard_selector(slots) {
        Some(shards) => WatchSelector {
            labels: None,
            shards: Some(shards),
        },
        None => WatchSelector {
            labels: Some(slots::label_selector(slots)),
            shards: None,
        },
    }
}

/// The selection of the children of parents in `slots`, by their label.
fn children_of(slots: &Slots) -> WatchSelector {
    WatchSelector {
        labels: Some(slots::label_selector(slots)),
        shards: None,
    }
}

impl Passing {
    /// Member `identity`'s, passing nothing until it follows a view.
    pub fn new(identity: &str) -> Arc<Passing> {
        let none = Slots::new();
        Arc::new(Passing {
            identity: identity.to_owned(),
            state: Mutex::new(State::default()),
            ended: Notify::new(),
            parents: watch::Sender::new(parents_of(&none)),
            children: watch::Sender::new(children_of(&none)),
            gained: watch::Sender::new(none),
        })
    }

    /// What the member's parent watches select, as it changes.
    pub fn parents(&self) -> watch::Receiver<WatchSelector> {
        self.parents.subscribe()
    }

    /// What the member's watches of the kinds guests only write select.
    pub fn children(&self) -> watch::Receiver<WatchSelector> {
        self.children.subscribe()
    }

    /// The slots a view followed let the member pass anew, as they come:
    /// their cached parents are to be passed now (a slot taken when a move
    /// settles was watched already, so no listing brings them).
    pub fn gained(&self) -> watch::Receiver<Slots> {
        self.gained.subscribe()
    }

    /// A pass of a parent in `slot`, if the member may pass it now.
    pub fn enter(self: &Arc<Self>, slot: Slot) -> Option<InFlight> {
        let mut state = self.state.lock().expect("passing lock");
        if !state.passable.contains(&slot) {
            return None;
        }
        *state.in_flight.entry(slot).or_default() += 1;
        Some(InFlight {
            passing: self.clone(),
            slot,
        })
    }

    /// Follows `view` unless it follows a later one already: from now on
    /// passes only the slots it lets it pass and watches those it
    /// watches; returns (whether it follows it) once no pass of a slot it
    /// gave up is in flight.
    pub async fn follow(&self, view: &View) -> bool {
        let (gone, gained): (Slots, Slots) = {
            let mut state = self.state.lock().expect("passing lock");
            if state.epoch.is_some_and(|e| e >= view.epoch) {
                return false;
            }
            state.epoch = Some(view.epoch);
            let passable = view.passable(&self.identity);
            let gone = state.passable.difference(&passable).copied().collect();
            let gained = passable.difference(&state.passable).copied().collect();
            state.passable = passable;
            (gone, gained)
        };
        if !gained.is_empty() {
            self.gained.send_replace(gained);
        }
        let watched = view.watched(&self.identity);
        self.parents
            .send_if_modified(|s| replace(s, parents_of(&watched)));
        self.children
            .send_if_modified(|s| replace(s, children_of(&watched)));
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let busy = {
                let state = self.state.lock().expect("passing lock");
                state.in_flight.keys().any(|s| gone.contains(s))
            };
            if !busy {
                return true;
            }
            ended.await;
        }
    }

    /// The epoch of the view followed.
    fn epoch(&self) -> Option<u64> {
        self.state.lock().expect("passing lock").epoch
    }
}

fn replace(current: &mut WatchSelector, new: WatchSelector) -> bool {
    if *current == new {
        return false;
    }
    *current = new;
    true
}

/// Follows the views the coordinator of the ring `ring` publishes on its
/// Lease in `namespace`, and acknowledges each on the member's own Lease
/// (again whenever that Lease lacks it: made anew after it lapsed), with
/// `client` (the member's, fenced by its Lease).
pub async fn run(passing: Arc<Passing>, client: Client, ring: String, namespace: String) {
    let mut lease = OwnLease::watch(&client, &ring, &namespace, &passing.identity);
    loop {
        if let Some(published) = lease.published()
            && passing.follow(&published).await
        {
            tracing::info!(epoch = published.epoch, members = ?published.members, next = ?published.next, "ring: following the view");
        }
        if let Some(epoch) = passing.epoch() {
            lease.acknowledge(epoch).await;
        }
        if !lease.changed().await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn view(epoch: u64, members: &[&str], next: Option<&[&str]>) -> View {
        let list = |m: &[&str]| m.iter().map(|s| (*s).to_owned()).collect();
        View {
            epoch,
            members: list(members),
            next: next.map(list),
        }
    }

    #[tokio::test]
    async fn a_slot_given_up_is_acknowledged_only_after_its_pass_ended() {
        let passing = Passing::new("a");
        assert!(passing.follow(&view(2, &["a"], None)).await);
        let ab = ["a".to_owned(), "b".to_owned()];
        let kept = *slots::owned(&ab, "a").iter().next().unwrap();
        let in_flight = passing.enter(kept).expect("a's slot");
        // b joins: while moving, a keeps only what it keeps.
        let moving = view(3, &["a"], Some(&["a", "b"]));
        let given: Slots = slots::owned(&ab, "b");
        let slot = *given.iter().next().unwrap();
        let held = passing.enter(slot).expect("still a's");
        let follow = {
            let passing = passing.clone();
            tokio::spawn(async move { passing.follow(&moving).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Not passable any more, and not acknowledged while a pass of it
        // is in flight.
        assert!(passing.enter(slot).is_none());
        assert!(!follow.is_finished());
        drop(held);
        // A pass of a slot it keeps does not hold the acknowledgement up.
        assert!(follow.await.unwrap());
        assert!(passing.enter(kept).is_some());
        drop(in_flight);
        // An earlier view is not followed again.
        assert!(!passing.follow(&view(2, &["a"], None)).await);
        // The watches select the slots of a and the ones it takes.
        assert_eq!(
            *passing.children().borrow(),
            children_of(&slots::owned(&["a".into()], "a"))
        );
    }

    #[tokio::test]
    async fn slots_taken_when_a_move_settles_are_said_to_be_passed_now() {
        let ab = ["a".to_owned(), "b".to_owned()];
        let b = Passing::new("b");
        let mut gained = b.gained();
        // Moving towards b: it watches its slots already, passes none.
        assert!(b.follow(&view(3, &["a"], Some(&["a", "b"]))).await);
        assert!(!gained.has_changed().unwrap());
        assert_eq!(*b.parents().borrow(), parents_of(&slots::owned(&ab, "b")));
        // Settled: the watch selects the same, so no listing brings its
        // parents; they are to be passed now.
        assert!(b.follow(&view(4, &["a", "b"], None)).await);
        assert!(gained.has_changed().unwrap());
        assert_eq!(*gained.borrow_and_update(), slots::owned(&ab, "b"));
    }

    #[test]
    fn no_slot_selects_no_parent() {
        let none = parents_of(&Slots::new());
        assert_eq!(none.shards, None);
        assert_eq!(
            none.labels.as_deref(),
            Some("ring.reconciler.dev/slot in (none)")
        );
        assert!(parents_of(&slots::all()).shards.is_some());
    }
}
