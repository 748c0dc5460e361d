//! What every reconcile gets: the client, metrics and the event publisher.

use std::sync::Arc;

use kube::Client;

use crate::{events::Events, metrics::Metrics};

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
        Self {
            manager: manager.to_owned(),
            events: Events::new(client.clone(), manager),
            client,
            metrics,
            namespace,
            operator_namespace: std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into()),
            concurrency: 1,
        }
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
