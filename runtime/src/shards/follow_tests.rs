use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::shards::bucket_of_uid;

type Sent = mpsc::UnboundedSender<watcher::Result<Event<ConfigMap>>>;

/// A cache as kube's store keeps one (a list replaces it at its end), and the watches started:
/// the buckets each covers, as it was told of them.
#[derive(Clone, Default)]
struct Cluster {
    cache: Arc<Mutex<BTreeMap<String, ConfigMap>>>,
    listing: Arc<Mutex<Option<BTreeMap<String, ConfigMap>>>>,
    watches: Arc<Mutex<Vec<(Covered, Sent)>>>,
}

impl Cluster {
    fn apply(&self, event: &Event<ConfigMap>) {
        let mut cache = self.cache.lock().expect("cache");
        let mut listing = self.listing.lock().expect("listing");
        match event {
            Event::Init => *listing = Some(BTreeMap::new()),
            Event::InitApply(o) => {
                listing
                    .get_or_insert_default()
                    .insert(o.metadata.name.clone().unwrap_or_default(), o.clone());
            }
            Event::InitDone => *cache = listing.take().unwrap_or_default(),
            Event::Apply(o) => {
                cache.insert(o.metadata.name.clone().unwrap_or_default(), o.clone());
            }
            Event::Delete(o) => {
                cache.remove(o.metadata.name.as_deref().unwrap_or_default());
            }
        }
    }

    fn names(&self) -> Vec<String> {
        self.cache.lock().expect("cache").keys().cloned().collect()
    }

    /// The buckets watch `index` covers now, and its sender of events.
    fn watch(&self, index: usize) -> (Held, Sent) {
        let (covered, sent) = self.watches.lock().expect("watches")[index].clone();
        let buckets = *covered.borrow();
        (buckets, sent)
    }

    fn started(&self) -> usize {
        self.watches.lock().expect("watches").len()
    }

    fn follow(&self, shards: &Shards) -> Events<ConfigMap> {
        let (watches, cache) = (self.watches.clone(), self.cache.clone());
        let start = move |covered: &Covered| -> Events<ConfigMap> {
            let (sent, received) = mpsc::unbounded();
            watches
                .lock()
                .expect("watches")
                .push((covered.clone(), sent));
            received.boxed()
        };
        let cached: Cached<ConfigMap> = Box::new(move |test| {
            let cache = cache.lock().expect("cache");
            cache.values().filter(|o| test(o)).cloned().collect()
        });
        follow(shards.clone(), Key::Uid, start, cached)
    }
}

/// A ConfigMap named `name` whose UID falls in `bucket`.
fn in_bucket(name: &str, bucket: usize) -> ConfigMap {
    let uid = (0..)
        .map(|i| format!("{name}-{i}"))
        .find(|uid| bucket_of_uid(uid) == bucket)
        .unwrap_or_default();
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "namespace": "default", "uid": uid }
    }))
    .expect("a ConfigMap")
}

fn holding(buckets: &[usize]) -> Held {
    std::array::from_fn(|bucket| buckets.contains(&bucket))
}

/// The events the cache gets until none comes for a while, applied to it.
async fn settle(cluster: &Cluster, events: &mut Events<ConfigMap>) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(50), events.next()).await
    {
        let event = event.expect("no error");
        seen.push(match &event {
            Event::Init => "init".to_owned(),
            Event::InitApply(o) => {
                format!("list {}", o.metadata.name.as_deref().unwrap_or_default())
            }
            Event::InitDone => "listed".to_owned(),
            Event::Apply(o) => format!("apply {}", o.metadata.name.as_deref().unwrap_or_default()),
            Event::Delete(o) => {
                format!("delete {}", o.metadata.name.as_deref().unwrap_or_default())
            }
        });
        cluster.apply(&event);
    }
    seen
}

fn list(watch: &Sent, objects: &[&ConfigMap]) {
    let events = std::iter::once(Event::Init)
        .chain(objects.iter().map(|o| Event::InitApply((*o).clone())))
        .chain([Event::InitDone]);
    for event in events {
        watch.unbounded_send(Ok(event)).expect("followed");
    }
}

#[tokio::test]
async fn a_bucket_gained_is_listed_alone_and_one_given_up_leaves_the_cache() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[1, 2]));
    let mut events = cluster.follow(&shards);
    let (a, b, c, d) = (
        in_bucket("a", 1),
        in_bucket("b", 2),
        in_bucket("c", 3),
        in_bucket("d", 9),
    );
    assert!(settle(&cluster, &mut events).await.is_empty());
    let (buckets, first) = cluster.watch(0);
    assert_eq!(buckets, holding(&[1, 2]));
    list(&first, &[&a, &b, &c]);
    assert_eq!(
        settle(&cluster, &mut events).await,
        ["init", "list a", "list b", "listed"],
        "the first list is a list, of the held buckets only"
    );

    shards.hold(holding(&[1, 2, 3]));
    assert!(settle(&cluster, &mut events).await.is_empty());
    assert_eq!(cluster.started(), 2);
    let (buckets, gained) = cluster.watch(1);
    assert_eq!(buckets, holding(&[3]), "only the bucket gained is listed");
    list(&gained, &[&c]);
    assert_eq!(settle(&cluster, &mut events).await, ["apply c"]);
    assert_eq!(cluster.names(), ["a", "b", "c"]);

    shards.hold(holding(&[2, 3]));
    assert_eq!(settle(&cluster, &mut events).await, ["delete a"]);
    assert_eq!(cluster.started(), 2, "nothing listed again");
    assert_eq!(
        cluster.watch(0).0,
        holding(&[2]),
        "the watch is told it covers fewer: it asks the API server for fewer"
    );
    assert_eq!(cluster.watch(1).0, holding(&[3]));
    first
        .unbounded_send(Ok(Event::Apply(a.clone())))
        .expect("still watching bucket 2");
    first
        .unbounded_send(Ok(Event::Apply(d.clone())))
        .expect("still watching bucket 2");
    let changed_b = Event::Apply(b.clone());
    first
        .unbounded_send(Ok(changed_b))
        .expect("still watching bucket 2");
    assert_eq!(
        settle(&cluster, &mut events).await,
        ["apply b"],
        "a watch passes only what it covers and is held"
    );

    shards.hold(holding(&[3]));
    assert_eq!(settle(&cluster, &mut events).await, ["delete b"]);
    assert!(first.is_closed(), "a watch of nothing held stops");
    assert!(!gained.is_closed());
    assert_eq!(cluster.names(), ["c"]);
}

