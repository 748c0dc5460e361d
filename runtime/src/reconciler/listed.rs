//! The objects a list brings that already say they were reconciled at their generation wait
//! behind new work. A list brings every object of its range at once: a manager's first (at its
//! start, or a new leader's without a warm cache), a watch's list again after it fell behind,
//! the buckets a shard gains from a replica that left. Most of them need nothing new; the one
//! changed meanwhile (a spec written while no replica held its bucket) would wait behind all
//! of them. controller-runtime's priority queue does the same (`WithLowPriorityWhenUnchanged`,
//! its default since v0.23): a list's objects join behind new events. What counts as unchanged
//! here is what the object's status says (its `observedGeneration` and its `Ready` condition's),
//! not what this replica saw before: a shard's takeover lists objects it never saw.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
};

use futures::{Stream, StreamExt};
use kube::{
    Resource,
    runtime::{
        reflector::{ObjectRef, Store},
        watcher::{self, Event},
    },
};

use super::priority::{Room, behind_new_work};
use crate::lock;

/// The objects a list brought that no trigger has looked at since: told by the events on
/// their way to the cache, read by the triggers after it.
pub(super) struct Listed<K: Resource<DynamicType = ()>>(Arc<Mutex<HashSet<ObjectRef<K>>>>);

impl<K: Resource<DynamicType = ()>> Clone for Listed<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K: Resource<DynamicType = ()>> Default for Listed<K> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Listed<K> {
    /// Notes `event` before `cache` applies it. A list's object is listed; so is an object
    /// applied that the cache does not hold yet (a shard's list of buckets gained reaches the
    /// cache as such applies; a new object's status says nothing yet, so it never waits). A
    /// change of an object the cache holds, or its deletion, is no list's.
    pub(super) fn note(&self, event: &Event<K>, cache: &Store<K>) {
        match event {
            Event::InitApply(object) => {
                lock(&self.0).insert(ObjectRef::from_obj(object));
            }
            Event::Apply(object) => {
                let key = ObjectRef::from_obj(object);
                match cache.get(&key) {
                    None => lock(&self.0).insert(key),
                    Some(_) => lock(&self.0).remove(&key),
                };
            }
            Event::Delete(object) => {
                lock(&self.0).remove(&ObjectRef::from_obj(object));
            }
            Event::Init | Event::InitDone => {}
        }
    }

    /// Whether `object` was listed and no trigger has looked at it since; it no longer is.
    fn take(&self, object: &K) -> bool {
        lock(&self.0).remove(&ObjectRef::from_obj(object))
    }
}

/// `triggers`, with the listed objects that `settled` says need nothing new taken out and given
/// back, as their `cache` has them then (an object deleted meanwhile is not), once there is
/// room in the queue. A change of one of them meanwhile triggers at once, as any change does.
pub(super) fn settled_last<K>(
    triggers: impl Stream<Item = watcher::Result<K>> + Send + 'static,
    listed: Listed<K>,
    settled: fn(&K) -> bool,
    cache: Store<K>,
    room: Room,
) -> impl Stream<Item = watcher::Result<K>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let (later, waiting) = futures::channel::mpsc::unbounded();
    let now = triggers.filter_map(move |trigger| {
        let waits = match &trigger {
            Ok(object) => listed.take(object) && settled(object),
            Err(_) => false,
        };
        let now = match (&trigger, waits) {
            (Ok(object), true) => {
                // Closed only once the controller stopped.
                let _ = later.unbounded_send(ObjectRef::from_obj(object));
                None
            }
            _ => Some(trigger),
        };
        std::future::ready(now)
    });
    let admitted = behind_new_work(waiting, room)
        .filter_map(move |key| std::future::ready(cache.get(&key).map(|o| Ok((*o).clone()))));
    // Ends with the triggers (the controller stopped): what still waits is no one's.
    let now = now
        .map(Some)
        .chain(futures::stream::once(std::future::ready(None)));
    futures::stream::select(now, admitted.map(Some))
        .take_while(|trigger| std::future::ready(trigger.is_some()))
        .filter_map(std::future::ready)
}

#[cfg(test)]
mod tests {
    use std::{
        sync::atomic::{AtomicUsize, Ordering},
        time::Duration,
    };

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::{
        api::ObjectMeta,
        runtime::reflector::{self, store::Writer},
    };

