//! The reconcile machinery every controller shares. A controller supplies what is its own (the
//! kind it reconciles, the children it asks for, its own status fields, cleanup outside the
//! cluster) by implementing [`Reconcile`]; everything here is the same for every controller.
//!
//! What it guarantees, following controller-runtime and kube-runtime practice:
//! - **Idempotent**: each child is compared with the controller's cache, on the fields this
//!   manager applies only, and written only when one differs or when what is desired changed
//!   (each child carries a hash of what was last applied to it, [`APPLIED`]): created when
//!   missing, updated with server-side apply, which removes what the object no longer asks for,
//!   even when the first attempt failed or a new version of the operator stopped asking.
//!   A value the API server normalises (an empty map it drops, a quantity it rewrites) is not
//!   drift: the version the server returned for this manager's own write is remembered. A key
//!   someone else added to a child is theirs: it causes no write and no event. No reconcile
//!   starts before the caches have had their first list.
//! - **Owned children**: each child gets a controller owner reference with
//!   `blockOwnerDeletion` (garbage collection deletes it with its owner, and a foreground
//!   deletion of the owner waits for it) and the `app.kubernetes.io/managed-by` label (the
//!   controller watches only labelled objects; a child whose label someone removed is applied
//!   back). An existing object of the same name that this owner does not control is never
//!   adopted: the owner's `Ready` condition says so, with an event, and the owner is looked at
//!   again as soon as that object goes away.
//! - **Several kinds, several namespaces**: every kind of [`Reconcile::Children`] is watched
//!   where the manager watches; a change of a child maps to its controller owner, in the
//!   child's namespace for a namespaced kind and cluster-wide for a cluster-scoped one. A
//!   namespaced object's child must live in its namespace (the garbage collector deletes
//!   children whose owner is elsewhere): asking for another is an error saying so. One child
//!   that fails does not keep the others from being applied.
//! - **Status that tells the truth** (for the project's own kinds, [`Reconcile::OWNS_STATUS`]):
//!   every reconcile, failed or not, sets the `Ready` condition and `observedGeneration` with
//!   server-side apply of that one condition, so conditions other managers own are left alone;
//!   the kind's own status fields ([`Desired::status`]) are applied with a field manager of
//!   their own; nothing is written when nothing changed, and a success right after a failure
//!   is written even before the cache has seen the failure.
//! - **Errors by class** (see [`Error::retry`]): transient ones back off exponentially per
//!   object (by UID, per controller), with jitter and an overall rate limit; permanent ones
//!   wait for a change of the object. A panic of the project's code is an error of that object.
//!   A reconcile that takes longer than the manager's `--reconcile-timeout` fails as a timeout.
//! - **Finalizer only when needed**: with [`Reconcile::FINALIZER`] unset (the default),
//!   deletion never waits for the operator; set it when [`Reconcile::cleanup`] has work. The
//!   finalizer is released even when cleanup wrote the object; a cleanup that fails says why
//!   (an event, and `Ready=False` with reason `CleanupFailed`); finalizers a controller no
//!   longer uses ([`Reconcile::RETIRED_FINALIZERS`]) are released on deletion.
//! - **Lean**: bounded concurrency; for the project's own kinds only generation changes trigger
//!   a reconcile (status writes do not); children are watched by label and cached as JSON text
//!   (packed), without managedFields.

mod apply;
mod desired;
mod finalizer;
mod listed;
mod priority;
mod report;
mod run;
mod setup;
mod standby;
#[cfg(test)]
mod tests;

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use kube::{
    Api, Resource, ResourceExt,
    runtime::{controller::Action, events::EventType},
};

#[cfg(any(test, feature = "testing"))]
pub(crate) use apply::as_applied;
#[cfg(test)]
use apply::{hand_over_created_fields, is_applied};

pub use desired::Desired;
pub use run::{run, start};
pub use setup::{Setup, Watch};

use crate::{
    Context, Error, Result,
    backoff::Backoff,
    children::{Caches, Children, Lookups, Observed},
    kinds::{self, Child},
    lock,
    metrics::{Outcome, queue_key},
    recent::Recent,
    shards,
};
pub use crate::{
    context::RESYNC,
    kinds::{KindScope, MANAGED_BY},
};
/// The annotation on each child with a hash of what this manager last applied to it: when what
/// is desired changes (a field is no longer asked for, even by a new version of the operator),
/// the child is applied again although every field it still asks for is there.
pub const APPLIED: &str = "kopgen.io/applied-hash";

