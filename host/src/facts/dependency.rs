//! Dependency records: what a pass read, so that a change to it re-queues
//! the parent.

use reconciler_conventions::kind::KindRef;

use crate::facts::Selector;

/// Something a pass read: a change to it re-queues the parent.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dependency {
    Object {
        kind: KindRef,
        namespace: String,
        name: String,
    },
    List {
        kind: KindRef,
        namespace: String,
        selector: Selector,
    },
    /// The parent's children of a kind it writes (`facts.children`): the
    /// objects of that kind whose controller is the parent (`controller`
    /// is its UID). A change of any other object of the kind is none of
    /// the parent's business.
    Children { kind: KindRef, controller: String },
    /// Whether the kind can be read in the namespace (`facts.api-availability`):
    /// the answer changes when the kind stops or starts being served.
    Availability { kind: KindRef, namespace: String },
}

impl std::fmt::Display for Dependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dependency::Object {
                kind,
                namespace,
                name,
            } => write!(f, "{} {namespace}/{name}", kind.kind),
            Dependency::List {
                kind,
                namespace,
                selector,
            } => write!(f, "{} in {namespace:?} matching {{{selector}}}", kind.kind),
            Dependency::Children { kind, controller } => {
                write!(f, "{} controlled by {controller}", kind.kind)
            }
            Dependency::Availability { kind, namespace } => {
                write!(f, "availability of {} in {namespace:?}", kind.kind)
            }
        }
    }
}
