//! A read that failed: said as such (Unknown, Reconciling) and looked at again soon, never guessed.

use crate::ReadError;

/// How soon a pass whose read failed is tried again.
///
/// ```
/// use reconciler_guest_sdk::{VerdictBuilder, read, verdict::{RECONCILING, unknown}};
/// let mut v = VerdictBuilder::new();
/// v.aspect(unknown("WorkloadReady", RECONCILING, "could not read Deployment a: not synced"))
///     .requeue_after(read::RETRY_SECONDS);
/// assert_eq!(v.build().requeue_after_seconds, Some(30));
/// ```
pub const RETRY_SECONDS: u32 = 30;

/// The read's own text.
///
/// ```
/// use reconciler_guest_sdk::{ReadError, read};
/// assert_eq!(read::text(&ReadError::Forbidden("no get on secrets".into())), "no get on secrets");
/// ```
pub fn text(error: &ReadError) -> &str {
    match error {
        ReadError::NotDeclared(t)
        | ReadError::NotServed(t)
        | ReadError::Forbidden(t)
        | ReadError::Failed(t) => t,
    }
}

/// The message for a failed read of `what`.
///
/// ```
/// use reconciler_guest_sdk::{ReadError, read};
/// let error = ReadError::Failed("the cache is not synced".into());
/// assert_eq!(read::failure("Secret oidc", &error), "could not read Secret oidc: the cache is not synced");
/// ```
pub fn failure(what: &str, error: &ReadError) -> String {
    format!("could not read {what}: {}", text(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_what_was_read_and_why() {
        let error = ReadError::Forbidden("no list on secrets".into());
        assert_eq!(text(&error), "no list on secrets");
        assert_eq!(
            failure("Secret s", &error),
            "could not read Secret s: no list on secrets"
        );
    }
}
