//! The periodic resync of every cached object, behind new work: controller-runtime's priority
//! queue (its default since v0.23) puts resyncs behind new events; kube-runtime's scheduler has
//! no priorities, so a resync object joins the queue only while fewer than `room` objects wait
//! there. New events and the owners of changed children go straight in, and so are never
//! behind a whole resync.

use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::backoff::jittered;

/// How often a resync waiting for room looks at the queue again.
const POLL: Duration = Duration::from_millis(100);

/// A tick every `period`, each up to 10% later (drawn per tick, as controller-runtime jitters
/// its `SyncPeriod`), the first one a period after the start.
pub(super) fn ticks(period: Duration) -> impl Stream<Item = ()> + Send + 'static {
    futures::stream::unfold(0_u64, move |tick| async move {
        tokio::time::sleep(jittered(period, &tick.to_string())).await;
        Some(((), tick + 1))
    })
}

/// `objects`, each let through only once fewer than `room` objects wait in the queue
/// (`waiting`).
pub(super) fn behind_new_work<T: Send + 'static>(
    objects: Vec<T>,
    room: usize,
    waiting: impl Fn() -> usize + Send + Sync + 'static,
) -> impl Stream<Item = T> + Send + 'static {
    let waiting = std::sync::Arc::new(waiting);
    futures::stream::iter(objects).then(move |object| {
        let waiting = waiting.clone();
        async move {
            while waiting() >= room.max(1) {
                tokio::time::sleep(POLL).await;
            }
            object
        }
    })
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
        let mut resync = Box::pin(behind_new_work(vec![1, 2, 3], 2, waiting));
        let first = tokio::time::timeout(Duration::from_secs(10), resync.next()).await;
        assert!(first.is_err(), "nothing while five objects wait");
        queued.store(1, Ordering::SeqCst);
        let all: Vec<_> = resync.collect().await;
        assert_eq!(all, [1, 2, 3]);
    }
}
