//! How a controller is set up beyond its kind and children ([`Reconcile::setup`]), row for row
//! controller-runtime's builder: `Watches` with a mapping ([`Watch`]), `WithEventFilter`
//! ([`Setup::on_labels`], [`Setup::on_change`]), `WithOptions` ([`Setup::concurrency`],
//! [`Setup::resync`]) and the cache's selectors ([`Setup::labels`], [`Setup::fields`]).

use std::{
    any::{Any, TypeId},
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, TryStreamExt, stream::BoxStream};
use kube::{
    Resource, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use tracing::warn;

use super::Reconcile;
#[cfg(any(test, feature = "testing"))]
use crate::children::Lookups;
use crate::{
    Context,
    index::Index,
    kinds::{self, Child, KindScope},
    lock,
    sync::WatchErrors,
    watch,
};

/// A controller's options, watches and triggers; `Setup::default()` is today's controller:
/// generation changes trigger, the manager's concurrency, the hourly resync, every object.
///
/// ```
/// # use kopgen_runtime::reconciler::{Reconcile, Setup, Watch};
/// # use kopgen_runtime::k8s_openapi::api::{apps::v1::Deployment, core::v1::Secret};
/// # use kopgen_runtime::kube::{ResourceExt, runtime::reflector::ObjectRef};
/// # fn example<R: Reconcile<Kind = Deployment>>() -> Setup<R> {
/// Setup::default()
///     // A change of the Secret a Deployment names brings that Deployment back.
///     .watch(Watch::referenced(|object: &R::Kind| {
///         let namespace = object.namespace().unwrap_or_default();
///         vec![ObjectRef::<Secret>::new("credentials").within(&namespace)]
///     }))
///     .on_labels()
///     .concurrency(4)
///     .resync(std::time::Duration::from_secs(600))
/// # }
/// ```
pub struct Setup<R: Reconcile> {
    pub(crate) watches: Vec<Watch<R>>,
    pub(crate) labels: bool,
    pub(crate) annotations: bool,
    pub(crate) changed: Vec<fn(&R::Kind) -> u64>,
    pub(crate) concurrency: Option<u16>,
    pub(crate) resync: Option<Duration>,
    pub(crate) selector: Selector,
}

impl<R: Reconcile> Default for Setup<R> {
    fn default() -> Self {
        Self {
            watches: Vec::new(),
            labels: false,
            annotations: false,
            changed: Vec::new(),
            concurrency: None,
            resync: None,
            selector: Selector::default(),
        }
    }
}

/// Label and field selectors of a watch: what its cache holds and what can trigger.
#[derive(Clone, Debug, Default)]
pub(crate) struct Selector {
    labels: Option<String>,
    fields: Option<String>,
}

impl Selector {
    pub(crate) fn config(&self) -> watcher::Config {
        let mut config = watcher::Config::default().any_semantic();
        if let Some(labels) = &self.labels {
            config = config.labels(labels);
        }
        if let Some(fields) = &self.fields {
            config = config.fields(fields);
        }
        config
    }
}

impl<R: Reconcile> Setup<R> {
    /// Also reconciles objects when another kind's objects change (controller-runtime's
    /// `Watches`); their cache is read with [`crate::Observed::get`] and
    /// [`crate::Observed::list`].
    pub fn watch(mut self, watch: Watch<R>) -> Self {
        self.watches.push(watch);
        self
    }

    /// A change of an object's labels triggers a reconcile too (controller-runtime's
    /// `LabelChangedPredicate`): labels the controller copies to children, or reads.
    pub fn on_labels(mut self) -> Self {
        self.labels = true;
        self
    }

    /// A change of an object's annotations triggers a reconcile too (controller-runtime's
    /// `AnnotationChangedPredicate`): a `restartedAt`, a reference kept in an annotation.
    pub fn on_annotations(mut self) -> Self {
        self.annotations = true;
        self
    }

    /// A change of the value `key` computes from an object triggers a reconcile too (a
    /// predicate function: hash what matters to the controller). Status writes never trigger
    /// unless `key` reads the status.
    pub fn on_change(mut self, key: fn(&R::Kind) -> u64) -> Self {
        self.changed.push(key);
        self
    }

    /// How many objects this controller reconciles at once, instead of the manager's
    /// `--max-concurrent-reconciles`.
    pub fn concurrency(mut self, concurrency: u16) -> Self {
        self.concurrency = Some(concurrency.max(1));
        self
    }

    /// How often every object is reconciled although nothing changed, instead of the
    /// manager's `--sync-period` (up to 10% later, drawn each time, so that controllers and
    /// replicas started together do not resync together).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Watches and caches only the objects of the kind with these labels (a label selector,
    /// `tier=gold,!legacy`): the others are neither reconciled nor held in memory.
    pub fn labels(mut self, selector: &str) -> Self {
        self.selector.labels = Some(selector.to_owned());
        self
    }

    /// Watches and caches only the objects of the kind these fields select
    /// (`metadata.name=main`; the API server allows few fields per kind).
    pub fn fields(mut self, selector: &str) -> Self {
        self.selector.fields = Some(selector.to_owned());
        self
    }

    /// Caches of the kinds this controller watches, holding `objects` (JSON of any of those
    /// kinds; each goes to its kind's cache), for tests.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn filled(&self, objects: &[serde_json::Value]) -> Lookups {
        let mut lookups = Lookups::default();
        for watch in &self.watches {
            lookups.insert(watch.type_id, (watch.filled)(objects));
        }
        lookups
    }

    /// The value whose change triggers a reconcile: the generation, and what was opted in.
    pub(crate) fn trigger_key(&self) -> impl Fn(&R::Kind) -> Option<u64> + Send + 'static {
        let (labels, annotations) = (self.labels, self.annotations);
        let changed = self.changed.clone();
        move |object: &R::Kind| {
            let mut hasher = DefaultHasher::new();
            object.meta().generation.hash(&mut hasher);
            if labels {
                object.labels().hash(&mut hasher);
            }
            if annotations {
                object.annotations().hash(&mut hasher);
            }
            for key in &changed {
                key(object).hash(&mut hasher);
            }
            Some(hasher.finish())
        }
    }
}

