//! Membership and ownership of the buckets, on Leases:
//! - each replica renews a Lease of its own (`<lease>-<hash of its identity>`, labelled with
//!   its group) every retry period; a member is live while this replica has seen its Lease
//!   change within the lease duration (judged on this replica's clock, as leader election
//!   judges the leader's Lease);
//! - who holds each bucket is one annotation of the group's Lease (`<lease>-shards`), changed
//!   only with the version read (optimistic concurrency), so no bucket ever has two holders;
//!   it is labelled as the members' Leases are, so the one list of them each round reads it;
//! - a replica takes a free bucket assigned to it ([`super::assign`]); gives a bucket assigned
//!   to another back once no reconcile of it is in flight (none starts meanwhile); and frees
//!   the buckets of members it has seen dead;
//! - its writes are fenced on its own Lease ([`Leadership`]): at the renew deadline after its
//!   last renewal it stops writing and gives its buckets up, before the others may think it
//!   dead; it takes part again, its caches still warm, once every reconcile begun before has
//!   ended (none of them can write after it holds buckets again) and it renews its Lease;
//! - the group holds the leader-election Lease too ([`GroupLease`]), renewed in each round by
//!   a member that saw no other member renew it (one, in steady state): a manager without
//!   shards never leads beside it, and it takes shards only once such a leader has stopped (a
//!   rolling update that turns shards on or off).
//!
//! On shutdown a replica gives its buckets back and deletes its Lease, so the others take over
//! at their next round instead of after the lease duration.

use std::{collections::HashMap, sync::Arc, time::Duration};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{BUCKETS, Held, Shards, assign::assign, hash};
use crate::{
    Error, Result,
    leader::{GroupLease, LeaderElection},
    leadership::Leadership,
    metrics::Metrics,
};

/// The label that marks a member's Lease, its value a hash of the group's name.
const GROUP_LABEL: &str = "kopgen.io/shard-group";
/// The annotation of the group's Lease: the holder of each bucket (`""`: none), as JSON.
const OWNERS: &str = "kopgen.io/shard-owners";

/// Takes part in the group of `election`'s Lease until `release`, keeping `shards` and
/// `leadership` current. Returns `Ok` after `release` (having given its buckets back), and
/// [`Error::LeadershipLost`] when a manager without shards took the leader-election Lease.
pub(crate) async fn run(
    client: Client,
    election: &LeaderElection,
    shards: Shards,
    leadership: Leadership,
    metrics: Arc<Metrics>,
    release: CancellationToken,
    drain: Duration,
) -> Result<()> {
    let mut member = Member::new(client.clone(), election);
    let server_side = filters(&client, &election.namespace).await;
    shards.set_server_side(server_side);
    match server_side {
        true => info!("sharded: the API server filters list and watch by shard (shardSelector)"),
        false => info!(
            "sharded: the API server does not filter by shard (feature gate \
             ShardedListAndWatch off); filtering events here: correct, without the memory saving"
        ),
    }
    let timing = election.timing;
    // The leader-election Lease, held for the group: no manager without shards leads beside it.
    let mut group = GroupLease::new(client, election);
    let mut renewed_at: Option<Instant> = None;
    let mut waiting = false;
    loop {
        let started = Instant::now();
        // Side by side: one round trip's time, not two, counts against the retry period.
        let renewal = async {
            let ((), since) = tokio::try_join!(member.renew(), group.hold())?;
            Ok::<Option<Instant>, Error>(since)
        };
        // A slow API server's answer counts until the renew deadline, as client-go's does (a
        // replica not yet renewed has no deadline: it waits as long).
        let patience = renewed_at.map_or(timing.renew_deadline, |at| {
            (at + timing.renew_deadline)
                .saturating_duration_since(started)
                .max(timing.retry_period)
        });
        match tokio::time::timeout(patience, renewal).await {
            Ok(Ok(Some(since))) => {
                // Fenced on the older of the two: this replica's own Lease, renewed after
                // `started`, and the group's, renewed after `since` (by another member, when
                // this one saw that and wrote nothing).
                let from = since.min(started);
                renewed_at = Some(from);
                leadership.lead_until(from.into_std() + timing.renew_deadline);
                waiting = false;
            }
            Ok(Ok(None)) if renewed_at.is_some() => {
                // Only a Lease this group let expire can have been taken: stop at once.
                warn!(
                    lease = %election.lease_name, holder = ?group.holder(),
                    "a manager without shards took the leader-election Lease; stopping"
                );
                leadership.lose();
                shards.hold([false; BUCKETS]);
                return Err(Error::LeadershipLost);
            }
            Ok(Ok(None)) => {
                if !waiting {
                    info!(
                        lease = %election.lease_name, holder = ?group.holder(),
                        "waiting for the leader-election Lease, held by a manager without \
                         shards: this replica takes shards once it is released or expires"
                    );
                }
                waiting = true;
            }
            // Waiting would not help: say what the Role lacks, and stop.
            Ok(Err(error)) if forbidden(&error) => return Err(role_lacks(election, &error)),
            Ok(Err(error)) => warn!(%error, "could not renew this replica's shard Leases"),
            Err(_) => warn!("no answer about this replica's shard Leases"),
        }
        if renewed_at.is_some_and(|at| at.elapsed() < timing.renew_deadline) {
            // As long as a leader's request may take: a round cut off sooner would never
            // finish on a slow API server. Its writes are safe whenever they land: what this
            // replica holds is read from the record each round.
            let limit = timing.request_timeout();
            match tokio::time::timeout(limit, member.rebalance(&shards)).await {
                Ok(Ok(held)) => report(&metrics, &held),
                Ok(Err(error)) if forbidden(&error) => return Err(role_lacks(election, &error)),
                Ok(Err(error)) => warn!(%error, "could not rebalance the shards"),
                Err(_) => warn!("no answer about the shards' Lease"),
            }
        }
        let deadline = renewed_at.map(|at| at + timing.renew_deadline);
        let lapse = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = release.cancelled() => {
                step_down(&member, &shards, &leadership, &metrics, drain).await;
                return Ok(());
            }
            () = lapse => {
                warn!(
                    deadline = ?timing.renew_deadline,
                    "no renewal of this replica's shard Lease within the renew deadline: it \
                     gives its shards up, and takes part again once its reconciles begun before \
                     have ended and it renews the Lease"
                );
                leadership.lose();
                shards.hold([false; BUCKETS]);
                report(&metrics, &[false; BUCKETS]);
                renewed_at = None;
                // Bounded by the reconcile timeout: a reconcile is cut off at it.
                tokio::select! {
                    () = release.cancelled() => {
                        step_down(&member, &shards, &leadership, &metrics, drain).await;
                        return Ok(());
                    }
                    () = shards.idle() => info!("no reconcile of before the lapse is in flight"),
                }
            }
            () = tokio::time::sleep(timing.retry_period) => {}
        }
    }
}

