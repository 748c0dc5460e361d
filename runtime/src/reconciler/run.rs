//! A controller's loop: the watch of the kind it reconciles, the caches of its children and of
//! what it watches, what queues an object (a change that triggers, an owner of a changed child,
//! a mapped watch, what a standby held, its catch-up, the periodic resync, a retry), and the
//! reconciles, until shutdown.

use std::sync::Arc;

use futures::{Stream, StreamExt, TryStreamExt, future::BoxFuture, stream::BoxStream};
use kube::{
    Resource, ResourceExt,
    runtime::{
        WatchStreamExt,
        controller::{self, Action, Controller},
        reflector::{self, ObjectRef, Store, store::Writer},
        watcher,
    },
};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::{
    Reconcile, SHARD_KEY, Setup, Shared,
    listed::{self, Listed},
    priority::{self, Room},
    reconcile, report,
    setup::References,
    standby::Held,
};
use crate::{
    Context, Error, Result,
    caches::{Watching, owner_ref},
    children::{Caches, Children, Lookups},
    kinds,
    metrics::queue_key,
    shards,
    sync::WatchErrors,
    watch,
};

/// The entry point of `R`'s controller, to list in a project's `CONTROLLERS`
/// (`kopgen_runtime::reconciler::start::<BlogReconciler>`).
pub fn start<R: Reconcile + Default>(
    ctx: Arc<Context>,
    shutdown: CancellationToken,
) -> BoxFuture<'static, Result<()>> {
    Box::pin(run(R::default(), ctx, shutdown))
}

/// Runs `reconciler`'s controller until `shutdown`, then drains in-flight reconciles. Fails if
/// its caches are not filled within the cache sync timeout (a CRD not installed, a watch RBAC
/// forbids). The manager bounds the drain ([`crate::Manager::run_controllers`]).
pub async fn run<R: Reconcile>(
    reconciler: R,
    ctx: Arc<Context>,
    shutdown: CancellationToken,
) -> Result<()> {
    let setup = reconciler.setup();
    let (store, writer) = reflector::store();
    let errors = WatchErrors::default();
    // Whether the kind's cache had its first list, kept apart from the store's own readiness,
    // which wakes only the last of several waiters (kube-runtime's controller waits on it).
    let (listed, mut first_list) = tokio::sync::watch::channel(false);
    // The indexes of what each object references, for the watches that map through them:
    // kept from every event of the kind, before any trigger filter.
    let indexes: Vec<_> = setup.watches.iter().map(|w| w.index()).collect();
    let references: Vec<_> = indexes.iter().flatten().cloned().collect();
    // A standby's lists trigger nothing, and its other triggers are held: when it starts to
    // lead, what the old leader did not finish is queued first (`standby`); every object
    // follows (`catch_up`). With shards, each bucket gained is listed and triggered anew
    // instead.
    let standby = ctx.shards.is_none() && !ctx.leadership.is_leading();
    let held = Held::new(standby, store.clone());
    let lists_trigger = {
        let leadership = ctx.leadership.clone();
        move || !standby || leadership.is_leading()
    };
    let from_lists = Listed::default();
    let noted = (from_lists.clone(), lists_trigger.clone());
    let events = objects::<R>(&ctx, &setup, &store, writer, references, listed, noted);
    let events = watch::applied_when_cached(events, store.clone(), lists_trigger);
    let metrics = ctx.metrics.clone();
    let concurrency = setup.concurrency.unwrap_or(ctx.concurrency);
    metrics.controller_started(R::NAME, concurrency);
    // What waits behind new work (a list's settled objects, the resync, the retries) joins the
    // queue while fewer than `concurrency` objects wait there.
    let room = {
        let metrics = metrics.clone();
        let depth = move || metrics.depth(R::NAME);
        Room::new(usize::from(concurrency), depth, ctx.metrics.queue_left())
    };
    let catch_up = catch_up::<R>(&ctx, &store, standby, room.clone());
    let released = {
        let settled: fn(&R::Kind) -> bool = match R::OWNS_STATUS {
            true => report::observed::<R::Kind>,
            false => |_| false,
        };
        (held.clone()).released(ctx.leadership.clone(), settled)
    };
    let settled = (from_lists, store.clone(), room.clone());
    let triggers = triggers::<R>(&ctx, &setup, events, settled, &held);
    let (caches, owners, mut tasks) = children::<R>(&ctx, &errors);
    // The other kinds it watches, each mapped to the objects to reconcile.
    let mut lookups = Lookups::default();
    let mut mapped = vec![owners];
    let mut filled = Vec::new();
    for (watch, index) in setup.watches.iter().zip(indexes) {
        let (started, triggers) = watch.start(&ctx, errors.clone(), index, store.clone());
        lookups.insert(watch.type_id, started.store);
        tasks.push(started.task);
        filled.push(started.filled);
        mapped.push(triggers);
    }
    // The caches' watches stop with the controller.
    let _tasks = AbortOnDrop(tasks);
    // With what a standby held, queued once it leads.
    let mapped = {
        let metrics = metrics.clone();
        let mapped = held.refs(futures::stream::select_all(mapped));
        futures::stream::select(mapped, released).inspect(move |object| {
            let key = queue_key(object.namespace.as_deref(), &object.name);
            metrics.queued(R::NAME, &key)
        })
    };
    let shared = Arc::new(Shared::new(
        Arc::new(reconciler),
        ctx.clone(),
        caches,
        lookups,
    ));
    let synced = {
        let shared = shared.clone();
        async move {
            first_list
                .wait_for(|listed| *listed)
                .await
                .map_err(|_| ())?;
            for mut filled in filled {
                filled.wait_for(|filled| *filled).await.map_err(|_| ())?;
            }
            shared.caches.filled_once().await.map_err(|_| ())
        }
    };
    let sync = (ctx.sync.clone()).wait(R::NAME, errors.clone(), synced, shutdown.clone());
    let config = controller::Config::default().concurrency(concurrency);
    let period = setup.resync.unwrap_or(ctx.timeouts.resync);
    let resync = resync::<R>(&ctx, &store, period, room.clone());
    // A failed reconcile's retry, once its backoff delay is over, also waits for room.
    let (retries, retried) = priority::Retries::new(room);
    let error_policy = move |object: Arc<R::Kind>, error: &Error, shared: Arc<Shared<R>>| {
        let metrics = &shared.ctx.metrics;
        let delay = (shared.backoff).retry_delay(R::NAME, &*object, error, metrics);
        if let Some(delay) = delay {
            let key = queue_key(object.namespace().as_deref(), &object.name_any());
            metrics.requeued(R::NAME, &key, std::time::Instant::now() + delay, true);
            retries.send(ObjectRef::from_obj(&*object), delay);
        }
        Action::await_change()
    };
    let controller = Controller::for_stream(triggers, store)
        .reconcile_on(mapped)
        .reconcile_on(catch_up)
        .reconcile_on(resync)
        .reconcile_on(retried)
        .with_config(config)
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile::<R>, error_policy, shared)
        .for_each(|result| {
            log::<R>(result, &ctx, &errors);
            std::future::ready(())
        });
    // Runs until shutdown; a sync that fails (times out) ends it early.
    tokio::pin!(controller);
    tokio::select! {
        () = &mut controller => Ok(()),
        synced = sync => match synced {
            Ok(()) => {
                controller.await;
                Ok(())
            }
            Err(error) => Err(error),
        },
    }
}

