//! A watch that follows the buckets this replica holds: started with the held ranges as its
//! `shardSelector` (the reconciled kind, where the API server filters) or with the other
//! buckets left out by label (children), its events filtered by bucket here as well (where the
//! API server does not filter, and for children without the label yet), and started again,
//! with a new list, when the held buckets change. Until a bucket is held it lists nothing: a
//! replica that holds none has an empty cache that counts as filled.

use std::fmt::Debug;

use futures::{StreamExt, stream::BoxStream};
use kube::{
    Api, Client, Resource,
    runtime::watcher::{self, Event},
};
use serde::de::DeserializeOwned;
use tracing::debug;

use super::{Held, Key, Shards, hash, selector};
use crate::watch;

/// The events of `api(client)` with `config`, restricted to the objects whose `key` falls in a
/// bucket `shards` holds; unrestricted (kopgen's ordinary watch) without shards.
pub(crate) fn streaming<K>(
    shards: Option<&Shards>,
    key: Key,
    client: &Client,
    api: impl Fn(Client) -> Api<K> + Send + 'static,
    config: watcher::Config,
) -> BoxStream<'static, watcher::Result<Event<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let Some(shards) = shards.cloned() else {
        return watch::streaming(api(client.clone()), config).boxed();
    };
    let client = client.clone();
    let held = shards.held();
    let start = move |held: &Held| -> BoxStream<'static, watcher::Result<Event<K>>> {
        if !held.contains(&true) {
            // Nothing held: nothing to list, and the (empty) cache is filled.
            return futures::stream::iter([Ok(Event::Init), Ok(Event::InitDone)])
                .chain(futures::stream::pending())
                .boxed();
        }
        let config = config.clone();
        let selector = key.field().and_then(|field| hash::selector(field, held));
        match (key, selector) {
            (Key::Uid, Some(selector)) if shards.server_side() => {
                debug!(%selector, "watching the held ranges");
                watch::streaming(api(selector::client(&client, &selector)), config).boxed()
            }
            (Key::Uid, _) => watch::streaming(api(client.clone()), config).boxed(),
            // Children: by their label, where they have it (see `SHARD_LABEL`).
            (Key::OwnerUid, _) => {
                let config = excluding_others(config, held);
                watch::streaming(api(client.clone()), config).boxed()
            }
        }
    };
    let following = Following {
        held,
        current: [false; super::BUCKETS],
        events: None,
    };
    futures::stream::unfold((following, start), move |(mut state, start)| async move {
        loop {
            let Some(events) = state.events.as_mut() else {
                state.current = *state.held.borrow_and_update();
                state.events = Some(start(&state.current));
                continue;
            };
            tokio::select! {
                changed = state.held.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    // Listed again with the new ranges; the cache swaps at its end.
                    state.events = None;
                }
                event = events.next() => {
                    let event = event?;
                    if keeps(&event, key, &state.current) {
                        return Some((event, (state, start)));
                    }
                }
            }
        }
    })
    .boxed()
}

/// `config` whose label selector leaves out the objects labelled with a bucket not `held`.
fn excluding_others(mut config: watcher::Config, held: &Held) -> watcher::Config {
    let others: Vec<String> = (0..super::BUCKETS)
        .filter(|&bucket| !held[bucket])
        .map(|bucket| bucket.to_string())
        .collect();
    if others.is_empty() {
        return config;
    }
    let excluded = format!("{} notin ({})", super::SHARD_LABEL, others.join(","));
    config.label_selector = Some(match config.label_selector.take() {
        Some(selector) if !selector.is_empty() => format!("{selector},{excluded}"),
        _ => excluded,
    });
    config
}

struct Following<K> {
    held: tokio::sync::watch::Receiver<Held>,
    /// The buckets the current watch was started with.
    current: Held,
    events: Option<BoxStream<'static, watcher::Result<Event<K>>>>,
}

/// Whether `event` concerns a held bucket (errors and the list's bounds always do).
fn keeps<K: Resource>(event: &watcher::Result<Event<K>>, key: Key, held: &Held) -> bool {
    match event {
        Ok(Event::InitApply(object) | Event::Apply(object) | Event::Delete(object)) => {
            held[key.bucket(object)]
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::shards::BUCKETS;

    fn with_uid(uid: &str) -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "a", "namespace": "default", "uid": uid }
        }))
        .expect("a ConfigMap")
    }

    #[test]
    fn only_events_of_held_buckets_pass() {
        let mine = with_uid("5f0c8f4e-3b7a-4e0b-9a51-0c2d6e7f8a91");
        let theirs = with_uid("c3a1b2d4-7e6f-4a5b-8c9d-1e2f3a4b5c6d");
        let mut held = [false; BUCKETS];
        held[Key::Uid.bucket(&mine)] = true;
        assert_ne!(
            Key::Uid.bucket(&mine),
            Key::Uid.bucket(&theirs),
            "the test needs two buckets"
        );
        let keeps = |event: Event<ConfigMap>| keeps(&Ok(event), Key::Uid, &held);
        assert!(keeps(Event::Apply(mine.clone())));
        assert!(keeps(Event::InitApply(mine)));
        assert!(!keeps(Event::Apply(theirs.clone())));
        assert!(!keeps(Event::Delete(theirs)));
        assert!(keeps(Event::Init) && keeps(Event::InitDone));
    }

    #[test]
    fn a_watch_of_children_leaves_out_the_buckets_of_others_by_label() {
        let mut held = [true; BUCKETS];
        let config = watcher::Config::default().labels("app.kubernetes.io/managed-by=demo");
        let all = excluding_others(config.clone(), &held);
        assert_eq!(
            all.label_selector, config.label_selector,
            "nothing to leave out"
        );
        held[1] = false;
        held[63] = false;
        let some = excluding_others(config, &held);
        assert_eq!(
            some.label_selector.as_deref(),
            Some("app.kubernetes.io/managed-by=demo,kopgen.io/shard notin (1,63)")
        );
    }

    #[tokio::test]
    async fn a_replica_that_holds_nothing_lists_nothing_and_is_filled() {
        let (service, _handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        let client = Client::new(service, "default");
        let shards = Shards::default();
        let mut events = streaming(
            Some(&shards),
            Key::Uid,
            &client,
            Api::<ConfigMap>::all,
            watcher::Config::default(),
        );
        assert!(matches!(events.next().await, Some(Ok(Event::Init))));
        assert!(matches!(events.next().await, Some(Ok(Event::InitDone))));
    }
}
