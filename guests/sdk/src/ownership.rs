//! Whose a generated child is: the parent being evaluated, and the ResourceNotOwned refusal of an object under a generated name that another object controls.

use crate::{ControllerRef, ObjectMeta};

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

    /// Why the `kind` `name` (its metadata `meta`) is not the parent's:
    /// `<kind> <name> exists and is controlled by <Kind> <name>, not by
    /// <ParentKind> <parent>`. None when the parent or nobody controls it.
    ///
    /// ```
    /// use reconciler_guest_sdk::{ControllerRef, mock::meta, ownership::Parent};
    /// let parent_meta = meta("ns", "a");
    /// let parent = Parent::of("EvidenceAgent", &parent_meta);
    /// let mut child = meta("ns", "a-evidence-agent");
    /// assert_eq!(parent.refusal("Deployment", "a-evidence-agent", &child), None);
    /// child.controller = Some(ControllerRef { api_version: "apps/v1".into(), kind: "Deployment".into(),
    ///     name: "legacy".into(), uid: "u-legacy".into() });
    /// assert_eq!(
    ///     parent.refusal("Deployment", "a-evidence-agent", &child).unwrap(),
    ///     "Deployment a-evidence-agent exists and is controlled by Deployment legacy, not by EvidenceAgent a"
    /// );
    /// ```
    pub fn refusal(&self, kind: &str, name: &str, meta: &ObjectMeta) -> Option<String> {
        foreign_controller(meta, self.uid).map(|c| {
            format!(
                "{kind} {name} exists and is controlled by {} {}, not by {} {}",
                c.kind, c.name, self.kind, self.name
            )
        })
    }
}

/// The controller of `meta` when it is not the parent `uid`. An object with
/// no controller is not someone else's: the operator adopts it.
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
