//! The caches of a controller's children, one pair per child kind: the children labelled as
//! this manager's (whole, as JSON text) and the names other objects of the kind hold (their
//! keys and owner references only). Behind a small object-safe [`Cache`] trait, so that the
//! reconciler handles every kind with one code path on JSON.

use std::{
    any::TypeId,
    collections::HashMap,
    sync::{Arc, Mutex},
};

mod fill;
#[cfg(any(test, feature = "testing"))]
mod filled;
mod unseen;

use futures::{FutureExt, StreamExt, future::BoxFuture, stream::BoxStream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    Resource, ResourceExt,
    api::ApiResource,
    core::PartialObjectMeta,
    runtime::reflector::{ObjectRef, Store},
};
use serde_json::Value;

#[cfg(test)]
pub(crate) use filled::{owner_of, unfilled};

use crate::{
    Context, Error, Result,
    index::Index,
    kinds::{Child, KindScope},
    lock,
    sync::WatchErrors,
    watch,
};

/// A child kind's caches, the owners its watches say should be looked at again, and the tasks
/// that keep the caches current.
pub(crate) struct Watched {
    pub(crate) caches: Caches,
    pub(crate) owners: BoxStream<'static, Owner>,
    /// The watches, each in a task of its own: a reconcile waits for the caches to fill, and a
    /// controller at its concurrency limit stops polling its trigger streams, so caches filled
    /// only by the controller's polling would never fill for the reconcile that waits on them.
    pub(crate) tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// The controller owner of a child that changed, in the child's namespace.
#[derive(Clone, Debug)]
pub(crate) struct Owner {
    pub(crate) reference: OwnerReference,
    pub(crate) namespace: Option<String>,
}

/// Every child kind's caches, for one controller.
#[derive(Clone)]
pub(crate) struct Caches {
    pub(crate) kinds: Vec<Cached>,
}

/// One child kind's caches, with what the reconciler needs to know of the kind.
#[derive(Clone)]
pub(crate) struct Cached {
    pub(crate) type_id: TypeId,
    pub(crate) resource: ApiResource,
    /// Whether its objects live in a namespace.
    pub(crate) namespaced: bool,
    pub(crate) cache: Arc<dyn Cache>,
}

/// One kind of child, its type erased: how to watch it and where it is cached.
#[doc(hidden)]
pub struct ChildKind {
    pub(crate) type_id: TypeId,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) resource: ApiResource,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) namespaced: bool,
    pub(crate) watch: fn(&Context, &Watching<'_>, WatchErrors) -> Watched,
    #[cfg(any(test, feature = "testing"))]
    pub(crate) filled: fn(Vec<Value>, Vec<Value>) -> Arc<dyn Cache>,
}

impl ChildKind {
    /// The kind `C`.
    pub(crate) fn of<C: Child>() -> Self {
        Self {
            type_id: TypeId::of::<C>(),
            #[cfg(any(test, feature = "testing"))]
            resource: ApiResource::erase::<C>(&()),
            #[cfg(any(test, feature = "testing"))]
            namespaced: crate::kinds::namespaced::<C>(),
            watch: fill::watched::<C>,
            #[cfg(any(test, feature = "testing"))]
            filled: filled::filled::<C>,
        }
    }
}

/// Where and for whom a controller's children are watched.
pub(crate) struct Watching<'a> {
    /// The namespace watched, or `None` for every namespace.
    pub(crate) namespace: Option<&'a str>,
    /// The controller, for the caches' sizes in the metrics.
    pub(crate) controller: &'static str,
}

impl Caches {
    /// The caches of `kinds`, watching them as `watching` says; the watches' failures go to
    /// `errors`.
    pub(crate) fn watch(
        kinds: Vec<ChildKind>,
        ctx: &Context,
        watching: &Watching<'_>,
        errors: &WatchErrors,
    ) -> Vec<Watched> {
        kinds
            .into_iter()
            .map(|kind| (kind.watch)(ctx, watching, errors.clone()))
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
            .map(|kind| Cached {
                cache: (kind.filled)(of(&children, &kind.resource), of(&others, &kind.resource)),
                type_id: kind.type_id,
                resource: kind.resource,
                namespaced: kind.namespaced,
            })
            .collect();
        Self { kinds }
    }

    /// The caches of the kind of `child` (by `apiVersion` and `kind`).
    pub(crate) fn of(&self, child: &Value) -> Option<&Cached> {
        (self.kinds.iter()).find(|kind| is_of(child, &kind.resource))
    }

