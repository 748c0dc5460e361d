//! How every cache of the manager fills: with a streaming list, as client-go (and so
//! controller-runtime) does. The API server sends the current objects as the first events of
//! one watch request, from its watch cache, instead of the manager listing them page by page:
//! one request per cache instead of one per 500 objects, and no page held in memory at once.
//!
//! An API server without streaming lists (the `WatchList` feature off, as by default in
//! Kubernetes 1.33, or older than 1.27) refuses the request as invalid; the watch then lists
//! instead, for good, as client-go falls back. That is why the manager's RBAC keeps `list`.
//!
//! A manager's memory is mostly its caches: every cache keeps objects [`slim`], and the caches
//! of children and names keep them [`Packed`].

use std::{borrow::Cow, fmt::Debug, marker::PhantomData};

use futures::{Stream, StreamExt};
use kube::{
    Api, Resource,
    runtime::{
        reflector::{Lookup, ObjectRef, Store, store::Writer},
        watcher::{self, Event, watcher},
    },
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::warn;

/// kube's watcher of `api`, filled with a streaming list (see [`streaming_with`]).
pub fn streaming<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    streaming_with(config, move |config| watcher(api.clone(), config))
}

/// The events of `start(config)` with a streaming list, or with paged lists once the API
/// server has refused a streaming one.
pub fn streaming_with<T, S>(
    config: watcher::Config,
    start: impl Fn(watcher::Config) -> S + Send + 'static,
) -> impl Stream<Item = watcher::Result<Event<T>>> + Send
where
    T: Send + 'static,
    S: Stream<Item = watcher::Result<Event<T>>> + Send + 'static,
{
    let first = start(config.clone().streaming_lists()).boxed();
    let fallback = Some((start, config));
    futures::stream::unfold((first, fallback), |(mut events, mut fallback)| async move {
        loop {
            let event = events.next().await?;
            if let Err(error) = &event
                && refused(error)
                && let Some((start, config)) = fallback.take()
            {
                warn!(%error, "the API server refused a streaming list: listing instead");
                events = start(config).boxed();
                continue;
            }
            return Some((event, (events, fallback)));
        }
    })
}

/// Drops from an object what no controller of this manager reads before it is cached: its
/// managedFields, often as large as the rest of the object.
pub fn slim<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Keeps of an object only what the names cache reads: its keys and owner references. Its
/// annotations (a `last-applied-configuration` is up to 256 KiB), labels and managedFields are
/// dropped, for every object of a child's kind that this manager does not manage.
pub fn names_only<K: Resource>(object: &mut K) {
    let meta = object.meta_mut();
    *meta = kube::api::ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        uid: meta.uid.take(),
        resource_version: meta.resource_version.take(),
        owner_references: meta.owner_references.take(),
        ..kube::api::ObjectMeta::default()
    };
}

/// An object as a cache of children or names keeps it: its JSON text, and the keys the cache
/// finds it by. Decoded, an object takes several times the memory of that text (each map, even
/// of one label, is a B-tree node of ~500 bytes; each string is an allocation of its own); a
/// reconcile decodes only the few objects it reads. With 10,000 objects and their children,
/// the manager's memory went from 66 to 53 MiB (kopgen's `cargo bench --bench operators`).
#[derive(Clone, Debug)]
pub struct Packed<K> {
    name: String,
    namespace: Option<String>,
    resource_version: Option<String>,
    uid: Option<String>,
    json: Box<str>,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource + Serialize + DeserializeOwned> Packed<K> {
    /// `object` as JSON text, with the keys the store finds it by.
    pub fn new(object: &K) -> serde_json::Result<Self> {
        let meta = object.meta();
        Ok(Self {
            name: meta.name.clone().unwrap_or_default(),
            namespace: meta.namespace.clone(),
            resource_version: meta.resource_version.clone(),
            uid: meta.uid.clone(),
            json: serde_json::to_string(object)?.into(),
            kind: PhantomData,
        })
    }

    /// The object, decoded.
    #[cfg(test)]
    pub fn unpack(&self) -> serde_json::Result<K> {
        serde_json::from_str(&self.json)
    }

    /// The object's JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }
}

impl<K: Resource<DynamicType = ()>> Lookup for Packed<K> {
    type DynamicType = ();

    fn kind(_: &()) -> Cow<'_, str> {
        K::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        K::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        K::version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        K::plural(&())
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.name))
    }

    fn namespace(&self) -> Option<Cow<'_, str>> {
        self.namespace.as_deref().map(Cow::Borrowed)
    }

    fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.resource_version.as_deref().map(Cow::Borrowed)
    }

    fn uid(&self) -> Option<Cow<'_, str>> {
        self.uid.as_deref().map(Cow::Borrowed)
    }
}

