//! The registry held against `reasons.golden`: reasons are only ever added
//! (see `reconciler_guest_sdk::testing::reasons_golden`).

use evidenceagent_guest::EvidenceAgent;
use reconciler_guest_sdk::Guest;
use reconciler_guest_sdk::testing::reasons_golden;

#[test]
fn the_registry_only_ever_grows() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reasons.golden");
    reasons_golden(&EvidenceAgent::describe(), &golden, "evidenceagent-guest");
}