/// Another kind a controller watches (controller-runtime's `Watches`), and how a change of one
/// of its objects maps to the objects to reconcile. Its objects are cached (without
/// managedFields) and read through [`crate::Observed`], with no request per reconcile.
///
/// To watch and cache only the objects' metadata (controller-runtime's `OnlyMetadata`: the
/// names, labels and annotations of Secrets whose data the controller never reads), watch
/// `PartialObjectMeta<Secret>`: kube asks the API server for metadata only, and it is read as
/// such (`observed.get(&ObjectRef::<PartialObjectMeta<Secret>>::new(..))`).
pub struct Watch<R: Reconcile> {
    pub(crate) type_id: TypeId,
    pub(crate) selector: Selector,
    start: fn(&Context, &Selector, WatchErrors) -> Started,
    /// A cache of the kind holding the given objects (those of its kind), for tests.
    #[cfg(any(test, feature = "testing"))]
    filled: fn(&[serde_json::Value]) -> Arc<dyn Any + Send + Sync>,
    map: Mapping<R>,
}

/// What an object of kind `K` references, as keys.
type KeysOf<K> = Arc<dyn Fn(&K) -> Vec<Key> + Send + Sync>;

/// A mapping function from a watched object (type-erased) to objects of kind `K`.
type MapFn<K> = Arc<dyn Fn(&dyn Any) -> Vec<ObjectRef<K>> + Send + Sync>;

/// How a watched object maps to the objects to reconcile.
enum Mapping<R: Reconcile> {
    /// Through an index of what each object references, kept from the objects themselves.
    Referenced(KeysOf<R::Kind>),
    /// The object named by a label of the watched object, in its namespace.
    Labelled(String),
    /// A function of the watched object.
    Mapped(MapFn<R::Kind>),
    /// Every object of the kind.
    All,
}

/// An object's key: its namespace (`""` for a cluster-scoped kind) and name.
pub(crate) type Key = (String, String);

fn key_of<K: Resource>(object: &K) -> Key {
    (object.namespace().unwrap_or_default(), object.name_any())
}

fn key_of_ref<K: Resource<DynamicType = ()>>(reference: &ObjectRef<K>) -> Key {
    (
        reference.namespace.clone().unwrap_or_default(),
        reference.name.clone(),
    )
}

