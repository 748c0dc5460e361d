//! What every reconcile gets: the client, metrics, the event publisher and the project's own
//! state.

use std::{
    any::{Any, TypeId, type_name},
    collections::HashMap,
    sync::Arc,
    time::Duration,
};

use kube::Client;

use crate::{
    Error, Result, events::Events, leadership::Leadership, metrics::Metrics, sync::CacheSync,
};

/// How often every object is reconciled although nothing changed, by default (the manager's
/// `--sync-period`, a controller's `Setup::resync`): a safety net for missed events, not the
/// way drift is found (the watches are). One timer per controller enqueues every cached
/// object, as controller-runtime's `SyncPeriod` does: a timer per object would keep a pending
/// request for each in kube-runtime's scheduler, about a kilobyte apiece, for as long as the
/// manager runs.
pub const RESYNC: Duration = Duration::from_secs(3600);

/// The manager's shared state, handed to every reconcile of every controller.
pub struct Context {
    /// The manager's name: field manager of every write, value of the `managed-by` label on
    /// children, and reporter of events.
    pub manager: String,
    /// Client for the API server.
    pub client: Client,
    /// Reconcile counters and durations, exported at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Publishes Kubernetes events about the objects being reconciled.
    pub events: Events,
    /// The namespace the manager watches, or `None` for all namespaces.
    pub namespace: Option<String>,
    /// The namespace the manager runs in (`POD_NAMESPACE`), home of the children of
    /// cluster-scoped kinds.
    pub operator_namespace: String,
    /// How many objects each controller reconciles at once (`--max-concurrent-reconciles`).
    pub concurrency: u16,
    /// The project's own values ([`crate::Manager::state`]), read with [`Context::state`].
    pub state: State,
    /// Whether this replica leads (always, without `--leader-elect`): the runtime checks it
    /// before each write it makes; check it (`ctx.leadership.check()?`) before a write of
    /// your own that must not leave a replica that lost the Lease, such as a call to an
    /// external system in `cleanup`.
    pub leadership: Leadership,
    /// This replica's share of the objects with `--shards auto` (`None`: all of them): a
    /// reconcile starts only in a bucket it holds, and each watch lists only those buckets.
    pub shards: Option<crate::shards::Shards>,
    /// Whether the controllers' caches have filled, and how long they may take.
    pub(crate) sync: CacheSync,
    /// How long a reconcile may take, the drain at shutdown, and the resync period.
    pub(crate) timeouts: Timeouts,
    /// The time [`Context::now`] gives: the system's, or a fixed one in tests.
    pub(crate) clock: Option<k8s_openapi::jiff::Timestamp>,
}

/// The manager's time limits (its `--reconcile-timeout` and `--graceful-shutdown-timeout`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// How long one reconcile may take before it fails as a timeout.
    pub(crate) reconcile: Duration,
    /// How long in-flight reconciles may take to finish once the manager is stopping.
    pub(crate) graceful_shutdown: Duration,
    /// How often every object is reconciled although nothing changed (`--sync-period`).
    pub(crate) resync: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            reconcile: Duration::from_secs(300),
            graceful_shutdown: Duration::from_secs(5),
            resync: RESYNC,
        }
    }
}

/// Values of the project's own types, one per type, shared by every reconcile and webhook.
#[derive(Clone, Default)]
pub struct State(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl State {
    /// Keeps `value`, replacing the one of its type if there was one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was inserted.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl Context {
    /// A context for the manager named `manager` (see [`crate::Identity::manager`]) watching
    /// `namespace`, or every namespace with `None`.
    pub fn new(
        client: Client,
        manager: &str,
        metrics: Arc<Metrics>,
        namespace: Option<String>,
    ) -> Self {
        let leadership = Leadership::default();
        Self {
            manager: manager.to_owned(),
            events: Events::new(client.clone(), manager, leadership.clone()),
            leadership,
            shards: None,
            client,
            metrics,
            namespace,
            operator_namespace: std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into()),
            concurrency: 1,
            state: State::default(),
            sync: CacheSync::default(),
            timeouts: Timeouts::default(),
            clock: None,
        }
    }

    /// The time now, for code whose children depend on it (a schedule): the system's clock,
    /// or the fixed time of a test's context (see `testing::mock_context_at`), so that a test
    /// of `desired()` gives the same answer every time.
    pub fn now(&self) -> k8s_openapi::jiff::Timestamp {
        self.clock.unwrap_or_else(k8s_openapi::jiff::Timestamp::now)
    }

    /// The project's value of type `T` (see [`crate::Manager::state`]), or an error naming
    /// the type if the manager was given none: a programming error, so it is not retried.
    ///
    /// ```
    /// # fn example(ctx: &kopgen_runtime::Context) -> kopgen_runtime::Result<()> {
    /// struct Billing { endpoint: String }
    ///
    /// let billing = ctx.state::<Billing>()?;
    /// # let _ = &billing.endpoint;
    /// # Ok(())
    /// # }
    /// ```
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<&T> {
        self.state.get().ok_or_else(|| {
            Error::Config(format!(
                "no {} in the context: hand one to the manager with `Manager::state`",
                type_name::<T>()
            ))
        })
    }

    /// An `Api` over namespaced objects of `K` in the watched namespace, or in all of them.
    pub fn watched_api<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match &self.namespace {
            Some(namespace) => kube::Api::namespaced(self.client.clone(), namespace),
            None => kube::Api::all(self.client.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn state_is_found_by_type_and_a_missing_one_names_its_type() {
        struct Billing(&'static str);
        let mut state = State::default();
        state.insert(Billing("https://billing.example.com"));
        state.insert(7_u32);
        assert_eq!(
            state.get::<Billing>().map(|b| b.0),
            Some("https://billing.example.com")
        );
        assert_eq!(state.get::<u32>(), Some(&7));
        assert!(state.get::<String>().is_none());

        let (service, _) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        let mut ctx = Context::new(Client::new(service, "default"), "m", Arc::default(), None);
        ctx.state = state;
        assert_eq!(ctx.state::<u32>().ok(), Some(&7));
        let missing = ctx.state::<String>().err().map(|e| e.to_string());
        assert!(
            missing.is_some_and(
                |m| m.contains("alloc::string::String") && m.contains("Manager::state")
            )
        );
    }
}
