//! One cache that follows the buckets a replica holds, fed by several watches, each of some of
//! them, so that a change of buckets lists only what moved:
//! - a bucket gained is listed by a watch of its own (of all the buckets gained at that change);
//! - a bucket given up leaves the cache at once (a `Delete` of each of its cached objects), and
//!   the watch that brought it in keeps running for its other buckets: it is told that it
//!   covers fewer ([`Covered`]), so that it asks the API server for fewer from where it was,
//!   without a list (`selector`), and its events of the bucket given up that were already on
//!   their way are dropped here (a watch whose every bucket is given up stops);
//! - a bucket kept after all, whose reconciles were turned away while it was being given up
//!   (a new epoch), has its cached objects applied again, so that they are reconciled again,
//!   without a list.
//!
//! The watches are disjoint (each drops the buckets it does not cover), so no object ever comes
//! from two of them. A cache of kube's takes a list whole, replacing what it held: so only the
//! first list, before any change, reaches the cache as a list; every later one (a watch of
//! buckets gained, or any watch listing again after it expired) reaches it as the `Apply` of
//! each object listed, then the `Delete` of each object of its buckets that the list no longer
//! has, as client-go's informers replace. How many watches a replica runs is bounded by its
//! changes of buckets, and by [`BUCKETS`]. A watch that ends (kube's never do: they retry) is
//! started again for its buckets, so that no held bucket is ever left unwatched.

use std::collections::{HashMap, HashSet, VecDeque};

use futures::{StreamExt, stream::BoxStream};
use kube::{
    Resource,
    runtime::watcher::{self, Event},
};
use tokio_stream::StreamMap;

use super::{BUCKETS, Held, Key, Shards};

/// The events of one watch, or of the cache they feed.
pub(crate) type Events<K> = BoxStream<'static, watcher::Result<Event<K>>>;

/// The buckets a watch covers, as it is told of them: they only ever shrink.
pub(crate) type Covered = tokio::sync::watch::Receiver<Held>;

/// The cached objects for which a test holds, decoded: how a bucket given up leaves the cache,
/// and how a bucket kept after all is applied again.
pub(crate) type Cached<K> = Box<dyn Fn(&dyn Fn(&K) -> bool) -> Vec<K> + Send>;

/// The events that keep a cache of the objects (by `key`) in the buckets `shards` holds: `start`
/// starts a watch of the buckets it is given, which may shrink later; `cached` reads the cache
/// these events fill.
pub(crate) fn follow<K>(
    shards: Shards,
    key: Key,
    start: impl Fn(&Covered) -> Events<K> + Send + 'static,
    cached: Cached<K>,
) -> Events<K>
where
    K: Resource + Send + 'static,
{
    let following = Following {
        held: shards.held(),
        shards,
        key,
        start,
        cached,
        watches: StreamMap::new(),
        parts: HashMap::new(),
        next: 0,
        filled: false,
        started: false,
        epochs: [0; BUCKETS],
        out: VecDeque::new(),
    };
    futures::stream::unfold(following, |mut state| async move {
        loop {
            if let Some(event) = state.out.pop_front() {
                return Some((event, state));
            }
            if !state.started {
                state.restart();
                continue;
            }
            let watching = !state.watches.is_empty();
            tokio::select! {
                changed = state.held.changed() => {
                    changed.ok()?;
                    state.change();
                }
                Some((part, event)) = state.watches.next(), if watching => match event {
                    Some(event) => state.receive(part, event),
                    None => state.ended(part),
                }
            }
        }
    })
    .boxed()
}

/// The object key a list is compared with the cache by.
type Name = (Option<String>, Option<String>);

fn name_of<K: Resource>(object: &K) -> Name {
    let meta = object.meta();
    (meta.namespace.clone(), meta.name.clone())
}

/// What one watch covers.
struct Part {
    /// The buckets whose events it passes, and that it asks for: those it was started with and
    /// still held.
    covered: tokio::sync::watch::Sender<Held>,
    /// The objects of the list it is receiving, if it is listing.
    listed: Option<HashSet<Name>>,
}

struct Following<K, S> {
    held: tokio::sync::watch::Receiver<Held>,
    shards: Shards,
    key: Key,
    /// Starts a watch of some buckets.
    start: S,
    cached: Cached<K>,
    /// Each watch's events, then `None` when it ends.
    watches: StreamMap<usize, BoxStream<'static, Option<watcher::Result<Event<K>>>>>,
    parts: HashMap<usize, Part>,
    next: usize,
    /// Whether the cache had its first list: until then, a change starts it again.
    filled: bool,
    started: bool,
    /// Per bucket, its epoch (see [`Shards::epoch`]) when its objects were last delivered.
    epochs: [u64; BUCKETS],
    /// Events to pass on before any other.
    out: VecDeque<watcher::Result<Event<K>>>,
}

