//! The children of a kind: which kinds they are ([`Children`], a tuple such as
//! `(Deployment, Service)`), what an object asks for ([`Desired`]) and what it has
//! ([`Observed`]). Each child kind has its own caches, filled by a label-selected watch; behind
//! them the reconciler handles every kind with one code path, on JSON, so that a second or
//! third kind costs a watch and nothing else.

use std::{any::TypeId, fmt::Debug, sync::Arc, time::Duration};

use futures::{FutureExt, StreamExt, TryStreamExt, future::BoxFuture, stream::BoxStream};
use k8s_openapi::{NamespaceResourceScope, apimachinery::pkg::apis::meta::v1::OwnerReference};
use kube::{
    Api, Resource, ResourceExt,
    api::{ApiResource, DynamicObject},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tracing::warn;

use crate::{Context, Error, Result, reconciler::Reconcile, watch};

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
/// up to six kinds. Implemented for tuples of [`Child`] types only.
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
children!(A);
children!(A, B);
children!(A, B, C);
children!(A, B, C, D);
children!(A, B, C, D, E);
children!(A, B, C, D, E, F);

/// One kind of child, its type erased: how to watch it and where it is cached.
#[doc(hidden)]
pub struct ChildKind {
    type_id: TypeId,
    #[cfg(any(test, feature = "testing"))]
    resource: ApiResource,
    watch: fn(&Context, Option<&str>) -> Watched,
    #[cfg(any(test, feature = "testing"))]
    filled: fn(Vec<Value>, Vec<Value>) -> Arc<dyn Cache>,
}

impl ChildKind {
    fn of<C: Child>() -> Self {
        Self {
            type_id: TypeId::of::<C>(),
            #[cfg(any(test, feature = "testing"))]
            resource: ApiResource::erase::<C>(&()),
            watch: watched::<C>,
            #[cfg(any(test, feature = "testing"))]
            filled: filled::<C>,
        }
    }
}

/// A child kind's caches, and the owners its watch says should be looked at again.
pub(crate) struct Watched {
    pub(crate) caches: Caches,
    pub(crate) owners: BoxStream<'static, Owner>,
    /// Keeps the names cache current; runs until the controller stops.
    pub(crate) names: BoxFuture<'static, ()>,
}

/// The controller owner of a child that changed, in the child's namespace.
pub(crate) struct Owner {
    pub(crate) reference: OwnerReference,
    pub(crate) namespace: Option<String>,
}

/// Every child kind's caches, for one controller.
#[derive(Clone)]
pub(crate) struct Caches {
    pub(crate) kinds: Vec<(TypeId, ApiResource, Arc<dyn Cache>)>,
}

impl Caches {
    /// The caches of `kinds`, watching them (by this manager's label) in `namespace`, or in
    /// every namespace.
    pub(crate) fn watch(
        kinds: Vec<ChildKind>,
        ctx: &Context,
        namespace: Option<&str>,
    ) -> Vec<Watched> {
        kinds
            .into_iter()
            .map(|kind| (kind.watch)(ctx, namespace))
            .collect()
    }

    /// Caches of `kinds` that hold `children` and, as names others hold, `others` (each goes
    /// to the caches of its `kind`), for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn filled(kinds: Vec<ChildKind>, children: Vec<Value>, others: Vec<Value>) -> Self {
        let of = |objects: &[Value], resource: &ApiResource| -> Vec<Value> {
            let objects = objects.iter().filter(|object| is_of(object, resource));
            objects.cloned().collect()
        };
        let kinds = kinds
            .into_iter()
            .map(|kind| {
                let cache =
                    (kind.filled)(of(&children, &kind.resource), of(&others, &kind.resource));
                (kind.type_id, kind.resource, cache)
            })
            .collect();
        Self { kinds }
    }

    /// The cache of the kind of `child` (by `apiVersion` and `kind`).
    pub(crate) fn of(&self, child: &Value) -> Option<(&ApiResource, &dyn Cache)> {
        self.kinds
            .iter()
            .find(|(_, resource, _)| is_of(child, resource))
            .map(|(_, resource, cache)| (resource, &**cache))
    }

    /// Waits until every cache has had its first list.
    pub(crate) async fn filled_once(&self) -> Result<()> {
        for (_, resource, cache) in &self.kinds {
            cache
                .ready()
                .await
                .map_err(|()| Error::CacheClosed(resource.kind.clone()))?;
        }
        Ok(())
    }
}

fn is_of(child: &Value, resource: &ApiResource) -> bool {
    child["apiVersion"] == resource.api_version.as_str() && child["kind"] == resource.kind.as_str()
}

