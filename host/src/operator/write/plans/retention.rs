//! Retention: how many terminal plans of one parent are kept per phase,
//! and the oldest beyond that deleted.

use std::collections::BTreeMap;

use kube::api::{DeleteParams, Preconditions};

use crate::plan::record::{self, Phase, Plan};

use super::Run;

/// How many terminal plans of one parent are kept per phase (the oldest
/// beyond go, unless annotated `reconciler.dev/keep: "true"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retention(pub BTreeMap<&'static str, usize>);

impl Default for Retention {
    /// Applied plans are kept longest: they are the record of what changed.
    fn default() -> Self {
        Retention(BTreeMap::from([
            (Phase::Applied.as_str(), 10),
            (Phase::Rejected.as_str(), 5),
            (Phase::Superseded.as_str(), 5),
            (Phase::Failed.as_str(), 5),
        ]))
    }
}

impl Retention {
    fn bound(&self, phase: Phase) -> usize {
        self.0.get(phase.as_str()).copied().unwrap_or(usize::MAX)
    }
}

impl Run<'_, '_> {
    /// Deletes the oldest terminal plans beyond each phase's bound (never
    /// one annotated to be kept). Best effort: a failure is logged and
    /// tried again at the next pass.
    pub(super) async fn retain(&self) {
        let plans = self.plans();
        for phase in [
            Phase::Applied,
            Phase::Rejected,
            Phase::Superseded,
            Phase::Failed,
        ] {
            let bound = self.planner.config.retention.bound(phase);
            let of_phase: Vec<&Plan> = plans
                .iter()
                .filter(|p| p.phase == phase && !p.keep)
                .collect();
            let excess = of_phase.len().saturating_sub(bound);
            for plan in &of_phase[..excess] {
                let Some(uid) = self
                    .at
                    .source
                    .cache(&record::kind_ref())
                    .and_then(|c| c.get(self.namespace, &plan.name))
                    .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
                else {
                    continue;
                };
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                match self.api().delete(&plan.name, &params).await {
                    Ok(_) => {
                        tracing::debug!(plan = %plan.name, phase = phase.as_str(), "retention: plan deleted")
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                    Err(e) => {
                        tracing::warn!(plan = %plan.name, error = %e, "retention: cannot delete the plan")
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applied_plans_are_kept_longest() {
        let r = Retention::default();
        assert!(
            Phase::ALL
                .iter()
                .filter(|p| p.is_terminal() && **p != Phase::Applied)
                .all(|p| r.bound(*p) < r.bound(Phase::Applied))
        );
    }
}