    use super::*;

    /// A ConfigMap `name`, at version `version`, that says it needs nothing new if `settled`.
    fn map(name: &str, version: &str, settled: bool) -> ConfigMap {
        let data = [("settled".to_owned(), settled.to_string())];
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            data: Some(data.into_iter().collect()),
            ..ConfigMap::default()
        }
    }

    fn settled(map: &ConfigMap) -> bool {
        map.data.as_ref().is_some_and(|d| d["settled"] == "true")
    }

    /// The trigger's name and version.
    fn named(trigger: Option<watcher::Result<ConfigMap>>) -> String {
        let meta = trigger.expect("a trigger").expect("an object").metadata;
        let (name, version) = (meta.name.unwrap_or_default(), meta.resource_version);
        format!("{name}@{}", version.unwrap_or_default())
    }

    /// A cache, and what its watch noted as listed.
    struct Watched {
        listed: Listed<ConfigMap>,
        store: Store<ConfigMap>,
        writer: Writer<ConfigMap>,
    }

    impl Watched {
        fn new() -> Self {
            let (store, writer) = reflector::store();
            let listed = Listed::default();
            Self {
                listed,
                store,
                writer,
            }
        }

        /// `events` on their way to the cache, as the controller's watch notes them.
        fn receive(&mut self, events: Vec<Event<ConfigMap>>) {
            for event in events {
                self.listed.note(&event, &self.store);
                self.writer.apply_watcher_event(&event);
            }
        }
    }

    /// After a list, what changed goes first: the listed object that says it needs nothing
    /// new waits for room, and comes as the cache has it then; a listed object not settled,
    /// and any other trigger, do not wait.
    #[tokio::test(start_paused = true)]
    async fn a_lists_settled_objects_wait_behind_what_changed() {
        let (a, b) = (map("a", "1", true), map("b", "1", false));
        let mut watched = Watched::new();
        let list = [a.clone(), b.clone()].map(Event::InitApply);
        watched.receive([vec![Event::Init], list.into(), vec![Event::InitDone]].concat());
        let queued = Arc::new(AtomicUsize::new(1));
        let waiting = {
            let queued = queued.clone();
            move || queued.load(Ordering::SeqCst)
        };
        let left = Arc::new(tokio::sync::Notify::new());
        let room = Room::new(1, waiting, left.clone());
        let (sender, triggers) = futures::channel::mpsc::unbounded();
        let (listed, store) = (watched.listed.clone(), watched.store.clone());
        let mut out = Box::pin(settled_last(triggers, listed, settled, store, room));
        for object in [a, b, map("c", "1", true)] {
            sender.unbounded_send(Ok(object)).expect("sends");
        }
        assert_eq!(named(out.next().await), "b@1");
        assert_eq!(named(out.next().await), "c@1", "not listed: a change");
        let none = tokio::time::timeout(Duration::from_secs(60), out.next()).await;
        assert!(none.is_err(), "a waits while the queue is full");
        watched.receive(vec![Event::Apply(map("a", "2", true))]);
        queued.store(0, Ordering::SeqCst);
        left.notify_waiters();
        assert_eq!(named(out.next().await), "a@2", "as cached when it joins");
        drop(sender);
        assert!(out.next().await.is_none(), "ends with the triggers");
    }

    /// A shard's list of buckets gained reaches the cache as applies: an object the cache did
    /// not hold is listed; a change of one it holds is not, nor is one deleted.
    #[test]
    fn an_object_new_to_the_cache_is_listed_and_a_change_or_deletion_is_not() {
        let mut watched = Watched::new();
        let held = map("held", "1", true);
        watched.receive(vec![Event::Init, Event::InitApply(held), Event::InitDone]);
        watched.receive(vec![Event::Apply(map("held", "2", true))]);
        assert!(!watched.listed.take(&map("held", "2", true)), "a change");
        watched.receive(vec![Event::Apply(map("gained", "1", true))]);
        assert!(watched.listed.take(&map("gained", "1", true)), "new to it");
        assert!(
            !watched.listed.take(&map("gained", "1", true)),
            "taken once"
        );
        watched.receive(vec![Event::Apply(map("gone", "1", true))]);
        watched.receive(vec![Event::Delete(map("gone", "1", true))]);
        assert!(!watched.listed.take(&map("gone", "1", true)), "deleted");
    }
}