/// The events of the reconciled kind's watch (this replica's shards of it), once applied to
/// its cache (`writer`) and to the `references` indexes; `listed` says when the first list is in.
/// Which objects lists bring is noted (`from_lists`) only while lists trigger (`noting`): what a
/// standby lists would wait there until it changed.
fn objects<R: Reconcile>(
    ctx: &Context,
    setup: &Setup<R>,
    store: &Store<R::Kind>,
    writer: Writer<R::Kind>,
    references: Vec<References<R>>,
    listed: tokio::sync::watch::Sender<bool>,
    (from_lists, noting): (Listed<R::Kind>, impl Fn() -> bool + Send + 'static),
) -> impl Stream<Item = watcher::Result<watcher::Event<R::Kind>>> + Send + 'static {
    let namespace = ctx.namespace.clone();
    let cached = {
        let store = store.clone();
        Box::new(move |test: &dyn Fn(&R::Kind) -> bool| {
            let objects = store.state().into_iter().filter(|object| test(object));
            objects.map(|object| (*object).clone()).collect()
        })
    };
    shards::watch::streaming(
        ctx.shards.as_ref(),
        SHARD_KEY,
        &ctx.client,
        move |client| kinds::api::<R::Kind>(client, namespace.as_deref()),
        setup.selector.config(),
        cached,
    )
    .default_backoff()
    .modify(watch::slim)
    .inspect_ok(move |event| {
        for index in &references {
            index.apply(event);
        }
        if matches!(event, watcher::Event::InitDone) {
            listed.send_replace(true);
        }
    })
    .inspect_ok({
        let store = store.clone();
        move |event| {
            if R::OWNS_STATUS && noting() {
                from_lists.note(event, &store);
            }
        }
    })
    .reflect(writer)
    .inspect_ok({
        let (metrics, store) = (ctx.metrics.clone(), store.clone());
        move |event| {
            if watch::settled(event) {
                metrics.cached(R::NAME, &R::Kind::kind(&()), "objects", store.len());
            }
        }
    })
}

/// A standby's every cached object, queued once when it starts to lead (nothing otherwise),
/// behind new work (as `room` lets it): the reconcile that was waiting for leadership (the
/// change the failover is about) goes first, not behind every object.
pub(super) fn catch_up<R: Reconcile>(
    ctx: &Context,
    store: &Store<R::Kind>,
    standby: bool,
    room: Room,
) -> impl Stream<Item = ObjectRef<R::Kind>> + Send + 'static {
    let (leadership, store, metrics) = (ctx.leadership.clone(), store.clone(), ctx.metrics.clone());
    let objects = futures::stream::once(async move {
        leadership.leading().await;
        store.state()
    })
    .filter(move |_| std::future::ready(standby))
    .flat_map(futures::stream::iter);
    priority::behind_new_work(objects, room).map(move |object| {
        let key = queue_key(object.namespace().as_deref(), &object.name_any());
        metrics.queued(R::NAME, &key);
        ObjectRef::from_obj(&*object)
    })
}