/// A child kind's two caches, type-erased: its children (labelled as this manager's), and the
/// names other objects of the kind hold.
pub(crate) trait Cache: Send + Sync {
    /// The cached child `namespace/name`, as JSON.
    fn child(&self, namespace: &str, name: &str) -> Result<Option<Value>>;
    /// Whether `namespace/name` is held by an object that `uid` does not control.
    fn taken(&self, namespace: &str, name: &str, uid: &str) -> Result<bool>;
    /// Every cached child that `uid` controls, as JSON.
    fn controlled_by(&self, uid: &str) -> Result<Vec<Value>>;
    /// Resolves once both caches have had their first list; fails if they stopped before.
    fn ready(&self) -> BoxFuture<'_, std::result::Result<(), ()>>;
}

/// The caches of children of kind `C`.
struct Typed<C: Child> {
    children: Store<watch::Packed<C>>,
    names: Store<watch::Packed<PartialObjectMeta<C>>>,
}

impl<C: Child> Cache for Typed<C> {
    fn child(&self, namespace: &str, name: &str) -> Result<Option<Value>> {
        let key = ObjectRef::new(name).within(namespace);
        let Some(packed) = self.children.get(&key) else {
            return Ok(None);
        };
        // The packed text is the object's JSON: read once, with no typed decode in between.
        Ok(Some(serde_json::from_str(packed.json())?))
    }

    fn taken(&self, namespace: &str, name: &str, uid: &str) -> Result<bool> {
        let key = ObjectRef::new(name).within(namespace);
        let Some(packed) = self.names.get(&key) else {
            return Ok(false);
        };
        Ok(!is_controlled_by(
            &serde_json::from_str(packed.json())?,
            uid,
        ))
    }

    fn controlled_by(&self, uid: &str) -> Result<Vec<Value>> {
        let mut found = Vec::new();
        // The uid in the text first: decoding every cached child would cost far more.
        for packed in self.children.state() {
            if packed.json().contains(uid) {
                let child: Value = serde_json::from_str(packed.json())?;
                if is_controlled_by(&child, uid) {
                    found.push(child);
                }
            }
        }
        found.sort_by(|a, b| key_of(a).cmp(&key_of(b)));
        Ok(found)
    }

    fn ready(&self) -> BoxFuture<'_, std::result::Result<(), ()>> {
        async move {
            self.children.wait_until_ready().await.map_err(|_| ())?;
            self.names.wait_until_ready().await.map_err(|_| ())
        }
        .boxed()
    }
}

fn key_of(child: &Value) -> (&str, &str) {
    let metadata = &child["metadata"];
    (
        metadata["namespace"].as_str().unwrap_or_default(),
        metadata["name"].as_str().unwrap_or_default(),
    )
}

/// Whether `uid` is the controller owner of `object` (its JSON).
pub(crate) fn is_controlled_by(object: &Value, uid: &str) -> bool {
    (object["metadata"]["ownerReferences"].as_array()).is_some_and(|refs| {
        refs.iter()
            .any(|r| r["controller"] == true && r["uid"] == uid)
    })
}

/// Watches children of kind `C` labelled as this manager's, and the names of the others.
fn watched<C: Child>(ctx: &Context, namespace: Option<&str>) -> Watched {
    let label = format!("{}={}", crate::reconciler::MANAGED_BY, ctx.manager);
    let (children, mut writer) = reflector::store();
    let owners = watch::streaming(
        api_in::<C>(ctx, namespace),
        watcher::Config::default().labels(&label).any_semantic(),
    )
    .default_backoff()
    .modify(watch::slim)
    .inspect_ok(move |event| watch::store_packed(&mut writer, event))
    .touched_objects()
    .filter_map(|child: std::result::Result<C, watcher::Error>| async move {
        match child {
            Ok(child) => owner(&child),
            Err(error) => {
                warn!(
                    kind = %C::kind(&()),
                    %error,
                    "watch failed: may the manager list and watch this kind?"
                );
                None
            }
        }
    })
    .boxed();
    // Names only (metadata, no data) of the other objects of the kind: read before creating a
    // child, so that none is taken over. An object that gains or loses the label moves between
    // the two caches (the watches say so).
    let (names, mut names_writer) = reflector::store();
    let others = format!("{}!={}", crate::reconciler::MANAGED_BY, ctx.manager);
    let names_task = watch::streaming(
        api_in::<PartialObjectMeta<C>>(ctx, namespace),
        watcher::Config::default().labels(&others).any_semantic(),
    )
    .default_backoff()
    .modify(watch::slim)
    .inspect_ok(move |event| watch::store_packed(&mut names_writer, event))
    .for_each(|_| std::future::ready(()))
    .boxed();
    Watched {
        caches: Caches {
            kinds: vec![(
                TypeId::of::<C>(),
                ApiResource::erase::<C>(&()),
                Arc::new(Typed { children, names }),
            )],
        },
        owners,
        names: names_task,
    }
}

