//! Probation and rollback: the passes of a swapped-in module are counted,
//! and above its policy's failure rate the module it replaced is put back.

use crate::operator::kinds::Registry;
use crate::operator::replica::metrics::{Metrics, ModuleLabels};
use crate::operator::schedule::KindId;
use crate::runtime::Module;

/// The first 12 hex digits of a digest, for log lines.
pub fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// Counts a pass of `module` (kind `id`) while it is on probation; rolls
/// it back when its failures pass the threshold, ends the probation after
/// the window. `failed`: the pass failed by the guest's fault.
pub fn record(registry: &Registry, id: KindId, module: &Module, failed: bool) {
    let kind = registry.kind(id);
    if kind.served.read().expect("served lock").probation.is_none() {
        return;
    }
    let mut kept = false;
    let rolled_back = {
        let mut served = kind.served.write().expect("served lock");
        if !served.serving || served.module.digest() != module.digest() {
            return;
        }
        let Some(p) = served.probation.as_mut() else {
            return;
        };
        p.passes += 1;
        p.failures += u32::from(failed);
        if p.passes == 1 {
            tracing::info!(
                kind = %kind.resource.kind,
                guest = module.name(),
                digest = module.digest(),
                after_ms = u64::try_from(p.swapped_at.elapsed().as_millis()).unwrap_or(u64::MAX),
                "first pass on the swapped-in module"
            );
        }
        if f64::from(p.failures) > p.policy.threshold * f64::from(p.policy.window) {
            let p = served.probation.take().expect("on probation");
            let bad = std::mem::replace(&mut served.module, p.previous.clone());
            Some((bad, p))
        } else {
            if p.passes >= p.policy.window {
                tracing::info!(
                    kind = %kind.resource.kind,
                    guest = module.name(),
                    failures = p.failures,
                    passes = p.passes,
                    "swapped-in module kept after its rollback window"
                );
                served.probation = None;
                kept = true;
            }
            None
        }
    };
    if kept || rolled_back.is_some() {
        // The module that was not kept reads no more.
        registry.narrow_reads();
    }
    let Some((bad, p)) = rolled_back else {
        return;
    };
    let name = &kind.resource.kind;
    let metrics = registry.metrics();
    metrics.rollbacks.get_or_create(&Metrics::kind(name)).inc();
    metrics.modules.remove(&ModuleLabels::of(name, &bad));
    metrics
        .modules
        .get_or_create(&ModuleLabels::of(name, &p.previous))
        .set(1);
    tracing::warn!(
        kind = %name,
        "rolled back guest {} (digest {}…) to digest {}…: {} of its first {} passes failed (threshold {} over {} passes); re-evaluating {} objects",
        bad.name(),
        short(bad.digest()),
        short(p.previous.digest()),
        p.failures,
        p.passes,
        p.policy.threshold,
        p.policy.window,
        kind.cache.len(),
    );
    registry.requeue_all(id);
}
