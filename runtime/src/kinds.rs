//! What the machinery asks of a Kubernetes type: its scope, told apart at compile time so that
//! one generic code serves namespaced and cluster-scoped kinds, and the bounds of a kind a
//! controller reconciles, creates or watches.

use std::fmt::Debug;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Api, Client, Resource};
use serde::{Serialize, de::DeserializeOwned};

/// The label every child carries, so the controller watches only its own children.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Builds `Api`s by scope, so that the machinery is one generic code for namespaced and
/// cluster-scoped kinds.
pub trait KindScope {
    /// Whether objects of this scope live in a namespace.
    const NAMESPACED: bool;
    /// Objects of `K` in `namespace` (a namespaced kind; every namespace with `None`), or
    /// cluster-wide.
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl KindScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(namespace) => Api::namespaced(client, namespace),
            None => Api::all(client),
        }
    }
}

impl KindScope for ClusterResourceScope {
    const NAMESPACED: bool = false;
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(client: Client, _: Option<&str>) -> Api<K> {
        Api::all(client)
    }
}

/// A Kubernetes type the machinery reconciles, creates or watches: a k8s-openapi type or a
/// custom resource's, namespaced or cluster-scoped.
pub trait Child:
    Resource<DynamicType = (), Scope: KindScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<C> Child for C where
    C: Resource<DynamicType = (), Scope: KindScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// Whether objects of `K` live in a namespace.
pub(crate) fn namespaced<K: Child>() -> bool {
    <K::Scope as KindScope>::NAMESPACED
}

/// Objects of `K` where the manager watches: in `namespace` for a namespaced kind (every
/// namespace with `None`), cluster-wide for a cluster-scoped one.
pub(crate) fn api<K: Child>(client: Client, namespace: Option<&str>) -> Api<K> {
    <K::Scope as KindScope>::api(client, namespace)
}
