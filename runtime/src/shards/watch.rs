//! The watches of a sharded cache: each of some held buckets, asking the API server for their
//! ranges as its `shardSelector` (the reconciled kind, where the API server filters) or leaving
//! the other buckets out by label (children), for fewer as it covers fewer (`selector`);
//! [`follow`] filters their events by bucket as well (where the API server does not filter, and
//! for children without the label yet) and starts them as the held buckets change.

use std::fmt::Debug;

use futures::StreamExt;
use kube::{Api, Client, Resource, runtime::watcher};
use serde::de::DeserializeOwned;
use tracing::debug;

use super::{
    Key, Shards,
    follow::{Cached, Covered, Events, follow},
    hash,
    selector::{self, Asks},
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
    let start = move |covered: &Covered| -> Events<K> {
        let asks = match (key, key.field()) {
            (Key::Uid, Some(field)) if filtering.server_side() => Asks::Ranges(field),
            (Key::Uid, _) => return watch::streaming(api(client.clone()), config.clone()).boxed(),
            // Children: by their label, where they have it (see `SHARD_LABEL`).
            (Key::OwnerUid, _) => Asks::Label,
        };
        // The ranges as the `shard_range` metric names them (built only when logged).
        let ranges = || -> Vec<String> {
            let ranges = hash::ranges(&*covered.borrow());
            ranges.into_iter().map(hash::range_name).collect()
        };
        debug!(?asks, ranges = ?ranges(), "watching buckets");
        let client = selector::client(&client, asks, covered.clone());
        watch::streaming(api(client), config.clone()).boxed()
    };
    follow(shards, key, start, cached)
}
