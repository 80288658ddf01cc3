//! The ring's view: which members serve, as the coordinator publishes it
//! on its Lease, one epoch at a time, and as each member acknowledges it on
//! its own. Where the API server selects, the members own the slots: a
//! move takes two epochs: while moving, a member passes only the slots it
//! owns both before and after; then the new owners take theirs. The
//! coordinator publishes an epoch only once every live member acknowledged
//! the last, which a member does only after its passes of the slots it
//! gave up ended, so no two members ever pass a slot at once. Where the
//! coordinator labels, the members are those it gives parents: a member
//! serves once it acknowledged a view, and is left out of the next when it
//! has not acknowledged one within [`ACK_BOUND`] ([`View::serving_next`]),
//! so a Lease with no member behind it is given no parent.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::{Value, json};

use super::slots::{self, Slots};

/// The coordinator Lease's annotation holding the view's epoch.
pub const EPOCH: &str = "ring.reconciler.dev/epoch";

/// The coordinator Lease's annotation holding the members owning the
/// slots (comma-separated).
pub const MEMBERS: &str = "ring.reconciler.dev/members";

/// The coordinator Lease's annotation holding the members the slots move
/// to, while they move.
pub const NEXT: &str = "ring.reconciler.dev/next";

/// A member Lease's annotation holding the last epoch the member follows.
pub const ACKED: &str = "ring.reconciler.dev/acked";

/// How long a member in a view (where the coordinator labels) has to
/// acknowledge it before it is left out of the next, its share given to the
/// others.
pub const ACK_BOUND: Duration = Duration::from_secs(15);

/// Which members own the slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    /// Counts every view published (0: none yet).
    pub epoch: u64,
    /// The members owning the slots.
    pub members: Vec<String>,
    /// The members the slots move to, while they move.
    pub next: Option<Vec<String>>,
}

fn names(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect()
}

fn annotation<'l>(lease: &'l Lease, key: &str) -> Option<&'l str> {
    lease
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

impl View {
    /// The view published on the coordinator Lease `lease` (the empty
    /// view of epoch 0 when none is).
    pub fn read(lease: &Lease) -> View {
        let Some(epoch) = annotation(lease, EPOCH).and_then(|e| e.parse().ok()) else {
            return View::default();
        };
        View {
            epoch,
            members: names(annotation(lease, MEMBERS).unwrap_or_default()),
            next: annotation(lease, NEXT).map(names),
        }
    }

    /// The annotations publishing this view.
    pub fn annotations(&self) -> Value {
        json!({
            EPOCH: self.epoch.to_string(),
            MEMBERS: self.members.join(","),
            NEXT: self.next.as_ref().map(|n| n.join(",")),
        })
    }

    /// The slots `member` may pass in this view: its own, and while they
    /// move, only those it keeps.
    pub fn passable(&self, member: &str) -> Slots {
        let own = slots::owned(&self.members, member);
        match &self.next {
            None => own,
            Some(next) => own
                .intersection(&slots::owned(next, member))
                .copied()
                .collect(),
        }
    }

    /// The slots `member` watches in this view: its own, and while they
    /// move, those it takes too (cached by the time it may pass them).
    pub fn watched(&self, member: &str) -> Slots {
        let mut own = slots::owned(&self.members, member);
        if let Some(next) = &self.next {
            own.extend(slots::owned(next, member));
        }
        own
    }

    /// The view the coordinator publishes next, if any: none while a
    /// `live` member has not acknowledged this one (`acked`); else the
    /// move in progress settles, or one starts towards the `staying`
    /// members.
    pub fn next(
        &self,
        live: &[String],
        staying: &[String],
        acked: &BTreeMap<String, u64>,
    ) -> Option<View> {
        if live.iter().any(|m| acked.get(m) != Some(&self.epoch)) {
            return None;
        }
        let epoch = self.epoch + 1;
        match &self.next {
            Some(next) => Some(View {
                epoch,
                members: next.clone(),
                next: None,
            }),
            None if self.members != staying => Some(View {
                epoch,
                members: self.members.clone(),
                next: Some(staying.to_vec()),
            }),
            None => None,
        }
    }
}

impl View {
    /// Where the coordinator labels, the view it publishes next, if any:
    /// the `live` members that acknowledged this one (`acked`), and those of
    /// this one still live while its acknowledgements may still come
    /// (`bound_passed` false: published less than [`ACK_BOUND`] ago).
    pub fn serving_next(
        &self,
        live: &[String],
        acked: &BTreeMap<String, u64>,
        bound_passed: bool,
    ) -> Option<View> {
        let mut members: Vec<String> = live
            .iter()
            .filter(|m| {
                acked.get(*m) == Some(&self.epoch) || (!bound_passed && self.members.contains(m))
            })
            .cloned()
            .collect();
        members.sort();
        (members != self.members).then(|| View {
            epoch: self.epoch + 1,
            members,
            next: None,
        })
    }
}

