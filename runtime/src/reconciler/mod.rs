//! The reconcile machinery every kind's controller shares. A kind supplies what is its own
//! (the children it asks for, its own status fields, cleanup outside the cluster) by
//! implementing [`Reconcile`]; everything here is the same for every kind.
//!
//! What it guarantees, following controller-runtime and kube-runtime practice:
//! - **Idempotent**: each child is compared with the controller's cache, on the fields this
//!   manager applies only, and written only when one differs: created when missing, updated
//!   with server-side apply (which removes the fields the object no longer asks for). A key
//!   someone else added to a child is theirs: it causes no write and no event. No reconcile
//!   starts before the caches have had their first list.
//! - **Owned children**: each child gets a controller owner reference (garbage collection
//!   deletes it with its owner) and the `app.kubernetes.io/managed-by` label (the controller
//!   watches only labelled objects). An existing object of the same name that this owner does
//!   not control is never adopted: the owner's `Ready` condition says so, with an event; one the
//!   caches have not shown yet makes the create fail (409) and the reconcile retry.
//! - **Several kinds, several namespaces**: every kind of [`Reconcile::Children`] is watched
//!   where the manager watches; a change of a child maps to its controller owner, in the
//!   child's namespace for a namespaced kind and cluster-wide for a cluster-scoped one. A
//!   namespaced object's child must live in its namespace (the garbage collector deletes
//!   children whose owner is elsewhere): asking for another is an error saying so.
//! - **Status that tells the truth**: every reconcile, failed or not, sets the `Ready` condition
//!   and `observedGeneration` with server-side apply of that one condition, so conditions other
//!   managers own are left alone; the kind's own status fields ([`Desired::status`]) are applied
//!   with a field manager of their own; nothing is written when nothing changed.
//! - **Errors by class** (see [`Error::retry`]): transient ones back off exponentially per
//!   object (by UID, per controller), permanent ones wait for a change of the object.
//! - **Finalizer only when needed**: with [`Reconcile::FINALIZER`] unset (the default),
//!   deletion never waits for the operator; set it when [`Reconcile::cleanup`] has work.
//! - **Lean**: bounded concurrency; only generation changes of the kind trigger a reconcile
//!   (status writes do not); children are watched by label and cached as JSON text
//!   ([`watch::Packed`]), without managedFields.

mod apply;
#[cfg(test)]
mod children_tests;
#[cfg(test)]
mod tests;

use std::{
    fmt::Debug,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams},
    core::object::HasStatus,
    runtime::{
        WatchStreamExt,
        controller::{self, Action, Controller},
        events::EventType,
        predicates, reflector, watcher,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

pub use apply::{hand_over_created_fields, is_applied};

use crate::{
    Context, Error, Result,
    backoff::Backoff,
    children::{self, Caches, Children, Desired, Observed},
    recent::Recent,
    watch,
};

/// The label every child carries, so the controller watches only its own children.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// How often a healthy object is reconciled although nothing changed: a safety net for missed
/// events, not the way drift is found (the watches are).
pub const RESYNC: Duration = Duration::from_secs(3600);

/// What a kind's controller supplies. Everything else is this module's.
///
/// ```
/// use kopgen_runtime::{Context, Reconcile, Result, children::{Desired, Observed}};
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
/// impl Reconcile for Blog {
///     type Children = (ConfigMap,);
///     const CONTROLLER: &'static str = "example-blog";
///
///     async fn desired(&self, _: &Context, _: &Observed<'_>) -> Result<Desired<Self>> {
///         let page = ConfigMap {
///             metadata: ObjectMeta {
///                 name: Some(self.name_any()),
///                 namespace: self.namespace(),
///                 ..ObjectMeta::default()
///             },
///             data: Some([("text".to_owned(), self.spec.text.clone())].into()),
///             ..ConfigMap::default()
///         };
///         Desired::new().child(page)
///     }
/// }
/// ```
pub trait Reconcile:
    Resource<DynamicType = (), Scope: KindScope>
    + HasStatus<Status: Serialize + Send + Sync>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The kinds of the objects this kind creates, as a tuple: `(ConfigMap,)`,
    /// `(Deployment, Service)`.
    type Children: Children;

    /// Name of the controller in logs, metrics and events.
    const CONTROLLER: &'static str;
    /// Makes deletion wait until [`Reconcile::cleanup`] has run. Leave it `None` unless cleanup
    /// has work outside the cluster: a finalizer blocks deletion (of the object and of its
    /// namespace) for as long as the operator is down.
    const FINALIZER: Option<&'static str> = None;

    /// What this object asks for now: its children (each with a name and namespace; the owner
    /// reference and the managed-by label are added for you), and optionally status fields of
    /// its own and when to look again. Derive it from the spec; read the cluster (through
    /// `ctx.client`) or the children it has (`observed`) only where the spec cannot say.
    fn desired(
        &self,
        ctx: &Context,
        observed: &Observed<'_>,
    ) -> impl Future<Output = Result<Desired<Self>>> + Send;

    /// Releases what this object holds outside the cluster (DNS records, buckets, accounts).
    /// Runs before deletion completes, only when [`Reconcile::FINALIZER`] is set.
    fn cleanup(&self, ctx: &Context) -> impl Future<Output = Result<()>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }
}

