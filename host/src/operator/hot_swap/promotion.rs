//! Promotion: how a module that passed the gate comes to serve. `direct`
//! swaps it in at once (on probation); `auto` first shadows it on every
//! parent its kind's cache holds, beside the module serving: each
//! module's pass is the operator's own, made as a dry run on the same
//! cached facts, writing nothing. It is held when a parent live (or under
//! the serving module) Ready True would turn False, or the module would
//! fail where the serving one does not.

use std::sync::Arc;

use crate::facts::Selector;
use crate::operator::hot_swap::gate::{Check, Refusal};
use crate::operator::kinds::{Kind, Registry};
use crate::operator::reconcile::driver::Pass;
use crate::operator::reconcile::dry_run::{self, Setting};
use crate::pass::compare::{self, Side};
use crate::pass::review::{Review, ReviewedModule};
use crate::runtime::Module;

/// How a module that passed the gate comes to serve (`--promotion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Promotion {
    /// Swapped in at once, on probation.
    #[default]
    Direct,
    /// Shadowed on every cached parent first; held on a regression.
    Auto,
    /// Checked and shadowed as under `Auto`, never swapped in: what a
    /// GuestModule under manual promotion goes through before its decision
    /// (not a `--promotion`).
    #[value(skip)]
    Checked,
}

impl Promotion {
    /// As a message names it: a GuestModule's `manual` is `Checked` until
    /// its decision.
    pub fn name(self) -> &'static str {
        match self {
            Promotion::Direct => "direct",
            Promotion::Auto => "auto",
            Promotion::Checked => "manual",
        }
    }
}

/// At most this many parents are named in a refusal.
const NAMED: usize = 3;
/// At most this many parents are listed in the review an offer's answer
/// carries (a GuestModule's status records it).
pub(crate) const REVIEWED: usize = 20;

/// Shadows `candidate` beside `serving` on every parent `kind`'s cache
/// holds, each module's pass the operator's own made as a dry run: the
/// review of what would differ.
pub(crate) async fn shadow(
    registry: &Registry,
    kind: &Kind,
    serving: &Module,
    candidate: &Module,
) -> Review {
    let parents = kind.cache.list("", &Selector::default());
    let now = jiff::Timestamp::now();
    let planner = registry.planner();
    // Without the cluster's identity a plan's digest is not the one the
    // operator binds: its plans read as superseded, and say so.
    let cluster = match planner.identity().await {
        Ok(identity) => identity.cluster.clone(),
        Err(e) => {
            tracing::warn!(error = %e, "shadowing without the cluster's identity");
            String::new()
        }
    };
    let setting = Setting {
        source: registry.source(),
        resource: &kind.resource,
        authority: Some(registry.authority()),
        kind_gates: planner.kind_gates(serving.spec()),
        cluster: &cluster,
        replan_after: planner.replan_after(),
    };
    let mut shadowed = Vec::with_capacity(parents.len());
    for parent in &parents {
        let dry = async |module: &Module| {
            dry_run::pass(&Pass::of(registry, kind, module, parent, now), &setting).await
        };
        let (old, new) = (dry(serving).await, dry(candidate).await);
        let difference = compare::passes(
            old.live.as_ref(),
            &Side::of(&old.evaluated, &old.status),
            &Side::of(&new.evaluated, &new.status),
        );
        shadowed.push((name_of(parent), difference));
    }
    let module = |m: &Module| ReviewedModule {
        guest: m.name().to_owned(),
        digest: m.digest().to_owned(),
    };
    Review::new(
        &kind.resource.kind,
        module(serving),
        module(candidate),
        shadowed,
    )
}

/// Whether `review` holds the candidate: a parent turning from Ready True
/// to False, or failing where the serving module does not. Returns how
/// many parents were shadowed, or the refusal that holds it, naming the
/// promotion in force.
pub(crate) fn held(review: &Review, promotion: Promotion) -> Result<usize, Refusal> {
    let (turned, failing) = (review.turning_false(), review.failing());
    if turned.is_empty() && failing.is_empty() {
        return Ok(review.parents);
    }
    let named = |names: &[&str]| {
        let mut text = names[..names.len().min(NAMED)].join(", ");
        if names.len() > NAMED {
            text.push_str(", ...");
        }
        text
    };
    let mut found = Vec::new();
    if !turned.is_empty() {
        found.push(format!(
            "{} would turn from Ready True to False ({})",
            turned.len(),
            named(&turned)
        ));
    }
    if !failing.is_empty() {
        found.push(format!(
            "{} would fail where the serving module does not ({})",
            failing.len(),
            named(&failing)
        ));
    }
    // A review that cannot see a parent says so: the serving module's own
    // pass not reproducing its live status.
    if review.not_reproduced > 0 {
        found.push(format!(
            "the serving module's own pass does not reproduce the live status of {}",
            review.not_reproduced
        ));
    }
    Err(Refusal::new(
        Check::Shadow,
        format!(
            "shadowed on {} parent(s) beside the module serving: {}; held (promotion {})",
            review.parents,
            found.join("; "),
            promotion.name()
        ),
    ))
}

/// `namespace/name`, or `name`.
fn name_of(parent: &Arc<serde_json::Value>) -> String {
    let name = parent["metadata"]["name"].as_str().unwrap_or_default();
    match parent["metadata"]["namespace"].as_str() {
        Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
        _ => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::compare::{Difference, Unreproduced};

    /// The review of one Widget parent, `team-a/w`, differing as `difference`.
    fn review_of(difference: Difference) -> Review {
        let module = |digest: &str| ReviewedModule {
            guest: "widget".into(),
            digest: digest.into(),
        };
        Review::new(
            "Widget",
            module("sha256:a"),
            module("sha256:b"),
            [("team-a/w".to_owned(), difference)],
        )
    }

    /// A hold names the promotion in force: a GuestModule's manual (offered
    /// as `Checked`) is not said to be the host's `--promotion auto`.
    #[test]
    fn a_hold_names_the_promotion_in_force() {
        let review = review_of(Difference {
            new_guest_error: Some("trap".into()),
            ..Difference::default()
        });
        for (promotion, said) in [
            (Promotion::Checked, "held (promotion manual)"),
            (Promotion::Auto, "held (promotion auto)"),
        ] {
            let refusal = held(&review, promotion).expect_err("a parent fails");
            assert_eq!(
                refusal.detail,
                format!(
                    "shadowed on 1 parent(s) beside the module serving: 1 would fail where the serving module does not (team-a/w); {said}"
                )
            );
        }
    }

    /// A hold says how many parents the review could not see: the serving
    /// module's own pass does not reproduce their live status.
    #[test]
    fn a_hold_counts_the_parents_the_review_cannot_see() {
        let review = review_of(Difference {
            new_guest_error: Some("trap".into()),
            not_reproduced: vec![Unreproduced {
                type_: "Ready".into(),
                live: "True (AsExpected)".into(),
                serving: "False (ReconcileError)".into(),
            }],
            ..Difference::default()
        });
        let refusal = held(&review, Promotion::Auto).expect_err("a parent fails");
        assert!(
            refusal
                .detail
                .contains("the serving module's own pass does not reproduce the live status of 1;"),
            "{}",
            refusal.detail
        );
    }
}