/// Applies a watch event to `writer`'s cache, its object [`Packed`]; the caller passes the
/// event on unchanged. An object that cannot be written as JSON (only a hand-written
/// `Serialize` can fail) is left out of the cache, with a warning.
pub fn store_packed<K>(writer: &mut Writer<Packed<K>>, event: &Event<K>)
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + 'static,
{
    let pack = |object: &K| {
        Packed::new(object)
            .inspect_err(|error| warn!(%error, name = object.meta().name.as_deref(), "not cached"))
            .ok()
    };
    let packed = match event {
        Event::Init => Some(Event::Init),
        Event::InitApply(object) => pack(object).map(Event::InitApply),
        Event::InitDone => Some(Event::InitDone),
        Event::Apply(object) => pack(object).map(Event::Apply),
        Event::Delete(object) => pack(object).map(Event::Delete),
    };
    if let Some(event) = packed {
        writer.apply_watcher_event(&event);
    }
}

/// A cache of children or names (objects packed) that has had its first list, of `objects`.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn store_of<K>(objects: Vec<K>) -> Store<Packed<K>>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + 'static,
{
    let (store, mut writer) = kube::runtime::reflector::store();
    fill(&mut writer, objects);
    store
}

/// Gives `writer`'s cache its first list: `objects`, packed as the manager packs them.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn fill<K>(writer: &mut Writer<Packed<K>>, objects: Vec<K>)
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Clone + 'static,
{
    store_packed(writer, &Event::Init);
    for object in objects {
        store_packed(writer, &Event::InitApply(object));
    }
    store_packed(writer, &Event::InitDone);
}

/// The objects `events` applied to `store`, as [`kube::runtime::WatchStreamExt::applied_objects`]
/// gives them, except that the objects of a list come once the list is complete, and only if
/// `wanted()` then. kube's store takes a list's objects at its end, and a controller reads the
/// object it reconciles from the store: an object that a list (again) brings in, new to the
/// store, would otherwise be looked up before it is there, and dropped as deleted. Lists happen
/// again after a watch expires, and whenever a replica's shards change. (A standby does not want
/// them: it catches up on every object when it starts to lead, behind what changed meanwhile.)
pub fn applied_when_cached<K>(
    events: impl Stream<Item = watcher::Result<Event<K>>> + Send + 'static,
    store: Store<K>,
    wanted: impl Fn() -> bool + Send + 'static,
) -> impl Stream<Item = watcher::Result<K>> + Send
where
    K: Lookup + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash + Send + Sync,
{
    let mut listed: Vec<ObjectRef<K>> = Vec::new();
    events.flat_map(move |event| {
        let out: Vec<watcher::Result<K>> = match event {
            Ok(Event::Init) => {
                listed.clear();
                Vec::new()
            }
            Ok(Event::InitApply(object)) => {
                listed.push(object.to_object_ref(Default::default()));
                Vec::new()
            }
            Ok(Event::InitDone) => std::mem::take(&mut listed)
                .iter()
                .filter(|_| wanted())
                .filter_map(|key| store.get(key))
                .map(|object| Ok((*object).clone()))
                .collect(),
            Ok(Event::Apply(object)) => vec![Ok(object)],
            Ok(Event::Delete(_)) => Vec::new(),
            Err(error) => vec![Err(error)],
        };
        futures::stream::iter(out)
    })
}

/// Whether a cache that applied `event` has a new size worth telling: at the end of a list, and
/// at each change after it (the objects of a list are not in the cache until its end).
pub fn settled<K>(event: &Event<K>) -> bool {
    matches!(event, Event::InitDone | Event::Apply(_) | Event::Delete(_))
}