/// A controller: the kind it reconciles and what an object of that kind asks for. Everything
/// else is this module's. Implemented on a type of the project's own (`BlogReconciler`), as
/// controller-runtime's reconcilers are structs, so that a project can reconcile built-in kinds
/// too and keep values its controller needs in it.
///
/// ```
/// use kopgen_runtime::{Context, Desired, Observed, Reconcile, Result};
/// use kopgen_runtime::k8s_openapi::api::core::v1::ConfigMap;
/// # use kopgen_runtime::kube::{CustomResource, ResourceExt, api::ObjectMeta};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, schemars::JsonSchema)]
/// # #[kube(group = "example.com", version = "v1", kind = "Blog", namespaced)]
/// # #[kube(status = "BlogStatus")]
/// # pub struct BlogSpec { text: String }
/// # #[derive(Deserialize, Serialize, Clone, Debug, Default, schemars::JsonSchema)]
/// # pub struct BlogStatus {}
///
/// #[derive(Default)]
/// pub struct BlogReconciler;
///
/// impl Reconcile for BlogReconciler {
///     type Kind = Blog;
///     type Children = (ConfigMap,);
///     const NAME: &'static str = "example-blog";
///
///     async fn desired(
///         &self,
///         blog: &Blog,
///         _: &Context,
///         _: &Observed<'_>,
///     ) -> Result<Desired<Self>> {
///         let page = ConfigMap {
///             metadata: ObjectMeta {
///                 name: Some(blog.name_any()),
///                 namespace: blog.namespace(),
///                 ..ObjectMeta::default()
///             },
///             data: Some([("text".to_owned(), blog.spec.text.clone())].into()),
///             ..ConfigMap::default()
///         };
///         Desired::new().child(page)
///     }
/// }
/// ```
pub trait Reconcile: Send + Sync + 'static {
    /// The kind this controller reconciles (controller-runtime's `For`): one of the project's
    /// own, or a built-in kind such as `Deployment`.
    type Kind: Child;

    /// The kinds of the objects this controller creates (controller-runtime's `Owns`), as a
    /// tuple: `(ConfigMap,)`, `(Deployment, Service)`, or `()` for none. A cluster-scoped
    /// kind's children may be cluster-scoped (a `Namespace`, a `ClusterRole`).
    type Children: Children;

    /// Name of the controller in logs, metrics and events.
    const NAME: &'static str;
    /// Makes deletion wait until [`Reconcile::cleanup`] has run. Leave it `None` unless cleanup
    /// has work outside the cluster: a finalizer blocks deletion (of the object and of its
    /// namespace) for as long as the operator is down.
    const FINALIZER: Option<&'static str> = None;
    /// Finalizers an earlier version of this controller added and this one no longer uses:
    /// they are removed from objects being deleted, so that turning a finalizer off does not
    /// leave existing objects stuck in `Terminating`.
    const RETIRED_FINALIZERS: &'static [&'static str] = &[];
    /// Whether this controller owns the kind's status: it sets the `Ready` condition and
    /// `observedGeneration` after each reconcile, and may set fields of its own
    /// ([`Desired::status`]); only changes of `metadata.generation` then trigger a reconcile.
    /// Set it to `false` for a kind whose status another controller writes (a built-in kind):
    /// every change of an object triggers a reconcile, and its outcome is told in events and
    /// metrics only.
    const OWNS_STATUS: bool = true;

    /// What `object` asks for now: its children (each with a name, and a namespace for a
    /// namespaced kind; the owner reference and the managed-by label are added for you), and
    /// optionally status fields of its own, whether it is ready yet, children to delete and
    /// when to look again. Derive it from the spec, the children it has and what it references
    /// (`observed`, from the caches) and the time (`ctx.now()`); it writes nothing, so a test
    /// of it performs nothing.
    fn desired(
        &self,
        object: &Self::Kind,
        ctx: &Context,
        observed: &Observed<'_>,
    ) -> impl Future<Output = Result<Desired<Self>>> + Send
    where
        Self: Sized;

    /// What else this controller watches, what triggers it and how it runs (see [`Setup`]);
    /// the default is generation changes of the kind and of its children, the manager's
    /// concurrency and resync.
    fn setup(&self) -> Setup<Self>
    where
        Self: Sized,
    {
        Setup::default()
    }

    /// Releases what `object` holds outside the cluster (DNS records, buckets, accounts).
    /// Runs before deletion completes, only when [`Reconcile::FINALIZER`] is set; must be safe
    /// to run again (after a failure, or if the operator stops halfway). A blocking client
    /// (a cloud SDK without async) goes on a thread of its own, so that probes, webhooks and
    /// other reconciles go on meanwhile; check `ctx.leadership` before a write outside the
    /// cluster that must not leave a replica that lost the Lease meanwhile:
    ///
    /// ```ignore
    /// let bucket = object.spec.bucket.clone();
    /// tokio::task::spawn_blocking(move || storage::delete_bucket(&bucket))
    ///     .await
    ///     .map_err(|e| Error::Other(e.into()))?
    ///     .map_err(|e| Error::Other(e.into()))?;
    /// ```
    fn cleanup(
        &self,
        object: &Self::Kind,
        ctx: &Context,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = (object, ctx);
        async { Ok(()) }
    }
}