/// A started watch: its cache (a `Store<C>`, type-erased), the objects that changed, and
/// whether the cache had its first list.
pub(crate) struct Started {
    pub(crate) store: Arc<dyn Any + Send + Sync>,
    changed: BoxStream<'static, Arc<dyn Any + Send + Sync>>,
    pub(crate) task: tokio::task::JoinHandle<()>,
    pub(crate) filled: tokio::sync::watch::Receiver<bool>,
}

impl<R: Reconcile> Watch<R> {
    fn new<C: Child>(map: Mapping<R>) -> Self {
        Self {
            type_id: TypeId::of::<C>(),
            selector: Selector::default(),
            start: start::<C>,
            #[cfg(any(test, feature = "testing"))]
            filled: filled::<C>,
            map,
        }
    }

    /// Objects of `C` that an object references (a Secret of credentials, a ConfigMap of
    /// configuration, a parent resource), as `references` reads them from the object: the
    /// runtime keeps an index of them (controller-runtime's `IndexField`), so that a change of
    /// one, or its creation after the object that names it, reconciles every object naming it.
    pub fn referenced<C: Child>(references: fn(&R::Kind) -> Vec<ObjectRef<C>>) -> Self {
        let keys = move |object: &R::Kind| {
            references(object)
                .iter()
                .map(key_of_ref)
                .collect::<Vec<_>>()
        };
        Self::new::<C>(Mapping::Referenced(Arc::new(keys)))
    }

    /// Objects of `C` whose label `label` names the object to reconcile (in their namespace,
    /// or cluster-wide for a cluster-scoped kind).
    pub fn labelled<C: Child>(label: &str) -> Self {
        Self::new::<C>(Mapping::Labelled(label.to_owned())).labels(label)
    }

    /// Objects of `C`, mapped by `map` to the objects to reconcile (controller-runtime's
    /// `EnqueueRequestsFromMapFunc`).
    pub fn mapped<C: Child>(map: fn(&C) -> Vec<ObjectRef<R::Kind>>) -> Self {
        let map = move |object: &dyn Any| match object.downcast_ref::<C>() {
            Some(object) => map(object),
            None => Vec::new(),
        };
        Self::new::<C>(Mapping::Mapped(Arc::new(map)))
    }

    /// Objects of `C`, any of whose changes reconciles every object of the controller's kind
    /// (a shared issuer, a cluster-wide setting).
    pub fn all<C: Child>() -> Self {
        Self::new::<C>(Mapping::All)
    }

    /// Caches only the objects of `C` with these labels (`app=web`, or `key` for "has the
    /// label"): the others are neither held in memory nor mapped.
    pub fn labels(mut self, selector: &str) -> Self {
        self.selector.labels = Some(selector.to_owned());
        self
    }

    /// Caches only the objects of `C` these fields select (`type=kubernetes.io/tls`).
    pub fn fields(mut self, selector: &str) -> Self {
        self.selector.fields = Some(selector.to_owned());
        self
    }

    /// The index this watch needs of the controller's own objects, if any.
    pub(crate) fn index(&self) -> Option<References<R>> {
        match &self.map {
            Mapping::Referenced(keys) => Some(References {
                keys: keys.clone(),
                index: Arc::default(),
            }),
            _ => None,
        }
    }

    /// Starts the watch; each change maps to the objects to reconcile (`index` is the one
    /// [`Watch::index`] gave, kept up to date from the controller's objects; `own` is the
    /// controller's cache of them).
    pub(crate) fn start(
        &self,
        ctx: &Context,
        errors: WatchErrors,
        index: Option<References<R>>,
        own: Store<R::Kind>,
    ) -> (Started, BoxStream<'static, ObjectRef<R::Kind>>) {
        let mut started = (self.start)(ctx, &self.selector, errors);
        let changed = std::mem::replace(&mut started.changed, futures::stream::empty().boxed());
        let map = match &self.map {
            Mapping::Referenced(_) => Map::<R>::Referenced(index.map(|index| index.index)),
            Mapping::Labelled(label) => Map::Labelled(label.clone()),
            Mapping::Mapped(map) => Map::Mapped(map.clone()),
            Mapping::All => Map::All(own),
        };
        let triggers = changed
            .flat_map(move |object| futures::stream::iter(map.objects(&*object)))
            .boxed();
        (started, triggers)
    }
}

/// The mapping of one started watch.
enum Map<R: Reconcile> {
    Referenced(Option<Arc<Mutex<Index<Key, Key>>>>),
    Labelled(String),
    Mapped(MapFn<R::Kind>),
    All(Store<R::Kind>),
}

