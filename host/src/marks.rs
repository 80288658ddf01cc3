//! The marks the host puts on what it writes: its field manager, the
//! managed-by label of its children, the digest annotation of what it
//! applied, the ring's labels; and the one it reads on what others wrote: the consent to an
//! adoption; and the one it keeps on a cached object it could not read
//! whole. Shared by the writes (`operator::write`) and the change digest
//! (`plan::digest`), which leaves them out.

/// The field manager of every write the host makes.
pub const FIELD_MANAGER: &str = "reconciler-host";

/// The annotation holding the SHA-256 of the body the host last applied
/// to a child (see `operator::write::children`).
pub const APPLIED: &str = "reconciler.dev/applied";

/// The label the host sets on every child it applies.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", FIELD_MANAGER);

/// The label naming the ring member a parent is assigned to, and which
/// the host sets on every child a ring member applies (`--ring`; see
/// `operator::ring`): a member's watches select on it.
pub const RING_MEMBER: &str = "ring.reconciler.dev/member";

/// The label the host sets on every child a ring member applies where the
/// API server selects (KEP-5866): the slot of its parent's uid, which
/// never changes, so a child never needs relabelling when its parent
/// moves (see `operator::ring::slots`).
pub const RING_SLOT: &str = "ring.reconciler.dev/slot";

/// The label by which the ring's coordinator asks the member a parent is
/// assigned to to hand it over to the member it names.
pub const RING_DRAIN: &str = "ring.reconciler.dev/drain";

/// The annotation by which whoever may change an object that nothing
/// controls consents to its adoption by the parent its value names
/// (`<Kind>/<name>`, in the object's namespace): without it the host never
/// takes such an object over (docs/design.md, "No adoption without a
/// right"). The guest SDK's `ownership::ADOPT_ANNOTATION`.
pub(crate) const ADOPT: &str = "reconciler.dev/adopt";

/// The key under which a cached object the host could not read whole
/// (nested too deep) carries why: never written to the cluster, never
/// shown to a guest (see `operator::cluster::decode`).
pub(crate) const UNDECODABLE: &str = "reconciler.dev/undecodable";
