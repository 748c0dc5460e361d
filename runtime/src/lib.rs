//! The machinery of operators that kopgen scaffolds, as
//! controller-runtime is Kubebuilder's: a project keeps only what is its own (its API types,
//! what each controller wants, its webhooks' rules) and gets every fix with
//! `cargo update -p kopgen-runtime`.
//!
//! - [`reconciler`]: a controller from its [`Reconcile`] impl, for a kind of the project's own or
//!   a built-in one: children created or updated with server-side apply, owner references, no
//!   adoption, the `Ready` condition and `observedGeneration`, events, backoff by error class,
//!   finalizers only when asked for.
//! - [`Manager`]: flags ([`Config`]), probes, secure metrics, leader election, graceful
//!   shutdown, and (feature `webhooks`) the admission and conversion webhook server.
//!
//! Features: `webhooks` (the webhook server), `self-managed-certs` (webhook certificates the
//! manager makes and rotates itself), `testing` (a mocked API server and the pattern checks a
//! project's controller tests run), `envtest` (a real control plane for integration tests).
#![deny(missing_docs)]

mod backoff;
mod caches;
#[cfg(feature = "self-managed-certs")]
mod certificates;
pub mod children;
pub mod config;
pub mod context;
pub mod crds;
#[cfg(feature = "envtest")]
#[allow(missing_docs)]
pub mod envtest;
pub mod error;
pub mod events;
pub mod identity;
mod index;
#[cfg(feature = "envtest")]
pub mod integration;
mod kinds;
mod leader;
pub mod leadership;
mod listen;
pub mod manager;
pub mod metrics;
mod metrics_auth;
mod recent;
pub mod reconciler;
mod server;
pub mod shards;
pub mod status;
mod sync;
mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tls;
mod watch;
#[cfg(feature = "webhooks")]
pub mod webhook;

/// The guarded value, also after a panic elsewhere poisoned the lock: every value kept under
/// these locks is whole after each statement.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub use children::Observed;
pub use config::Config;
pub use context::{Context, State};
pub use error::{Error, Result, Retry};
pub use identity::Identity;
pub use leadership::Leadership;
pub use manager::{Manager, Start};
pub use reconciler::{Desired, Reconcile};

/// The crates a project's code names in its signatures, re-exported so that a project and its
/// runtime always agree on their versions.
pub use {k8s_openapi, kube};
