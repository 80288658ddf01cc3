//! A bucket found by its key, or filed empty: with the key its map holds,
//! for each read of the bucket to share rather than copy.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

/// The bucket of `key` in `map`, filed empty if there is none (its key
/// made by `make`), and the key the map holds it under.
pub(crate) fn filed<'m, K, V>(
    map: &'m mut HashMap<Arc<K>, V>,
    key: &K,
    make: impl FnOnce(&K) -> Arc<K>,
) -> (Arc<K>, &'m mut V)
where
    K: ?Sized + Hash + Eq,
    V: Default,
{
    let held = match map.get_key_value(key) {
        Some((held, _)) => held.clone(),
        None => {
            let held = make(key);
            map.insert(held.clone(), V::default());
            held
        }
    };
    let bucket = map.get_mut(key).expect("filed above");
    (held, bucket)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_shared_after() {
        let mut map: HashMap<Arc<str>, Vec<u8>> = HashMap::new();
        let (first, bucket) = filed(&mut map, "ns", |k: &str| k.into());
        bucket.push(1);
        let (second, bucket) = filed(&mut map, "ns", |_| unreachable!("filed once"));
        bucket.push(2);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(map["ns"], [1, 2]);
    }
}
