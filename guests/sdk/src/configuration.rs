//! ConfigurationValid's outcome short of valid: a stall with its reason, or a read that failed; and the ownership check of a generated child.

use crate::ownership::{Parent, RESOURCE_NOT_OWNED};
use crate::spec::SpecError;
use crate::{ObjectMeta, ReadError, read};

/// The common reason of a spec the guest cannot use.
///
/// ```
/// use reconciler_guest_sdk::configuration::{CONFIGURATION_INVALID, NotValid, stalled};
/// let not_valid = stalled(CONFIGURATION_INVALID, "spec.cluster.name is required");
/// assert!(matches!(not_valid, NotValid::Stalled { reason: "ConfigurationInvalid", .. }));
/// ```
pub const CONFIGURATION_INVALID: &str = "ConfigurationInvalid";

/// Why ConfigurationValid is not True: a configuration check returns
/// `Result<Valid, NotValid>`, and the pass says it.
///
/// ```
/// use reconciler_guest_sdk::configuration::NotValid;
/// use reconciler_guest_sdk::verdict::{RECONCILING, fails, unknown};
/// use reconciler_guest_sdk::{VerdictBuilder, read};
///
/// fn say(outcome: NotValid, verdict: &mut VerdictBuilder) {
///     match outcome {
///         NotValid::Stalled { reason, message } => {
///             verdict.aspect(fails("ConfigurationValid", reason, message.clone())).stall(reason, message);
///         }
///         NotValid::Unread(message) => {
///             verdict.aspect(unknown("ConfigurationValid", RECONCILING, message)).requeue_after(read::RETRY_SECONDS);
///         }
///     }
/// }
/// let mut v = VerdictBuilder::new();
/// say(NotValid::Unread("could not read Cluster pg: not synced".into()), &mut v);
/// assert_eq!(v.build().requeue_after_seconds, Some(30));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotValid {
    /// False with a stall reason: nothing is rendered until an input changes.
    Stalled {
        /// The registered reason ConfigurationValid and the stall carry.
        reason: &'static str,
        /// What is wrong, naming the field or object.
        message: String,
    },
    /// A read failed: not known yet.
    Unread(String),
}

/// A spec the guest cannot use ([`spec::parse`](crate::spec::parse)'s
/// error): ConfigurationValid=False with ConfigurationInvalid, stalled.
impl From<SpecError> for NotValid {
    fn from(error: SpecError) -> NotValid {
        stalled(CONFIGURATION_INVALID, error.message())
    }
}

/// ConfigurationValid=False with `reason`, stalled.
///
/// ```
/// use reconciler_guest_sdk::configuration::{NotValid, stalled};
/// assert_eq!(
///     stalled("ClusterNotFound", "Cluster pg does not exist in ns"),
///     NotValid::Stalled { reason: "ClusterNotFound", message: "Cluster pg does not exist in ns".into() }
/// );
/// ```
pub fn stalled(reason: &'static str, message: impl Into<String>) -> NotValid {
    NotValid::Stalled {
        reason,
        message: message.into(),
    }
}

/// The `kind` `name` under a generated name, as read (its metadata), is
/// the parent's, or not there, or the parent may adopt it
/// ([`Parent::refusal`]); else it stalls on ResourceNotOwned, and a failed
/// read is [`NotValid::Unread`].
///
/// ```
/// use reconciler_guest_sdk::configuration::owned;
/// use reconciler_guest_sdk::{Facts, mock::{MockFacts, meta}, ownership::Parent};
/// let parent_meta = meta("ns", "a");
/// let agent = Parent::of("EvidenceAgent", &parent_meta);
/// let facts = MockFacts::at(0);
/// let read = facts.workload("ns", "a-evidence-agent").map(|w| w.map(|w| w.meta));
/// assert_eq!(owned(&agent, "Deployment", "a-evidence-agent", read), Ok(()));
/// ```
pub fn owned(
    parent: &Parent,
    kind: &str,
    name: &str,
    read: Result<Option<ObjectMeta>, ReadError>,
) -> Result<(), NotValid> {
    match read {
        Ok(Some(meta)) => match parent.refusal(kind, name, &meta) {
            Some(message) => Err(stalled(RESOURCE_NOT_OWNED, message)),
            None => Ok(()),
        },
        Ok(None) => Ok(()),
        Err(error) => Err(NotValid::Unread(read::failure(
            &format!("{kind} {name}"),
            &error,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ControllerRef;
    use crate::mock::meta;

    #[test]
    fn a_child_of_someone_else_stalls_and_a_failed_read_is_unread() {
        let parent_meta = meta("ns", "a");
        let parent = Parent::of("PgToolBoxConsole", &parent_meta);
        assert_eq!(owned(&parent, "Deployment", "a-console", Ok(None)), Ok(()));
        let mut child = meta("ns", "a-console");
        // Nothing controls it: not the console's without the consent of
        // whoever may change it (issue 30).
        assert!(matches!(
            owned(&parent, "Deployment", "a-console", Ok(Some(child.clone()))),
            Err(NotValid::Stalled {
                reason: RESOURCE_NOT_OWNED,
                ..
            })
        ));
        child.annotations = vec![(
            crate::ownership::ADOPT_ANNOTATION.into(),
            "PgToolBoxConsole/a".into(),
        )];
        assert_eq!(
            owned(&parent, "Deployment", "a-console", Ok(Some(child.clone()))),
            Ok(())
        );
        child.controller = Some(ControllerRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "legacy".into(),
            uid: "uid-other".into(),
        });
        assert_eq!(
            owned(&parent, "Deployment", "a-console", Ok(Some(child))),
            Err(stalled(
                RESOURCE_NOT_OWNED,
                "Deployment a-console exists and is controlled by Deployment legacy, not by PgToolBoxConsole a"
            ))
        );
        assert_eq!(
            owned(
                &parent,
                "ConfigMap",
                "a-ca",
                Err(ReadError::Failed("not synced".into()))
            ),
            Err(NotValid::Unread(
                "could not read ConfigMap a-ca: not synced".into()
            ))
        );
    }
}
