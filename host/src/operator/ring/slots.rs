//! The ring's slots where the API server selects (KEP-5866's
//! `shardSelector`): a parent's slot is the first ten bits of the FNV-1a
//! hash of its uid, exactly as the API server hashes it, so the 1,024
//! slots are equal ranges of the server's hash space; members own whole slots
//! (rendezvous hashing of the slot), their parent watches select their
//! slots' ranges, and their watches of children the slot label
//! ([`SLOT`]) every child carries from its first apply.

use std::collections::BTreeSet;

use super::assignment;

/// The label naming a child's parent's slot.
pub use crate::marks::RING_SLOT as SLOT;

/// A slot: 0 to [`COUNT`] - 1.
pub type Slot = u16;

/// How many slots the hash space is cut in: enough that three members'
/// shares stay within a few percent of a third (256 left one with 0.384 of
/// the objects in bench-shards), few enough that a member's selector of
/// its ranges stays a few kilobytes.
pub const COUNT: Slot = 1024;

/// A set of slots.
pub type Slots = BTreeSet<Slot>;

/// Every slot.
pub fn all() -> Slots {
    (0..COUNT).collect()
}

/// The FNV-1a (64-bit) hash of `value`, as the API server computes it
/// for a shard range (`k8s.io/apimachinery/pkg/sharding.HashField`).
fn fnv1a(value: &str) -> u64 {
    value.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The slot of the object whose uid is `uid`.
pub fn of_uid(uid: &str) -> Slot {
    Slot::try_from(fnv1a(uid) >> (64 - BITS)).expect("ten bits")
}

/// The bits of the hash a slot takes.
const BITS: u32 = COUNT.trailing_zeros();

/// The slots `members` gives `member` (none when it is not among them).
pub fn owned(members: &[String], member: &str) -> Slots {
    (0..COUNT)
        .filter(|slot| assignment::owner(members, "slot", &slot.to_string()) == Some(member))
        .collect()
}

/// The `shardSelector` of the objects whose uid falls in `slots` (adjacent
/// slots merged into one range); `None` for no slot (the API server reads
/// an empty selector as everything).
pub fn shard_selector(slots: &Slots) -> Option<String> {
    // Over u128: the last slot ends at 2^64, which the API server wants
    // written with 17 digits.
    let width: u128 = 1 << (64 - BITS);
    let mut ranges: Vec<(u128, u128)> = Vec::new();
    for &slot in slots {
        let start = u128::from(slot) * width;
        match ranges.last_mut() {
            Some((_, end)) if *end == start => *end = start + width,
            _ => ranges.push((start, start + width)),
        }
    }
    (!ranges.is_empty()).then(|| {
        ranges
            .iter()
            .map(|(start, end)| {
                format!("shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')")
            })
            .collect::<Vec<_>>()
            .join(" || ")
    })
}

/// The label selector of the children of parents in `slots` (for no slot,
/// one that selects none: slots are numbers).
pub fn label_selector(slots: &Slots) -> String {
    let values: Vec<String> = slots.iter().map(Slot::to_string).collect();
    if values.is_empty() {
        format!("{SLOT} in (none)")
    } else {
        format!("{SLOT} in ({})", values.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_api_servers() {
        // Pinned from the test API server's own selection (a ConfigMap of
        // this uid listed in shardRange '0x43..', '0x44..') and Go's
        // hash/fnv.
        assert_eq!(
            fnv1a("3686624d-a9db-4966-846c-05acaa4f4028"),
            0x43a3_9a1b_c063_3461
        );
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        // 0x43a3...: its first ten bits.
        assert_eq!(of_uid("3686624d-a9db-4966-846c-05acaa4f4028"), 0x10e);
        assert_eq!(BITS, 10);
    }

    #[test]
    fn every_slot_has_one_owner_and_three_members_share_them_evenly() {
        let abc: Vec<String> = ["a", "b", "c"].map(str::to_owned).to_vec();
        let shares: Vec<Slots> = abc.iter().map(|m| owned(&abc, m)).collect();
        assert_eq!(shares.iter().map(BTreeSet::len).sum::<usize>(), 1024);
        for (i, share) in shares.iter().enumerate() {
            // 341.3 each on average; within 10 %.
            assert!((307..=376).contains(&share.len()), "{}", share.len());
            for other in &shares[i + 1..] {
                assert!(share.is_disjoint(other));
            }
        }
        assert!(owned(&abc, "d").is_empty());
    }

    #[test]
    fn selectors_cover_exactly_the_slots() {
        let slots: Slots = [0, 1, 2, 7, 1023].into();
        assert_eq!(
            shard_selector(&slots).unwrap(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x00c0000000000000') || \
             shardRange(object.metadata.uid, '0x01c0000000000000', '0x0200000000000000') || \
             shardRange(object.metadata.uid, '0xffc0000000000000', '0x10000000000000000')"
        );
        assert_eq!(shard_selector(&Slots::new()), None);
        assert_eq!(
            shard_selector(&all()).unwrap(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
        );
        assert_eq!(
            label_selector(&slots),
            "ring.reconciler.dev/slot in (0,1,2,7,1023)"
        );
        assert_eq!(
            label_selector(&Slots::new()),
            "ring.reconciler.dev/slot in (none)"
        );
    }
}