/// Whether the API server refused the watch request as such (400 or 422), rather than failing
/// to serve it (unreachable, forbidden, kind not installed): only the former means that it
/// cannot stream lists.
pub fn refused(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) => {
            matches!(status.code, 400 | 422)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::stream::{self, BoxStream};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::{core::Status, runtime::watcher::InitialListStrategy};

    use super::*;

    type Events = BoxStream<'static, watcher::Result<Event<&'static str>>>;

    fn failure(code: u16) -> watcher::Error {
        let status = Status::failure("no", "Invalid").with_code(code);
        watcher::Error::WatchStartFailed(kube::Error::Api(status.boxed()))
    }

    /// An API server whose streaming watches fail with `code` (then stream one object), and
    /// whose lists hold one object; the strategies asked for are recorded in `asked`.
    fn server(
        code: u16,
        asked: Arc<Mutex<Vec<&'static str>>>,
    ) -> impl Fn(watcher::Config) -> Events {
        move |config| {
            let streaming = config.initial_list_strategy == InitialListStrategy::StreamingList;
            let mut asked = asked.lock().unwrap_or_else(|p| p.into_inner());
            asked.push(if streaming { "stream" } else { "list" });
            let listed = vec![
                Ok(Event::Init),
                Ok(Event::InitApply(if streaming {
                    "streamed"
                } else {
                    "listed"
                })),
                Ok(Event::InitDone),
            ];
            let mut events = Vec::new();
            if streaming {
                events.push(Err(failure(code)));
            }
            events.extend(listed);
            stream::iter(events).boxed()
        }
    }

    fn applied(events: &[watcher::Result<Event<&'static str>>]) -> Vec<&'static str> {
        events
            .iter()
            .filter_map(|e| match e {
                Ok(Event::InitApply(o) | Event::Apply(o)) => Some(*o),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_refused_streaming_list_falls_back_to_listing() {
        for code in [400, 422] {
            let asked = Arc::default();
            let config = watcher::Config::default().any_semantic();
            let events: Vec<_> = streaming_with(config, server(code, Arc::clone(&asked)))
                .collect()
                .await;
            assert!(
                events.iter().all(Result::is_ok),
                "the refusal is not an error"
            );
            assert_eq!(applied(&events), ["listed"]);
            assert_eq!(
                *asked.lock().unwrap_or_else(|p| p.into_inner()),
                ["stream", "list"]
            );
        }
    }

    #[tokio::test]
    async fn other_failures_are_passed_on_and_streaming_is_kept() {
        for code in [403, 404, 410, 500] {
            let asked = Arc::default();
            let config = watcher::Config::default();
            let events: Vec<_> = streaming_with(config, server(code, Arc::clone(&asked)))
                .collect()
                .await;
            assert!(
                matches!(&events[0], Err(e) if !refused(e)),
                "{code}: passed on"
            );
            assert_eq!(applied(&events), ["streamed"]);
            assert_eq!(*asked.lock().unwrap_or_else(|p| p.into_inner()), ["stream"]);
        }
    }

    fn config_map(name: &str, data: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": format!("uid-{name}"),
                "resourceVersion": "7",
                "labels": { "app.kubernetes.io/managed-by": "operator" },
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Thing", "name": name, "uid": "owner",
                    "controller": true,
                }],
            },
            "data": { "key": data },
        }))
        .expect("a ConfigMap")
    }

    #[test]
    fn a_packed_object_unpacks_as_it_was_and_is_found_by_its_keys() {
        let object = config_map("a", "value");
        let packed = Packed::new(&object).expect("packs");
        assert_eq!(packed.unpack().ok(), Some(object));
        assert_eq!(packed.name().as_deref(), Some("a"));
        assert_eq!(packed.namespace().as_deref(), Some("ns"));
        assert_eq!(packed.uid().as_deref(), Some("uid-a"));
        assert_eq!(packed.resource_version().as_deref(), Some("7"));
        assert_eq!(Packed::<ConfigMap>::kind(&()), "ConfigMap");
        assert_eq!(Packed::<ConfigMap>::plural(&()), "configmaps");
    }

    #[test]
    fn a_cache_of_packed_objects_follows_the_watch() {
        let (store, mut writer) = kube::runtime::reflector::store::<Packed<ConfigMap>>();
        let cached = |name: &str| {
            let key = kube::runtime::reflector::ObjectRef::new(name).within("ns");
            store
                .get(&key)
                .map(|packed| packed.unpack().expect("unpacks"))
        };
        store_packed(&mut writer, &Event::Init);
        store_packed(&mut writer, &Event::InitApply(config_map("a", "1")));
        store_packed(&mut writer, &Event::InitApply(config_map("b", "1")));
        assert_eq!(cached("a"), None, "not before the list is complete");
        store_packed(&mut writer, &Event::InitDone);
        assert_eq!(cached("a"), Some(config_map("a", "1")));
        store_packed(&mut writer, &Event::Apply(config_map("a", "2")));
        store_packed(&mut writer, &Event::Delete(config_map("b", "1")));
        assert_eq!(cached("a"), Some(config_map("a", "2")));
        assert_eq!(cached("b"), None);
        assert_eq!(store.state().len(), 1);
    }

    #[tokio::test]
    async fn a_lists_objects_come_once_they_are_in_the_cache() {
        use kube::runtime::WatchStreamExt;
        let (store, writer) = kube::runtime::reflector::store::<ConfigMap>();
        let events = stream::iter([
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("a", "1"))),
            Ok(Event::InitApply(config_map("b", "1"))),
            Ok(Event::InitDone),
            Ok(Event::Apply(config_map("c", "1"))),
            Ok(Event::Delete(config_map("a", "1"))),
        ])
        .reflect(writer);
        let cached = store.clone();
        let applied: Vec<String> = applied_when_cached(events, store, || true)
            .map(|object| {
                let object = object.expect("no error");
                let key = ObjectRef::from_obj(&object);
                assert!(
                    cached.get(&key).is_some(),
                    "{key} is in the cache when it comes"
                );
                object.metadata.name.unwrap_or_default()
            })
            .collect()
            .await;
        assert_eq!(applied, ["a", "b", "c"]);
    }

    #[test]
    fn a_slimmed_object_keeps_everything_but_its_managed_fields() {
        let decoded = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "managedFields": [{ "manager": "kubectl" }, { "manager": "operator" }],
            },
            "data": { "key": "value" },
        });
        let mut object: ConfigMap = serde_json::from_value(decoded.clone()).expect("a ConfigMap");
        slim(&mut object);
        let mut expected = decoded;
        if let Some(meta) = expected["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        assert_eq!(serde_json::to_value(&object).ok(), Some(expected));
    }
}
