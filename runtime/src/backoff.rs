//! Per-object exponential backoff for failed reconciles.
//!
//! A failing object is retried after 1s, 2s, 4s, ... up to five minutes, like controller-runtime's
//! default rate limiter; one success resets it. Each controller has its own table, keyed by the
//! object's UID, so a failing object never slows down another, not even one of another kind
//! with the same name, and a deleted and recreated object starts afresh. Entries of objects
//! that stopped failing without a success (deleted ones) are dropped once they are older than
//! twice the maximum delay; the table is swept at most that often, so that recording a failure
//! stays O(1) when thousands of objects fail at once.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use kube::{Resource, ResourceExt, runtime::controller::Action};
use tracing::warn;

use crate::{Error, error::Retry, metrics::Metrics};

/// UID → (failures so far, time of the last one).
type Failures = HashMap<String, (u32, Instant)>;

/// Exponential delays per object (by UID): doubling from `base` up to `max` for each failure
/// in a row, forgotten on success.
pub struct Backoff {
    base: Duration,
    max: Duration,
    /// The failures on record, and when stale entries were last dropped.
    failures: Mutex<(Failures, Option<Instant>)>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(Duration::from_secs(1), Duration::from_secs(300))
    }
}

impl Backoff {
    /// What every controller (of the project's kinds and of built-in ones) does once a
    /// reconcile of `object` failed with `error`: logs and counts it, then requeues by the
    /// error's class ([`Error::retry`]): after this object's next backoff delay, after a fixed
    /// delay, or at its next change.
    pub(crate) fn requeue_after_failure<K: Resource>(
        &self,
        controller: &str,
        object: &K,
        error: &Error,
        metrics: &Metrics,
    ) -> Action {
        metrics.reconcile_failed(controller, error);
        let retry = error.retry();
        warn!(
            controller,
            name = %object.name_any(),
            namespace = object.namespace().unwrap_or_default(),
            %error,
            ?retry,
            "reconcile failed"
        );
        match retry {
            Retry::Backoff => Action::requeue(self.next_delay(&object.uid().unwrap_or_default())),
            Retry::After(delay) => Action::requeue(delay),
            Retry::OnChange => Action::await_change(),
        }
    }
}

impl Backoff {
    /// Delays that start at `base` and never exceed `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::default(),
        }
    }

    /// Records one more failure of `uid` and returns how long to wait before retrying it.
    pub fn next_delay(&self, uid: &str) -> Duration {
        let now = Instant::now();
        let mut guard = self
            .failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (failures, swept) = &mut *guard;
        let stale = self.max.saturating_mul(2);
        if swept.is_none_or(|at| now.duration_since(at) >= stale) {
            failures.retain(|_, (_, last)| now.duration_since(*last) < stale);
            *swept = Some(now);
        }
        let (count, last) = failures.entry(uid.to_owned()).or_insert((0, now));
        let delay = self
            .base
            .checked_mul(2u32.saturating_pow(*count))
            .map_or(self.max, |delay| delay.min(self.max));
        *count = count.saturating_add(1);
        *last = now;
        delay
    }

    /// Forgets the failures of `uid` after it reconciled successfully.
    pub fn forget(&self, uid: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0
            .remove(uid);
    }

    /// How many objects have failures on record.
    pub fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0
            .len()
    }

    /// Whether no failure is on record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_maximum_and_resets() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let delays: Vec<_> = (0..5).map(|_| backoff.next_delay("uid-a")).collect();
        assert_eq!(delays, [1, 2, 4, 5, 5].map(Duration::from_secs));
        assert_eq!(
            backoff.next_delay("uid-b"),
            Duration::from_secs(1),
            "objects back off independently"
        );
        backoff.forget("uid-a");
        assert_eq!(backoff.next_delay("uid-a"), Duration::from_secs(1));
    }

    #[test]
    fn never_overflows() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        for _ in 0..100 {
            assert!(backoff.next_delay("x") <= Duration::from_secs(300));
        }
    }

    #[test]
    fn entries_of_objects_that_stopped_failing_are_dropped() {
        let backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(5));
        backoff.next_delay("deleted");
        std::thread::sleep(Duration::from_millis(20));
        backoff.next_delay("other");
        assert_eq!(backoff.len(), 1, "only the recent failure is kept");
    }
}