impl<R: Reconcile> Map<R> {
    fn objects(&self, object: &(dyn Any + Send + Sync)) -> Vec<ObjectRef<R::Kind>> {
        let Some(meta) = object.downcast_ref::<Meta>() else {
            return Vec::new();
        };
        let namespaced = <<R::Kind as Resource>::Scope as KindScope>::NAMESPACED;
        let reference = |(namespace, name): Key| {
            let reference = ObjectRef::new(&name);
            match namespaced {
                true => reference.within(&namespace),
                false => reference,
            }
        };
        match self {
            Map::Referenced(index) => (index.iter())
                .flat_map(|index| lock(index).sources(&meta.key))
                .map(reference)
                .collect(),
            Map::Labelled(label) => (meta.labels.get(label).into_iter())
                .map(|name| reference((meta.key.0.clone(), name.clone())))
                .collect(),
            Map::Mapped(map) => map(&*meta.object),
            Map::All(own) => own
                .state()
                .iter()
                .map(|o| ObjectRef::from_obj(&**o))
                .collect(),
        }
    }
}

/// What the mapping of a changed object reads: its key and labels, and the object itself.
struct Meta {
    key: Key,
    labels: std::collections::BTreeMap<String, String>,
    object: Box<dyn Any + Send + Sync>,
}

/// The index a [`Watch::referenced`] keeps of the controller's objects: which objects each one
/// references.
pub(crate) struct References<R: Reconcile> {
    keys: KeysOf<R::Kind>,
    index: Arc<Mutex<Index<Key, Key>>>,
}

impl<R: Reconcile> Clone for References<R> {
    fn clone(&self) -> Self {
        Self {
            keys: self.keys.clone(),
            index: self.index.clone(),
        }
    }
}

impl<R: Reconcile> References<R> {
    /// Follows one event of the controller's own watch.
    pub(crate) fn apply(&self, event: &watcher::Event<R::Kind>) {
        let keys = &self.keys;
        lock(&self.index).apply(event, |object| (key_of(object), keys(object)));
    }
}

/// A cache of `C` that had its first list, holding those of `objects` that are of kind `C`.
#[cfg(any(test, feature = "testing"))]
fn filled<C: Child>(objects: &[serde_json::Value]) -> Arc<dyn Any + Send + Sync> {
    let resource = kube::api::ApiResource::erase::<C>(&());
    let (store, mut writer) = reflector::store::<C>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects
        .iter()
        .filter(|o| crate::caches::is_of(o, &resource))
    {
        let object: C = serde_json::from_value(object.clone()).expect("an object of its kind");
        writer.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    Arc::new(store)
}

/// Watches objects of `C` where the manager watches, into a cache of their own.
fn start<C: Child>(ctx: &Context, selector: &Selector, errors: WatchErrors) -> Started {
    let (store, writer) = reflector::store::<C>();
    let (filled, filled_rx) = tokio::sync::watch::channel(false);
    let (sender, changed) = futures::channel::mpsc::unbounded();
    let kind = C::kind(&()).into_owned();
    let events = watch::streaming(
        kinds::api::<C>(ctx.client.clone(), ctx.namespace.as_deref()),
        selector.config(),
    )
    .default_backoff()
    .modify(watch::slim)
    .inspect_ok(move |event| {
        if matches!(event, watcher::Event::InitDone) {
            filled.send_replace(true);
        }
    })
    .reflect(writer)
    .touched_objects()
    .for_each(move |object: Result<C, watcher::Error>| {
        match object {
            Ok(object) => {
                let meta = Meta {
                    key: key_of(&object),
                    labels: object.labels().clone(),
                    object: Box::new(object),
                };
                let _ = sender.unbounded_send(Arc::new(meta) as Arc<dyn Any + Send + Sync>);
            }
            Err(error) => {
                warn!(%kind, %error, "watch failed: may the manager list and watch this kind?");
                errors.record(format!("{kind}: {error}"));
            }
        }
        std::future::ready(())
    });
    Started {
        store: Arc::new(store),
        changed: changed.boxed(),
        task: tokio::spawn(events),
        filled: filled_rx,
    }
}

#[cfg(test)]
#[path = "setup_tests.rs"]
mod tests;
