//! Points in time as the request's fields and the clock give them: RFC 3339 read and written, and the whole seconds until a later point.

use reconciler_guest_sdk::Timestamp;

const NANOS: i128 = 1_000_000_000;

/// Nanoseconds since the epoch.
pub fn nanos(t: &Timestamp) -> i128 {
    i128::from(t.seconds) * NANOS + i128::from(t.nanos)
}

/// `t` is at or after `at`.
pub fn reached(now: &Timestamp, at: &Timestamp) -> bool {
    nanos(now) >= nanos(at)
}

/// `t` plus `seconds`.
pub fn plus(t: &Timestamp, seconds: u32) -> Timestamp {
    Timestamp {
        seconds: t.seconds + i64::from(seconds),
        nanos: t.nanos,
    }
}

/// The whole seconds from `now` until `at`, rounded up, so a pass asked
/// for after them runs at `at` or later, never before; at least 1 (the
/// caller asks only for a point still ahead).
pub fn seconds_until(now: &Timestamp, at: &Timestamp) -> u32 {
    let left = nanos(at) - nanos(now);
    let seconds = (left + NANOS - 1).div_euclid(NANOS);
    u32::try_from(seconds.max(1)).unwrap_or(u32::MAX)
}

/// Reads an RFC 3339 date-time (`2026-11-29T12:00:00Z`, with an optional
/// fraction of a second and a `Z` or `±HH:MM` offset, as the CRD's
/// `format: date-time` admits). `None` for anything else.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, m, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hh, mm, ss) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return None;
        }
        let kept = &fraction[..len.min(9)];
        nanos = kept.parse::<u32>().ok()? * 10u32.pow(9 - kept.len() as u32);
        rest = &fraction[len..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let r = rest.as_bytes();
            if r.len() != 6 || !matches!(r[0], b'+' | b'-') || r[3] != b':' {
                return None;
            }
            let (oh, om) = (digits_of(&rest[1..3])?, digits_of(&rest[4..6])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let sign = if r[0] == b'-' { -1 } else { 1 };
            sign * (oh * 3_600 + om * 60)
        }
    };
    let seconds = days_from_civil(y, m, d) * 86_400 + hh * 3_600 + mm * 60 + ss.min(59) - offset;
    Some(Timestamp { seconds, nanos })
}

fn digits_of(s: &str) -> Option<i64> {
    s.bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| s.parse().ok())?
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC), as the API server writes times; a
/// fraction of a second is written only when there is one.
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
    let fraction = if t.nanos == 0 {
        String::new()
    } else {
        format!(".{:09}", t.nanos).trim_end_matches('0').to_owned()
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{fraction}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64, nanos: u32) -> Timestamp {
        Timestamp { seconds, nanos }
    }

    #[test]
    fn reads_what_the_api_server_and_users_write() {
        assert_eq!(
            parse_rfc3339("2026-11-29T12:00:00Z"),
            Some(at(1_795_953_600, 0))
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T12:00:00.25Z"),
            Some(at(1_795_953_600, 250_000_000))
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T13:30:00+01:30"),
            Some(at(1_795_953_600, 0))
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T10:00:00-02:00"),
            Some(at(1_795_953_600, 0))
        );
    }

    #[test]
    fn refuses_what_is_not_a_date_time() {
        for bad in [
            "",
            "tomorrow",
            "2026-11-29",
            "2026-11-29T12:00:00",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T12:00:00.Z",
            "2026-11-29T12:00:00+0100",
            "2026-11-29T12:00:00Zjunk",
            "+026-11-29T12:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn writes_utc_with_a_fraction_only_when_there_is_one() {
        assert_eq!(rfc3339(&at(1_795_953_600, 0)), "2026-11-29T12:00:00Z");
        assert_eq!(
            rfc3339(&at(1_795_953_600, 250_000_000)),
            "2026-11-29T12:00:00.25Z"
        );
        for s in ["2024-02-29T23:59:59Z", "1970-01-01T00:00:00Z"] {
            assert_eq!(rfc3339(&parse_rfc3339(s).unwrap()), s);
        }
    }

    #[test]
    fn seconds_until_round_up_and_never_wake_early() {
        let now = at(100, 900_000_000);
        assert_eq!(seconds_until(&now, &at(101, 0)), 1);
        assert_eq!(seconds_until(&now, &at(160, 900_000_000)), 60);
        assert_eq!(seconds_until(&now, &at(161, 0)), 61);
        assert_eq!(seconds_until(&at(0, 0), &at(i64::MAX / 2, 0)), u32::MAX);
        assert!(reached(&at(101, 0), &at(101, 0)));
        assert!(!reached(&now, &at(101, 0)));
        assert_eq!(plus(&now, 60), at(160, 900_000_000));
    }
}
