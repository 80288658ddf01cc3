//! What the SDK tells guest authors about the host agrees with the host.

use reconciler_conventions::kind::HOST_REASONS;

#[test]
fn sdk_host_reasons_mirror_the_engine() {
    let engine: Vec<&str> = HOST_REASONS.iter().map(|(name, _)| *name).collect();
    assert_eq!(reconciler_guest_sdk::spec::HOST_REASONS, engine.as_slice());
}

#[test]
fn sdk_common_reasons_are_not_host_reasons() {
    for (name, _) in reconciler_guest_sdk::spec::COMMON_REASONS {
        assert!(
            !HOST_REASONS.iter().any(|(h, _)| h == name),
            "{name} is the host's; the SDK must not offer it for registration"
        );
    }
}

#[test]
fn sdk_message_bound_is_the_hosts() {
    use reconciler_conventions::message;
    use reconciler_guest_sdk::message as sdk;
    assert_eq!(sdk::MAX_MESSAGE_BYTES, message::MAX_MESSAGE_BYTES);
    assert_eq!(sdk::TRUNCATION_MARKER, message::TRUNCATION_MARKER);
    for m in [
        "fine".to_owned(),
        "a\nb\u{1b}[0m\u{9b}c".to_owned(),
        "x".repeat(5000),
        "é".repeat(2000),
        format!("{}\u{9b}", "y".repeat(1023)),
    ] {
        assert_eq!(sdk::bound(&m), message::bound(&m), "{m:?}");
        assert_eq!(
            message::bound(&sdk::bound(&m)),
            sdk::bound(&m),
            "kept as it is"
        );
    }
}

/// The text of `file` (from the workspace root) between the line starting
/// with `from` and the next line starting with `to`.
fn block(file: &str, from: &str, to: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .skip_while(|l| !l.starts_with(from))
        .skip(1)
        .take_while(|l| !l.starts_with(to))
        .map(str::to_owned)
        .collect()
}

/// `name: 'meaning',` (JavaScript) or `"name": "meaning",` (Python) lines
/// as pairs; the quote around the meaning is whichever the line uses.
fn pairs(lines: &[String]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(": ")?;
            let rest = rest.strip_suffix(',')?;
            let quote = rest.chars().next()?;
            let meaning = rest.strip_prefix(quote)?.strip_suffix(quote)?;
            Some((name.trim_matches('"').to_owned(), meaning.to_owned()))
        })
        .collect()
}

#[test]
fn the_javascript_sdks_host_reasons_mirror_the_engine() {
    let listed: Vec<String> = block("guests/js/sdk/index.js", "export const HOST_REASONS", "];")
        .iter()
        .flat_map(|l| l.split(',').map(|n| n.trim().trim_matches('\'').to_owned()))
        .filter(|n| !n.is_empty())
        .collect();
    let engine: Vec<&str> = HOST_REASONS.iter().map(|(name, _)| *name).collect();
    assert_eq!(listed, engine);
}

#[test]
fn the_javascript_and_python_sdks_common_reasons_are_the_rust_sdks() {
    let rust: Vec<(String, String)> = reconciler_guest_sdk::spec::COMMON_REASONS
        .iter()
        .map(|(n, m)| ((*n).to_owned(), (*m).to_owned()))
        .collect();
    let js = pairs(&block(
        "guests/js/sdk/index.js",
        "export const COMMON_REASONS",
        "};",
    ));
    assert_eq!(
        js, rust,
        "JavaScript: every common reason, in order, word for word"
    );
    let py = pairs(&block(
        "guests/py/sdk/reconciler_sdk/__init__.py",
        "COMMON_REASONS = {",
        "}",
    ));
    assert!(!py.is_empty(), "the Python SDK's common reasons are read");
    for entry in &py {
        assert!(
            rust.contains(entry),
            "Python's {entry:?} is not the Rust SDK's word for word"
        );
    }
}
