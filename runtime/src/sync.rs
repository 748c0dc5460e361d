//! Whether the controllers' caches have filled. `/readyz/caches` answers from it, and a controller
//! whose caches do not fill within the cache sync timeout (controller-runtime's
//! `CacheSyncTimeout`, 2 minutes) stops the manager with its watches' last error: a CRD that is
//! not installed or a watch that RBAC forbids is then a restarting pod whose log says why,
//! instead of a Ready pod that never reconciles.

use std::{
    future::Future,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio_util::sync::CancellationToken;

use crate::{Error, Result};

/// The controllers' caches: how many have yet to fill, and how long they may take.
#[derive(Clone, Debug)]
pub struct CacheSync {
    timeout: Duration,
    unsynced: Arc<AtomicUsize>,
}

impl CacheSync {
    /// Caches that must fill within `timeout` once their controller starts.
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            unsynced: Arc::default(),
        }
    }

    /// Whether every controller started so far has filled its caches (true before any starts:
    /// a replica waiting for leadership serves webhooks and metrics, and is ready for that).
    pub fn is_synced(&self) -> bool {
        self.unsynced.load(Ordering::Acquire) == 0
    }

    /// `controllers` more controllers are starting.
    pub(crate) fn starting(&self, controllers: usize) {
        self.unsynced.fetch_add(controllers, Ordering::AcqRel);
    }

    /// Waits for `synced` (a controller's caches filling) for at most the timeout. Resolves
    /// when they filled (counting the controller as synced), when they closed or `shutdown`
    /// came first (the manager is stopping), and fails naming `controller` and the last error
    /// of its watches when the timeout passed first.
    pub(crate) async fn wait(
        self,
        controller: &'static str,
        errors: WatchErrors,
        synced: impl Future<Output = std::result::Result<(), ()>>,
        shutdown: CancellationToken,
    ) -> Result<()> {
        tokio::select! {
            filled = tokio::time::timeout(self.timeout, synced) => match filled {
                Ok(Ok(())) => {
                    self.unsynced.fetch_sub(1, Ordering::AcqRel);
                    Ok(())
                }
                Ok(Err(())) => Ok(()),
                Err(_) => {
                    let why = errors.last().unwrap_or_else(|| "no watch error was seen".into());
                    Err(Error::Timeout(format!(
                        "the caches of controller {controller} did not fill within {:?} \
                         (--cache-sync-timeout): {why}; is the CRD installed, and may the \
                         manager list and watch?",
                        self.timeout
                    )))
                }
            },
            () = shutdown.cancelled() => Ok(()),
        }
    }
}

impl Default for CacheSync {
    /// controller-runtime's two minutes.
    fn default() -> Self {
        Self::new(Duration::from_secs(120))
    }
}

/// The last error of a controller's watches, for the message of a cache sync timeout.
#[derive(Clone, Debug, Default)]
pub(crate) struct WatchErrors(Arc<Mutex<Option<String>>>);

impl WatchErrors {
    pub(crate) fn record(&self, error: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    fn last(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn caches_that_do_not_fill_in_time_fail_with_the_watchs_error() {
        let sync = CacheSync::new(Duration::from_millis(50));
        sync.starting(2);
        assert!(!sync.is_synced());
        let errors = WatchErrors::default();
        errors.record("403 Forbidden: blogs.example.com is forbidden".into());
        let stuck = std::future::pending();
        let failed = (sync.clone())
            .wait("apps-blog", errors, stuck, CancellationToken::new())
            .await;
        let message = failed.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("apps-blog") && message.contains("403 Forbidden"),
            "{message}"
        );
        let filled = async { Ok(()) };
        (sync.clone())
            .wait(
                "other",
                WatchErrors::default(),
                filled,
                CancellationToken::new(),
            )
            .await
            .expect("filled");
        assert!(!sync.is_synced(), "one controller is still unsynced");
    }

    #[tokio::test]
    async fn every_controller_filled_means_synced() {
        let sync = CacheSync::default();
        assert!(sync.is_synced(), "nothing started: ready to serve");
        sync.starting(1);
        let filled = async { Ok(()) };
        (sync.clone())
            .wait(
                "apps-blog",
                WatchErrors::default(),
                filled,
                CancellationToken::new(),
            )
            .await
            .expect("filled");
        assert!(sync.is_synced());
    }
}
