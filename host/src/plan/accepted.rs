//! A plan played without writing (seed 003): what a pass's plan would come
//! to from the parent's plans as they are, the gates and the pending
//! changes, every move taken as the API server's to accept, through the
//! interpreter the operator's planner runs ([`crate::plan::played`]). A
//! dry run of a pass (`capture`, `shadow`, promotion) and a fixture's
//! plans (`test`) are played here.

use std::convert::Infallible;
use std::time::Duration;

use futures::FutureExt as _;

use crate::contract::model::Change;
use crate::plan::artifact::Counts;
use crate::plan::digest::{self, Digest, Target};
use crate::plan::gates::Gates;
use crate::plan::lifecycle::Situation;
use crate::plan::played::{self, Count, Execution, PlanMoves, Played, Unavailable};
use crate::plan::record::{Divergence, Plan};

/// The parent a plan is played for.
pub struct Playing<'a> {
    /// The parent's plans, oldest first; `None`: the cluster serves none.
    pub plans: Option<&'a [Plan]>,
    pub gates: Gates,
    /// The changes that would change something.
    pub pending: &'a [Change],
    pub target: &'a Target,
    /// The name a plan created now would have.
    pub plan_name: &'a str,
    pub now: jiff::Timestamp,
    pub replan_after: Duration,
    /// When `plan` Rejected was first seen (now, if never).
    pub first_seen: &'a (dyn Fn(&Plan) -> jiff::Timestamp + Sync),
}

/// Plays the course of `playing`'s plan.
pub fn play(playing: &Playing<'_>) -> Result<Played, Unavailable> {
    let gates = playing.gates;
    let Some(plans) = playing.plans else {
        // Made directly, or nothing to make: found as the guest asks.
        let facts = played::unserved(gates, !playing.pending.is_empty())?;
        return Ok(Played {
            made: true,
            facts,
            ..Played::default()
        });
    };
    let digest = digest::digest(playing.pending, gates.mode, playing.target);
    let situation = Situation {
        plans,
        pending: !playing.pending.is_empty(),
        digest: &digest,
        target: playing.target,
        gates,
        now: playing.now,
        replan_after: playing.replan_after,
        first_seen: playing.first_seen,
    };
    let mut moves = Accepted { playing };
    let played = played::play(&mut moves, &situation, playing.pending)
        .now_or_never()
        .expect("accepted moves never wait");
    match played {
        Ok(played) => Ok(played),
        Err(never) => match never {},
    }
}

/// Every move accepted, nothing written.
struct Accepted<'p, 'a> {
    playing: &'p Playing<'a>,
}

impl PlanMoves for Accepted<'_, '_> {
    type Error = Infallible;

    async fn supersede(&mut self, _: &Plan, _: Divergence) -> Result<(), Infallible> {
        Ok(())
    }

    async fn fail(&mut self, _: &Plan, _: &str) -> Result<(), Infallible> {
        Ok(())
    }

    async fn artifact_intact(&mut self, _: &Plan) -> Result<bool, Infallible> {
        Ok(true)
    }

    async fn revalidate(&mut self, _: &Plan) -> Result<(), Infallible> {
        Ok(())
    }

    async fn reject(&mut self, _: &Plan) -> Result<(), Infallible> {
        Ok(())
    }

    async fn applying(&mut self, plan: &Plan) -> Result<Plan, Infallible> {
        Ok(plan.clone())
    }

    async fn auto_approve(&mut self, plan: &Plan) -> Result<Plan, Infallible> {
        Ok(plan.clone())
    }

    async fn create(
        &mut self,
        pending: &[Change],
        digest: &Digest,
        target: &Target,
    ) -> Result<Plan, Infallible> {
        let created = reconciler_conventions::status::rfc3339_seconds(self.playing.now);
        Ok(Plan {
            counts: Counts::of(pending),
            ..Plan::describing(
                self.playing.plan_name,
                created,
                self.playing.gates.mode,
                digest,
                target,
            )
        })
    }

    async fn await_decision(&mut self, plan: &Plan) -> Result<Plan, Infallible> {
        Ok(plan.clone())
    }

    async fn execute(&mut self, _: Option<&Plan>) -> Execution {
        let counts = Counts::of(self.playing.pending);
        Execution::Made(Count {
            applied: counts.applies + counts.generated,
            deleted: counts.deletions,
        })
    }

    async fn applied(&mut self, _: &Plan) -> Result<bool, Infallible> {
        Ok(true)
    }

    async fn deleted(
        &mut self,
        _: &Plan,
        _: Count,
        _: &str,
        _: &[Change],
    ) -> Result<(), Infallible> {
        Ok(())
    }
}
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::contract::model::config_map_kind;
    use crate::facts::Hold;
    use crate::plan::digest::Mode;
    use crate::plan::gates::Approval;
    use crate::plan::record::Phase;

    #[test]
    fn older_open_plans_are_superseded_first_as_the_planner_supersedes_them() {
        let target = Target {
            cluster: "cluster-uid".into(),
            parent: "parent-uid".into(),
        };
        let gates = Gates {
            mode: Mode::Apply,
            approval: Approval::Manual,
        };
        let pending = [Change::Apply {
            kind: config_map_kind(),
            name: "w-config".into(),
            body: json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "w-config"}, "data": {"a": "1"}}),
        }];
        let digest = digest::digest(&pending, gates.mode, &target);
        let open = |name: &str| Plan {
            phase: Phase::Pending,
            ..Plan::describing(
                name,
                "2026-12-03T10:00:00Z".into(),
                gates.mode,
                &digest,
                &target,
            )
        };
        let now: jiff::Timestamp = "2026-12-03T10:05:00Z".parse().unwrap();
        let plans = [open("w-older"), open("w-current")];
        let played = play(&Playing {
            plans: Some(&plans),
            gates,
            pending: &pending,
            target: &target,
            plan_name: "w-plan",
            now,
            replan_after: Duration::from_secs(60),
            first_seen: &|_| now,
        })
        .expect("plans are served");
        let reasons: Vec<&str> = played.events.iter().map(|e| e.reason.as_str()).collect();
        // The older plan is superseded (Replaced); the current one awaits
        // its decision, the changes held.
        assert_eq!(reasons, ["PlanSuperseded"], "{:?}", played.events);
        assert!(
            played.events[0].note.contains("w-older"),
            "{:?}",
            played.events
        );
        assert_eq!(played.hold, Some(Hold::AwaitingApproval));
    }
}
