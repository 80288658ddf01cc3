//! The parents that read one thing: a sorted vector, since most things are
//! read by one parent and a B-tree's first node holds eleven.

use smallvec::SmallVec;

/// A set of parents, in order; one parent held in place.
#[derive(Debug)]
pub(crate) struct Parents<P>(SmallVec<[P; 1]>);

impl<P> Default for Parents<P> {
    fn default() -> Self {
        Parents(SmallVec::new())
    }
}

impl<P: Ord> Parents<P> {
    /// Adds `parent`; whether it was not there yet.
    pub(crate) fn insert(&mut self, parent: P) -> bool {
        match self.0.binary_search(&parent) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, parent);
                true
            }
        }
    }

    /// Removes `parent`; whether it was there.
    pub(crate) fn remove(&mut self, parent: &P) -> bool {
        match self.0.binary_search(parent) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, P> {
        self.0.iter()
    }
}

impl<'a, P> IntoIterator for &'a Parents<P> {
    type Item = &'a P;
    type IntoIter = std::slice::Iter<'a, P>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_each_parent_once_in_order() {
        let mut parents = Parents::default();
        assert!(parents.insert("b"));
        assert!(parents.insert("a"));
        assert!(!parents.insert("b"));
        assert_eq!(parents.iter().copied().collect::<Vec<_>>(), ["a", "b"]);
        assert!(parents.remove(&"a"));
        assert!(!parents.remove(&"a"));
        assert_eq!(parents.len(), 1);
        assert!(parents.remove(&"b") && parents.is_empty());
    }
}