impl<K, S> Following<K, S>
where
    K: Resource + Send + 'static,
    S: Fn(&Covered) -> Events<K>,
{
    /// Starts the first list, of every bucket held, again.
    fn restart(&mut self) {
        self.started = true;
        let held = *self.held.borrow_and_update();
        self.watches.clear();
        self.parts.clear();
        self.epochs = std::array::from_fn(|bucket| self.shards.epoch(bucket));
        if !held.contains(&true) {
            // Nothing held: nothing to list, and the (empty) cache is filled.
            self.out.extend([Ok(Event::Init), Ok(Event::InitDone)]);
            self.filled = true;
            return;
        }
        self.watch(held);
    }

    fn watch(&mut self, buckets: Held) {
        let part = self.next;
        self.next += 1;
        let (covered, told) = tokio::sync::watch::channel(buckets);
        let events = (self.start)(&told)
            .map(Some)
            .chain(futures::stream::once(async { None }));
        self.watches.insert(part, events.boxed());
        let listed = None;
        self.parts.insert(part, Part { covered, listed });
    }

    /// Follows a change of the held buckets.
    fn change(&mut self) {
        if !self.filled {
            self.started = false;
            return;
        }
        let held = *self.held.borrow_and_update();
        let (mut covered, mut lost) = ([false; BUCKETS], [false; BUCKETS]);
        for part in self.parts.values() {
            part.covered.send_if_modified(|buckets| {
                let mut fewer = false;
                for bucket in 0..BUCKETS {
                    if buckets[bucket] {
                        covered[bucket] = held[bucket];
                        lost[bucket] = !held[bucket];
                        buckets[bucket] = held[bucket];
                        fewer |= !held[bucket];
                    }
                }
                fewer
            });
        }
        let ended: Vec<usize> = (self.parts.iter())
            .filter(|(_, part)| !part.covered.borrow().contains(&true))
            .map(|(&id, _)| id)
            .collect();
        for id in ended {
            self.parts.remove(&id);
            self.watches.remove(&id);
        }
        let epochs: [u64; BUCKETS] = std::array::from_fn(|bucket| self.shards.epoch(bucket));
        let again: Held = std::array::from_fn(|b| covered[b] && epochs[b] != self.epochs[b]);
        self.epochs = epochs;
        let key = self.key;
        // A read of the cache decodes what it holds (children are kept as JSON): only when
        // some bucket asks for it.
        if lost.contains(&true) {
            let gone = (self.cached)(&|object| lost[key.bucket(object)]);
            self.out
                .extend(gone.into_iter().map(|o| Ok(Event::Delete(o))));
        }
        if again.contains(&true) {
            let applied = (self.cached)(&|object| again[key.bucket(object)]);
            self.out
                .extend(applied.into_iter().map(|o| Ok(Event::Apply(o))));
        }
        let gained: Held = std::array::from_fn(|b| held[b] && !covered[b]);
        if gained.contains(&true) {
            self.watch(gained);
        }
    }

    /// Watches again the buckets of watch `part`, which ended: the first list from the start;
    /// later, a watch of its buckets whose list replaces them as any later list does.
    fn ended(&mut self, part: usize) {
        let Some(Part { covered, .. }) = self.parts.remove(&part) else {
            return;
        };
        if self.filled {
            let buckets = *covered.borrow();
            self.watch(buckets);
        } else {
            self.started = false;
        }
    }

    /// Passes on what watch `part` sent, if it is of the buckets the watch covers.
    fn receive(&mut self, part: usize, event: watcher::Result<Event<K>>) {
        let Some(Part { covered, listed }) = self.parts.get_mut(&part) else {
            return;
        };
        let buckets = *covered.borrow();
        let covers = |object: &K| buckets[self.key.bucket(object)];
        if !self.filled {
            // The first list: as it comes (one watch, started with every bucket held).
            let event = match event {
                Ok(Event::InitApply(o) | Event::Apply(o) | Event::Delete(o)) if !covers(&o) => {
                    return;
                }
                Ok(Event::InitDone) => {
                    self.filled = true;
                    Ok(Event::InitDone)
                }
                other => other,
            };
            self.out.push_back(event);
            return;
        }
        match event {
            Ok(Event::Init) => *listed = Some(HashSet::new()),
            Ok(Event::InitApply(object)) if covers(&object) => {
                listed.get_or_insert_default().insert(name_of(&object));
                self.out.push_back(Ok(Event::Apply(object)));
            }
            Ok(Event::InitDone) => {
                let listed = listed.take().unwrap_or_default();
                let key = self.key;
                let gone = (self.cached)(&|object| {
                    buckets[key.bucket(object)] && !listed.contains(&name_of(object))
                });
                self.out
                    .extend(gone.into_iter().map(|o| Ok(Event::Delete(o))));
            }
            Ok(Event::Apply(object) | Event::Delete(object)) if !covers(&object) => {}
            Ok(Event::InitApply(_)) => {}
            other => self.out.push_back(other),
        }
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
