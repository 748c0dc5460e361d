//! The children of a kind: which kinds they are ([`Children`], a tuple such as
//! `(Deployment, Service)`), what an object asks for ([`Desired`]) and what it has
//! ([`Observed`]). Each child kind has its own caches, filled by a
//! label-selected watch; behind them the reconciler handles every kind with one code path, on
//! JSON, so that a second or third kind costs a watch and nothing else.

use std::{any::TypeId, fmt::Debug, time::Duration};

use k8s_openapi::NamespaceResourceScope;
use kube::{Resource, api::ApiResource, core::object::HasStatus};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

pub(crate) use crate::caches::{Cache, Caches, is_controlled_by};
use crate::{Context, Error, Result, caches::Watched, reconciler::Reconcile, sync::WatchErrors};

/// What a child kind must be: a namespaced Kubernetes type (a k8s-openapi one, or a custom
/// resource's).
pub trait Child:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
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
    C: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The kinds of a controller's children, as a tuple: `(ConfigMap,)`, `(Deployment, Service)`,
/// up to six kinds, or `()` for a controller that creates none. Implemented for tuples of
/// [`Child`] types only.
pub trait Children: Send + Sync + 'static {
    /// Each kind, type-erased; the reconciler's business.
    #[doc(hidden)]
    fn kinds() -> Vec<ChildKind>;
}

macro_rules! children {
    ($($kind:ident),+) => {
        impl<$($kind: Child),+> Children for ($($kind,)+) {
            fn kinds() -> Vec<ChildKind> {
                vec![$(ChildKind::of::<$kind>()),+]
            }
        }
    };
}
impl Children for () {
    fn kinds() -> Vec<ChildKind> {
        Vec::new()
    }
}
children!(A);
children!(A, B);
children!(A, B, C);
children!(A, B, C, D);
children!(A, B, C, D, E);
children!(A, B, C, D, E, F);

/// One kind of child, its type erased: how to watch it and where it is cached.
#[doc(hidden)]
pub struct ChildKind {
    pub(crate) type_id: TypeId,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) resource: ApiResource,
    pub(crate) watch: fn(&Context, Option<&str>, WatchErrors) -> Watched,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) filled: fn(Vec<Value>, Vec<Value>) -> std::sync::Arc<dyn Cache>,
}

impl ChildKind {
    fn of<C: Child>() -> Self {
        Self {
            type_id: TypeId::of::<C>(),
            #[cfg(any(test, feature = "testing"))]
            resource: ApiResource::erase::<C>(&()),
            watch: crate::caches::watched::<C>,
            #[cfg(any(test, feature = "testing"))]
            filled: crate::caches::filled::<C>,
        }
    }
}

/// The kind of `child` among `R`'s children (by `apiVersion` and `kind`), for tests.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn resource_of<R: Reconcile>(child: &Value) -> Option<ApiResource> {
    let kinds = R::Children::kinds().into_iter();
    kinds
        .map(|kind| kind.resource)
        .find(|resource| crate::caches::is_of(child, resource))
}

/// The children an object has now, from the controller's caches (what its watches last saw).
pub struct Observed<'a> {
    caches: &'a Caches,
    uid: String,
}

impl<'a> Observed<'a> {
    pub(crate) fn new(caches: &'a Caches, uid: String) -> Self {
        Self { caches, uid }
    }

    /// The children of kind `C` this object controls, sorted by namespace and name. `C` must be
    /// one of the controller's [`Reconcile::Children`]. Costs a scan of `C`'s cache: call it
    /// when the children that exist matter (a CronJob's Jobs), not for those `desired` names.
    pub fn children<C: Child>(&self) -> Result<Vec<C>> {
        let cache =
            (self.caches.by_type(TypeId::of::<C>())).ok_or_else(|| not_a_child(&C::kind(&())))?;
        cache
            .controlled_by(&self.uid)?
            .into_iter()
            .map(|child| Ok(serde_json::from_value(child)?))
            .collect()
    }
}

