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
