//! Leader election on a coordination.k8s.io Lease, so that with several replicas only one
//! reconciles. It follows client-go's `leaderelection` (what controller-runtime uses), with
//! its defaults:
//! - every replica tries to take or renew the Lease every `retry_period` (2 s);
//! - the leader stops reconciling when it could not renew for `renew_deadline` (10 s), which
//!   is shorter than the `lease_duration` (15 s) a follower waits, after it last saw the Lease
//!   change, before taking it: so the old leader has stopped before a new one starts, even
//!   when the old one is cut off from the API server;
//! - a replica that loses the Lease exits with an error (the Deployment restarts it as a
//!   follower) instead of carrying on;
//! - on shutdown the leader releases the Lease, and a follower takes it at its next try.
//!
//! Every request has a timeout, so an API server that does not answer counts as a failed
//! renewal rather than a wait. Expiry is judged on this replica's clock, from when it saw the
//! Lease change, never from the timestamps another replica wrote (clocks may differ).

use std::{future::Future, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{Error, Result, leadership::Leadership};

/// The durations of an election.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long followers wait, after they last saw the Lease change, before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps reconciling without a successful renewal.
    pub renew_deadline: Duration,
    /// How often every replica tries to take or renew the Lease.
    pub retry_period: Duration,
}

impl Timing {
    /// How long one request about a Lease may take: half the renew deadline, as client-go's
    /// leader-election client (`max(1s, RenewDeadline/2)`), long enough for an API server slow
    /// under load, short enough that one hung request leaves time for another before the
    /// deadline.
    pub(crate) fn request_timeout(&self) -> Duration {
        (self.renew_deadline / 2).max(self.retry_period)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Where and under which identity to take the leader-election Lease, and its durations.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Name of the Lease.
    pub lease_name: String,
    /// Namespace of the Lease.
    pub namespace: String,
    /// This replica's name in the Lease (`holderIdentity`); a random one when `None`.
    pub identity: Option<String>,
    /// The election's durations.
    pub timing: Timing,
}

/// Waits to become leader, then runs `work` until it finishes (after `shutdown`) or
/// leadership is lost. The Lease is released on a clean exit, so that another replica takes
/// over at once.
///
/// The leader stops `work` at the renew deadline counted from the start of its last successful
/// renewal, whatever is in flight then: a renewal request that hangs is cut at the deadline too
/// (client-go bounds each renewal round the same way). A follower waits the lease duration from
/// when it saw that renewal, which is later, so two leaders never overlap. (The manager runs the
/// elector on a thread of its own instead, [`on_own_thread`].)
#[cfg(test)]
pub async fn run_as_leader(
    client: Client,
    election: &LeaderElection,
    shutdown: CancellationToken,
    work: impl Future<Output = Result<()>>,
) -> Result<()> {
    let leadership = Leadership::elected();
    let release = CancellationToken::new();
    let elector = elect(client, election, leadership.clone(), release.clone());
    let work = async {
        tokio::select! {
            () = leadership.leading() => work.await,
            () = shutdown.cancelled() => Ok(()),
        }
    };
    run_while_leading(elector, release, shutdown.clone(), work).await
}

/// Runs `work` beside `elector` (an [`elect`] of the Lease, here or on a thread of its own)
/// until `work` ends (after `shutdown`), then has the elector release the Lease. If the
/// elector ends first, leadership was lost: `work` is dropped at once (the controllers stop)
/// and the outcome is [`Error::LeadershipLost`].
pub(crate) async fn run_while_leading(
    elector: impl Future<Output = Result<()>>,
    release: CancellationToken,
    shutdown: CancellationToken,
    work: impl Future<Output = Result<()>>,
) -> Result<()> {
    tokio::pin!(elector);
    tokio::pin!(work);
    let outcome = tokio::select! {
        outcome = &mut work => outcome,
        ended = &mut elector => {
            shutdown.cancel();
            return Err(ended.err().unwrap_or(Error::LeadershipLost));
        }
    };
    release.cancel();
    let released = elector.await;
    outcome.and(released)
}

/// `run` on a thread of its own (named `name`), with a client of its own made from `config`:
/// the project's code may block the manager's threads (a blocking SDK call in `desired` or
/// `cleanup`), and renewals of the Leases ([`elect`], the shards' coordinator) must go on
/// regardless. (Were they starved, [`Leadership`] would still keep writes from leaving this
/// replica after its deadline; this keeps the Lease, and the replica.)
pub(crate) fn on_own_thread<F, Fut>(
    config: kube::Config,
    name: &str,
    run: F,
) -> impl Future<Output = Result<()>> + use<F, Fut>
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = Result<()>>,
{
    let (sent, outcome) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let outcome = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(Error::Server)
                .and_then(|runtime| {
                    runtime.block_on(async {
                        let client = Client::try_from(config)?;
                        run(client).await
                    })
                });
            let _ = sent.send(outcome);
        });
    let name = name.to_owned();
    async move {
        spawned?;
        outcome
            .await
            .map_err(|_| Error::Task(format!("the {name} thread stopped")))?
    }
}