/// On `release`: gives the buckets back, deletes this replica's Lease, and stops writing.
async fn step_down(
    member: &Member,
    shards: &Shards,
    leadership: &Leadership,
    metrics: &Metrics,
    drain: Duration,
) {
    member.leave(shards, drain).await;
    leadership.lose();
    report(metrics, &[false; BUCKETS]);
}

/// Tells the metrics which buckets, and ranges, this replica holds.
fn report(metrics: &Metrics, held: &Held) {
    let count = held.iter().filter(|h| **h).count();
    metrics.shards(count, hash::ranges(held).into_iter().map(hash::range_name));
}

/// What the Role lacks, when the API server forbids a request about the Leases.
fn role_lacks(election: &LeaderElection, error: &Error) -> Error {
    Error::Config(format!(
        "--shards=auto: the manager may not read or write its Leases in {}; the \
         leader-election Role needs get, list, create, patch and delete on leases (kopgen \
         upgrade adds them): {error}",
        election.namespace
    ))
}

fn forbidden(error: &Error) -> bool {
    matches!(error, Error::Kube(kube::Error::Api(status)) if status.code == 403)
}

/// Whether the API server filters by `shardSelector`: a list of Leases with one says so in its
/// `metadata.shardInfo` (an API server without the feature gate ignores the parameter).
async fn filters(client: &Client, namespace: &str) -> bool {
    let selector = hash::selector("object.metadata.uid", &[true; BUCKETS]).unwrap_or_default();
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("limit", "1")
        .append_pair("shardSelector", &selector)
        .finish();
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases?{query}");
    let Ok(request) = http::Request::get(path).body(Vec::new()) else {
        return false;
    };
    match client.request::<serde_json::Value>(request).await {
        Ok(list) => list["metadata"]["shardInfo"].is_object(),
        Err(error) => {
            warn!(%error, "could not ask the API server whether it filters by shard");
            false
        }
    }
}

/// This replica in its group.
struct Member {
    leases: Api<Lease>,
    /// The group's name: the leader-election Lease's.
    group: String,
    identity: String,
    /// The name of this replica's Lease.
    lease: String,
    duration: Duration,
    /// Per member Lease, its holder and renew time as last seen, and when they changed.
    observed: HashMap<String, (Record, Instant)>,
}

