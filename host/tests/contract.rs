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

#[test]
fn sdk_reserved_status_fields_are_the_engines() {
    assert_eq!(
        reconciler_guest_sdk::verdict::RESERVED_STATUS_FIELDS,
        reconciler_conventions::engine::RESERVED_STATUS_FIELDS
    );
}