/// One controller's state: the manager's context, its own backoff, and the caches of children.
pub struct Shared<K: Reconcile> {
    /// The manager's context.
    pub ctx: Arc<Context>,
    backoff: Backoff,
    caches: Caches,
    /// Per UID, the resource version of the object a status was last written for, and that
    /// status: the cache may hand the same version over again before the write reaches it,
    /// and writing the same status twice is a request for nothing.
    written: Mutex<Recent<Written>>,
    /// Per UID, the generation the children were last applied for, for the same reason.
    applied: Mutex<Recent<i64>>,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Reconcile> Shared<K> {
    fn new(ctx: Arc<Context>, caches: Caches) -> Self {
        Self {
            ctx,
            backoff: Backoff::default(),
            caches,
            written: Mutex::default(),
            applied: Mutex::default(),
            kind: std::marker::PhantomData,
        }
    }

    /// A controller state whose caches hold `children` and, as names others hold, `others`
    /// (tests fill them by hand).
    #[cfg(any(test, feature = "testing"))]
    pub fn filled(
        ctx: Arc<Context>,
        children: Vec<serde_json::Value>,
        others: Vec<serde_json::Value>,
    ) -> Self {
        let kinds = K::Children::kinds();
        Self::new(ctx, Caches::filled(kinds, children, others))
    }

    /// Whether the children were already applied for the object's current generation.
    fn applied_for(&self, object: &K) -> bool {
        let (Some(uid), Some(generation)) = (object.uid(), object.meta().generation) else {
            return false;
        };
        let applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        applied.get(&uid).is_some_and(|g| *g == generation)
    }

    fn remember_applied(&self, object: &K) {
        if let (Some(uid), Some(generation)) = (object.uid(), object.meta().generation) {
            let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
            applied.insert(uid, generation);
        }
    }

    /// Whether `status` was already written for this very version of the object.
    fn already_written(&self, object: &K, status: &str) -> bool {
        let (Some(uid), Some(version)) = (object.uid(), object.resource_version()) else {
            return false;
        };
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        written
            .get(&uid)
            .is_some_and(|w| w.version == version && w.status == status)
    }

    fn remember_written(&self, object: &K, status: String) {
        if let (Some(uid), Some(version)) = (object.uid(), object.resource_version()) {
            let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
            written.insert(uid, Written { version, status });
        }
    }

    fn forget(&self, object: &K) {
        if let Some(uid) = object.uid() {
            self.backoff.forget(&uid);
            let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
            written.remove(&uid);
            let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
            applied.remove(&uid);
        }
    }
}

/// A status written for one version of an object.
struct Written {
    version: String,
    status: String,
}

/// The entry point of `K`'s controller, to list in a project's `CONTROLLERS`
/// (`kopgen_runtime::reconciler::start::<Blog>`).
pub fn start<K: Reconcile>(
    ctx: Arc<Context>,
    shutdown: CancellationToken,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run::<K>(ctx, shutdown))
}

/// Runs the controller of `K` until `shutdown`, then drains in-flight reconciles.
pub async fn run<K: Reconcile>(ctx: Arc<Context>, shutdown: CancellationToken) {
    let objects: Api<K> =
        <K::Scope as KindScope>::api(ctx.client.clone(), ctx.namespace.as_deref());
    let (store, writer) = reflector::store();
    let triggers = watch::streaming(objects, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(watch::slim)
        .reflect(writer)
        .applied_objects()
        // Status writes (this controller's own included) do not change the generation.
        .predicate_filter(predicates::generation, Default::default());
    // Children live where the manager watches, whatever the owner's scope.
    let watched = Caches::watch(K::Children::kinds(), &ctx, ctx.namespace.as_deref());
    let mut caches = Caches { kinds: Vec::new() };
    let mut owners = Vec::new();
    let mut names = Vec::new();
    for kind in watched {
        caches.kinds.extend(kind.caches.kinds);
        owners.push(kind.owners);
        names.push(tokio::spawn(kind.names));
    }
    let owners = futures::stream::select_all(owners)
        .filter_map(|owner| std::future::ready(children::owner_ref::<K>(owner)));
    let shared = Arc::new(Shared::<K>::new(ctx.clone(), caches));
    let config = controller::Config::default().concurrency(ctx.concurrency);
    Controller::for_stream(triggers, store)
        .reconcile_on(owners)
        .with_config(config)
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(reconcile::<K>, error_policy::<K>, shared)
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => debug!(%object, "reconciled"),
                // Logged once, by `error_policy`.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(controller::Error::ObjectNotFound(object)) => {
                    debug!(%object, "deleted before its reconcile")
                }
                Err(error) => warn!(
                    controller = K::CONTROLLER,
                    %error,
                    "watch failed: is the CRD installed, and may the manager list and watch?"
                ),
            }
        })
        .await;
    for task in names {
        task.abort();
    }
}