/// What identifies one renewal of a member's Lease.
type Record = (Option<String>, Option<MicroTime>);

impl Member {
    fn new(client: Client, election: &LeaderElection) -> Self {
        let identity = election.identity.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "manager".into());
            format!("{host}-{}", std::process::id())
        });
        let group = election.lease_name.clone();
        Self {
            leases: Api::namespaced(client, &election.namespace),
            lease: format!("{group}-{:016x}", hash::fnv1a(&identity)),
            group,
            identity,
            duration: election.timing.lease_duration,
            observed: HashMap::new(),
        }
    }

    /// The value of [`GROUP_LABEL`] on the group's Leases.
    fn group_hash(&self) -> String {
        format!("{:016x}", hash::fnv1a(&self.group))
    }

    fn owners_lease(&self) -> String {
        format!("{}-shards", self.group)
    }

    /// Renews this replica's Lease, or creates it where there is none (its first round, or
    /// after it left). No other replica writes it, so a renewal is one patch, without reading
    /// the Lease first for its version: every replica renews every retry period.
    async fn renew(&self) -> Result<()> {
        let now = MicroTime(Timestamp::now());
        let patch = json!({ "spec": { "holderIdentity": self.identity, "renewTime": now } });
        let renewed = (self.leases)
            .patch(&self.lease, &PatchParams::default(), &Patch::Merge(patch))
            .await;
        match renewed {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
        let seconds = i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.lease.clone()),
                labels: Some([(GROUP_LABEL.to_owned(), self.group_hash())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                ..LeaseSpec::default()
            }),
        };
        self.leases.create(&PostParams::default(), &lease).await?;
        Ok(())
    }

    /// The live members' identities, sorted (this replica among them), and the group's Lease
    /// of owners when it is labelled as the group's (so one list reads both, each round).
    async fn live(&mut self) -> Result<(Vec<String>, Option<Lease>)> {
        let label = format!("{GROUP_LABEL}={}", self.group_hash());
        let leases = self
            .leases
            .list(&ListParams::default().labels(&label))
            .await?;
        let mut live = vec![self.identity.clone()];
        let mut seen = HashMap::new();
        let mut owners = None;
        let owners_lease = self.owners_lease();
        for lease in leases {
            if lease.metadata.name.as_ref() == Some(&owners_lease) {
                owners = Some(lease);
                continue;
            }
            let (Some(name), Some(spec)) = (lease.metadata.name, lease.spec) else {
                continue;
            };
            let record: Record = (spec.holder_identity.clone(), spec.renew_time.clone());
            let at = match self.observed.remove(&name) {
                Some((before, at)) if before == record => at,
                _ => Instant::now(),
            };
            if let Some(identity) = &spec.holder_identity
                && at.elapsed() < self.duration
                && *identity != self.identity
            {
                live.push(identity.clone());
            }
            seen.insert(name, (record, at));
        }
        self.observed = seen;
        live.sort();
        live.dedup();
        Ok((live, owners))
    }

    /// The holder of each bucket as recorded in `listed` (the group's Lease as listed), else
    /// as read, with the version read; created when missing.
    async fn owners(&self, listed: Option<Lease>) -> Result<(Vec<String>, Option<String>)> {
        let name = self.owners_lease();
        let lease = match listed {
            Some(lease) => lease,
            None => self.read_or_create_owners(&name).await?,
        };
        let recorded = lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OWNERS))
            .and_then(|json| serde_json::from_str::<Vec<String>>(json).ok())
            .filter(|owners| owners.len() == BUCKETS);
        let owners = recorded.unwrap_or_else(|| {
            warn!(lease = %name, "the shards' Lease holds no readable owners; starting afresh");
            vec![String::new(); BUCKETS]
        });
        Ok((owners, lease.metadata.resource_version))
    }

    /// The group's Lease of owners, created when missing (labelled, so that the members' list
    /// reads it from then on).
    async fn read_or_create_owners(&self, name: &str) -> Result<Lease> {
        Ok(match self.leases.get_opt(name).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        labels: Some([(GROUP_LABEL.to_owned(), self.group_hash())].into()),
                        annotations: Some([(OWNERS.to_owned(), empty_owners())].into()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec::default()),
                };
                match self.leases.create(&PostParams::default(), &lease).await {
                    Ok(lease) => lease,
                    // Another replica created it first: read theirs.
                    Err(kube::Error::Api(status)) if status.code == 409 => {
                        self.leases.get(name).await?
                    }
                    Err(error) => return Err(error.into()),
                }
            }
        })
    }

    /// One round: the buckets this replica should take, give back or free, written with the
    /// version read; then what it holds, as recorded.
    async fn rebalance(&mut self, shards: &Shards) -> Result<Held> {
        let (live, listed) = self.live().await?;
        let (owners, version) = self.owners(listed).await?;
        let next = settle(shards, &owners, &self.identity, &live);
        let recorded = if next == owners {
            owners
        } else {
            let patch = json!({
                "metadata": {
                    "resourceVersion": version,
                    "annotations": { OWNERS: serde_json::to_string(&next)? },
                },
            });
            let name = self.owners_lease();
            match (self.leases)
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => next,
                // Another replica wrote first: what this one holds is what was read.
                Err(kube::Error::Api(status)) if status.code == 409 => owners,
                Err(error) => return Err(error.into()),
            }
        };
        let held = held_by(&recorded, &self.identity);
        if held != shards.holding() {
            let count = held.iter().filter(|h| **h).count();
            info!(buckets = count, members = live.len(), "holding new shards");
        }
        shards.hold(held);
        Ok(held)
    }

    /// Gives every bucket back and deletes this replica's Lease (after the controllers have
    /// stopped: nothing is in flight, but the wait is bounded all the same).
    async fn leave(&self, shards: &Shards, drain: Duration) {
        for bucket in 0..BUCKETS {
            shards.release(bucket);
        }
        shards.drained(drain).await;
        let given_back = async {
            let (owners, version) = self.owners(None).await?;
            let next: Vec<String> = owners
                .iter()
                .map(|o| {
                    if *o == self.identity {
                        String::new()
                    } else {
                        o.clone()
                    }
                })
                .collect();
            if next != owners {
                let patch = json!({
                    "metadata": {
                        "resourceVersion": version,
                        "annotations": { OWNERS: serde_json::to_string(&next)? },
                    },
                });
                (self.leases)
                    .patch(
                        &self.owners_lease(),
                        &PatchParams::default(),
                        &Patch::Merge(patch),
                    )
                    .await?;
            }
            shards.hold([false; BUCKETS]);
            self.leases
                .delete(&self.lease, &DeleteParams::default())
                .await?;
            Ok::<_, Error>(())
        };
        match tokio::time::timeout(Duration::from_secs(5), given_back).await {
            Ok(Ok(())) => info!("gave the shards back"),
            Ok(Err(error)) => {
                warn!(%error, "could not give the shards back; they expire on their own")
            }
            Err(_) => warn!("no answer while giving the shards back; they expire on their own"),
        }
    }
}

