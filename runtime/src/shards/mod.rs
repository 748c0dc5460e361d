//! Replicas that share the work by shards (`--shards auto`), instead of one leader doing it
//! all while the others wait.
//!
//! The hash space of one metadata field ([`Key`]) is cut into [`BUCKETS`] buckets. Each replica
//! holds a Lease of its own (membership); every replica computes the same assignment of the
//! buckets to the live members (`assign`); who holds a bucket is recorded in one more Lease,
//! changed only with the version read, so that no bucket ever has two holders
//! (`coordinate`). A replica reconciles an object only while it holds the object's bucket,
//! and writes only while its membership Lease is current ([`crate::Leadership`], as a leader's
//! writes are fenced); it gives a bucket up only once the reconciles of it in flight are over.
//!
//! The objects a controller reconciles are hashed by UID. Its watch of them asks the API server
//! for the held ranges only (`shardSelector`, KEP-5866, behind the `ShardedListAndWatch`
//! feature gate), so a replica lists and decodes its share alone; where the API server does not
//! filter, the replica filters the events itself (correct, without that saving). Children are
//! hashed by their controller owner's UID, so they fall in their owner's bucket; the API server
//! cannot hash that, so each replica filters its children's events before caching them.
//!
//! Why not the namespace, which the API server can hash and which a namespaced owner shares
//! with its children: FNV-1a's top bits hardly depend on a value's last characters, and the
//! buckets are cut from the top down, so namespaces named `tenant-1` … `tenant-1000` fall in a
//! few of the 60 buckets, and one namespace holds all its objects in one. UIDs are random.

pub(crate) mod assign;
pub(crate) mod coordinate;
pub(crate) mod follow;
pub(crate) mod hash;
pub(crate) mod selector;
pub(crate) mod watch;

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use kube::Resource;

pub use hash::BUCKETS;

use crate::lock;

/// The label of each child with shards: its owner's bucket (`0` to `59`). A replica's watch of
/// children excludes the buckets it does not hold (`kopgen.io/shard notin (…)`), so the API
/// server filters children without any feature gate; children written before shards were on,
/// without the label, are sent to every replica, which filters them itself, until their next
/// apply labels them.
pub const SHARD_LABEL: &str = "kopgen.io/shard";

/// The bucket of an object whose UID (or whose owner's) is `uid`.
pub(crate) fn bucket_of_uid(uid: &str) -> usize {
    hash::bucket_of(hash::fnv1a(uid))
}

/// Which buckets a replica holds: one flag per bucket.
pub type Held = [bool; BUCKETS];

/// What an object is hashed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `metadata.uid`: the objects a controller reconciles.
    Uid,
    /// The UID of the object's controller owner: children, so that they fall in their
    /// owner's bucket. The API server cannot filter by it.
    OwnerUid,
}

impl Key {
    /// The field the API server hashes for this key, if it can.
    pub(crate) fn field(self) -> Option<&'static str> {
        match self {
            Key::Uid => Some("object.metadata.uid"),
            Key::OwnerUid => None,
        }
    }

    /// The bucket `object` falls in.
    pub fn bucket<K: Resource>(self, object: &K) -> usize {
        let meta = object.meta();
        let value = match self {
            Key::Uid => meta.uid.as_deref(),
            Key::OwnerUid => meta.owner_references.iter().flatten().find_map(|owner| {
                owner
                    .controller
                    .unwrap_or(false)
                    .then_some(owner.uid.as_str())
            }),
        };
        bucket_of_uid(value.unwrap_or_default())
    }
}

