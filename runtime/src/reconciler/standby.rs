//! What a standby's watches trigger while it waits for the Lease. Its caches are warm, so every
//! change the leader makes reaches it too: each child the leader creates, each object it
//! reconciles. Queued as they come, those would wait for the Lease in the controller's queue,
//! and a new leader would start on thousands of objects the old one had reconciled, in the
//! order their events came, the change the failover is about behind them. So a standby holds
//! the objects triggered (once each); when it starts to lead, those whose status does not say
//! they were reconciled at their generation (new, changed, being deleted: the old leader did
//! not finish them) are queued at once, in the order they came. The others are left to the
//! catch-up on every object, which waits behind new work (`run::catch_up`).

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use futures::{Stream, StreamExt};
use kube::{
    Resource,
    runtime::{
        reflector::{ObjectRef, Store},
        watcher,
    },
};

use crate::{Leadership, lock};

/// The objects triggered while standing by, in the order they came; `None` once released (or
/// for a replica that leads from its start), when triggers pass straight through.
type Waiting<K> = Option<(HashSet<ObjectRef<K>>, Vec<ObjectRef<K>>)>;

/// The triggers a standby holds until it leads, and the cache of their kind.
pub(super) struct Held<K: Resource<DynamicType = ()> + 'static> {
    waiting: Arc<Mutex<Waiting<K>>>,
    /// Whether `waiting` may still hold anything: once released, every event of the
    /// controller's life passes without taking the lock.
    holding: Arc<AtomicBool>,
    cache: Store<K>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for Held<K> {
    fn clone(&self) -> Self {
        Self {
            waiting: self.waiting.clone(),
            holding: self.holding.clone(),
            cache: self.cache.clone(),
        }
    }
}

/// Held objects beyond twice the cache's size and this many are pruned of the deleted ones.
const SLACK: usize = 64;

impl<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> Held<K> {
    /// Holds triggers if this replica is a `standby`; a leader's pass through. `cache` is the
    /// reconciled kind's.
    pub(super) fn new(standby: bool, cache: Store<K>) -> Self {
        let waiting = standby.then(|| (HashSet::new(), Vec::new()));
        Self {
            waiting: Arc::new(Mutex::new(waiting)),
            holding: Arc::new(AtomicBool::new(standby)),
            cache,
        }
    }

    /// Whether `key` is held (kept for the release) rather than queued now.
    fn hold(&self, key: ObjectRef<K>) -> bool {
        if !self.holding.load(Ordering::Acquire) {
            return false;
        }
        let mut waiting = lock(&self.waiting);
        let Some((seen, order)) = &mut *waiting else {
            return false;
        };
        if seen.insert(key.clone()) {
            order.push(key);
        }
        // A standby may wait for weeks while objects come and go: the deleted ones leave the
        // cache, not this list, which is pruned of them once it has grown to twice the cache
        // (a linear pass, paid for by as many holds).
        if order.len() > 2 * self.cache.len() + SLACK {
            order.retain(|key| self.cache.get(key).is_some());
            *seen = order.iter().cloned().collect();
        }
        true
    }