/// Takes part in the election until `release`: waits for the Lease, takes it, and renews it,
/// keeping `leadership` current ([`Leadership::lead_until`] the renew deadline after each
/// successful renewal's start). Returns `Ok` after `release` (having released a Lease it held),
/// and [`Error::LeadershipLost`] when it could not renew in time or another replica took it.
pub(crate) async fn elect(
    client: Client,
    election: &LeaderElection,
    leadership: Leadership,
    release: CancellationToken,
) -> Result<()> {
    let timing = election.timing;
    let identity = election
        .identity
        .clone()
        .unwrap_or_else(|| format!("{}-{}", hostname(), std::process::id()));
    let mut elector = Elector {
        api: Api::namespaced(client, &election.namespace),
        name: election.lease_name.clone(),
        identity,
        timing,
        observed: None,
        told_of_group: false,
    };

    info!(lease = %elector.name, identity = %elector.identity, "waiting for leadership");
    let mut renewed_at = loop {
        if release.is_cancelled() {
            return Ok(());
        }
        let started = Instant::now();
        match elector.try_acquire_or_renew().await {
            Ok(true) => break started,
            Ok(false) => {}
            Err(error) => warn!(%error, "could not take the Lease; retrying"),
        }
        tokio::select! {
            _ = release.cancelled() => return Ok(()),
            _ = tokio::time::sleep(timing.retry_period) => {}
        }
    };
    leadership.lead_until(renewed_at.into_std() + timing.renew_deadline);
    info!(lease = %elector.name, "became leader, starting to reconcile");

    loop {
        let deadline = renewed_at + timing.renew_deadline;
        tokio::select! {
            _ = release.cancelled() => {
                leadership.lose();
                if let Err(error) = elector.release().await {
                    warn!(%error, "could not release the Lease; it expires on its own");
                }
                return Ok(());
            }
            _ = tokio::time::sleep_until(deadline) => return step_down(&elector, &leadership),
            _ = tokio::time::sleep(timing.retry_period) => {}
        }
        let started = Instant::now();
        match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
            Ok(Ok(true)) => {
                renewed_at = started;
                leadership.lead_until(started.into_std() + timing.renew_deadline);
            }
            Ok(Ok(false)) => {
                warn!(lease = %elector.name, "another replica holds the Lease");
                leadership.lose();
                return Err(Error::LeadershipLost);
            }
            Ok(Err(error)) => warn!(%error, "could not renew the Lease"),
            Err(_) => return step_down(&elector, &leadership),
        }
    }
}

fn step_down(elector: &Elector, leadership: &Leadership) -> Result<()> {
    warn!(
        lease = %elector.name,
        deadline = ?elector.timing.renew_deadline,
        "no renewal within the renew deadline; stepping down"
    );
    leadership.lose();
    Err(Error::LeadershipLost)
}