/// One controller's state: the project's reconciler, the manager's context, its own backoff,
/// and the caches of children.
pub struct Shared<R: Reconcile> {
    /// The project's reconciler.
    pub reconciler: Arc<R>,
    /// The manager's context.
    pub ctx: Arc<Context>,
    backoff: Backoff,
    caches: Caches,
    /// The caches of the other kinds the controller watches.
    lookups: Lookups,
    /// Per object UID, the version of the object and the `Ready` outcome last written for it:
    /// the cache may not show a write yet (a success right after a failure must still be
    /// written, the same outcome twice need not).
    written: Mutex<Recent<(String, String)>>,
    /// Per object UID, the version the kind's own status fields were last written at, and
    /// what was written.
    own_written: Mutex<Recent<(String, String)>>,
    /// Per child UID, the resource version the API server returned for this manager's last
    /// write of it, with the hash of what was written: a child at that version is as desired
    /// even where the server normalised a value.
    applied: Mutex<Recent<(String, String)>>,
}

impl<R: Reconcile> Shared<R> {
    fn new(reconciler: Arc<R>, ctx: Arc<Context>, caches: Caches, lookups: Lookups) -> Self {
        Self {
            reconciler,
            backoff: Backoff::default(),
            ctx,
            caches,
            lookups,
            written: Mutex::default(),
            own_written: Mutex::default(),
            applied: Mutex::default(),
        }
    }

    /// A controller state whose caches hold `children` and, as names others hold, `others`
    /// (tests fill them by hand).
    #[cfg(any(test, feature = "testing"))]
    pub fn filled(
        reconciler: R,
        ctx: Arc<Context>,
        children: Vec<serde_json::Value>,
        others: Vec<serde_json::Value>,
    ) -> Self {
        Self::filled_shared(Arc::new(reconciler), ctx, children, others)
    }

    /// [`Shared::filled`], with a reconciler other states share.
    #[cfg(any(test, feature = "testing"))]
    pub fn filled_shared(
        reconciler: Arc<R>,
        ctx: Arc<Context>,
        children: Vec<serde_json::Value>,
        others: Vec<serde_json::Value>,
    ) -> Self {
        Self::filled_watching(reconciler, ctx, children, others, Vec::new())
    }

    /// [`Shared::filled_shared`], whose caches of the kinds its [`Reconcile::setup`] watches
    /// hold `watched` (objects of those kinds, as JSON).
    #[cfg(any(test, feature = "testing"))]
    pub fn filled_watching(
        reconciler: Arc<R>,
        ctx: Arc<Context>,
        children: Vec<serde_json::Value>,
        others: Vec<serde_json::Value>,
        watched: Vec<serde_json::Value>,
    ) -> Self {
        let caches = Caches::filled(R::Children::kinds(), children, others);
        let lookups = reconciler.setup().filled(&watched);
        Self::new(reconciler, ctx, caches, lookups)
    }

    fn forget(&self, object: &R::Kind) {
        if let Some(uid) = object.uid() {
            self.backoff.forget(&uid);
            lock(&self.written).remove(&uid);
            lock(&self.own_written).remove(&uid);
        }
    }
}

fn namespaced<R: Reconcile>() -> bool {
    kinds::namespaced::<R::Kind>()
}

/// What the objects a controller reconciles are sharded by (see [`shards`]).
const SHARD_KEY: shards::Key = shards::Key::Uid;

