//! The caches of a controller's children, one pair per child kind: the children labelled as
//! this manager's (whole, as JSON text) and the names other objects of the kind hold (their
//! keys and owner references only). Behind a small object-safe [`Cache`] trait, so that the
//! reconciler handles every kind with one code path on JSON.

use std::{
    any::TypeId,
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::{FutureExt, StreamExt, TryStreamExt, future::BoxFuture, stream::BoxStream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{
    Resource, ResourceExt,
    api::ApiResource,
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use serde_json::Value;
use tracing::warn;

use crate::{
    Context, Error, Result,
    index::Index,
    kinds::{self, Child, KindScope, MANAGED_BY},
    lock,
    shards::{self, Key},
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
            namespaced: kinds::namespaced::<C>(),
            watch: watched::<C>,
            #[cfg(any(test, feature = "testing"))]
            filled: filled::<C>,
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

/// Marks `cache` (one of [`CHILDREN`], [`NAMES`]) filled once an event says so.
fn mark_filled<K>(filled: &tokio::sync::watch::Sender<u8>, cache: u8, event: &watcher::Event<K>) {
    if matches!(event, watcher::Event::InitDone) {
        filled.send_modify(|done| *done |= cache);
    }
}

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

/// Watches children of kind `C` labelled as this manager's, and the names of the others.
pub(crate) fn watched<C: Child>(
    ctx: &Context,
    watching: &Watching<'_>,
    errors: WatchErrors,
) -> Watched {
    let namespace = watching.namespace.map(str::to_owned);
    let controller = watching.controller;
    let label = format!("{MANAGED_BY}={}", ctx.manager);
    let (children, mut writer) = reflector::store::<watch::Packed<C>>();
    let kind = C::kind(&()).into_owned();
    let failed = {
        let (errors, kind) = (errors.clone(), kind.clone());
        move |error: &watcher::Error| {
            warn!(%kind, %error, "watch failed: may the manager list and watch this kind?");
            errors.record(format!("{kind}: {error}"));
        }
    };
    let on_child_error = failed.clone();
    let owners = Pending::default();
    let (found, freed) = (owners.clone(), owners.clone());
    let (filled, filled_rx) = tokio::sync::watch::channel(0);
    let names_filled = filled.clone();
    let index = Owners::default();
    let indexed = index.clone();
    let cached = {
        let children = children.clone();
        Box::new(move |test: &dyn Fn(&C) -> bool| {
            let decoded = children.state().into_iter();
            let decoded = decoded.filter_map(|child| serde_json::from_str::<C>(child.json()).ok());
            decoded.filter(|child| test(child)).collect()
        })
    };
    let children_task = shards::watch::streaming(
        ctx.shards.as_ref(),
        Key::OwnerUid,
        &ctx.client,
        {
            let namespace = namespace.clone();
            move |client| kinds::api::<C>(client, namespace.as_deref())
        },
        watcher::Config::default().labels(&label).any_semantic(),
        cached,
    )
    .default_backoff()
    .modify(watch::slim)
    .inspect_ok(move |event| {
        watch::store_packed(&mut writer, event);
        lock(&indexed).apply(event, owner_entry::<C>);
        mark_filled(&filled, CHILDREN, event);
    })
    .inspect_ok({
        let (metrics, kind, store) = (ctx.metrics.clone(), kind.clone(), children.clone());
        move |event| {
            if watch::settled(event) {
                metrics.cached(controller, &kind, "children", store.len());
            }
        }
    })
    .touched_objects()
    .for_each(move |child: std::result::Result<C, watcher::Error>| {
        match child {
            Ok(child) => {
                if let Some(owner) = owner(&child) {
                    found.push(owner);
                }
            }
            Err(error) => on_child_error(&error),
        }
        std::future::ready(())
    });
    // Names only (keys and owner references, no data) of the other objects of the kind: read
    // before creating a child, so that none is taken over. An object that gains or loses the
    // label moves between the two caches (the watches say so). When one that an owner waits
    // for changes or goes away, that owner is looked at again.
    let (names, mut names_writer) = reflector::store();
    let waiting = Waiting::default();
    let released = waiting.clone();
    let others = format!("{MANAGED_BY}!={}", ctx.manager);
    // Not sharded: any owner may ask for any name.
    let names_task = watch::streaming(
        <C::Scope as KindScope>::api::<PartialObjectMeta<C>>(
            ctx.client.clone(),
            namespace.as_deref(),
        ),
        watcher::Config::default().labels(&others).any_semantic(),
    )
    .default_backoff()
    .modify(watch::names_only)
    .inspect_ok(move |event| {
        watch::store_packed(&mut names_writer, event);
        mark_filled(&names_filled, NAMES, event);
    })
    .inspect_ok({
        let (metrics, kind, store) = (ctx.metrics.clone(), kind.clone(), names.clone());
        move |event| {
            if watch::settled(event) {
                metrics.cached(controller, &kind, "names", store.len());
            }
        }
    })
    .touched_objects()
    .for_each(
        move |object: std::result::Result<PartialObjectMeta<C>, watcher::Error>| {
            match object {
                Ok(object) => {
                    let key = (object.namespace().unwrap_or_default(), object.name_any());
                    for owner in release(&released, &key.0, &key.1).into_iter().flatten() {
                        freed.push(owner);
                    }
                }
                Err(error) => failed(&error),
            }
            std::future::ready(())
        },
    );
    Watched {
        caches: Caches {
            kinds: vec![Cached {
                type_id: TypeId::of::<C>(),
                resource: ApiResource::erase::<C>(&()),
                namespaced: kinds::namespaced::<C>(),
                cache: Arc::new(Typed {
                    children,
                    names,
                    filled: filled_rx,
                    waiting,
                    owners: index,
                }),
            }],
        },
        owners: owners.stream(),
        tasks: vec![tokio::spawn(children_task), tokio::spawn(names_task)],
    }
}

/// The `ObjectRef` of `child`'s controller owner, if that is an object of `K`.
#[cfg(test)]
pub(crate) fn owner_of<K, C: Child>(child: &C) -> Option<ObjectRef<K>>
where
    K: Resource<DynamicType = (), Scope: KindScope>,
{
    owner(child).and_then(owner_ref::<K>)
}

#[cfg(test)]
type Writer<K> = reflector::store::Writer<watch::Packed<K>>;

/// The names of other objects of kind `C`, as the names cache holds them.
#[cfg(test)]
type Names<C> = Vec<PartialObjectMeta<C>>;

/// Caches of kind `C` that have not had their first list yet, for tests: the caches, and a
/// function that gives each its first list (`children`, and `others` as names).
#[cfg(test)]
pub(crate) fn unfilled<C: Child>() -> (Caches, impl FnOnce(Vec<C>, Names<C>)) {
    let (children, mut writer): (_, Writer<C>) = reflector::store();
    let (names, mut names_writer): (_, Writer<PartialObjectMeta<C>>) = reflector::store();
    let (filled, filled_rx) = tokio::sync::watch::channel(0);
    let owners = Owners::default();
    let cache: Arc<dyn Cache> = Arc::new(Typed {
        children,
        names,
        filled: filled_rx,
        waiting: Waiting::default(),
        owners: owners.clone(),
    });
    let caches = Caches {
        kinds: vec![Cached {
            type_id: TypeId::of::<C>(),
            resource: ApiResource::erase::<C>(&()),
            namespaced: kinds::namespaced::<C>(),
            cache,
        }],
    };
    let fill = move |children: Vec<C>, others: Vec<PartialObjectMeta<C>>| {
        let mut index = lock(&owners);
        for child in &children {
            let (key, owner) = owner_entry(child);
            index.set(key, owner);
        }
        drop(index);
        crate::testing::fill(&mut writer, children);
        crate::testing::fill(&mut names_writer, others);
        filled.send_replace(CHILDREN | NAMES);
    };
    (caches, fill)
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
pub(crate) fn filled<C: Child>(children: Vec<Value>, others: Vec<Value>) -> Arc<dyn Cache> {
    use kube::core::PartialObjectMetaExt;
    let decode =
        |object: Value| -> C { serde_json::from_value(object).expect("an object of its kind") };
    let children: Vec<C> = children.into_iter().map(decode).collect();
    let names: Vec<PartialObjectMeta<C>> = (others.into_iter())
        .map(|other| {
            let mut meta = decode(other).meta().clone().into_request_partial::<C>();
            watch::names_only(&mut meta);
            meta
        })
        .collect();
    let owners = Owners::default();
    for child in &children {
        let (key, owner) = owner_entry(child);
        lock(&owners).set(key, owner);
    }
    Arc::new(Typed {
        children: crate::testing::store_of(children),
        names: crate::testing::store_of(names),
        filled: tokio::sync::watch::channel(CHILDREN | NAMES).1,
        waiting: Waiting::default(),
        owners,
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
#[path = "caches_tests.rs"]
mod tests;