fn api_in<R>(ctx: &Context, namespace: Option<&str>) -> Api<R>
where
    R: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    match namespace {
        Some(namespace) => Api::namespaced(ctx.client.clone(), namespace),
        None => Api::all(ctx.client.clone()),
    }
}

/// The `ObjectRef` of `child`'s controller owner, if that is an object of `K`.
#[cfg(test)]
pub(crate) fn owner_of<K: Reconcile, C: Child>(child: &C) -> Option<ObjectRef<K>> {
    owner(child).and_then(owner_ref::<K>)
}

#[cfg(test)]
type Writer<K> = reflector::store::Writer<watch::Packed<K>>;

/// Caches of kind `C` that have not had their first list yet, with their writers, for tests.
#[cfg(test)]
pub(crate) fn unfilled<C: Child>() -> (Caches, Writer<C>, Writer<PartialObjectMeta<C>>) {
    let (children, writer) = reflector::store();
    let (names, names_writer) = reflector::store();
    let cache: Arc<dyn Cache> = Arc::new(Typed { children, names });
    let caches = Caches {
        kinds: vec![(TypeId::of::<C>(), ApiResource::erase::<C>(&()), cache)],
    };
    (caches, writer, names_writer)
}

fn owner<C: Child>(child: &C) -> Option<Owner> {
    let reference = child
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))?
        .clone();
    Some(Owner {
        reference,
        namespace: child.namespace(),
    })
}

/// Caches of kind `C` that hold `children`, and the names of `others`, for tests.
#[cfg(any(test, feature = "testing"))]
fn filled<C: Child>(children: Vec<Value>, others: Vec<Value>) -> Arc<dyn Cache> {
    use kube::core::PartialObjectMetaExt;
    let decode =
        |object: Value| -> C { serde_json::from_value(object).expect("an object of its kind") };
    let children: Vec<C> = children.into_iter().map(decode).collect();
    let names: Vec<PartialObjectMeta<C>> = (others.into_iter())
        .map(|other| decode(other).meta().clone().into_request_partial::<C>())
        .collect();
    Arc::new(Typed {
        children: crate::testing::store_of(children),
        names: crate::testing::store_of(names),
    })
}

/// The kind of `child` among `K`'s children (by `apiVersion` and `kind`), for tests.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn resource_of<K: Reconcile>(child: &Value) -> Option<ApiResource> {
    let kinds = K::Children::kinds().into_iter();
    kinds
        .map(|kind| kind.resource)
        .find(|resource| is_of(child, resource))
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
        let (.., cache) = (self.caches.kinds.iter())
            .find(|(type_id, ..)| *type_id == TypeId::of::<C>())
            .ok_or_else(|| not_a_child(&C::kind(&())))?;
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
/// # fn example<K: Reconcile>(deployment: Deployment, service: Service) -> Result<Desired<K>> {
/// Ok(Desired::new()
///     .child(deployment)?
///     .child(service)?
///     .requeue_after(std::time::Duration::from_secs(60)))
/// # }
/// ```
pub struct Desired<K: Reconcile> {
    pub(crate) children: Vec<Value>,
    pub(crate) status: Option<K::Status>,
    pub(crate) requeue_after: Option<Duration>,
    pub(crate) prune: Vec<TypeId>,
}

impl<K: Reconcile> Default for Desired<K> {
    fn default() -> Self {
        Self {
            children: Vec::new(),
            status: None,
            requeue_after: None,
            prune: Vec::new(),
        }
    }
}

impl<K: Reconcile> Desired<K> {
    /// Nothing yet: no child, no status of the project's own, the hourly resync.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for `child`, with a name and namespace; the reconciler adds the owner reference and
    /// the `managed-by` label. Its kind must be one of [`Reconcile::Children`].
    pub fn child<C: Child>(mut self, child: C) -> Result<Self> {
        if !K::Children::kinds()
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
    /// and `observedGeneration` never remove them. Written only when they change.
    pub fn status(mut self, status: K::Status) -> Self {
        self.status = Some(status);
        self
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

/// The `ObjectRef` of a child's owner, if it is an object of `K`: in the child's namespace for a
/// namespaced kind, without one for a cluster-scoped kind (kube-rs#293).
pub(crate) fn owner_ref<K: Reconcile>(owner: Owner) -> Option<ObjectRef<K>> {
    let group = K::group(&());
    let reference = &owner.reference;
    if reference.kind != K::kind(&()) || reference.api_version.split('/').next() != Some(&*group) {
        return None;
    }
    let object = ObjectRef::new(&reference.name);
    if <K::Scope as crate::reconciler::KindScope>::NAMESPACED {
        Some(object.within(&owner.namespace?))
    } else {
        Some(object)
    }
}

/// A child as JSON, decoded as a `DynamicObject` for a write.
pub(crate) fn dynamic(child: &Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(child.clone())?)
}