/// This replica's share of the work: the buckets it holds, the reconciles in flight in each,
/// and whether the API server filters watches for it. Shared by the coordinator, which moves
/// buckets, and the controllers, which follow them. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Shards {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// What the watches follow: a bucket gained is listed, one given up leaves the caches.
    held: tokio::sync::watch::Sender<Held>,
    /// Per bucket, how many times this replica gained it: part of what triggers a reconcile,
    /// so that every object of a bucket taken over is reconciled once by its new holder even
    /// when this replica had seen that object before.
    epochs: [AtomicU64; BUCKETS],
    /// Whether the API server filters list and watch by `shardSelector`.
    server_side: AtomicBool,
    /// Wakes the coordinator waiting for a bucket's reconciles to end.
    drained: tokio::sync::Notify,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            held: tokio::sync::watch::channel([false; BUCKETS]).0,
            epochs: std::array::from_fn(|_| AtomicU64::new(0)),
            server_side: AtomicBool::new(false),
            drained: tokio::sync::Notify::new(),
        }
    }
}

#[derive(Debug)]
struct State {
    held: Held,
    /// Held buckets being given up: no new reconcile starts in them.
    releasing: Held,
    in_flight: [u32; BUCKETS],
}

impl Default for State {
    fn default() -> Self {
        Self {
            held: [false; BUCKETS],
            releasing: [false; BUCKETS],
            in_flight: [0; BUCKETS],
        }
    }
}

/// A reconcile in flight in a bucket; the bucket is not given up before it is dropped.
#[derive(Debug)]
pub struct InFlight {
    shards: Shards,
    bucket: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = lock(&self.shards.inner.state);
        state.in_flight[self.bucket] = state.in_flight[self.bucket].saturating_sub(1);
        drop(state);
        self.shards.inner.drained.notify_waiters();
    }
}

impl Shards {
    /// Starts a reconcile in `bucket`: `None` unless this replica holds it and is not giving
    /// it up.
    pub fn enter(&self, bucket: usize) -> Option<InFlight> {
        let mut state = lock(&self.inner.state);
        let open = *state.held.get(bucket)? && !state.releasing[bucket];
        if !open {
            return None;
        }
        state.in_flight[bucket] += 1;
        Some(InFlight {
            shards: self.clone(),
            bucket,
        })
    }

    /// The buckets held now, and their changes.
    pub fn held(&self) -> tokio::sync::watch::Receiver<Held> {
        self.inner.held.subscribe()
    }

    /// How many times this replica gained `bucket`.
    pub(crate) fn epoch(&self, bucket: usize) -> u64 {
        (self.inner.epochs.get(bucket)).map_or(0, |e| e.load(Ordering::Acquire))
    }

    /// Whether the API server filters watches by `shardSelector`.
    pub fn server_side(&self) -> bool {
        self.inner.server_side.load(Ordering::Acquire)
    }

    pub(crate) fn set_server_side(&self, server_side: bool) {
        self.inner.server_side.store(server_side, Ordering::Release);
    }

    /// Stops new reconciles in `bucket` (to be given up); `true` once none is in flight.
    pub(crate) fn release(&self, bucket: usize) -> bool {
        let mut state = lock(&self.inner.state);
        state.releasing[bucket] = true;
        state.in_flight[bucket] == 0
    }

    /// `bucket` stays. If it was being given up, the objects whose reconciles were turned away
    /// meanwhile are reconciled again: a new epoch, and the caches apply its objects again.
    pub(crate) fn keep(&self, bucket: usize) {
        let was_releasing = std::mem::take(&mut lock(&self.inner.state).releasing[bucket]);
        if was_releasing {
            self.inner.epochs[bucket].fetch_add(1, Ordering::AcqRel);
            self.inner.held.send_modify(|_| ());
        }
    }

    /// Waits until no reconcile is in flight in a bucket being given up, or `limit` passes.
    pub(crate) async fn drained(&self, limit: std::time::Duration) {
        let drained = self
            .until(|state| (0..BUCKETS).all(|b| !state.releasing[b] || state.in_flight[b] == 0));
        let _ = tokio::time::timeout(limit, drained).await;
    }

