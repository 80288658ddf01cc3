//! The review of a shadow run: what a candidate module would change,
//! parent by parent, beside the module serving its kind, and the counts a
//! promotion is decided on. The `shadow` command writes it as YAML; the
//! operator records it in a GuestModule's status.

use serde::Serialize;

use super::compare::Difference;

/// A shadow run's review.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub kind: String,
    pub serving: ReviewedModule,
    pub candidate: ReviewedModule,
    /// The parents shadowed.
    pub parents: usize,
    pub differ: usize,
    pub ready_turns_false: usize,
    pub new_guest_errors: usize,
    /// Parents whose live status the serving module's pass does not
    /// reproduce: what the review says of them is not what the operator
    /// would do.
    pub not_reproduced: usize,
    /// Only the parents for which something differs or is not reproduced.
    pub differences: Vec<DifferingParent>,
    /// Parents that differ but are not listed ([`Review::bounded`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub not_listed: usize,
}

/// A module, as a review names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewedModule {
    pub guest: String,
    /// The SHA-256 of the component.
    pub digest: String,
}

/// One parent that differs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DifferingParent {
    /// `namespace/name`, or `name`.
    pub parent: String,
    #[serde(flatten)]
    pub difference: Difference,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Review {
    /// The review of `shadowed`, each parent's name and what would differ.
    pub fn new(
        kind: &str,
        serving: ReviewedModule,
        candidate: ReviewedModule,
        shadowed: impl IntoIterator<Item = (String, Difference)>,
    ) -> Review {
        let mut review = Review {
            kind: kind.to_owned(),
            serving,
            candidate,
            parents: 0,
            differ: 0,
            ready_turns_false: 0,
            new_guest_errors: 0,
            not_reproduced: 0,
            differences: Vec::new(),
            not_listed: 0,
        };
        for (parent, difference) in shadowed {
            review.parents += 1;
            review.ready_turns_false += usize::from(difference.ready_turns_false);
            review.new_guest_errors += usize::from(difference.new_guest_error.is_some());
            let unreproduced = !difference.not_reproduced.is_empty();
            review.not_reproduced += usize::from(unreproduced);
            let differs = !difference.is_empty() || difference.ready_turns_false;
            review.differ += usize::from(differs);
            if differs || unreproduced {
                review
                    .differences
                    .push(DifferingParent { parent, difference });
            }
        }
        review
    }

    /// The parents that would turn from Ready True to False.
    pub fn turning_false(&self) -> Vec<&str> {
        self.named(|d| d.ready_turns_false)
    }

    /// The parents the candidate would fail where the serving module
    /// does not.
    pub fn failing(&self) -> Vec<&str> {
        self.named(|d| d.new_guest_error.is_some())
    }

    fn named(&self, which: impl Fn(&Difference) -> bool) -> Vec<&str> {
        self.differences
            .iter()
            .filter(|e| which(&e.difference))
            .map(|e| e.parent.as_str())
            .collect()
    }

    /// The review listing at most `most` parents, those that hold the
    /// candidate first; the others counted in `not_listed`.
    pub fn bounded(mut self, most: usize) -> Review {
        let holds = |e: &DifferingParent| {
            e.difference.ready_turns_false || e.difference.new_guest_error.is_some()
        };
        self.differences.sort_by_key(|e| !holds(e));
        self.not_listed = self.differences.len().saturating_sub(most);
        self.differences.truncate(most);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(digest: &str) -> ReviewedModule {
        ReviewedModule {
            guest: "hostile_guest".into(),
            digest: digest.into(),
        }
    }

    fn differing(turns_false: bool) -> Difference {
        Difference {
            changes_added: vec!["apply ConfigMap x".into()],
            ready_turns_false: turns_false,
            ..Difference::default()
        }
    }

    #[test]
    fn a_review_counts_every_parent_and_lists_those_that_differ() {
        let review = Review::new(
            "Hostile",
            module("a"),
            module("b"),
            [
                ("ns/same".to_owned(), Difference::default()),
                ("ns/moved".to_owned(), differing(false)),
                ("ns/broken".to_owned(), differing(true)),
            ],
        );
        assert_eq!(
            (review.parents, review.differ, review.ready_turns_false),
            (3, 2, 1)
        );
        assert_eq!(review.turning_false(), ["ns/broken"]);
        assert!(review.failing().is_empty());
        let listed: Vec<&str> = review
            .differences
            .iter()
            .map(|e| e.parent.as_str())
            .collect();
        assert_eq!(listed, ["ns/moved", "ns/broken"]);
    }

    /// Bounded, the parents that hold the candidate are listed first and
    /// the rest counted, the counts unchanged.
    #[test]
    fn a_bounded_review_lists_what_holds_first_and_counts_the_rest() {
        let shadowed = (0..5).map(|i| (format!("p{i}"), differing(i == 3)));
        let review = Review::new("Hostile", module("a"), module("b"), shadowed).bounded(2);
        assert_eq!((review.differ, review.not_listed), (5, 3));
        assert_eq!(review.differences[0].parent, "p3");
        assert_eq!(review.differences.len(), 2);
        let yaml = serde_yaml::to_string(&review).unwrap();
        assert!(yaml.contains("notListed: 3"), "{yaml}");
        let unbounded = Review::new("Hostile", module("a"), module("b"), []);
        let yaml = serde_yaml::to_string(&unbounded).unwrap();
        assert!(!yaml.contains("notListed"), "{yaml}");
    }
}