/// Builds `Api`s by scope, so that the machinery is one generic code for namespaced and
/// cluster-scoped kinds.
pub trait KindScope {
    /// Whether objects of this scope live in a namespace.
    const NAMESPACED: bool;
    /// Objects of `K` in `namespace` (a namespaced kind), or cluster-wide.
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl KindScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(namespace) => Api::namespaced(client, namespace),
            None => Api::all(client),
        }
    }
}

impl KindScope for ClusterResourceScope {
    const NAMESPACED: bool = false;
    fn api<K: Resource<Scope = Self, DynamicType = ()>>(client: Client, _: Option<&str>) -> Api<K> {
        Api::all(client)
    }
}

fn namespaced<K: Reconcile>() -> bool {
    <K::Scope as KindScope>::NAMESPACED
}

/// Brings one object and its children to the desired state. Safe to run any number of times.
pub async fn reconcile<K: Reconcile>(object: Arc<K>, shared: Arc<Shared<K>>) -> Result<Action> {
    let ctx = &shared.ctx;
    let _timer = ctx.metrics.reconcile_started(K::CONTROLLER);
    shared.caches.filled_once().await?;
    let api = own_api(&*object, ctx)?;

    if object.meta().deletion_timestamp.is_some() {
        if let Some(finalizer) = K::FINALIZER
            && object.finalizers().iter().any(|f| f == finalizer)
        {
            crate::error::recover(object.cleanup(ctx)).await?;
            remove_finalizer(&api, &*object, finalizer).await?;
            publish(
                ctx,
                &*object,
                EventType::Normal,
                "CleanedUp",
                "cleanup done".into(),
            );
        }
        shared.forget(&*object);
        return Ok(Action::await_change());
    }
    if let Some(finalizer) = K::FINALIZER
        && !object.finalizers().iter().any(|f| f == finalizer)
    {
        add_finalizer(&api, &*object, finalizer).await?;
    }

    let status = apply::status_of(&*object);
    let uid = object
        .uid()
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    let observed = Observed::new(&shared.caches, uid.clone());
    let mut outcome = match crate::error::recover(object.desired(ctx, &observed)).await {
        Ok(desired) => apply::apply_children(&*object, &desired, &status, &shared)
            .await
            .map(|()| desired),
        Err(error) => Err(error),
    };
    let own = match &outcome {
        Ok(Desired {
            status: Some(own), ..
        }) => apply::write_own_status(&api, &*object, &status, own, &shared).await,
        _ => Ok(()),
    };
    if let Err(error) = own {
        outcome = Err(error);
    }
    apply::write_status(&api, &*object, &status, outcome.as_ref().err(), &shared).await;
    let desired = outcome?;
    shared.backoff.forget(&uid);
    let delay = desired
        .requeue_after
        .map_or(RESYNC, |delay| delay.min(RESYNC));
    Ok(Action::requeue(delay))
}

/// Requeues a failed object by its error's class: exponential backoff for transient errors,
/// the maximum for missing permissions, none for invalid input until the object changes.
pub fn error_policy<K: Reconcile>(object: Arc<K>, error: &Error, shared: Arc<Shared<K>>) -> Action {
    let metrics = &shared.ctx.metrics;
    (shared.backoff).requeue_after_failure(K::CONTROLLER, &*object, error, metrics)
}

async fn add_finalizer<K: Reconcile>(api: &Api<K>, object: &K, finalizer: &str) -> Result<()> {
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    set_finalizers(api, object, finalizers).await
}

async fn remove_finalizer<K: Reconcile>(api: &Api<K>, object: &K, finalizer: &str) -> Result<()> {
    let finalizers = object
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    set_finalizers(api, object, finalizers).await
}

/// Replaces the finalizer list, guarded by the resource version: if anyone changed the object
/// since it was read, the API server refuses (409) and the reconcile retries on fresh data.
async fn set_finalizers<K: Reconcile>(
    api: &Api<K>,
    object: &K,
    finalizers: Vec<String>,
) -> Result<()> {
    let patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": object.resource_version(),
        }
    });
    api.patch(
        &object.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    Ok(())
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

fn own_api<K: Reconcile>(object: &K, ctx: &Context) -> Result<Api<K>> {
    let namespace = object.namespace();
    if namespaced::<K>() && namespace.is_none() {
        return Err(Error::MissingObjectKey("metadata.namespace"));
    }
    Ok(<K::Scope as KindScope>::api(
        ctx.client.clone(),
        namespace.as_deref(),
    ))
}
