//! Whose a generated child is: the parent being evaluated, and the ResourceNotOwned refusal of an object under a generated name that the parent may not take over (another object controls it, or nothing does and no one consented).

use crate::{ControllerRef, ObjectMeta};

/// The annotation by which whoever may change an object that nothing
/// controls consents to its adoption: its value names the parent
/// (`<Kind>/<name>`, in the object's namespace). Without it the host never
/// takes such an object over (docs/design.md, "No adoption without a
/// right"), as Helm adopts only what carries its release annotations.
///
/// ```
/// assert_eq!(reconciler_guest_sdk::ownership::ADOPT_ANNOTATION, "reconciler.dev/adopt");
/// ```
pub const ADOPT_ANNOTATION: &str = "reconciler.dev/adopt";

/// The common reason of a child controlled by someone else.
///
/// ```
/// assert_eq!(reconciler_guest_sdk::ownership::RESOURCE_NOT_OWNED, "ResourceNotOwned");
/// ```
pub const RESOURCE_NOT_OWNED: &str = "ResourceNotOwned";

/// The parent being evaluated, as its children's messages name it.
///
/// ```
/// use reconciler_guest_sdk::{mock::evaluation, ownership::Parent};
/// let input = evaluation(serde_json::json!({"metadata": {"name": "a", "namespace": "ns", "uid": "u1"}}), &[]);
/// let agent = Parent::of("EvidenceAgent", &input.parent.meta);
/// assert_eq!((agent.namespace, agent.name, agent.uid), ("ns", "a", "u1"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent<'a> {
    /// The parent's kind (`EvidenceAgent`).
    pub kind: &'a str,
    /// Its namespace (its children's).
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its UID: the controller reference its children carry.
    pub uid: &'a str,
}

impl<'a> Parent<'a> {
    /// The parent of kind `kind` with the metadata `meta`.
    ///
    /// ```
    /// use reconciler_guest_sdk::{mock::meta, ownership::Parent};
    /// let m = meta("ns", "a");
    /// assert_eq!(Parent::of("EvidenceAgent", &m).kind, "EvidenceAgent");
    /// ```
    pub fn of(kind: &'a str, meta: &'a ObjectMeta) -> Self {
        Parent {
            kind,
            namespace: &meta.namespace,
            name: &meta.name,
            uid: &meta.uid,
        }
    }

    /// Why the parent may not take the `kind` `name` (its metadata
    /// `meta`) over: another object controls it (`<kind> <name> exists
    /// and is controlled by <Kind> <name>, not by <ParentKind> <parent>`),
    /// or nothing does and it does not carry [`ADOPT_ANNOTATION`] naming
    /// the parent. None when the parent controls it, or may adopt it.
    ///
    /// ```
    /// use reconciler_guest_sdk::{ControllerRef, mock::meta, ownership::{ADOPT_ANNOTATION, Parent}};
    /// let parent_meta = meta("ns", "a");
    /// let parent = Parent::of("EvidenceAgent", &parent_meta);
    /// let mut child = meta("ns", "a-evidence-agent");
    /// assert!(parent.refusal("Deployment", "a-evidence-agent", &child).unwrap()
    ///     .starts_with("Deployment a-evidence-agent exists and nothing controls it"));
    /// child.annotations.push((ADOPT_ANNOTATION.into(), "EvidenceAgent/a".into()));
    /// assert_eq!(parent.refusal("Deployment", "a-evidence-agent", &child), None);
    /// child.controller = Some(ControllerRef { api_version: "apps/v1".into(), kind: "Deployment".into(),
    ///     name: "legacy".into(), uid: "u-legacy".into() });
    /// assert_eq!(
    ///     parent.refusal("Deployment", "a-evidence-agent", &child).unwrap(),
    ///     "Deployment a-evidence-agent exists and is controlled by Deployment legacy, not by EvidenceAgent a"
    /// );
    /// ```
    pub fn refusal(&self, kind: &str, name: &str, meta: &ObjectMeta) -> Option<String> {
        if meta.controller.is_none() && !self.adoptable(meta) {
            return Some(format!(
                "{kind} {name} exists and nothing controls it: the operator takes over an object \
                 only when whoever may change it consents, with the annotation \
                 {ADOPT_ANNOTATION}: {}/{}; annotate it so, or delete it",
                self.kind, self.name
            ));
        }
        self.foreign(kind, name, meta)
    }