pub(crate) fn not_a_child(kind: &str) -> Error {
    Error::InvalidSpec(format!(
        "{kind} is not among the controller's `Reconcile::Children`; add it to the tuple"
    ))
}

/// What an object asks for: its children, status fields of its own, and when to look again.
///
/// ```
/// # use kopgen_runtime::{Result, children::Desired};
/// # use kopgen_runtime::k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
/// # use kopgen_runtime::Reconcile;
/// # fn example<R: Reconcile>(deployment: Deployment, service: Service) -> Result<Desired<R>> {
/// Ok(Desired::new()
///     .child(deployment)?
///     .child(service)?
///     .requeue_after(std::time::Duration::from_secs(60)))
/// # }
/// ```
pub struct Desired<R: Reconcile> {
    pub(crate) children: Vec<Value>,
    /// The JSON of the kind's status type.
    pub(crate) status: Option<Value>,
    pub(crate) requeue_after: Option<Duration>,
    pub(crate) prune: Vec<TypeId>,
    reconciler: std::marker::PhantomData<fn() -> R>,
}

impl<R: Reconcile> Default for Desired<R> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            status: None,
            requeue_after: None,
            prune: Vec::new(),
            reconciler: std::marker::PhantomData,
        }
    }
}

impl<R: Reconcile> Desired<R> {
    /// Nothing yet: no child, no status of the project's own, the hourly resync.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `child`, with a name and namespace; the reconciler adds the owner reference and
    /// the `managed-by` label. Its kind must be one of [`Reconcile::Children`].
    pub fn child<C: Child>(mut self, child: C) -> Result<Self> {
        if !R::Children::kinds()
            .iter()
            .any(|kind| kind.type_id == TypeId::of::<C>())
        {
            return Err(not_a_child(&C::kind(&())));
        }
        let mut value = serde_json::to_value(&child)?;
        // k8s-openapi types write these; a custom resource's derive does too. Set them anyway,
        // so that every child can be told by kind.
        value["apiVersion"] = C::api_version(&()).into();
        value["kind"] = C::kind(&()).into();
        self.children.push(value);
        Ok(self)
    }

    /// Asks for each of `children`.
    pub fn children<C: Child>(self, children: impl IntoIterator<Item = C>) -> Result<Self> {
        children.into_iter().try_fold(self, Desired::child)
    }

    /// Status fields of the project's own (a replica count, references, conditions other than
    /// `Ready`): applied with a field manager of their own, so that the reconciler's `Ready`
    /// and `observedGeneration` never remove them. Written only when they change; a field no
    /// longer set is removed. Only for a controller that owns the kind's status
    /// ([`Reconcile::OWNS_STATUS`]).
    pub fn status(mut self, status: <R::Kind as HasStatus>::Status) -> Result<Self>
    where
        R::Kind: HasStatus<Status: Serialize>,
    {
        self.status = Some(serde_json::to_value(status)?);
        Ok(self)
    }

    /// Reconciles again after `delay` although nothing changed (a schedule's next run), or
    /// sooner when something does; the hourly resync otherwise.
    pub fn requeue_after(mut self, delay: Duration) -> Self {
        self.requeue_after = Some(delay);
        self
    }

    /// Deletes children of kind `C` that this object controls and no longer asks for (a
    /// CronJob's old Jobs). The RBAC marker of `C` needs the `delete` verb.
    pub fn prune<C: Child>(mut self) -> Self {
        self.prune.push(TypeId::of::<C>());
        self
    }

    /// The kinds to prune, with their caches.
    pub(crate) fn pruned<'c>(&self, caches: &'c Caches) -> Vec<(&'c ApiResource, &'c dyn Cache)> {
        (caches.kinds.iter())
            .filter(|(type_id, ..)| self.prune.contains(type_id))
            .map(|(_, resource, cache)| (resource, &**cache))
            .collect()
    }
}