#[tokio::test]
async fn a_watch_that_lists_again_replaces_only_its_own_buckets() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[1]));
    let mut events = cluster.follow(&shards);
    let (a, b, c, d) = (
        in_bucket("a", 1),
        in_bucket("b", 1),
        in_bucket("c", 5),
        in_bucket("d", 5),
    );
    settle(&cluster, &mut events).await;
    let (_, first) = cluster.watch(0);
    list(&first, &[&a, &b]);
    settle(&cluster, &mut events).await;
    shards.hold(holding(&[1, 5]));
    settle(&cluster, &mut events).await;
    let (_, second) = cluster.watch(1);
    list(&second, &[&c]);
    settle(&cluster, &mut events).await;
    assert_eq!(cluster.names(), ["a", "b", "c"]);

    // The first watch expired and lists again: b went meanwhile.
    list(&first, &[&a]);
    assert_eq!(settle(&cluster, &mut events).await, ["apply a", "delete b"]);
    list(&second, &[&c, &d]);
    assert_eq!(settle(&cluster, &mut events).await, ["apply c", "apply d"]);
    assert_eq!(cluster.names(), ["a", "c", "d"]);
}

#[tokio::test]
async fn a_bucket_kept_after_all_is_applied_again_without_a_list() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[4]));
    let mut events = cluster.follow(&shards);
    let (a, b) = (in_bucket("a", 4), in_bucket("b", 4));
    settle(&cluster, &mut events).await;
    list(&cluster.watch(0).1, &[&a, &b]);
    settle(&cluster, &mut events).await;
    assert!(shards.release(4));
    shards.keep(4);
    assert_eq!(settle(&cluster, &mut events).await, ["apply a", "apply b"]);
    assert_eq!(cluster.started(), 1);
}

#[tokio::test]
async fn a_change_before_the_first_list_ends_starts_it_again() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[1]));
    let mut events = cluster.follow(&shards);
    let (a, b) = (in_bucket("a", 1), in_bucket("b", 2));
    settle(&cluster, &mut events).await;
    let (_, first) = cluster.watch(0);
    first.unbounded_send(Ok(Event::Init)).expect("watching");
    first
        .unbounded_send(Ok(Event::InitApply(a.clone())))
        .expect("watching");
    settle(&cluster, &mut events).await;
    shards.hold(holding(&[1, 2]));
    settle(&cluster, &mut events).await;
    assert!(first.is_closed());
    let (buckets, again) = cluster.watch(1);
    assert_eq!(buckets, holding(&[1, 2]));
    list(&again, &[&a, &b]);
    assert_eq!(
        settle(&cluster, &mut events).await,
        ["init", "list a", "list b", "listed"]
    );
}

#[tokio::test]
async fn a_replica_that_holds_nothing_is_filled_and_lists_what_it_gains() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    let mut events = cluster.follow(&shards);
    assert_eq!(settle(&cluster, &mut events).await, ["init", "listed"]);
    assert_eq!(cluster.started(), 0);
    shards.hold(holding(&[7]));
    settle(&cluster, &mut events).await;
    let (buckets, gained) = cluster.watch(0);
    assert_eq!(buckets, holding(&[7]));
    list(&gained, &[&in_bucket("a", 7)]);
    assert_eq!(settle(&cluster, &mut events).await, ["apply a"]);
}

#[tokio::test]
async fn a_watch_that_ends_is_started_again_for_its_buckets() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[1, 2]));
    let mut events = cluster.follow(&shards);
    let (a, b) = (in_bucket("a", 1), in_bucket("b", 2));
    settle(&cluster, &mut events).await;
    list(&cluster.watch(0).1, &[&a, &b]);
    settle(&cluster, &mut events).await;
    shards.hold(holding(&[1]));
    assert_eq!(settle(&cluster, &mut events).await, ["delete b"]);

    // The watch ends: its one bucket still held is watched again, and what its list lacks goes.
    cluster.watches.lock().expect("watches").clear();
    assert!(settle(&cluster, &mut events).await.is_empty());
    assert_eq!(cluster.started(), 1);
    let (buckets, again) = cluster.watch(0);
    assert_eq!(buckets, holding(&[1]), "only what is still held");
    list(&again, &[]);
    assert_eq!(settle(&cluster, &mut events).await, ["delete a"]);
}

#[tokio::test]
async fn a_watch_that_ends_before_the_first_list_starts_it_again() {
    let (shards, cluster) = (Shards::default(), Cluster::default());
    shards.hold(holding(&[3]));
    let mut events = cluster.follow(&shards);
    settle(&cluster, &mut events).await;
    cluster.watches.lock().expect("watches").clear();
    settle(&cluster, &mut events).await;
    assert_eq!(cluster.started(), 1);
    list(&cluster.watch(0).1, &[&in_bucket("a", 3)]);
    assert_eq!(
        settle(&cluster, &mut events).await,
        ["init", "list a", "listed"]
    );
}