/// The holder the leader-election Lease names while a group of replicas with shards holds it
/// (no replica's identity: whichever member renews it).
pub(crate) const GROUP_HOLDER: &str = "kopgen.io/shards";

/// The leader-election Lease, held by a group of replicas that share the work by shards
/// (`--shards=auto`) rather than by one leader. While any member renews it, a manager without
/// shards (the old ones of a rolling update that turns shards on, or the new ones of one that
/// turns them off) waits as for any leader; and the group takes shards only once such a leader
/// has released the Lease or let it expire. Either way the one that held it stopped writing
/// first (its renew deadline is shorter than the lease duration), so two modes never write at
/// once. The group never releases it: a member cannot know that none of the others still
/// writes, so the Lease expires the lease duration after the last renewal.
pub(crate) struct GroupLease {
    elector: Elector,
    /// The Lease's record as this replica last read or wrote it, and an instant before that
    /// read or write: a record different from it was written after that instant.
    looked: Option<(Record, Instant)>,
}

impl GroupLease {
    pub(crate) fn new(client: Client, election: &LeaderElection) -> Self {
        Self {
            elector: Elector {
                api: Api::namespaced(client, &election.namespace),
                name: election.lease_name.clone(),
                identity: GROUP_HOLDER.to_owned(),
                timing: election.timing,
                observed: None,
                told_of_group: false,
            },
            looked: None,
        }
    }

    /// Holds the Lease for the group: from when the group counts as holding it (a write of it
    /// came after that instant), or `None` when a leader without shards holds it.
    ///
    /// One write per round is enough for the whole group: a member that finds the Lease
    /// renewed for the group since it last looked writes nothing, and counts the hold from that
    /// look. In steady state one member (the one that sees no renewal but its own) renews it;
    /// when that member stops, the next one to look finds nothing new and renews it itself.
    pub(crate) async fn hold(&mut self) -> Result<Option<Instant>> {
        let began = Instant::now();
        let elector = &mut self.elector;
        let lease = elector.request(elector.api.get_opt(&elector.name)).await?;
        if let (Some(lease), Some((seen, at))) = (&lease, &self.looked) {
            let record = record_of(lease);
            // A look long ago would leave too little of the renew deadline: write then.
            let recent = began - *at < elector.timing.renew_deadline / 2;
            if record.0.as_deref() == Some(GROUP_HOLDER) && record != *seen && recent {
                let since = *at;
                self.looked = Some((record, began));
                return Ok(Some(since));
            }
        }
        if let Some(written) = elector.take_or_renew(lease).await? {
            self.looked = Some((record_of(&written), began));
            return Ok(Some(began));
        }
        // Held by a leader when read; else another write came first (a member's renewal or
        // creation, or a leader's taking of a free or expired Lease), and only the Lease as it
        // is now tells which.
        if self.holder().is_some_and(|holder| holder != GROUP_HOLDER) {
            return Ok(None);
        }
        let elector = &self.elector;
        let lease = elector.request(elector.api.get_opt(&elector.name)).await?;
        let record = lease.as_ref().map(record_of);
        match record {
            Some(record) if record.0.as_deref() == Some(GROUP_HOLDER) => {
                self.looked = Some((record, began));
                Ok(Some(began))
            }
            _ => Ok(None),
        }
    }

    /// Who held the Lease when it was last read.
    pub(crate) fn holder(&self) -> Option<&str> {
        let ((holder, _), _) = self.elector.observed.as_ref()?;
        holder.as_deref()
    }
}

struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    /// The Lease's holder and renew time as last seen, and when they were seen to change.
    observed: Option<(Record, Instant)>,
    /// Whether this replica has said that replicas with shards hold the Lease (once).
    told_of_group: bool,
}

/// What identifies one renewal of a Lease: its holder and renew time.
type Record = (Option<String>, Option<MicroTime>);

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.as_ref();
    let holder = spec.and_then(|s| s.holder_identity.clone());
    let renewed = spec.and_then(|s| s.renew_time.clone());
    (holder.filter(|h| !h.is_empty()), renewed)
}

