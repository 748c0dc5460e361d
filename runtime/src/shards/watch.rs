//! The watches of a sharded cache: each of some held buckets, asking the API server for their
//! ranges as its `shardSelector` (the reconciled kind, where the API server filters) or leaving
//! the other buckets out by label (children); [`follow`] filters their events by bucket as well
//! (where the API server does not filter, and for children without the label yet) and starts
//! them as the held buckets change.

use std::fmt::Debug;

use futures::StreamExt;
use kube::{Api, Client, Resource, runtime::watcher};
use serde::de::DeserializeOwned;
use tracing::debug;

use super::{
    Held, Key, Shards,
    follow::{Cached, Events, follow},
    hash, selector,
};
use crate::watch;

/// The events of `api(client)` with `config`, restricted to the objects whose `key` falls in a
/// bucket `shards` holds; unrestricted (kopgen's ordinary watch) without shards.
pub(crate) fn streaming<K>(
    shards: Option<&Shards>,
    key: Key,
    client: &Client,
    api: impl Fn(Client) -> Api<K> + Send + 'static,
    config: watcher::Config,
    cached: Cached<K>,
) -> Events<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let Some(shards) = shards.cloned() else {
        return watch::streaming(api(client.clone()), config).boxed();
    };
    let client = client.clone();
    let filtering = shards.clone();
    let start = move |buckets: &Held| -> Events<K> {
        let config = config.clone();
        let selector = key.field().and_then(|field| hash::selector(field, buckets));
        match (key, selector) {
            (Key::Uid, Some(selector)) if filtering.server_side() => {
                debug!(%selector, "watching ranges");
                watch::streaming(api(selector::client(&client, &selector)), config).boxed()
            }
            (Key::Uid, _) => watch::streaming(api(client.clone()), config).boxed(),
            // Children: by their label, where they have it (see `SHARD_LABEL`).
            (Key::OwnerUid, _) => {
                let config = excluding_others(config, buckets);
                watch::streaming(api(client.clone()), config).boxed()
            }
        }
    };
    follow(shards, key, start, cached)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shards::BUCKETS;

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
}
