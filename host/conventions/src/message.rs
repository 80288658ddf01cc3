//! Bounded messages: every condition message and Event note is cut to a
//! size Kubernetes accepts, on a UTF-8 boundary, with a visible marker, and
//! carries no control character (a newline, a terminal escape, a NUL from a
//! guest would break `kubectl get` tables, log lines and terminals).

/// The most bytes of a condition message or Event note. events.k8s.io/v1
/// refuses a note over 1 kB; conditions use the same bound so a condition
/// and its Event say the same thing.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// Appended to a message that was cut.
pub const TRUNCATION_MARKER: &str = " …[truncated]";

/// Cuts `message` to at most [`MAX_MESSAGE_BYTES`] bytes.
pub fn bound(message: &str) -> String {
    bound_to(message, MAX_MESSAGE_BYTES)
}

/// Cuts `message` to at most `max` bytes, marker included, on a char
/// boundary, each control character replaced by a space.
pub fn bound_to(message: &str, max: usize) -> String {
    let cleaned;
    let message = if message.chars().any(char::is_control) {
        cleaned = sanitize(message);
        cleaned.as_str()
    } else {
        message
    };
    if message.len() <= max {
        return message.to_owned();
    }
    let budget = max.saturating_sub(TRUNCATION_MARKER.len());
    let mut cut = budget.min(message.len());
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &message[..cut], TRUNCATION_MARKER)
}

/// `text` with every control character (newlines, tabs, escapes, NUL, the
/// C1 controls) replaced by a space.
pub fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_spaces() {
        assert_eq!(
            bound("line one\nline two\t\u{1b}[31mred\u{1b}[0m\0end\u{9b}"),
            "line one line two  [31mred [0m end "
        );
    }

    #[test]
    fn short_message_is_kept_whole() {
        assert_eq!(bound("fine"), "fine");
    }

    #[test]
    fn long_message_is_cut_with_marker_within_bound() {
        let m = "x".repeat(5000);
        let b = bound(&m);
        assert!(b.len() <= MAX_MESSAGE_BYTES);
        assert!(b.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn cut_never_splits_a_character() {
        let m = "é".repeat(2000);
        let b = bound(&m);
        assert!(b.len() <= MAX_MESSAGE_BYTES);
        assert!(
            b.trim_end_matches(TRUNCATION_MARKER)
                .chars()
                .all(|c| c == 'é')
        );
    }
}
