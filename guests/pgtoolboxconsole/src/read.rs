//! A read that failed: said as such (Unknown, Reconciling) and looked at again soon, never guessed.

use reconciler_guest_sdk::ReadError;

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
