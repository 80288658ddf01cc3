//! Leadership and shards: one writer per parent. Parents are split into
//! `--shards` by a stable hash of namespace/name; a replica serves its
//! shard only while it holds the shard's Lease (coordination.k8s.io),
//! kept by kube-lease-manager. Standbys sync their caches and wait; the
//! leader that loses its Lease (a renewal refused or failing) stops the
//! process at once, before the Lease lapses for the others
//! (docs/decisions/0015-running-it-in-production.md, "One writer per
//! parent").

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::client::ClientBuilder;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use sha2::{Digest as _, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::operator::replica::fence::{Fence, RenewalLayer};

/// Which parents this replica serves: those whose hash falls in its shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub count: u32,
    pub index: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { count: 1, index: 0 }
    }
}

impl Shard {
    /// The shard of `namespace/name`: the first eight bytes of its SHA-256,
    /// big-endian, modulo the shard count. Stable across versions and
    /// platforms (a rolling upgrade never moves a parent).
    pub fn of(count: u32, namespace: &str, name: &str) -> u32 {
        if count <= 1 {
            return 0;
        }
        let digest = Sha256::digest(format!("{namespace}/{name}").as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u32::try_from(u64::from_be_bytes(first) % u64::from(count)).unwrap_or(0)
    }

    /// Whether this replica serves the parent `namespace/name`.
    pub fn owns(&self, namespace: &str, name: &str) -> bool {
        Shard::of(self.count, namespace, name) == self.index
    }

    /// The Lease of this shard: `<base>` alone, `<base>-shard-<i>-of-<n>`
    /// when parents are sharded.
    pub fn lease_name(&self, base: &str) -> String {
        if self.count <= 1 {
            base.to_owned()
        } else {
            format!("{base}-shard-{}-of-{}", self.index, self.count)
        }
    }
}

/// How this replica competes for its shard's Lease.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// The Lease's name (before the shard suffix) and namespace.
    pub lease: String,
    pub namespace: String,
    /// Who this replica is in the Lease's holderIdentity.
    pub identity: String,
    /// How long a Lease lasts unrenewed; the holder renews it once a third
    /// of it is left.
    pub duration: Duration,
    /// The replica's writes are sent only while the Lease is confirmed
    /// valid (see [`LeaderConfig::fence`]).
    pub fence: Arc<Fence>,
}

impl LeaderConfig {
    /// The Lease's duration in whole seconds (at least 3) and its grace,
    /// the time before its end when the holder renews it (a third).
    fn terms(duration: Duration) -> (u64, u64) {
        let seconds = duration.as_secs().max(3);
        (seconds, (seconds / 3).max(1))
    }

    /// The fence of a replica competing for a Lease of `duration`: shut
    /// until the Lease is held, then open while it is confirmed valid.
    pub fn fence(duration: Duration) -> Arc<Fence> {
        let (seconds, grace) = LeaderConfig::terms(duration);
        Fence::for_lease(Duration::from_secs(seconds), Duration::from_secs(grace))
    }

    /// The fence of a ring member holding a Lease of `duration`: as
    /// [`LeaderConfig::fence`], sealed for good once the Lease lapsed.
    pub fn member_fence(duration: Duration) -> Arc<Fence> {
        let (seconds, grace) = LeaderConfig::terms(duration);
        Fence::for_member_lease(Duration::from_secs(seconds), Duration::from_secs(grace))
    }
}

/// Why leadership could not be had or kept.
#[derive(Debug, thiserror::Error)]
pub enum LeadershipError {
    /// The Lease could not be read or written (RBAC, the API server).
    /// Not retried here: the process exits and its restart competes again.
    #[error("the Lease {namespace}/{lease}: {source}")]
    Lease {
        namespace: String,
        lease: String,
        source: kube_lease_manager::LeaseManagerError,
    },
    /// This replica held the Lease and no longer does (another holds it,
    /// or a renewal failed).
    #[error("the Lease {namespace}/{lease} is no longer held by {identity}")]
    Lost {
        namespace: String,
        lease: String,
        identity: String,
    },
    /// This ring member's Lease lapsed (the process paused, or cut off,
    /// past it) and was renewed after: its parents were taken over
    /// meanwhile, its fence sealed. Not retried here: the process exits
    /// and its restart joins as a new member.
    #[error(
        "the Lease {namespace}/{lease} lapsed before {identity} renewed it: its parents were taken over, nothing more of it is written; it rejoins as a new member"
    )]
    Lapsed {
        namespace: String,
        lease: String,
        identity: String,
    },
}

/// This replica's hold on its shard's Lease.
pub struct Leadership {
    config: LeaderConfig,
    lease: String,
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<LeaseManager>>,
}

impl Leadership {
    /// Waits until this replica holds the Lease `lease` (the shard's).
    pub(crate) async fn acquire(
        config: LeaderConfig,
        lease: String,
    ) -> Result<Leadership, LeadershipError> {
        let mut leadership = Leadership::compete(config, lease).await?;
        leadership.held().await?;
        Ok(leadership)
    }

    /// Starts competing for the Lease `lease`, without waiting to hold it
    /// ([`Leadership::held`]).
    pub(crate) async fn compete(
        config: LeaderConfig,
        lease: String,
    ) -> Result<Leadership, LeadershipError> {
        let failed = |source| LeadershipError::Lease {
            namespace: config.namespace.clone(),
            lease: lease.clone(),
            source,
        };
        let client = lease_client(&config.fence)
            .await
            .map_err(|e| failed(kube_lease_manager::LeaseManagerError::KubeError(e)))?;
        let (seconds, grace) = LeaderConfig::terms(config.duration);
        let manager = LeaseManagerBuilder::new(client, lease.clone())
            .with_namespace(config.namespace.clone())
            .with_identity(config.identity.clone())
            .with_duration(seconds)
            .with_grace(grace)
            .with_field_manager(crate::marks::FIELD_MANAGER)
            .build()
            .await
            .map_err(failed)?;
        let (state, task) = manager.watch().await;
        Ok(Leadership {
            config,
            lease,
            state,
            task,
        })
    }