    /// Why the `kind` `name` is another's: it is controlled by another
    /// object. None when the parent or nothing controls it.
    ///
    /// ```
    /// use reconciler_guest_sdk::{mock::meta, ownership::Parent};
    /// let parent_meta = meta("ns", "a");
    /// assert_eq!(Parent::of("EvidenceAgent", &parent_meta).foreign("Service", "s", &meta("ns", "s")), None);
    /// ```
    pub fn foreign(&self, kind: &str, name: &str, meta: &ObjectMeta) -> Option<String> {
        foreign_controller(meta, self.uid).map(|c| {
            format!(
                "{kind} {name} exists and is controlled by {} {}, not by {} {}",
                c.kind, c.name, self.kind, self.name
            )
        })
    }

    /// Whether an object nothing controls (its metadata `meta`) carries
    /// the consent to its adoption by this parent ([`ADOPT_ANNOTATION`]).
    pub fn adoptable(&self, meta: &ObjectMeta) -> bool {
        let consent = format!("{}/{}", self.kind, self.name);
        meta.annotations
            .iter()
            .any(|(k, v)| k == ADOPT_ANNOTATION && *v == consent)
    }
}

/// The controller of `meta` when it is not the parent `uid`. An object with
/// no controller is not someone else's (but see [`Parent::refusal`]: it is
/// not the parent's to take over either, without consent).
///
/// ```
/// use reconciler_guest_sdk::{mock::meta, ownership::foreign_controller};
/// assert!(foreign_controller(&meta("ns", "a"), "u1").is_none());
/// ```
pub fn foreign_controller<'a>(meta: &'a ObjectMeta, uid: &str) -> Option<&'a ControllerRef> {
    meta.controller.as_ref().filter(|c| c.uid != uid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::meta;

    fn controlled_by(uid: &str) -> ControllerRef {
        ControllerRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "legacy".into(),
            uid: uid.into(),
        }
    }

    #[test]
    fn only_another_controller_is_foreign() {
        let mut m = meta("ns", "x");
        assert!(foreign_controller(&m, "me").is_none());
        m.controller = Some(controlled_by("me"));
        assert!(foreign_controller(&m, "me").is_none());
        assert!(foreign_controller(&m, "someone-else").is_some());
    }

    #[test]
    fn the_refusal_names_both_controllers() {
        let parent_meta = meta("ns", "a");
        let parent = Parent::of("EvidenceAgent", &parent_meta);
        assert_eq!((parent.namespace, parent.uid), ("ns", "uid-ns-a"));
        let mut child = meta("ns", "a-agent");
        assert_eq!(
            parent.refusal("Service", "a-agent", &child).as_deref(),
            Some(
                "Service a-agent exists and nothing controls it: the operator takes over an \
                 object only when whoever may change it consents, with the annotation \
                 reconciler.dev/adopt: EvidenceAgent/a; annotate it so, or delete it"
            )
        );
        // Consent names this parent: another's is no consent.
        child
            .annotations
            .push((ADOPT_ANNOTATION.into(), "EvidenceAgent/b".into()));
        assert!(parent.refusal("Service", "a-agent", &child).is_some());
        child.annotations = vec![(ADOPT_ANNOTATION.into(), "EvidenceAgent/a".into())];
        assert_eq!(parent.refusal("Service", "a-agent", &child), None);
        assert_eq!(parent.foreign("Service", "a-agent", &child), None);
        child.controller = Some(controlled_by("uid-ns-a"));
        assert_eq!(parent.refusal("Service", "a-agent", &child), None);
        child.controller = Some(controlled_by("uid-other"));
        assert_eq!(
            parent.refusal("Service", "a-agent", &child).as_deref(),
            Some(
                "Service a-agent exists and is controlled by Deployment legacy, not by EvidenceAgent a"
            )
        );
    }
}
