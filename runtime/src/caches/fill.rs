//! The watches that fill a child kind's two caches: its children (by this manager's label, and
//! with shards only those of the held buckets) and the names of the other objects of the kind.

use std::{any::TypeId, sync::Arc};

use futures::{StreamExt, TryStreamExt};
use kube::{
    ResourceExt,
    api::ApiResource,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, reflector, watcher},
};
use tracing::warn;

use super::{
    CHILDREN, Cached, Caches, NAMES, Owners, Pending, Typed, Waiting, Watched, Watching, owner,
    owner_entry, release, unseen::Unseen,
};
use crate::{
    Context,
    kinds::{self, Child, KindScope, MANAGED_BY},
    lock,
    metrics::Metrics,
    shards::{self, Key},
    sync::WatchErrors,
    watch,
};

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
    let report = |cache, name| Filling {
        filled: filled.clone(),
        cache,
        name,
        metrics: ctx.metrics.clone(),
        controller,
        kind: kind.clone(),
    };
    let (children_filling, names_filling) = (report(CHILDREN, "children"), report(NAMES, "names"));
    let index = Owners::default();
    let indexed = index.clone();
    let unseen = Arc::<Unseen>::default();
    let seen = unseen.clone();
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
    .inspect_ok({
        let store = children.clone();
        move |event| {
            watch::store_packed(&mut writer, event);
            lock(&indexed).apply(event, owner_entry::<C>);
            seen.follow(event);
            children_filling.applied(event, store.len());
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
    .inspect_ok({
        let store = names.clone();
        move |event| {
            watch::store_packed(&mut names_writer, event);
            names_filling.applied(event, store.len());
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
                    unseen,
                }),
            }],
        },
        owners: owners.stream(),
        tasks: vec![tokio::spawn(children_task), tokio::spawn(names_task)],
    }
}

/// What follows each event one of the two caches applied: it is filled at the end of its first
/// list, and its size is reported whenever it is worth telling.
struct Filling {
    filled: tokio::sync::watch::Sender<u8>,
    /// [`CHILDREN`] or [`NAMES`].
    cache: u8,
    /// The cache's name in `<prefix>_cache_objects`.
    name: &'static str,
    metrics: Arc<Metrics>,
    controller: &'static str,
    kind: String,
}

impl Filling {
    fn applied<K>(&self, event: &watcher::Event<K>, len: usize) {
        if matches!(event, watcher::Event::InitDone) {
            self.filled.send_modify(|done| *done |= self.cache);
        }
        if watch::settled(event) {
            (self.metrics).cached(self.controller, &self.kind, self.name, len);
        }
    }
}