    /// The caches of child kind `type_id`.
    pub(crate) fn by_type(&self, type_id: TypeId) -> Option<&Cached> {
        (self.kinds.iter()).find(|kind| kind.type_id == type_id)
    }

    /// Waits until every cache has had its first list.
    pub(crate) async fn filled_once(&self) -> Result<()> {
        for kind in &self.kinds {
            (kind.cache.ready().await)
                .map_err(|()| Error::CacheClosed(kind.resource.kind.clone()))?;
        }
        Ok(())
    }
}

pub(crate) fn is_of(child: &Value, resource: &ApiResource) -> bool {
    child["apiVersion"] == resource.api_version.as_str() && child["kind"] == resource.kind.as_str()
}

/// A child kind's two caches, type-erased: its children (labelled as this manager's), and the
/// names other objects of the kind hold. A cluster-scoped kind's objects have the namespace
/// `""` here.
pub(crate) trait Cache: Send + Sync {
    /// The cached child `namespace/name`, as JSON.
    fn child(&self, namespace: &str, name: &str) -> Result<Option<Value>>;
    /// The object without this manager's label that holds `namespace/name`, if any, as JSON
    /// of its metadata (its keys and owner references).
    fn other(&self, namespace: &str, name: &str) -> Result<Option<Value>>;
    /// Every cached child that `uid` controls, as JSON, sorted by namespace and name: found
    /// through the owner index, so it costs what `uid` has, not what the cache holds.
    fn controlled_by(&self, uid: &str) -> Result<Vec<Value>>;
    /// Has the owner `reference` (in `namespace`) looked at again once the object without
    /// this manager's label that holds `namespace/name` changes or goes away.
    fn wait_for(
        &self,
        namespace: &str,
        name: &str,
        owner: &OwnerReference,
        owner_namespace: Option<String>,
    );
    /// This manager just created `namespace/name`: until the children cache shows it,
    /// [`Cache::unseen`] says so.
    fn created(&self, namespace: &str, name: &str);
    /// Whether this manager created `namespace/name` a moment ago and the children cache does
    /// not show it yet (see [`unseen`]): to create it again would only be refused.
    fn unseen(&self, namespace: &str, name: &str) -> bool;
    /// Resolves once both caches have had their first list; fails if they stopped before.
    fn ready(&self) -> BoxFuture<'_, std::result::Result<(), ()>>;
}

/// Owners to look at again, each once however many of its children changed meanwhile: what it
/// holds is bounded by the number of owners, where a channel would hold an entry per child
/// event (every child of the initial list) while the controller is busy.
#[derive(Clone, Default)]
pub(crate) struct Pending(Arc<PendingOwners>);

#[derive(Default)]
struct PendingOwners {
    /// The owners' UIDs, and the owners in the order they came.
    queue: Mutex<(
        std::collections::HashSet<String>,
        std::collections::VecDeque<Owner>,
    )>,
    ready: tokio::sync::Notify,
}

impl Pending {
    /// `owner` is to be looked at again (once, if it already is).
    pub(crate) fn push(&self, owner: Owner) {
        let mut queue = lock(&self.0.queue);
        if queue.0.insert(owner.reference.uid.clone()) {
            queue.1.push_back(owner);
            drop(queue);
            self.0.ready.notify_one();
        }
    }

    /// The owners, as they come.
    pub(crate) fn stream(self) -> BoxStream<'static, Owner> {
        futures::stream::unfold(self, |pending| async move {
            loop {
                let next = {
                    let mut queue = lock(&pending.0.queue);
                    let next = queue.1.pop_front();
                    if let Some(owner) = &next {
                        queue.0.remove(&owner.reference.uid);
                    }
                    next
                };
                if let Some(owner) = next {
                    return Some((owner, pending));
                }
                pending.0.ready.notified().await;
            }
        })
        .boxed()
    }
}

/// Owners waiting for a name another object holds, by that name's key.
type Waiting = Arc<Mutex<HashMap<(String, String), Vec<Owner>>>>;

/// The owners waiting for `namespace/name`, which changed or went away; they wait no more.
fn release(waiting: &Waiting, namespace: &str, name: &str) -> Option<Vec<Owner>> {
    let mut waiting = waiting.lock().unwrap_or_else(|p| p.into_inner());
    waiting.remove(&(namespace.to_owned(), name.to_owned()))
}

/// The caches of children of kind `C`.
struct Typed<C: Child> {
    children: Store<watch::Packed<C>>,
    names: Store<watch::Packed<PartialObjectMeta<C>>>,
    /// Which caches have had their first list ([`CHILDREN`] and [`NAMES`]). Kept apart from the
    /// stores' own readiness, which wakes only the last of several waiters: the reconciles and
    /// the cache sync wait on it at once.
    filled: tokio::sync::watch::Receiver<u8>,
    waiting: Waiting,
    /// The cached children by the UID of their controller owner.
    owners: Owners,
    /// The children created that the children cache does not show yet.
    unseen: Arc<unseen::Unseen>,
}

