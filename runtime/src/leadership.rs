//! Whether this replica may write now: the fence every write of the runtime checks (children,
//! status, finalizers, deletions, events), so that no write leaves a replica that is not, or
//! no longer, the leader, whatever the project's code did between two awaits.
//!
//! The fence is a deadline on the monotonic clock, moved forward by each successful renewal
//! of the Lease to the renewal's start plus the renew deadline. A follower takes the Lease only
//! a lease duration (longer) after it saw that renewal, so a write this check lets through
//! cannot overlap another leader's, even when this replica's thread was blocked for minutes:
//! the check reads the clock when the write is about to be sent, not a flag that a starved task
//! would have had to clear.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{Error, Result};

/// Whether, and until when, this replica leads. Cheap to clone; every clone is the same fence.
#[derive(Clone, Debug)]
pub struct Leadership {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// What the deadline counts from.
    base: Instant,
    /// Milliseconds after `base` until which this replica leads; [`FOREVER`] without an
    /// election, 0 while it does not lead.
    until: AtomicU64,
    /// Wakes the reconciles waiting for leadership.
    changed: tokio::sync::watch::Sender<()>,
}

/// The deadline of a manager without leader election: it always leads.
const FOREVER: u64 = u64::MAX;

impl Default for Leadership {
    /// A manager without leader election: it always leads.
    fn default() -> Self {
        Self::with(FOREVER)
    }
}

impl Leadership {
    fn with(until: u64) -> Self {
        Self {
            inner: Arc::new(Inner {
                base: Instant::now(),
                until: AtomicU64::new(until),
                changed: tokio::sync::watch::channel(()).0,
            }),
        }
    }

    /// A replica that takes part in an election: it does not lead until it wins.
    pub(crate) fn elected() -> Self {
        Self::with(0)
    }

    /// This replica leads until `deadline` (a renewal's start plus the renew deadline).
    pub(crate) fn lead_until(&self, deadline: Instant) {
        let millis = deadline
            .saturating_duration_since(self.inner.base)
            .as_millis();
        let millis = u64::try_from(millis)
            .unwrap_or(FOREVER - 1)
            .min(FOREVER - 1);
        self.inner.until.fetch_max(millis, Ordering::AcqRel);
        self.inner.changed.send_replace(());
    }

    /// This replica no longer leads.
    pub(crate) fn lose(&self) {
        self.inner.until.store(0, Ordering::Release);
        self.inner.changed.send_replace(());
    }

    /// Whether this replica leads now.
    pub fn is_leading(&self) -> bool {
        let until = self.inner.until.load(Ordering::Acquire);
        until == FOREVER || self.inner.base.elapsed() < Duration::from_millis(until)
    }

    /// `Ok` while this replica leads; [`Error::LeadershipLost`] otherwise. Checked by the
    /// runtime before each write it makes.
    pub fn check(&self) -> Result<()> {
        match self.is_leading() {
            true => Ok(()),
            false => Err(Error::LeadershipLost),
        }
    }

    /// Resolves once this replica leads: a standby's reconciles wait here, with warm caches.
    pub async fn leading(&self) {
        let mut changed = self.inner.changed.subscribe();
        while !self.is_leading() {
            // Woken by a renewal or a loss; a deadline that passes needs no wake-up (it only
            // ends leadership).
            if changed.changed().await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_an_election_a_manager_always_leads() {
        let leadership = Leadership::default();
        assert!(leadership.check().is_ok());
    }

    #[test]
    fn leadership_ends_at_its_deadline_whoever_is_scheduled() {
        let leadership = Leadership::elected();
        assert!(leadership.check().is_err(), "not before it won");
        leadership.lead_until(Instant::now() + Duration::from_millis(100));
        assert!(leadership.check().is_ok());
        // A thread blocked past the deadline (no task ran meanwhile) may not write after it.
        std::thread::sleep(Duration::from_millis(150));
        assert!(matches!(leadership.check(), Err(Error::LeadershipLost)));
        leadership.lead_until(Instant::now() + Duration::from_secs(10));
        assert!(leadership.check().is_ok(), "renewed");
        leadership.lose();
        assert!(leadership.check().is_err());
    }

    #[tokio::test]
    async fn a_standby_waits_until_it_leads() {
        let leadership = Leadership::elected();
        let waiting = tokio::spawn({
            let leadership = leadership.clone();
            async move { leadership.leading().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished());
        leadership.lead_until(Instant::now() + Duration::from_secs(10));
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joins");
    }
}