    /// Waits until this replica holds the Lease; cancelled (dropped) at
    /// shutdown, the Lease is still [`Leadership::release`]d.
    pub async fn held(&mut self) -> Result<(), LeadershipError> {
        tracing::info!(lease = %self.lease, identity = %self.config.identity, "standby: waiting for the Lease");
        while !*self.state.borrow_and_update() {
            if self.state.changed().await.is_err() {
                return Err(self.ended().await);
            }
        }
        tracing::info!(lease = %self.lease, identity = %self.config.identity, "leading: the Lease is held");
        Ok(())
    }

    /// Resolves when the Lease is lost, or (a ring member's) lapsed: the
    /// caller stops writing at once.
    pub async fn lost(&mut self) -> LeadershipError {
        let fence = self.config.fence.clone();
        loop {
            let changed = tokio::select! {
                changed = self.state.changed() => changed,
                () = fence.sealed() => {
                    return LeadershipError::Lapsed {
                        namespace: self.config.namespace.clone(),
                        lease: self.lease.clone(),
                        identity: self.config.identity.clone(),
                    };
                }
            };
            if changed.is_err() {
                return self.ended().await;
            }
            if !*self.state.borrow_and_update() {
                return LeadershipError::Lost {
                    namespace: self.config.namespace.clone(),
                    lease: self.lease.clone(),
                    identity: self.config.identity.clone(),
                };
            }
        }
    }

    /// Gives the Lease up at shutdown, so a standby takes over at once
    /// rather than when it lapses: the manager releases it when this
    /// replica stops listening, and is waited for (at most twice
    /// [`LEASE_TIMEOUT`]), so its request is not cut off by the exit.
    pub async fn release(self) {
        let Leadership {
            config,
            lease,
            state,
            task,
        } = self;
        drop(state);
        match tokio::time::timeout(2 * LEASE_TIMEOUT, task).await {
            Ok(Ok(Ok(_))) => {
                tracing::info!(lease = %lease, identity = %config.identity, "the Lease is released")
            }
            Ok(Ok(Err(e))) => {
                tracing::info!(lease = %lease, error = %e, "the Lease was not released: it lapses")
            }
            Ok(Err(_)) | Err(_) => {
                tracing::info!(lease = %lease, "the Lease's release did not finish: it lapses")
            }
        }
    }

    /// The manager's task ended (its channel closed): why.
    async fn ended(&mut self) -> LeadershipError {
        match (&mut self.task).await {
            Ok(Err(source)) => LeadershipError::Lease {
                namespace: self.config.namespace.clone(),
                lease: self.lease.clone(),
                source,
            },
            _ => LeadershipError::Lost {
                namespace: self.config.namespace.clone(),
                lease: self.lease.clone(),
                identity: self.config.identity.clone(),
            },
        }
    }
}

/// The Lease's own client: each request gives up after [`LEASE_TIMEOUT`],
/// so a holder cut off from the API server learns it cannot renew (and
/// stops) well before the Lease lapses for the others, rather than waiting
/// on a request that never answers; each write it sees confirmed opens
/// `fence` for the replica's other writes.
async fn lease_client(fence: &Arc<Fence>) -> Result<Client, kube::Error> {
    let mut config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    config.connect_timeout = Some(LEASE_TIMEOUT);
    config.read_timeout = Some(LEASE_TIMEOUT);
    config.write_timeout = Some(LEASE_TIMEOUT);
    // A renewal answered 503 fails at once and the Lease manager tries
    // again within the grace, rather than kube retrying it past the Lease.
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&RenewalLayer(fence.clone()))
        .build())
}

/// How long one request about the Lease may take.
pub(crate) const LEASE_TIMEOUT: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parent_is_in_exactly_one_shard_and_stays_there() {
        let shards: Vec<Shard> = (0..3).map(|index| Shard { count: 3, index }).collect();
        let mut counts = [0usize; 3];
        for i in 0..3000 {
            let name = format!("agent-{i}");
            let owners: Vec<u32> = shards
                .iter()
                .filter(|s| s.owns("team-a", &name))
                .map(|s| s.index)
                .collect();
            assert_eq!(owners.len(), 1, "{name}: {owners:?}");
            counts[owners[0] as usize] += 1;
        }
        assert!(counts.iter().all(|c| *c > 850), "an even split: {counts:?}");
        // Pinned (computed outside Rust: SHA-256 of "namespace/name", the
        // first eight bytes big-endian, modulo the count): replicas of
        // different versions must agree on every parent's shard.
        assert_eq!(Shard::of(3, "team-a", "agent-0"), 1);
        assert_eq!(Shard::of(3, "team-a", "agent-2"), 2);
        assert_eq!(Shard::of(2, "a", "x"), 0);
        assert!(Shard::default().owns("any", "thing"));
    }

    #[test]
    fn each_shard_has_its_own_lease() {
        assert_eq!(
            Shard::default().lease_name("reconciler-host"),
            "reconciler-host"
        );
        assert_eq!(
            Shard { count: 4, index: 2 }.lease_name("reconciler-host"),
            "reconciler-host-shard-2-of-4"
        );
    }
}