    /// The changes of the reconciled kind that trigger, less those held.
    pub(super) fn objects(
        &self,
        triggers: impl Stream<Item = watcher::Result<K>> + Send + 'static,
    ) -> impl Stream<Item = watcher::Result<K>> + Send + 'static {
        let held = self.clone();
        triggers.filter(move |trigger| {
            let hold = match trigger {
                Ok(object) => held.hold(ObjectRef::from_obj(object)),
                Err(_) => false,
            };
            std::future::ready(!hold)
        })
    }

    /// The objects other watches queue (owners of changed children, mapped objects), less those
    /// held.
    pub(super) fn refs(
        &self,
        refs: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    ) -> impl Stream<Item = ObjectRef<K>> + Send + 'static {
        let held = self.clone();
        refs.filter(move |key| std::future::ready(!held.hold(key.clone())))
    }

    /// Once `leadership` leads: the held objects that `settled` does not say need nothing new,
    /// as the cache has them then (one deleted meanwhile is gone), in the order they came.
    /// From then on, nothing is held.
    pub(super) fn released(
        self,
        leadership: Leadership,
        settled: fn(&K) -> bool,
    ) -> impl Stream<Item = ObjectRef<K>> + Send + 'static {
        let cache = self.cache.clone();
        futures::stream::once(async move {
            leadership.leading().await;
            let waiting = lock(&self.waiting).take();
            self.holding.store(false, Ordering::Release);
            waiting.map(|(_, order)| order).unwrap_or_default()
        })
        .flat_map(futures::stream::iter)
        .filter(move |key| {
            let new_work = cache.get(key).is_some_and(|object| !settled(&object));
            std::future::ready(new_work)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{reflector, watcher::Event};

    use super::*;

    fn object(name: &str, settled: bool) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.to_owned());
        object.metadata.namespace = Some("default".to_owned());
        if settled {
            object.data = Some(Default::default());
        }
        object
    }

    /// Here a ConfigMap with data stands for an object whose status says it is reconciled.
    fn settled(object: &ConfigMap) -> bool {
        object.data.is_some()
    }

    fn names(keys: &[ObjectRef<ConfigMap>]) -> Vec<&str> {
        keys.iter().map(|key| key.name.as_str()).collect()
    }

    /// A standby queues nothing while it waits; when it leads, only what the old leader did not
    /// finish is queued, once each, in the order it came; then changes pass as they come.
    #[tokio::test]
    async fn a_standby_queues_only_unfinished_work_when_it_leads() {
        let leadership = Leadership::elected();
        let (cache, mut writer) = reflector::store();
        let held = Held::new(true, cache.clone());
        let (objects, sent) = futures::channel::mpsc::unbounded();
        let (refs, mapped) = futures::channel::mpsc::unbounded();
        let mut triggered = Box::pin(held.objects(sent));
        let mut mapped = Box::pin(held.refs(mapped));
        let released = held.clone().released(leadership.clone(), settled);
        let mut released = Box::pin(released);
        // The leader reconciled `done` and `owner` (their children changed, too); `changed` got a
        // new spec after the kill; `new` was never reconciled; `gone` was deleted meanwhile.
        let waits = [
            ("done", true),
            ("changed", false),
            ("owner", true),
            ("new", false),
            ("gone", false),
        ];
        for (name, is_settled) in waits {
            writer.apply_watcher_event(&Event::Apply(object(name, is_settled)));
            let _ = objects.unbounded_send(Ok(object(name, is_settled)));
        }
        let _ = refs.unbounded_send(ObjectRef::new("owner").within("default"));
        let _ = refs.unbounded_send(ObjectRef::new("new").within("default"));
        let _ = objects.unbounded_send(Ok(object("changed", false)));
        writer.apply_watcher_event(&Event::Delete(object("gone", false)));
        let none_yet = Duration::from_millis(50);
        let next = tokio::time::timeout(none_yet, triggered.next()).await;
        assert!(next.is_err(), "a standby's changes are held: {next:?}");
        let next = tokio::time::timeout(none_yet, mapped.next()).await;
        assert!(
            next.is_err(),
            "a standby's mapped objects are held: {next:?}"
        );
        let next = tokio::time::timeout(none_yet, released.next()).await;
        assert!(
            next.is_err(),
            "nothing is released before it leads: {next:?}"
        );

        leadership.lead_until(Instant::now() + Duration::from_secs(30));
        let queued: Vec<_> = released.collect().await;
        assert_eq!(names(&queued), ["changed", "new"]);
        let _ = objects.unbounded_send(Ok(object("done", true)));
        let _ = refs.unbounded_send(ObjectRef::new("owner").within("default"));
        let next = tokio::time::timeout(Duration::from_secs(5), triggered.next()).await;
        let name = next
            .ok()
            .flatten()
            .and_then(|o| o.ok())
            .and_then(|o| o.metadata.name);
        assert_eq!(name.as_deref(), Some("done"), "a leader's changes pass");
        let next = tokio::time::timeout(Duration::from_secs(5), mapped.next()).await;
        let name = next.ok().flatten().map(|key| key.name);
        assert_eq!(
            name.as_deref(),
            Some("owner"),
            "a leader's mapped objects pass"
        );
    }

    /// A replica that leads from its start holds nothing and releases nothing.
    #[tokio::test]
    async fn a_leader_holds_nothing() {
        let (cache, _writer) = reflector::store::<ConfigMap>();
        let held = Held::new(false, cache);
        let passed: Vec<_> = held
            .refs(futures::stream::iter([
                ObjectRef::new("a").within("default")
            ]))
            .collect()
            .await;
        assert_eq!(names(&passed), ["a"]);
        let released: Vec<_> = held
            .released(Leadership::default(), settled)
            .collect()
            .await;
        assert!(released.is_empty(), "{released:?}");
    }

    /// What a standby holds stays in proportion to its cache, however many objects come and
    /// go while it waits.
    #[tokio::test]
    async fn a_standby_forgets_what_was_deleted_while_it_waited() {
        let (cache, mut writer) = reflector::store::<ConfigMap>();
        let held = Held::new(true, cache.clone());
        writer.apply_watcher_event(&Event::Apply(object("kept", false)));
        assert!(held.hold(ObjectRef::from_obj(&object("kept", false))));
        for n in 0..10_000 {
            let gone = object(&format!("gone-{n}"), false);
            writer.apply_watcher_event(&Event::Apply(gone.clone()));
            assert!(held.hold(ObjectRef::from_obj(&gone)));
            writer.apply_watcher_event(&Event::Delete(gone));
        }
        let waiting = lock(&held.waiting);
        let (seen, order) = waiting.as_ref().expect("standing by");
        assert!(order.len() <= 2 + SLACK, "{} held", order.len());
        assert_eq!(seen.len(), order.len());
        assert_eq!(order.first().map(|key| key.name.as_str()), Some("kept"));
    }
}