impl Elector {
    /// Takes the Lease if it is free or expired, renews it if held; `Ok(false)` when another
    /// replica holds it (or took it first).
    async fn try_acquire_or_renew(&mut self) -> Result<bool> {
        let lease = self.request(self.api.get_opt(&self.name)).await?;
        Ok(self.take_or_renew(lease).await?.is_some())
    }

    /// [`Self::try_acquire_or_renew`] on the Lease as just read (`None`: there is none): the
    /// Lease as written, or `None` when another replica holds it (or wrote first).
    async fn take_or_renew(&mut self, lease: Option<Lease>) -> Result<Option<Lease>> {
        let now = MicroTime(Timestamp::now());
        let duration = i32::try_from(self.timing.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(lease) = lease else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self
                .request(self.api.create(&PostParams::default(), &lease))
                .await
            {
                Ok(created) => Ok(Some(created)),
                Err(Error::Kube(kube::Error::Api(status))) if status.code == 409 => Ok(None),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let record = record_of(&lease);
        let holder = record.0.clone();
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(seen, _)| *seen != record);
        if changed {
            self.observed = Some((record, Instant::now()));
        }
        let mine = holder.as_deref() == Some(&self.identity);
        let seen_at = self
            .observed
            .as_ref()
            .map_or_else(Instant::now, |(_, at)| *at);
        let expired = seen_at.elapsed() >= self.timing.lease_duration;
        if holder.is_some() && !mine && !expired {
            if holder.as_deref() == Some(GROUP_HOLDER) && !self.told_of_group {
                // Shards turned off by a rolling update: say why this replica does not lead.
                info!(
                    lease = %self.name,
                    "the Lease is held by replicas with --shards; this replica leads once they \
                     have stopped and it expires"
                );
                self.told_of_group = true;
            }
            debug!(holder = ?holder, "the Lease is held");
            return Ok(None);
        }
        let transitions = spec.lease_transitions.unwrap_or(0);
        let patch = json!({
            // Guarded by the version read above: a replica that wrote in between wins.
            "metadata": { "resourceVersion": lease.metadata.resource_version },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": duration,
                "acquireTime": if mine { spec.acquire_time } else { Some(now.clone()) },
                "renewTime": now,
                "leaseTransitions": if mine { transitions } else { transitions + 1 },
            }
        });
        let params = PatchParams::default();
        match self
            .request(self.api.patch(&self.name, &params, &Patch::Merge(patch)))
            .await
        {
            Ok(renewed) => Ok(Some(renewed)),
            Err(Error::Kube(kube::Error::Api(status))) if status.code == 409 => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Clears the holder, if it is still this replica, so a follower need not wait.
    async fn release(&self) -> Result<()> {
        let Some(lease) = self.request(self.api.get_opt(&self.name)).await? else {
            return Ok(());
        };
        let spec = lease.spec.unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(&self.identity) {
            return Ok(());
        }
        let patch = json!({
            "metadata": { "resourceVersion": lease.metadata.resource_version },
            "spec": { "holderIdentity": null, "leaseDurationSeconds": 1 }
        });
        self.request(
            self.api
                .patch(&self.name, &PatchParams::default(), &Patch::Merge(patch)),
        )
        .await?;
        info!(lease = %self.name, "released the Lease");
        Ok(())
    }

    /// A request that fails after [`Timing::request_timeout`] instead of hanging.
    async fn request<T>(&self, request: impl Future<Output = kube::Result<T>>) -> Result<T> {
        let limit = self.timing.request_timeout();
        match tokio::time::timeout(limit, request).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(Error::Timeout(format!(
                "no answer about Lease {} within {limit:?}",
                self.name
            ))),
        }
    }
}

/// The pod name where there is one (`HOSTNAME`), else a fixed word: with the process id it
/// keeps replicas on one machine apart.
fn hostname() -> String {
    std::env::var("HOSTNAME").unwrap_or_else(|_| "manager".into())
}

#[cfg(test)]
#[path = "leader_tests.rs"]
mod tests;