    /// Waits until no reconcile is in flight in any bucket.
    pub(crate) async fn idle(&self) {
        self.until(|state| state.in_flight.iter().all(|n| *n == 0))
            .await;
    }

    /// Waits until `done` holds of the state, looked at again as each reconcile ends.
    async fn until(&self, done: impl Fn(&State) -> bool) {
        loop {
            let notified = self.inner.drained.notified();
            if done(&lock(&self.inner.state)) {
                return;
            }
            notified.await;
        }
    }

    /// This replica holds `held` now, as recorded in the cluster. Buckets gained get a new
    /// epoch before the watches hear of them.
    pub(crate) fn hold(&self, held: Held) {
        let mut state = lock(&self.inner.state);
        for (bucket, &now) in held.iter().enumerate() {
            if now && !state.held[bucket] {
                self.inner.epochs[bucket].fetch_add(1, Ordering::AcqRel);
            }
            if !now {
                state.releasing[bucket] = false;
            }
        }
        state.held = held;
        drop(state);
        self.inner.held.send_if_modified(|current| {
            let changed = *current != held;
            *current = held;
            changed
        });
    }

    /// The buckets held now.
    pub(crate) fn holding(&self) -> Held {
        lock(&self.inner.state).held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_start_only_in_held_buckets_that_are_not_being_given_up() {
        let shards = Shards::default();
        assert!(shards.enter(3).is_none(), "not held");
        assert!(shards.enter(BUCKETS).is_none(), "no such bucket");
        let mut held = [false; BUCKETS];
        held[3] = true;
        shards.hold(held);
        assert_eq!(shards.epoch(3), 1);
        let in_flight = shards.enter(3).expect("held");
        assert!(!shards.release(3), "one reconcile in flight");
        assert!(
            shards.enter(3).is_none(),
            "none starts while it is given up"
        );
        drop(in_flight);
        assert!(shards.release(3), "drained");
        let mut watches = shards.held();
        watches.mark_unchanged();
        shards.keep(3);
        assert_eq!(
            shards.epoch(3),
            2,
            "kept after all: what was turned away is looked at again"
        );
        assert!(
            watches.has_changed().unwrap_or(false),
            "the caches hear of it"
        );
        assert!(shards.enter(3).is_some());
        shards.hold([false; BUCKETS]);
        assert!(shards.enter(3).is_none());
        shards.hold(held);
        assert_eq!(shards.epoch(3), 3, "gained again: a new epoch");
    }

    #[tokio::test]
    async fn giving_a_bucket_up_waits_for_its_reconciles() {
        let shards = Shards::default();
        let mut held = [false; BUCKETS];
        held[0] = true;
        shards.hold(held);
        let in_flight = shards.enter(0).expect("held");
        shards.release(0);
        let waiting = tokio::spawn({
            let shards = shards.clone();
            async move { shards.drained(std::time::Duration::from_secs(10)).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the reconcile is still in flight");
        drop(in_flight);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joins");
    }

    #[test]
    fn children_fall_in_their_owners_bucket() {
        use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
        let owner: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "tenant", "uid": "0e4c5a3d-uid" }
        }))
        .expect("a Namespace");
        let child: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "c", "namespace": "elsewhere", "ownerReferences": [
                { "apiVersion": "v1", "kind": "Namespace", "name": "tenant",
                  "uid": "0e4c5a3d-uid", "controller": true }
            ]}
        }))
        .expect("a ConfigMap");
        assert_eq!(Key::Uid.bucket(&owner), Key::OwnerUid.bucket(&child));
    }

    /// Why objects are not sharded by namespace, though the API server can hash it.
    #[test]
    fn namespaces_named_in_sequence_crowd_into_a_few_buckets() {
        let buckets: std::collections::BTreeSet<usize> = (1..=1000)
            .map(|i| hash::bucket_of(hash::fnv1a(&format!("tenant-{i}"))))
            .collect();
        assert!(buckets.len() <= 16, "{} buckets", buckets.len());
    }
}