/// [`plan`] for this replica's `shards`: buckets to give back stop taking new reconciles, and
/// are given back once none is in flight.
fn settle(shards: &Shards, owners: &[String], me: &str, live: &[String]) -> Vec<String> {
    plan(owners, me, live, |bucket, give_back| {
        if give_back {
            return shards.release(bucket);
        }
        shards.keep(bucket);
        false
    })
}

/// The buckets `owners` records as `me`'s.
fn held_by(owners: &[String], me: &str) -> Held {
    std::array::from_fn(|bucket| owners.get(bucket).is_some_and(|o| o == me))
}

fn empty_owners() -> String {
    serde_json::to_string(&vec![String::new(); BUCKETS]).unwrap_or_default()
}

/// The owners after one round of `me`'s, given `owners` as recorded and the `live` members
/// (sorted, `me` among them). For each bucket `me` holds, `decide(bucket, give_back)` is told
/// whether to give it back; when so, it stops new reconciles of it and says whether none is in
/// flight (only then is it given back).
fn plan(
    owners: &[String],
    me: &str,
    live: &[String],
    mut decide: impl FnMut(usize, bool) -> bool,
) -> Vec<String> {
    let assignment = assign(live);
    owners
        .iter()
        .enumerate()
        .map(|(bucket, owner)| {
            let wanted = assignment[bucket].map(|i| live[i].as_str());
            let mine = wanted == Some(me);
            if owner == me {
                // Held: kept, or given back once its reconciles are over.
                return match decide(bucket, !mine) {
                    true => String::new(),
                    false => owner.clone(),
                };
            }
            let free = owner.is_empty() || !live.iter().any(|m| m == owner);
            match (free, mine) {
                (true, true) => me.to_owned(),
                // A dead member's bucket is freed for the member it is assigned to.
                (true, false) => String::new(),
                (false, _) => owner.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "coordinate_tests.rs"]
mod tests;
