//! Bounded messages as the host bounds them: a guest that says more than
//! [`MAX_MESSAGE_BYTES`] decides what to drop instead of leaving the host
//! to cut the tail.
//!
//! The host cuts every condition message and Event note to
//! [`MAX_MESSAGE_BYTES`] bytes, marker included, on a character boundary,
//! and replaces each control character by a space; [`bound`] does the same,
//! so a message it returns reaches the status as it is. The host's test
//! `sdk_message_bound_is_the_hosts` holds the two equal.

/// The most bytes of a condition message or Event note (the host's bound:
/// events.k8s.io/v1 refuses a note over 1 kB, and conditions use the same).
///
/// ```
/// use reconciler_guest_sdk::message::{MAX_MESSAGE_BYTES, bound};
/// assert!(bound(&"x".repeat(5000)).len() <= MAX_MESSAGE_BYTES);
/// ```
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// What ends a message that was cut.
///
/// ```
/// use reconciler_guest_sdk::message::{TRUNCATION_MARKER, bound_to};
/// assert!(bound_to(&"x".repeat(100), 40).ends_with(TRUNCATION_MARKER));
/// ```
pub const TRUNCATION_MARKER: &str = " …[truncated]";

/// `message` cut to at most [`MAX_MESSAGE_BYTES`] bytes as the host cuts it.
///
/// ```
/// use reconciler_guest_sdk::message::bound;
/// assert_eq!(bound("short"), "short");
/// ```
pub fn bound(message: &str) -> String {
    bound_to(message, MAX_MESSAGE_BYTES)
}

/// `message` cut to at most `max` bytes, [`TRUNCATION_MARKER`] included, on
/// a character boundary, each control character replaced by a space.
///
/// ```
/// use reconciler_guest_sdk::message::bound_to;
/// assert_eq!(bound_to("line\nbreak", 100), "line break");
/// assert!(bound_to(&"é".repeat(100), 30).len() <= 30);
/// ```
pub fn bound_to(message: &str, max: usize) -> String {
    let message: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if message.len() <= max {
        return message;
    }
    let mut cut = max.saturating_sub(TRUNCATION_MARKER.len());
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{TRUNCATION_MARKER}", &message[..cut])
}

/// `head` then `tail` within [`MAX_MESSAGE_BYTES`]: the head is cut first,
/// so the tail (what the reader must not lose: what the console does, a
/// sentence the seed fixes) survives whole whenever it fits on its own;
/// the head is dropped when not even the marker fits beside it.
///
/// ```
/// use reconciler_guest_sdk::message::{MAX_MESSAGE_BYTES, bound_keeping_tail};
/// let m = bound_keeping_tail(&"peer ".repeat(500), "; the console trusts them.");
/// assert!(m.len() <= MAX_MESSAGE_BYTES && m.ends_with("; the console trusts them."));
/// ```
pub fn bound_keeping_tail(head: &str, tail: &str) -> String {
    let tail = bound(tail);
    let room = MAX_MESSAGE_BYTES - tail.len();
    let head = bound_to(head, room);
    if head.len() > room {
        return tail;
    }
    format!("{head}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_message_is_kept_and_controls_become_spaces() {
        assert_eq!(bound("fine"), "fine");
        assert_eq!(bound("a\nb\tc\u{1b}"), "a b c ");
    }

    #[test]
    fn a_long_message_is_cut_in_bytes_with_the_marker() {
        let b = bound(&"x".repeat(5000));
        assert_eq!(b.len(), MAX_MESSAGE_BYTES);
        assert!(b.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let b = bound(&"é".repeat(2000));
        assert!(b.len() <= MAX_MESSAGE_BYTES);
        assert!(
            b.trim_end_matches(TRUNCATION_MARKER)
                .chars()
                .all(|c| c == 'é')
        );
    }

    #[test]
    fn a_message_of_exactly_the_bound_is_kept() {
        let m = "é".repeat(MAX_MESSAGE_BYTES / 2);
        assert_eq!(bound(&m), m);
    }

    #[test]
    fn the_tail_survives_a_long_head() {
        let m = bound_keeping_tail(&"h".repeat(3000), "; the tail.");
        assert!(m.len() <= MAX_MESSAGE_BYTES);
        assert!(
            m.ends_with(&format!("{TRUNCATION_MARKER}; the tail.")),
            "{m}"
        );
        assert_eq!(bound(&m), m, "the host keeps it as it is");
        assert_eq!(bound_keeping_tail("head", ", tail"), "head, tail");
    }

    #[test]
    fn a_tail_longer_than_the_bound_is_cut_itself() {
        let m = bound_keeping_tail("head", &"t".repeat(3000));
        assert!(m.len() <= MAX_MESSAGE_BYTES);
        assert!(m.starts_with('t') && m.ends_with(TRUNCATION_MARKER), "{m}");
        let tail = "t".repeat(MAX_MESSAGE_BYTES - 4);
        assert_eq!(bound_keeping_tail("head", &tail), format!("head{tail}"));
        assert_eq!(bound_keeping_tail("heads", &tail), tail);
    }
}
