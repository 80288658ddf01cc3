//! ConfigurationValid's outcome short of valid: a stall with its reason, or a read that failed; and the ownership check of a generated child.

use crate::ownership::{Parent, RESOURCE_NOT_OWNED};
use crate::{ObjectMeta, ReadError, read};

/// Why ConfigurationValid is not True.
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

/// ConfigurationValid=False with `reason`, stalled.
pub fn stalled(reason: &'static str, message: impl Into<String>) -> NotValid {
    NotValid::Stalled {
        reason,
        message: message.into(),
    }
}

/// The `kind` `name` under a generated name, as read (its metadata), is
/// the parent's or nobody's; else it stalls on ResourceNotOwned, and a
/// failed read is [`NotValid::Unread`].
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