/// The objects whose change triggers a reconcile, counted as queued; a list's objects that
/// say they were reconciled at their generation wait for room in the queue (`settled`: which
/// were listed, their cache, the room; see `listed`) before they are looked at.
fn triggers<R: Reconcile>(
    ctx: &Context,
    setup: &Setup<R>,
    events: impl Stream<Item = watcher::Result<R::Kind>> + Send + 'static,
    (from_lists, store, room): (Listed<R::Kind>, Store<R::Kind>, Room),
    held: &Held<R::Kind>,
) -> BoxStream<'static, watcher::Result<R::Kind>> {
    let triggers = if R::OWNS_STATUS {
        let observed = report::observed::<R::Kind>;
        let events = listed::settled_last(events, from_lists, observed, store, room);
        // Status writes (this controller's own included) change none of what triggers. With
        // shards, a bucket gained anew changes it too: its objects are reconciled by their new
        // holder, even those this replica had seen before.
        let (trigger, shards) = (setup.trigger_key(), ctx.shards.clone());
        let trigger = move |object: &R::Kind| {
            let epoch = shards
                .as_ref()
                .map_or(0, |s| s.epoch(SHARD_KEY.bucket(object)));
            trigger(object).map(|key| key ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        };
        events.predicate_filter(trigger, Default::default()).boxed()
    } else {
        events.boxed()
    };
    let metrics = ctx.metrics.clone();
    held.objects(triggers)
        .inspect_ok(move |object| {
            let key = queue_key(object.namespace().as_deref(), &object.name_any());
            metrics.queued(R::NAME, &key)
        })
        .boxed()
}

/// The caches of `R`'s children, the owners of children that changed, and the tasks that
/// fill the caches. Children live where the manager watches, whatever the owner's scope.
fn children<R: Reconcile>(
    ctx: &Context,
    errors: &WatchErrors,
) -> (Caches, BoxStream<'static, ObjectRef<R::Kind>>, Tasks) {
    let watching = Watching {
        namespace: ctx.namespace.as_deref(),
        controller: R::NAME,
    };
    let watched = Caches::watch(R::Children::kinds(), ctx, &watching, errors);
    let mut caches = Caches { kinds: Vec::new() };
    let mut owners = Vec::new();
    let mut tasks = Vec::new();
    for kind in watched {
        caches.kinds.extend(kind.caches.kinds);
        owners.push(kind.owners);
        tasks.extend(kind.tasks);
    }
    let owners = futures::stream::select_all(owners)
        .filter_map(|owner| std::future::ready(owner_ref::<R::Kind>(owner)))
        .boxed();
    (caches, owners, tasks)
}

/// Every cached object, each `period`, queued behind new work (as `room` lets it).
fn resync<R: Reconcile>(
    ctx: &Context,
    store: &Store<R::Kind>,
    period: std::time::Duration,
    room: Room,
) -> impl Stream<Item = ObjectRef<R::Kind>> + Send + 'static {
    let (store, metrics) = (store.clone(), ctx.metrics.clone());
    priority::ticks(period).flat_map(move |()| {
        let metrics = metrics.clone();
        let objects = futures::stream::iter(store.state());
        priority::behind_new_work(objects, room.clone()).map(move |object| {
            let key = queue_key(object.namespace().as_deref(), &object.name_any());
            metrics.queued(R::NAME, &key);
            ObjectRef::from_obj(&*object)
        })
    })
}

/// How a reconcile ended, as kube's controller tells it.
type Ended<R> = std::result::Result<
    (ObjectRef<<R as Reconcile>::Kind>, Action),
    controller::Error<Error, watcher::Error>,
>;

/// What a reconcile's end says: failures are logged once, by the error policy; a watch that
/// failed is recorded for the cache sync to report.
fn log<R: Reconcile>(result: Ended<R>, ctx: &Context, errors: &WatchErrors) {
    match result {
        Ok((object, _)) => debug!(%object, "reconciled"),
        Err(controller::Error::ReconcilerFailed(..)) => {}
        Err(controller::Error::ObjectNotFound(object)) => {
            let key = queue_key(object.namespace.as_deref(), &object.name);
            ctx.metrics.forget(R::NAME, &key);
            debug!(%object, "deleted before its reconcile")
        }
        Err(error) => {
            warn!(
                controller = R::NAME,
                %error,
                "watch failed: is the CRD installed, may the manager list and watch?"
            );
            errors.record(error.to_string());
        }
    }
}

type Tasks = Vec<tokio::task::JoinHandle<()>>;

/// Tasks aborted when this is dropped.
struct AbortOnDrop(Tasks);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