/// The epoch the member Lease `lease` acknowledges, if any.
pub fn acked(lease: &Lease) -> Option<u64> {
    annotation(lease, ACKED)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn acks(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(m, e)| ((*m).to_owned(), *e)).collect()
    }

    #[test]
    fn where_the_coordinator_labels_a_member_serves_once_it_acknowledged() {
        let first = View::default();
        // Nobody acknowledged anything: no view.
        assert_eq!(
            first.serving_next(&list(&["a", "b"]), &acks(&[]), true),
            None
        );
        // a and b acknowledge epoch 0 (no view yet); f, a Lease with no
        // member behind it, never does.
        let abf = list(&["a", "b", "f"]);
        let one = first
            .serving_next(&abf, &acks(&[("a", 0), ("b", 0)]), false)
            .expect("a view");
        assert_eq!((one.epoch, &one.members), (1, &list(&["a", "b"])));
        // Just published, none acknowledged it yet: kept as it is.
        assert_eq!(
            one.serving_next(&abf, &acks(&[("a", 0), ("b", 0)]), false),
            None
        );
        // c joins: it acknowledges what it sees, and serves next.
        let abcf = list(&["a", "b", "c", "f"]);
        let two = one
            .serving_next(&abcf, &acks(&[("a", 1), ("b", 1), ("c", 1)]), false)
            .expect("c joins");
        assert_eq!(two.members, list(&["a", "b", "c"]));
        // b stops acknowledging (wedged): once the bound passed, it leaves.
        let acked = acks(&[("a", 2), ("b", 1), ("c", 2)]);
        assert_eq!(two.serving_next(&abcf, &acked, false), None);
        let three = two.serving_next(&abcf, &acked, true).expect("b leaves");
        assert_eq!(three.members, list(&["a", "c"]));
        // A member whose Lease lapsed leaves at once.
        let four = three
            .serving_next(&list(&["a"]), &acks(&[("a", 3), ("c", 3)]), false)
            .expect("c is gone");
        assert_eq!(four.members, list(&["a"]));
    }

    #[test]
    fn a_view_round_trips_through_the_lease() {
        let view = View {
            epoch: 7,
            members: list(&["a", "b"]),
            next: Some(list(&["a", "b", "c"])),
        };
        let annotations = view.annotations();
        let lease = Lease {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .as_object()
                        .unwrap()
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: None,
        };
        assert_eq!(View::read(&lease), view);
        assert_eq!(View::read(&Lease::default()), View::default());
        // Settled: the NEXT annotation removed (null in the patch).
        assert_eq!(View { next: None, ..view }.annotations()[NEXT], Value::Null);
    }

    #[test]
    fn a_join_moves_in_two_epochs_each_once_every_live_member_followed() {
        let ab = list(&["a", "b"]);
        let abc = list(&["a", "b", "c"]);
        let settled = View {
            epoch: 4,
            members: ab.clone(),
            next: None,
        };
        // c joined; b has not acknowledged epoch 4: nothing yet.
        assert_eq!(settled.next(&abc, &abc, &acks(&[("a", 4), ("c", 4)])), None);
        let moving = settled
            .next(&abc, &abc, &acks(&[("a", 4), ("b", 4), ("c", 4)]))
            .expect("a move starts");
        assert_eq!(
            moving,
            View {
                epoch: 5,
                members: ab.clone(),
                next: Some(abc.clone())
            }
        );
        // While moving, c passes nothing, a and b only what they keep;
        // nothing is passable by two members, in either epoch.
        assert!(moving.passable("c").is_empty());
        for m in ["a", "b"] {
            assert!(moving.passable(m).is_subset(&settled.passable(m)));
            assert!(moving.passable(m).is_subset(&slots::owned(&abc, m)));
        }
        assert_eq!(moving.watched("c"), slots::owned(&abc, "c"));
        assert_eq!(moving.next(&abc, &abc, &acks(&[("a", 5), ("b", 5)])), None);
        let joined = moving
            .next(&abc, &abc, &acks(&[("a", 5), ("b", 5), ("c", 5)]))
            .expect("the move settles");
        assert_eq!(joined.members, abc);
        assert_eq!(joined.next, None);
        assert_eq!(joined.epoch, 6);
        assert_eq!(
            joined.next(&abc, &abc, &acks(&[("a", 6), ("b", 6), ("c", 6)])),
            None
        );
    }

    #[test]
    fn a_dead_member_does_not_hold_the_ring_up() {
        let ab = list(&["a", "b"]);
        let view = View {
            epoch: 2,
            members: list(&["a", "b", "c"]),
            next: None,
        };
        // c's Lease lapsed (not live; its writes fenced): it acknowledged
        // nothing, and the move away from it starts.
        let moving = view
            .next(&ab, &ab, &acks(&[("a", 2), ("b", 2)]))
            .expect("a move starts");
        assert_eq!(moving.next, Some(ab.clone()));
        // Slots of c's are passable by nobody until the move settles.
        let cs = slots::owned(&view.members, "c");
        for m in ["a", "b"] {
            assert!(moving.passable(m).is_disjoint(&cs));
        }
        let settled = moving.next(&ab, &ab, &acks(&[("a", 3), ("b", 3)])).unwrap();
        let taken: Slots = ["a", "b"]
            .iter()
            .flat_map(|m| settled.passable(m))
            .collect();
        assert_eq!(taken.len(), usize::from(slots::COUNT));
    }

    #[test]
    fn the_first_member_starts_the_ring() {
        let a = list(&["a"]);
        let none = View::default();
        assert_eq!(none.next(&a, &a, &acks(&[])), None);
        let moving = none.next(&a, &a, &acks(&[("a", 0)])).unwrap();
        assert!(moving.passable("a").is_empty());
        let settled = moving.next(&a, &a, &acks(&[("a", 1)])).unwrap();
        assert_eq!(settled.passable("a").len(), usize::from(slots::COUNT));
    }
}
