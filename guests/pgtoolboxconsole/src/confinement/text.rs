//! Bounded message pieces, in bytes as the host bounds messages: lists with "and N more", timestamps, the message with its tail kept.

use reconciler_guest_sdk::Timestamp;
use reconciler_guest_sdk::message::{MAX_MESSAGE_BYTES, bound_keeping_tail};

/// How many items a list in a message names before "and N more".
pub const LIST_SHOWN: usize = 3;

/// The most bytes of one item's description (a peer, an error) a message
/// names on its own.
pub const ITEM_CAP: usize = 160;

/// The most bytes of a name in a list of names (Pods, Nodes, policies).
pub const LIST_ITEM_CAP: usize = 64;

/// The most bytes of a Pod entry of a list: its name and what is said of
/// it (its deletion time, its address and Node).
pub const POD_ITEM_CAP: usize = 136;

/// The most bytes of the part saying what the console does with
/// X-Forwarded-For.
pub const XFF_CAP: usize = 400;

/// The most bytes of a note (about the Nodes).
pub const NOTE_CAP: usize = 340;

/// The most bytes of the tail (X-Forwarded-For and notes) together: the
/// main statement keeps at least the rest of [`MAX_MESSAGE_BYTES`].
pub const TAIL_CAP: usize = MAX_MESSAGE_BYTES / 2 + XFF_CAP / 2;

/// What ends a piece that was cut.
const ELLIPSIS: &str = "…";

/// `s` cut to at most `max` bytes on a character boundary, ending in "…"
/// when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut cut = max.saturating_sub(ELLIPSIS.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{ELLIPSIS}", &s[..cut])
}

/// "a", "a and b", "a, b and c", "a, b, c and 2 more": the first
/// [`LIST_SHOWN`] names (each cut to [`LIST_ITEM_CAP`]) and how many are left.
pub fn list(items: &[String]) -> String {
    list_capped(items, LIST_ITEM_CAP)
}

/// [`list`] with items cut to `cap` characters (peer descriptions).
pub fn list_capped(items: &[String], cap: usize) -> String {
    let shown: Vec<String> = items
        .iter()
        .take(LIST_SHOWN)
        .map(|i| truncate(i, cap))
        .collect();
    let rest = items.len().saturating_sub(LIST_SHOWN);
    match (shown.as_slice(), rest) {
        ([], _) => String::new(),
        ([one], 0) => one.clone(),
        (many, 0) => {
            let (last, first) = many.split_last().expect("at least two");
            format!("{} and {last}", first.join(", "))
        }
        (many, rest) => format!("{} and {rest} more", many.join(", ")),
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC), as the API server writes times.
pub fn rfc3339(t: &Timestamp) -> String {
    let days = t.seconds.div_euclid(86_400);
    let secs = t.seconds.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// A message of a main statement, what the console does with
/// X-Forwarded-For, and notes, each a sentence; at most
/// [`MAX_MESSAGE_BYTES`] bytes, so the host keeps it as it is: the
/// X-Forwarded-For part and each note have a cap of their own, and the
/// main statement is cut first (the SDK's [`bound_keeping_tail`]).
pub fn message(main: &str, xff: &str, notes: &[String]) -> String {
    let mut tail = format!("; {}.", truncate(xff, XFF_CAP));
    for note in notes {
        tail.push(' ');
        tail.push_str(&truncate(note, NOTE_CAP));
        tail.push('.');
    }
    bound_keeping_tail(main, &truncate(&tail, TAIL_CAP))
}

/// The word agreeing with `n`: `one` for a single item, else `many`
/// ("Pod" / "Pods", "trusts" / "trust").
pub fn agree<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("p{i}")).collect()
    }

    #[test]
    fn lists_read_naturally_and_stay_short() {
        assert_eq!(list(&items(0)), "");
        assert_eq!(list(&items(1)), "p1");
        assert_eq!(list(&items(2)), "p1 and p2");
        assert_eq!(list(&items(3)), "p1, p2 and p3");
        assert_eq!(list(&items(5)), "p1, p2, p3 and 2 more");
        let long = vec!["x".repeat(1000)];
        assert_eq!(list(&long).len(), LIST_ITEM_CAP);
        let wide = vec!["é".repeat(1000)];
        assert!(list(&wide).len() <= LIST_ITEM_CAP);
        assert!(list(&wide).ends_with("é…"));
    }

    #[test]
    fn timestamps() {
        let at = |seconds| rfc3339(&Timestamp { seconds, nanos: 0 });
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_795_953_600), "2026-11-29T12:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    /// The host cuts at 1024 bytes: a message of multi-byte characters
    /// within 1024 characters would lose its tail there, so the bound is
    /// in bytes, and the host keeps the message as it is.
    #[test]
    fn messages_are_bounded_in_bytes_keeping_the_tail() {
        for main in ["m".repeat(5000), "é".repeat(1000)] {
            let m = message(&main, "the console trusts no peer", &["Note".into()]);
            assert!(m.len() <= MAX_MESSAGE_BYTES, "{}", m.len());
            assert!(
                m.ends_with("…[truncated]; the console trusts no peer. Note."),
                "{m}"
            );
            assert_eq!(reconciler_guest_sdk::message::bound(&m), m);
        }
        let long_notes = ["n".repeat(2000), "o".repeat(2000)];
        let m = message("main", &"x".repeat(2000), &long_notes);
        assert!(
            m.len() <= MAX_MESSAGE_BYTES && m.starts_with("main; x"),
            "{m}"
        );
        assert_eq!(message("main", "xff", &[]), "main; xff.");
    }
}
