//! A read that failed: said as such (Unknown, Reconciling) and looked at again soon, never guessed.

use crate::ReadError;

/// How soon a pass whose read failed is tried again.
pub const RETRY_SECONDS: u32 = 30;

/// The read's own text.
pub fn text(error: &ReadError) -> &str {
    match error {
        ReadError::NotDeclared(t)
        | ReadError::NotServed(t)
        | ReadError::Forbidden(t)
        | ReadError::Failed(t) => t,
    }
}

/// The message for a failed read of `what`.
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