/// Children's keys (namespace, `""` for a cluster-scoped kind, and name) by their controller
/// owner's UID.
type Owners = Arc<Mutex<Index<(String, String), String>>>;

/// A child's key in the owner index, and the UID of its controller owner if it has one.
fn owner_entry<C: Child>(child: &C) -> ((String, String), Vec<String>) {
    let key = (child.namespace().unwrap_or_default(), child.name_any());
    let owner = (child.owner_references().iter())
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.clone());
    (key, owner.into_iter().collect())
}

/// The key a kube store finds `namespace/name` of `K` by (no namespace for a cluster-scoped
/// kind, written `""` in the [`Cache`] methods).
fn store_key<K: Child>(namespace: &str, name: &str) -> ObjectRef<watch::Packed<K>> {
    let key = ObjectRef::new(name);
    match namespace {
        "" => key,
        namespace => key.within(namespace),
    }
}

/// The children cache had its first list.
const CHILDREN: u8 = 1;
/// The names cache had its first list.
const NAMES: u8 = 2;

impl<C: Child> Cache for Typed<C> {
    fn child(&self, namespace: &str, name: &str) -> Result<Option<Value>> {
        let Some(packed) = self.children.get(&store_key::<C>(namespace, name)) else {
            return Ok(None);
        };
        // The packed text is the object's JSON: read once, with no typed decode in between.
        Ok(Some(serde_json::from_str(packed.json())?))
    }

    fn other(&self, namespace: &str, name: &str) -> Result<Option<Value>> {
        let key = store_key::<PartialObjectMeta<C>>(namespace, name);
        let Some(packed) = self.names.get(&key) else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(packed.json())?))
    }

    fn controlled_by(&self, uid: &str) -> Result<Vec<Value>> {
        let keys = lock(&self.owners).sources(&uid.to_owned());
        let mut found = Vec::with_capacity(keys.len());
        for (namespace, name) in keys {
            // The index and the store follow the same events: a child the store no longer
            // holds, or that changed owner since, is left out.
            if let Some(child) = self.child(&namespace, &name)?
                && is_controlled_by(&child, uid)
            {
                found.push(child);
            }
        }
        Ok(found)
    }

    fn wait_for(
        &self,
        namespace: &str,
        name: &str,
        owner: &OwnerReference,
        owner_namespace: Option<String>,
    ) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let owners = waiting
            .entry((namespace.to_owned(), name.to_owned()))
            .or_default();
        if !owners.iter().any(|o| o.reference.uid == owner.uid) {
            owners.push(Owner {
                reference: owner.clone(),
                namespace: owner_namespace,
            });
        }
    }

    fn created(&self, namespace: &str, name: &str) {
        self.unseen.created(namespace, name);
    }

    fn unseen(&self, namespace: &str, name: &str) -> bool {
        self.unseen.contains(namespace, name)
    }

    fn ready(&self) -> BoxFuture<'_, std::result::Result<(), ()>> {
        let mut filled = self.filled.clone();
        async move {
            let both = |done: &u8| *done == CHILDREN | NAMES;
            filled.wait_for(both).await.map(|_| ()).map_err(|_| ())
        }
        .boxed()
    }
}

/// Whether `uid` is the controller owner of `object` (its JSON).
pub(crate) fn is_controlled_by(object: &Value, uid: &str) -> bool {
    (object["metadata"]["ownerReferences"].as_array()).is_some_and(|refs| {
        refs.iter()
            .any(|r| r["controller"] == true && r["uid"] == uid)
    })
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

/// The `ObjectRef` of a child's owner, if it is an object of `K`: in the child's namespace for a
/// namespaced kind, without one for a cluster-scoped kind (kube-rs#293).
pub(crate) fn owner_ref<K>(owner: Owner) -> Option<ObjectRef<K>>
where
    K: Resource<DynamicType = (), Scope: KindScope>,
{
    let group = K::group(&());
    let reference = &owner.reference;
    let reference_group = match reference.api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    };
    if reference.kind != K::kind(&()) || reference_group != group {
        return None;
    }
    let object = ObjectRef::new(&reference.name);
    if <K::Scope as KindScope>::NAMESPACED {
        Some(object.within(&owner.namespace?))
    } else {
        Some(object)
    }
}

#[cfg(test)]
mod tests;
