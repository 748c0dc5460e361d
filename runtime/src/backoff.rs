//! Per-object exponential backoff for failed reconciles.
//!
//! A failing object is retried after 1s, 2s, 4s, ... up to five minutes, each up to 10% longer
//! (drawn per object, so that objects that failed together do not retry together); one success
//! resets it. Like controller-runtime's default rate limiter, retries of all objects together
//! are also held to 10 per second with bursts of 100: after an outage, thousands of failed
//! objects come back as a stream, not a wave. Each controller has its own table, keyed by the
//! object's UID, so a failing object never slows down another, not even one of another kind
//! with the same name, and a deleted and recreated object starts afresh. Entries of objects
//! that stopped failing without a success (deleted ones) are dropped once they are older than
//! twice the maximum delay; the table is swept at most that often, so that recording a failure
//! stays O(1) when thousands of objects fail at once.

use std::{
    collections::{HashMap, hash_map::RandomState},
    hash::BuildHasher,
    sync::Mutex,
    time::{Duration, Instant},
};

use kube::{Resource, ResourceExt, runtime::controller::Action};
use tracing::warn;

use crate::{
    Error,
    error::Retry,
    metrics::{Metrics, queue_key},
};

/// `period`, made up to 10% longer by a value drawn for `key` in this process.
pub(crate) fn jittered(period: Duration, key: &str) -> Duration {
    static SEED: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
    let draw = SEED.get_or_init(RandomState::new).hash_one(key);
    let fraction = (draw % 1000) as f64 / 10_000.0;
    period.mul_f64(1.0 + fraction)
}

/// UID → (failures so far, time of the last one).
type Failures = HashMap<String, (u32, Instant)>;

/// Exponential delays per object (by UID): doubling from `base` up to `max` for each failure
/// in a row, forgotten on success, and no more retries than the overall rate allows.
pub struct Backoff {
    base: Duration,
    max: Duration,
    /// The failures on record, and when stale entries were last dropped.
    failures: Mutex<(Failures, Option<Instant>)>,
    overall: Mutex<Bucket>,
}

/// A token bucket as golang.org/x/time/rate's (which controller-runtime's overall limit is):
/// `rate` tokens a second up to `burst`; each retry takes one, and when none is left it waits
/// for the one it reserved (the count goes below zero).
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Option<Instant>,
}

impl Bucket {
    /// How long the next retry must wait for its token.
    fn reserve(&mut self, now: Instant) -> Duration {
        let elapsed = self
            .at
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        self.tokens = (self.tokens + elapsed.as_secs_f64() * self.rate).min(self.burst);
        self.at = Some(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
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
        let Some(delay) = self.retry_delay(controller, object, error, metrics) else {
            return Action::await_change();
        };
        let key = queue_key(object.namespace().as_deref(), &object.name_any());
        metrics.requeued(controller, &key, Instant::now() + delay, true);
        Action::requeue(delay)
    }

    /// Logs and counts the failure of `object`'s reconcile with `error`, and says when to try
    /// again by the error's class ([`Error::retry`]): after this object's next backoff delay,
    /// after a fixed delay, or (`None`) at its next change.
    pub(crate) fn retry_delay<K: Resource>(
        &self,
        controller: &str,
        object: &K,
        error: &Error,
        metrics: &Metrics,
    ) -> Option<Duration> {
        let retry = error.retry();
        metrics.reconcile_failed(controller, error, retry == Retry::OnChange);
        warn!(
            controller,
            name = %object.name_any(),
            namespace = object.namespace().unwrap_or_default(),
            %error,
            ?retry,
            "reconcile failed"
        );
        match retry {
            Retry::Backoff => {
                let uid = object.uid().unwrap_or_default();
                let own = jittered(self.next_delay(&uid), &uid);
                let overall = (self.overall.lock())
                    .map_or(Duration::ZERO, |mut bucket| bucket.reserve(Instant::now()));
                Some(own.max(overall))
            }
            Retry::After(delay) => Some(delay),
            Retry::OnChange => None,
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
            overall: Mutex::new(Bucket {
                rate: 10.0,
                burst: 100.0,
                tokens: 100.0,
                at: None,
            }),
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
    #[cfg(test)]
    fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0
            .len()
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
    fn retries_of_all_objects_are_held_to_ten_a_second_after_a_burst_of_a_hundred() {
        let mut bucket = Bucket {
            rate: 10.0,
            burst: 100.0,
            tokens: 100.0,
            at: None,
        };
        let now = Instant::now();
        let delays: Vec<Duration> = (0..120).map(|_| bucket.reserve(now)).collect();
        assert!(delays[..100].iter().all(Duration::is_zero), "the burst");
        assert_eq!(delays[100], Duration::from_millis(100));
        assert_eq!(
            delays[119],
            Duration::from_secs(2),
            "one every 100 ms after it"
        );
        let later = now + Duration::from_secs(60);
        assert_eq!(bucket.reserve(later), Duration::ZERO, "refilled meanwhile");
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
