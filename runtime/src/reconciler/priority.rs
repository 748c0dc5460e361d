//! What waits behind new work: the periodic resync of every cached object, the retries of
//! failed reconciles, and a list's objects that need nothing new (`listed`).
//! controller-runtime's priority queue (its default since v0.23) puts them behind new events;
//! kube-runtime's scheduler has no priorities, so each joins the queue only while fewer than
//! `room` objects wait there, a retry once its backoff delay is over. New events and the owners
//! of changed children go straight in, and so are never behind a whole resync, a list or a wave
//! of retries after an outage.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{Stream, StreamExt};
use tokio::sync::Notify;

use crate::backoff::jittered;

/// How often what waits for room looks at the queue again, should an object's leaving it go
/// unseen (each leave wakes it: see [`Room`]).
const POLL: Duration = Duration::from_millis(100);

/// A tick every `period`, each up to 10% later (drawn per tick, as controller-runtime jitters
/// its `SyncPeriod`), the first one a period after the start.
pub(super) fn ticks(period: Duration) -> impl Stream<Item = ()> + Send + 'static {
    futures::stream::unfold(0_u64, move |tick| async move {
        tokio::time::sleep(jittered(period, &tick.to_string())).await;
        Some(((), tick + 1))
    })
}

/// Room in a controller's queue for what waits behind new work: it may join while fewer than
/// `room` objects wait (`waiting` counts them). It is looked at again each time an object
/// leaves the queue (`left`), so that what waits follows the workers' pace: looked at only at
/// intervals, one reconcile at a time would take in a few objects per interval.
#[derive(Clone)]
pub(super) struct Room {
    room: usize,
    waiting: Arc<dyn Fn() -> usize + Send + Sync>,
    left: Arc<Notify>,
}

impl Room {
    /// Room for `room` objects (at least one) while `waiting` counts the queue's.
    pub(super) fn new(
        room: usize,
        waiting: impl Fn() -> usize + Send + Sync + 'static,
        left: Arc<Notify>,
    ) -> Self {
        let waiting = Arc::new(waiting);
        let room = room.max(1);
        Self {
            room,
            waiting,
            left,
        }
    }

    /// Returns once fewer than `room` objects wait.
    async fn made(&self) {
        loop {
            // Listening before looking, so that a leave in between is not missed.
            let left = self.left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            if (self.waiting)() < self.room {
                return;
            }
            let _ = tokio::time::timeout(POLL, left).await;
        }
    }
}

/// `objects`, each let through only once there is room in the queue.
pub(super) fn behind_new_work<T: Send + 'static>(
    objects: impl Stream<Item = T> + Send + 'static,
    room: Room,
) -> impl Stream<Item = T> + Send + 'static {
    objects.then(move |object| {
        let room = room.clone();
        async move {
            room.made().await;
            object
        }
    })
}

/// Retries to make: each sent with its delay, and given back once the delay is over (all
/// delays run at once) and there is room in the queue for it besides the other due retries
/// (the queue counts a due retry: it is in the queue's books from its failure on, as client-go's
/// rate-limited adds are). What it holds is bounded by the objects that failed: an object is
/// retried once per failure.
pub(super) struct Retries<T>(futures::channel::mpsc::UnboundedSender<(T, Duration)>);

