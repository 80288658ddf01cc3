//! Promotion: how a module that passed the gate comes to serve. `direct`
//! swaps it in at once (on probation); `auto` first shadows it on every
//! parent its kind's cache holds, beside the module serving, on the same
//! cached facts and writing nothing, and holds it when a parent would
//! turn from Ready True to False or the module would fail where the
//! serving one does not.

use std::sync::Arc;

use crate::facts::Selector;
use crate::operator::kinds::{Kind, Registry};
use crate::operator::modules::gate::{Check, Refusal};
use crate::operator::reconcile::evaluation::Evaluation;
use crate::pass::compare;
use crate::runtime::GuestModule;

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

/// At most this many parents are named in a refusal.
const NAMED: usize = 3;

/// Shadows `candidate` beside `serving` on every parent `kind`'s cache
/// holds. Returns how many were shadowed, or the refusal that holds it.
pub(crate) async fn shadow(
    registry: &Registry,
    kind: &Kind,
    serving: &GuestModule,
    candidate: &GuestModule,
) -> Result<usize, Refusal> {
    let parents = kind.cache.list("", &Selector::default());
    let now = jiff::Timestamp::now();
    let (mut turned, mut failing) = (Vec::new(), Vec::new());
    for parent in &parents {
        let evaluate = async |module: &GuestModule| {
            Evaluation {
                registry,
                kind,
                module,
                parent,
                paused: module.spec().is_paused(parent),
                now,
            }
            .with_reads()
            .await
            .evaluated
        };
        let (old, new) = (evaluate(serving).await, evaluate(candidate).await);
        let difference = compare::passes(
            (serving.spec(), candidate.spec()),
            parent,
            (&old, &new),
            now,
        );
        let name = name_of(parent);
        if difference.ready_turns_false {
            turned.push(name.clone());
        }
        if difference.new_guest_error.is_some() {
            failing.push(name);
        }
    }
    if turned.is_empty() && failing.is_empty() {
        return Ok(parents.len());
    }
    let named = |names: &[String]| {
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
    Err(Refusal::new(
        Check::Shadow,
        format!(
            "shadowed on {} parent(s) beside the module serving: {}; held (--promotion auto)",
            parents.len(),
            found.join("; ")
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