/// Brings one object and its children to the desired state. Safe to run any number of times.
/// Takes at most the manager's reconcile timeout.
pub async fn reconcile<R: Reconcile>(
    object: Arc<R::Kind>,
    shared: Arc<Shared<R>>,
) -> Result<Action> {
    let ctx = &shared.ctx;
    let key = queue_key(object.namespace().as_deref(), &object.name_any());
    let _in_flight = match &ctx.shards {
        // A standby replica keeps its caches warm; its reconciles start once it leads.
        None => {
            ctx.leadership.leading().await;
            None
        }
        Some(shards) => match shards.enter(SHARD_KEY.bucket(&*object)) {
            Some(in_flight) => Some(in_flight),
            // Another replica's, or being handed over: its holder reconciles it.
            None => {
                ctx.metrics.forget(R::NAME, &key);
                return Ok(Action::await_change());
            }
        },
    };
    let timer = ctx.metrics.reconcile_started(R::NAME, &key);
    let limit = ctx.timeouts.reconcile;
    let outcome = match tokio::time::timeout(limit, reconcile_once(&*object, &shared)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(Error::Timeout(format!(
            "the reconcile took longer than {limit:?} (--reconcile-timeout)"
        ))),
    };
    // A failure is counted, and queued again, by the error policy.
    let (delay, asked) = outcome?;
    timer.finish(if asked {
        Outcome::RequeueAfter
    } else {
        Outcome::Success
    });
    let Some(delay) = delay else {
        return Ok(Action::await_change());
    };
    ctx.metrics
        .requeued(R::NAME, &key, std::time::Instant::now() + delay, false);
    Ok(Action::requeue(delay))
}

/// One reconcile: when to run again (`None`: at the next change), and whether the controller
/// asked for that time.
async fn reconcile_once<R: Reconcile>(
    object: &R::Kind,
    shared: &Shared<R>,
) -> Result<(Option<Duration>, bool)> {
    let ctx = &shared.ctx;
    shared.caches.filled_once().await?;
    let api = own_api::<R>(object, ctx)?;

    if object.meta().deletion_timestamp.is_some() {
        finalizer::finalize(&api, object, shared).await?;
        shared.forget(object);
        return Ok((None, false));
    }
    if let Some(finalizer) = R::FINALIZER
        && !object.finalizers().iter().any(|f| f == finalizer)
    {
        finalizer::add(&api, object, finalizer, &ctx.leadership).await?;
    }

    let uid = object
        .uid()
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    let observed = Observed::new(&shared.caches, &shared.lookups, uid.clone());
    let desired = crate::error::recover(shared.reconciler.desired(object, ctx, &observed)).await;
    let outcome = match desired {
        Ok(desired) => apply::write(object, &desired, shared)
            .await
            .map(|()| desired),
        Err(error) => Err(error),
    };
    if R::OWNS_STATUS {
        let progress = outcome.as_ref().ok().and_then(|d| d.progress.as_ref());
        let written = report::ready(object, outcome.as_ref().err(), progress, shared).await;
        // A failure's own error says more than a failed status write.
        if outcome.is_ok() {
            written?;
        }
    } else if let Err(error) = &outcome {
        let note = error.to_string();
        publish(ctx, object, EventType::Warning, error.reason(), note);
    }
    let desired = outcome?;
    shared.backoff.forget(&uid);
    let resync = shared.ctx.timeouts.resync;
    Ok(match desired.requeue_after {
        Some(delay) => (Some(delay.min(resync)), true),
        None => (None, false),
    })
}

/// Requeues a failed object by its error's class: exponential backoff for transient errors,
/// the maximum for missing permissions, none for invalid input until the object changes.
pub fn error_policy<R: Reconcile>(
    object: Arc<R::Kind>,
    error: &Error,
    shared: Arc<Shared<R>>,
) -> Action {
    let metrics = &shared.ctx.metrics;
    (shared.backoff).requeue_after_failure(R::NAME, &*object, error, metrics)
}

/// Publishes an event about `object` in the background (see [`crate::events`]).
pub fn publish<K: Resource<DynamicType = ()>>(
    ctx: &Context,
    object: &K,
    type_: EventType,
    reason: &str,
    note: String,
) {
    ctx.events.publish(object, type_, reason, note);
}

fn own_api<R: Reconcile>(object: &R::Kind, ctx: &Context) -> Result<Api<R::Kind>> {
    let namespace = object.namespace();
    if namespaced::<R>() && namespace.is_none() {
        return Err(Error::MissingObjectKey("metadata.namespace"));
    }
    Ok(kinds::api(ctx.client.clone(), namespace.as_deref()))
}