impl<T: Send + 'static> Retries<T> {
    /// The sender, and the retries as they may enter the queue.
    pub(super) fn new(room: Room) -> (Self, impl Stream<Item = T> + Send + 'static) {
        let (sender, sent) = futures::channel::mpsc::unbounded();
        let due = Arc::new(AtomicUsize::new(0));
        let counted = due.clone();
        let fallen_due = sent.flat_map_unordered(None, move |(item, delay)| {
            let due = counted.clone();
            futures::stream::once(async move {
                tokio::time::sleep(delay).await;
                due.fetch_add(1, Ordering::AcqRel);
                item
            })
            .boxed()
        });
        let others = {
            let (due, waiting) = (due.clone(), room.waiting.clone());
            move || waiting().saturating_sub(due.load(Ordering::Acquire))
        };
        let room = Room::new(room.room, others, room.left);
        let admitted = behind_new_work(fallen_due, room).inspect(move |_| {
            due.fetch_sub(1, Ordering::AcqRel);
        });
        (Self(sender), admitted)
    }

    /// Retries `item` after `delay`.
    pub(super) fn send(&self, item: T, delay: Duration) {
        // Closed only once the controller stopped: nothing is left to retry.
        let _ = self.0.unbounded_send((item, delay));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    /// While the queue holds new work, no resync object joins it; as it drains, they come.
    #[tokio::test(start_paused = true)]
    async fn a_resync_waits_for_room_in_the_queue() {
        let queued = Arc::new(AtomicUsize::new(5));
        let waiting = {
            let queued = queued.clone();
            move || queued.load(Ordering::SeqCst)
        };
        let objects = futures::stream::iter(vec![1, 2, 3]);
        let room = Room::new(2, waiting, Arc::default());
        let mut resync = Box::pin(behind_new_work(objects, room));
        let first = tokio::time::timeout(Duration::from_secs(10), resync.next()).await;
        assert!(first.is_err(), "nothing while five objects wait");
        queued.store(1, Ordering::SeqCst);
        let all: Vec<_> = resync.collect().await;
        assert_eq!(all, [1, 2, 3]);
    }

    /// Each retry comes back once its own delay is over, however many wait at once, and a
    /// due retry does not wait for itself (the queue counts it): only for other work.
    #[tokio::test(start_paused = true)]
    async fn retries_fall_due_each_after_its_delay_and_wait_for_other_work() {
        let queued = Arc::new(AtomicUsize::new(0));
        let waiting = {
            let queued = queued.clone();
            move || queued.load(Ordering::SeqCst)
        };
        let (retries, due) = Retries::new(Room::new(1, waiting, Arc::default()));
        let mut due = Box::pin(due);
        retries.send("slow", Duration::from_secs(10));
        retries.send("fast", Duration::from_secs(1));
        let started = tokio::time::Instant::now();
        // Due, and in the queue's books (as the queue counts an object due): not other work.
        queued.store(1, Ordering::SeqCst);
        assert_eq!(due.next().await, Some("fast"));
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        queued.store(0, Ordering::SeqCst);
        assert_eq!(due.next().await, Some("slow"));
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        // New work waits: a due retry does not enter before it.
        queued.store(3, Ordering::SeqCst);
        retries.send("held", Duration::from_secs(1));
        let held = tokio::time::timeout(Duration::from_secs(30), due.next()).await;
        assert!(held.is_err(), "two others wait: the retry waits");
        queued.store(1, Ordering::SeqCst);
        assert_eq!(due.next().await, Some("held"));
    }

    /// What waits joins as soon as an object leaves the queue, not at the next look: one
    /// reconcile at a time takes in the objects at its own pace.
    #[tokio::test(start_paused = true)]
    async fn what_waits_joins_as_an_object_leaves_the_queue() {
        let queued = Arc::new(AtomicUsize::new(1));
        let waiting = {
            let queued = queued.clone();
            move || queued.load(Ordering::SeqCst)
        };
        let left = Arc::new(Notify::new());
        let objects = futures::stream::iter(vec![1, 2]);
        let mut objects = Box::pin(behind_new_work(
            objects,
            Room::new(1, waiting, left.clone()),
        ));
        let none = tokio::time::timeout(POLL / 2, objects.next()).await;
        assert!(none.is_err(), "one object waits: room for none");
        let started = tokio::time::Instant::now();
        let leaving = async {
            tokio::task::yield_now().await;
            queued.store(0, Ordering::SeqCst);
            left.notify_waiters();
        };
        let (first, ()) = tokio::join!(objects.next(), leaving);
        assert_eq!(first, Some(1));
        assert_eq!(started.elapsed(), Duration::ZERO, "joined at the leave");
    }
}
