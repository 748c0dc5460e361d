//! The reconcile machinery every kind's controller shares. A kind supplies what is its own
//! (the children its spec asks for, and cleanup outside the cluster) by implementing
//! [`Reconcile`]; everything here is the same for every kind, so that upgrading the operator
//! scaffold improves all of them at once.
//!
//! What it guarantees, following controller-runtime and kube-runtime practice:
//! - **Idempotent**: each child is compared with the controller's cache, on the fields this
//!   manager applies only, and written only when one differs: created when missing, updated
//!   with server-side apply (which removes the fields the spec no longer asks for). A key
//!   someone else added to a child is theirs: it causes no write and no event. No reconcile
//!   starts before the caches have had their first list.
//! - **Owned children**: each child gets a controller owner reference (garbage collection
//!   deletes it with its owner) and the `app.kubernetes.io/managed-by` label (the controller
//!   watches only labelled objects). An existing object of the same name that this owner does
//!   not control is never adopted: the owner's `Ready` condition says so, with an event; one the
//!   caches have not shown yet makes the create fail (409) and the reconcile retry.
//! - **Drift repair across scopes**: a child event maps to its controller owner by owner
//!   reference, in the child's namespace for a namespaced kind and cluster-wide for a
//!   cluster-scoped one (whose children live in the manager's namespace).
//! - **Status that tells the truth**: every reconcile, failed or not, sets the `Ready` condition
//!   and `observedGeneration` with server-side apply of that one condition, so conditions other
//!   managers own are left alone; nothing is written when nothing changed.
//! - **Errors by class** (see [`Error::retry`]): transient ones back off exponentially per
//!   object (by UID, per controller), permanent ones wait for a change of the object.
//! - **Finalizer only when needed**: with [`Reconcile::FINALIZER`] unset (the default),
//!   deletion never waits for the operator; set it when [`Reconcile::cleanup`] has work.
//! - **Lean**: bounded concurrency; only generation changes of the kind trigger a reconcile
//!   (status writes do not); children are watched by label and cached as JSON text
//!   ([`watch::Packed`]), without managedFields.

use std::{
    fmt::Debug,
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::{
    ClusterResourceScope, NamespaceResourceScope,
    apimachinery::pkg::apis::meta::v1::{Condition, FieldsV1, ManagedFieldsEntry},
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    core::PartialObjectMeta,
    runtime::{
        WatchStreamExt,
        controller::{self, Action, Controller},
        events::EventType,
        predicates, reflector,
        reflector::{ObjectRef, Store},
        watcher,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{
    Context, Error, Result, backoff::Backoff, error::Retry, recent::Recent, status, watch,
};

/// The label every child carries, so the controller watches only its own children.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// How often a healthy object is reconciled although nothing changed: a safety net for missed
/// events, not the way drift is found (the watches are).
pub const RESYNC: Duration = Duration::from_secs(3600);

/// What a kind's controller supplies. Everything else is this module's.
pub trait Reconcile:
    Resource<DynamicType = (), Scope: KindScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The kind of the objects this kind creates for each of its objects.
    type Child: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// Name of the controller in logs, metrics and events.
    const CONTROLLER: &'static str;
    /// Makes deletion wait until [`Reconcile::cleanup`] has run. Leave it `None` unless cleanup
    /// has work outside the cluster: a finalizer blocks deletion (of the object and of its
    /// namespace) for as long as the operator is down.
    const FINALIZER: Option<&'static str> = None;

    /// The children this object should have, derived from its spec alone (never from the
    /// cluster): each with a name and namespace. The owner reference and the managed-by label
    /// are added for you.
    fn desired(&self, ctx: &Context) -> Result<Vec<Self::Child>>;

    /// Releases what this object holds outside the cluster (DNS records, buckets, accounts).
    /// Runs before deletion completes, only when [`Reconcile::FINALIZER`] is set.
    fn cleanup(&self, ctx: &Context) -> impl Future<Output = Result<()>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }
}

/// One controller's state: the manager's context, its own backoff, and the cache of children.
pub struct Shared<K: Reconcile> {
    /// The manager's context.
    pub ctx: Arc<Context>,
    backoff: Backoff,
    children: Store<watch::Packed<K::Child>>,
    /// The metadata of every object of the child kind where children live that is not labelled
    /// as this manager's (those are in `children`): whether a name is taken by someone else's
    /// object, without a request, and without a second copy of every child.
    names: Store<watch::Packed<PartialObjectMeta<K::Child>>>,
    /// Per UID, the resource version of the object a status was last written for, and that
    /// status: the cache may hand the same version over again before the write reaches it,
    /// and writing the same status twice is a request for nothing.
    written: Mutex<Recent<Written>>,
    /// Per UID, the generation the children were last applied for, for the same reason.
    applied: Mutex<Recent<i64>>,
}

impl<K: Reconcile> Shared<K> {
    /// A controller state whose caches are `children` and `names` (tests fill them by hand).
    pub fn new(
        ctx: Arc<Context>,
        children: Store<watch::Packed<K::Child>>,
        names: Store<watch::Packed<PartialObjectMeta<K::Child>>>,
    ) -> Self {
        Self {
            ctx,
            backoff: Backoff::default(),
            children,
            names,
            written: Mutex::default(),
            applied: Mutex::default(),
        }
    }

    /// Waits until the caches of children and names have had their first list, as
    /// controller-runtime starts no worker before every cache has synced: before, a child would
    /// look missing (applied again and announced as created) and a taken name free. kube-runtime
    /// waits for the kind's own cache only.
    async fn caches_filled(&self) -> Result<()> {
        let closed = |_| Error::CacheClosed(K::Child::kind(&()).into_owned());
        self.children.wait_until_ready().await.map_err(closed)?;
        self.names.wait_until_ready().await.map_err(closed)
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
    let children = children_api::<K, K::Child>(&ctx);
    let (store, writer) = reflector::store();
    let triggers = watch::streaming(objects, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(watch::slim)
        .reflect(writer)
        .applied_objects()
        // Status writes (this controller's own included) do not change the generation.
        .predicate_filter(predicates::generation, Default::default());
    let (child_store, mut child_writer) = reflector::store();
    let label = format!("{MANAGED_BY}={}", ctx.manager);
    let child_config = watcher::Config::default().labels(&label).any_semantic();
    let child_events = watch::streaming(children, child_config)
        .default_backoff()
        .modify(watch::slim)
        .inspect_ok(move |event| watch::store_packed(&mut child_writer, event))
        .touched_objects();
    // Names only (metadata, no data) of the other objects of the child kind: kept current by
    // a task of its own, read before creating a child, so that none is taken over. An object
    // that gains or loses the label moves between the two caches (the watches say so).
    let (names, mut names_writer) = reflector::store();
    let name_api = children_api::<K, PartialObjectMeta<K::Child>>(&ctx);
    let others = format!("{MANAGED_BY}!={}", ctx.manager);
    let name_config = watcher::Config::default().labels(&others).any_semantic();
    let name_events = watch::streaming(name_api, name_config)
        .default_backoff()
        .modify(watch::slim)
        .inspect_ok(move |event| watch::store_packed(&mut names_writer, event))
        .for_each(|_| std::future::ready(()));
    let names_task = tokio::spawn(name_events);
    let shared = Arc::new(Shared::<K>::new(ctx.clone(), child_store, names));
    let config = controller::Config::default().concurrency(ctx.concurrency);
    Controller::for_stream(triggers, store)
        .watches_stream(child_events, |child| owner_of::<K>(&child))
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
    names_task.abort();
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

/// Where the children of `K` live: beside their owner for a namespaced kind (in the watched
/// namespace, or all), in the manager's namespace for a cluster-scoped kind.
fn children_api<K: Reconcile, R>(ctx: &Context) -> Api<R>
where
    R: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    let namespace = if namespaced::<K>() {
        ctx.namespace.as_deref()
    } else {
        Some(ctx.operator_namespace.as_str())
    };
    <NamespaceResourceScope as KindScope>::api(ctx.client.clone(), namespace)
}

/// The controller owner of `child`, if it is an object of `K`: in the child's namespace for
/// a namespaced kind, without one for a cluster-scoped kind (kube-rs#293).
pub fn owner_of<K: Reconcile>(child: &K::Child) -> Option<ObjectRef<K>> {
    let group = K::group(&());
    let owner = child.owner_references().iter().find(|owner| {
        owner.controller == Some(true)
            && owner.kind == K::kind(&())
            && owner.api_version.split('/').next() == Some(&*group)
    })?;
    let reference = ObjectRef::new(&owner.name);
    if namespaced::<K>() {
        Some(reference.within(&child.namespace()?))
    } else {
        Some(reference)
    }
}

/// Brings one object and its children to the desired state. Safe to run any number of times.
pub async fn reconcile<K: Reconcile>(object: Arc<K>, shared: Arc<Shared<K>>) -> Result<Action> {
    let ctx = &shared.ctx;
    let _timer = ctx.metrics.reconcile_started(K::CONTROLLER);
    shared.caches_filled().await?;
    let api = own_api(&*object, ctx)?;

    if object.meta().deletion_timestamp.is_some() {
        if let Some(finalizer) = K::FINALIZER
            && object.finalizers().iter().any(|f| f == finalizer)
        {
            object.cleanup(ctx).await?;
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

    let status = status_of(&*object);
    let outcome = apply_children(&*object, &status, &shared).await;
    write_status(&api, &*object, &status, outcome.as_ref().err(), &shared).await;
    outcome?;
    if let Some(uid) = object.uid() {
        shared.backoff.forget(&uid);
    }
    Ok(Action::requeue(RESYNC))
}

/// Requeues a failed object by its error's class: exponential backoff for transient errors,
/// the maximum for missing permissions, none for invalid input until the object changes.
pub fn error_policy<K: Reconcile>(object: Arc<K>, error: &Error, shared: Arc<Shared<K>>) -> Action {
    let ctx = &shared.ctx;
    ctx.metrics.reconcile_failed(K::CONTROLLER, error);
    let retry = error.retry();
    warn!(
        controller = K::CONTROLLER,
        name = %object.name_any(),
        namespace = object.namespace().unwrap_or_default(),
        %error,
        ?retry,
        "reconcile failed"
    );
    let uid = object.uid().unwrap_or_default();
    match retry {
        Retry::Backoff => Action::requeue(shared.backoff.next_delay(&uid)),
        Retry::After(delay) => Action::requeue(delay),
        Retry::OnChange => Action::await_change(),
    }
}

/// Creates each missing child and updates each one whose applied fields differ; refuses to
/// take over an object of the same name this owner does not control.
async fn apply_children<K: Reconcile>(
    object: &K,
    status: &Value,
    shared: &Shared<K>,
) -> Result<()> {
    let ctx = &shared.ctx;
    let owner = object
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    // The status says which generation was reconciled; the cache may not have that status
    // yet, so a generation this controller already applied counts as reconciled too.
    let spec_changed = status["observedGeneration"].as_i64() != object.meta().generation
        && !shared.applied_for(object);
    for mut desired in object.desired(ctx)? {
        desired
            .labels_mut()
            .insert(MANAGED_BY.to_owned(), ctx.manager.clone());
        let references = desired.owner_references_mut();
        if !references.iter().any(|r| r.uid == owner.uid) {
            references.push(owner.clone());
        }
        let name = desired.name_any();
        let namespace = desired
            .namespace()
            .ok_or(Error::MissingObjectKey("metadata.namespace of a child"))?;
        let api: Api<K::Child> = Api::namespaced(ctx.client.clone(), &namespace);

        let actual = shared
            .children
            .get(&ObjectRef::new(&name).within(&namespace))
            .map(|child| child.unpack())
            .transpose()?;
        // Not among the labelled children: the name may still be taken by someone else's
        // object, which is never taken over.
        let taken = shared
            .names
            .get(&ObjectRef::new(&name).within(&namespace))
            .map(|meta| meta.unpack())
            .transpose()?
            .filter(|meta| !is_controlled_by(meta, &owner.uid));
        if let Some(_other) = taken.filter(|_| actual.is_none()) {
            return Err(Error::NotOwned {
                kind: K::Child::kind(&()).into_owned(),
                name: format!("{namespace}/{name}"),
            });
        }
        let reason = match &actual {
            None => {
                // A create, not an apply: the API server refuses it (409) if an object of this
                // name exists that the caches have not shown yet, so none is ever taken over.
                let params = PostParams {
                    field_manager: Some(ctx.manager.clone()),
                    ..PostParams::default()
                };
                api.create(&params, &desired).await?;
                "Created"
            }
            Some(actual) if !is_controlled_by(actual, &owner.uid) => {
                return Err(Error::NotOwned {
                    kind: K::Child::kind(&()).into_owned(),
                    name: format!("{namespace}/{name}"),
                });
            }
            // After a spec change the child is applied whatever the comparison says: a field
            // the new spec no longer asks for is only removed by applying without it.
            Some(actual) if !spec_changed && is_applied(&desired, actual)? => continue,
            Some(_) => {
                let params = PatchParams::apply(&ctx.manager).force();
                let applied = api.patch(&name, &params, &Patch::Apply(&desired)).await?;
                if let Some(handover) = hand_over_created_fields(&applied, &ctx.manager) {
                    let merge = PatchParams::default();
                    api.patch(&name, &merge, &Patch::Merge(handover)).await?;
                    api.patch(&name, &params, &Patch::Apply(&desired)).await?;
                }
                "Updated"
            }
        };
        let note = format!("{reason} {} {namespace}/{name}", K::Child::kind(&()));
        publish(ctx, object, EventType::Normal, reason, note);
    }
    if spec_changed {
        shared.remember_applied(object);
    }
    Ok(())
}

/// The merge patch that hands the fields this manager's create recorded to its apply: a create
/// records them under the manager's `Update` entry of the managed fields, which no apply ever
/// prunes, so a field the spec stops asking for would stay. Done once, at a child's first
/// update, as client-go's `csaupgrade` does for clients moving to server-side apply: the entry's
/// fields join the `Apply` entry, guarded by the resource version (a 409 if the child changed
/// meanwhile); the apply that follows removes what it no longer sets. `None` when there is
/// nothing to hand over.
pub fn hand_over_created_fields<R: Resource>(child: &R, manager: &str) -> Option<Value> {
    let entries = child.meta().managed_fields.as_ref()?;
    let ours = |entry: &ManagedFieldsEntry, operation: &str| {
        entry.manager.as_deref() == Some(manager)
            && entry.operation.as_deref() == Some(operation)
            && entry.subresource.as_deref().unwrap_or_default().is_empty()
    };
    let created = entries.iter().find(|entry| ours(entry, "Update"))?;
    let mut handed: Vec<ManagedFieldsEntry> = entries
        .iter()
        .filter(|entry| !ours(entry, "Update"))
        .cloned()
        .collect();
    let applied = handed.iter_mut().find(|entry| ours(entry, "Apply"))?;
    let fields = applied.fields_v1.get_or_insert_with(|| FieldsV1(json!({})));
    add_fields(&mut fields.0, created.fields_v1.as_ref()?.0.clone());
    Some(json!({
        "metadata": { "resourceVersion": child.resource_version()?, "managedFields": handed }
    }))
}

/// Adds the field set `from` to `into` (both `FieldsV1`: a tree of objects, one key per
/// field or list item).
fn add_fields(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        for (key, value) in from {
            match into.get_mut(&key) {
                Some(existing) => add_fields(existing, value),
                None => {
                    into.insert(key, value);
                }
            }
        }
    }
}

/// The object's status as JSON (its type is the kind's own): the generation it says was last
/// reconciled, and its conditions.
fn status_of<K: Reconcile>(object: &K) -> Value {
    serde_json::to_value(object)
        .map(|mut value| value["status"].take())
        .unwrap_or_default()
}

fn is_controlled_by<R: Resource>(object: &R, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Whether every field of `desired` has its value in `actual`: what this manager applies, not
/// the whole object, so fields other managers or the API server added never count as drift.
pub fn is_applied<R: Serialize>(desired: &R, actual: &R) -> Result<bool> {
    Ok(contains(
        &serde_json::to_value(actual)?,
        &serde_json::to_value(desired)?,
    ))
}

/// `actual` holds `desired`: objects key by key, lists item by item (each desired item matched
/// by some actual item), scalars equal.
fn contains(actual: &Value, desired: &Value) -> bool {
    match (actual, desired) {
        (Value::Object(actual), Value::Object(desired)) => desired
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|a| contains(a, value))),
        (Value::Array(actual), Value::Array(desired)) => desired
            .iter()
            .all(|item| actual.iter().any(|a| contains(a, item))),
        (actual, desired) => actual == desired,
    }
}

/// Sets `Ready` (and `observedGeneration`) from the reconcile's outcome, unless the object
/// already says exactly that. A failure to write status is logged: the reconcile's own
/// outcome decides what happens next.
async fn write_status<K: Reconcile>(
    api: &Api<K>,
    object: &K,
    status: &Value,
    error: Option<&Error>,
    shared: &Shared<K>,
) {
    let ctx = &shared.ctx;
    let name = object.name_any();
    let generation = object.meta().generation;
    let (ready, reason, message) = match error {
        None => (
            true,
            "Reconciled".to_owned(),
            "all children are up to date".to_owned(),
        ),
        Some(error) => (false, error.reason().to_owned(), error.to_string()),
    };
    let existing: Vec<Condition> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| serde_json::from_value(c.clone()).ok())
        .collect();
    let previous = existing.iter().find(|c| c.type_ == "Ready");
    let unchanged = previous.is_some_and(|c| {
        c.status == if ready { "True" } else { "False" }
            && c.reason == reason
            && c.message == message
            && c.observed_generation == generation
    }) && status["observedGeneration"] == json!(generation);
    let summary = format!("{ready}/{reason}/{message}/{generation:?}");
    if unchanged || shared.already_written(object, &summary) {
        return;
    }
    let mut conditions = existing.clone();
    status::set_condition(
        &mut conditions,
        status::condition("Ready", ready, &reason, message.clone(), generation),
    );
    let Some(condition) = conditions.into_iter().find(|c| c.type_ == "Ready") else {
        return;
    };
    // Only the Ready condition: `conditions` is a list keyed by type, so this manager owns
    // that one entry and other managers' conditions stay theirs.
    let patch = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": { "conditions": [condition], "observedGeneration": generation },
    });
    let params = PatchParams::apply(&ctx.manager).force();
    match api.patch_status(&name, &params, &Patch::Apply(patch)).await {
        Ok(_) => shared.remember_written(object, summary),
        Err(error) => warn!(controller = K::CONTROLLER, %name, %error, "failed to write status"),
    }
    let was_ready = previous.is_none_or(|c| c.status == "True");
    if !ready && was_ready {
        publish(ctx, object, EventType::Warning, &reason, message);
    } else if ready && !was_ready {
        info!(controller = K::CONTROLLER, %name, "ready again");
    }
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

#[cfg(test)]
mod tests {
    use http::{Method, StatusCode};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::{CustomResource, api::ObjectMeta};
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::testing::{
        applied_children, converged, converse, events_path, mock_shared, mock_shared_with_names,
        object_from_sample, path_of,
    };

    /// A kind of the tests' own, namespaced, with one ConfigMap child.
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
    #[kube(
        group = "test.example.com",
        version = "v1",
        kind = "Thing",
        namespaced,
        status = "ThingStatus"
    )]
    pub struct ThingSpec {
        #[serde(default)]
        value: String,
    }

    #[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct ThingStatus {
        #[serde(default)]
        conditions: Vec<Condition>,
        observed_generation: Option<i64>,
    }

    impl Reconcile for Thing {
        type Child = ConfigMap;
        const CONTROLLER: &'static str = "test-thing";
        fn desired(&self, _: &Context) -> Result<Vec<ConfigMap>> {
            if self.spec.value == "invalid" {
                return Err(Error::InvalidSpec("value may not be `invalid`".into()));
            }
            Ok(vec![ConfigMap {
                metadata: ObjectMeta {
                    name: Some(self.name_any()),
                    namespace: self.namespace(),
                    ..ObjectMeta::default()
                },
                data: Some([("value".to_owned(), self.spec.value.clone())].into()),
                ..ConfigMap::default()
            }])
        }
    }

    /// A cluster-scoped kind whose children live in the manager's namespace.
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
    #[kube(group = "test.example.com", version = "v1", kind = "Tenant")]
    pub struct TenantSpec {}

    impl Reconcile for Tenant {
        type Child = ConfigMap;
        const CONTROLLER: &'static str = "test-tenant";
        fn desired(&self, ctx: &Context) -> Result<Vec<ConfigMap>> {
            Ok(vec![ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("tenant-{}", self.name_any())),
                    namespace: Some(ctx.operator_namespace.clone()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            }])
        }
    }

    fn thing(value: &str) -> Thing {
        let sample = format!("kind: Thing\nmetadata:\n  name: t\nspec:\n  value: {value}\n");
        object_from_sample(&format!("apiVersion: test.example.com/v1\n{sample}"))
    }

    fn api_error(code: u16) -> Error {
        Error::Kube(kube::Error::Api(
            kube::core::Status::failure("refused", "Refused")
                .with_code(code)
                .boxed(),
        ))
    }

    #[test]
    fn errors_are_retried_by_class() {
        assert_eq!(api_error(500).retry(), Retry::Backoff);
        assert_eq!(api_error(409).retry(), Retry::Backoff);
        assert!(matches!(api_error(403).retry(), Retry::After(_)));
        assert_eq!(api_error(422).retry(), Retry::OnChange);
        assert_eq!(Error::InvalidSpec("x".into()).retry(), Retry::OnChange);
    }

    #[tokio::test]
    async fn backoff_is_per_controller_and_per_uid() {
        let (things, _server) = mock_shared::<Thing>(Vec::new());
        let (tenants, _other) = mock_shared::<Tenant>(Vec::new());
        let first = Arc::new(thing("a"));
        let mut renamed = thing("a");
        renamed.meta_mut().uid = Some("another-uid".into());
        let error = api_error(503);
        let delay = |action: Action| format!("{action:?}");
        let one = error_policy(first.clone(), &error, things.clone());
        let two = error_policy(first.clone(), &error, things.clone());
        assert_ne!(
            delay(one),
            delay(two.clone()),
            "the same object backs off further"
        );
        let other = error_policy(Arc::new(renamed), &error, things.clone());
        assert_eq!(
            delay(other),
            delay(Action::requeue(Duration::from_secs(1))),
            "another object (same name, other uid) starts afresh"
        );
        let tenant = Arc::new(Tenant::new("a", TenantSpec {}));
        let elsewhere = error_policy(tenant, &error, tenants);
        assert_eq!(
            delay(elsewhere),
            delay(Action::requeue(Duration::from_secs(1))),
            "another controller has its own table"
        );
    }

    #[test]
    fn children_map_to_their_owner_across_scopes() {
        let mut tenant = Tenant::new("acme", TenantSpec {});
        tenant.meta_mut().uid = Some("tenant-uid".into());
        let mut child = ConfigMap::default();
        child.meta_mut().namespace = Some("operator-system".into());
        child
            .owner_references_mut()
            .push(tenant.controller_owner_ref(&()).expect("uid"));
        let owner = owner_of::<Tenant>(&child).expect("mapped");
        assert_eq!(owner.name, "acme");
        assert_eq!(
            owner.namespace, None,
            "a cluster-scoped owner has no namespace"
        );

        let thing = thing("a");
        let mut child = ConfigMap::default();
        child.meta_mut().namespace = Some("testns".into());
        child
            .owner_references_mut()
            .push(thing.controller_owner_ref(&()).expect("uid"));
        let owner = owner_of::<Thing>(&child).expect("mapped");
        assert_eq!(owner.namespace.as_deref(), Some("testns"));
        assert!(owner_of::<Tenant>(&child).is_none(), "another kind's child");
    }

    #[test]
    fn only_the_fields_this_manager_applies_are_compared() {
        let desired: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}
        }))
        .expect("a ConfigMap");
        let mut actual = desired.clone();
        actual
            .data
            .get_or_insert_default()
            .insert("other".into(), "theirs".into());
        actual.labels_mut().insert("y".into(), "2".into());
        assert!(is_applied(&desired, &actual).expect("compares"));
        actual
            .data
            .get_or_insert_default()
            .insert("k".into(), "edited".into());
        assert!(!is_applied(&desired, &actual).expect("compares"));
    }

    #[tokio::test]
    async fn an_object_of_the_childs_name_that_this_owner_does_not_control_is_left_alone() {
        let object = thing("a");
        let mut foreign = applied_children(&object).remove(0);
        foreign.owner_references_mut().clear();
        foreign.labels_mut().clear();
        let (shared, mut server) = mock_shared_with_names::<Thing>(Vec::new(), vec![foreign]);
        let status_path = format!("{}/status", path_of(&object));
        let events = events_path(&object);
        let status_reply = serde_json::to_value(&object).expect("serializes");
        let scenario = async move {
            let request = server
                .expect(Method::PATCH, &status_path, StatusCode::OK, status_reply)
                .await;
            let condition = &request.body["status"]["conditions"][0];
            assert_eq!(condition["status"], "False");
            assert_eq!(condition["reason"], "ChildNotOwned");
            let event = server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            assert_eq!(event.body["type"], "Warning");
            server
        };
        let (result, requests) = converse(scenario, reconcile(Arc::new(object), shared)).await;
        let error = result.expect_err("not adopted");
        assert!(matches!(error, Error::NotOwned { .. }), "{error}");
        assert_eq!(
            requests.len(),
            2,
            "only the status and the event: {requests:?}"
        );
    }

    #[tokio::test]
    async fn after_a_spec_change_the_children_are_applied_even_if_they_look_applied() {
        let mut object = converged(&thing("a"));
        object.meta_mut().generation = Some(2);
        let children = applied_children(&object);
        let child = children[0].clone();
        let reply = serde_json::to_value(&child).expect("serializes");
        let status_reply = serde_json::to_value(&object).expect("serializes");
        let (shared, mut server) = mock_shared::<Thing>(children);
        let (child_path, status_path) = (path_of(&child), format!("{}/status", path_of(&object)));
        let events = events_path(&object);
        let scenario = async move {
            server
                .expect(Method::PATCH, &child_path, StatusCode::OK, reply)
                .await;
            server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            let request = server
                .expect(Method::PATCH, &status_path, StatusCode::OK, status_reply)
                .await;
            assert_eq!(request.body["status"]["observedGeneration"], 2);
            server
        };
        let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
        assert_eq!(action.expect("reconcile succeeds"), Action::requeue(RESYNC));
    }

    /// A child this manager created has its fields in the manager's `Update` entry, which no
    /// apply prunes: its first update hands them to the `Apply` entry (guarded by the resource
    /// version) and applies again, so that a key the spec dropped is removed.
    #[tokio::test]
    async fn the_first_update_of_a_created_child_hands_its_fields_to_the_apply() {
        let mut object = converged(&thing("a"));
        object.meta_mut().generation = Some(2);
        let children = applied_children(&object);
        let child = children[0].clone();
        let entry = |operation: &str, fields: Value| {
            json!({
                "manager": crate::testing::MANAGER, "operation": operation, "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": fields,
            })
        };
        let mut applied = serde_json::to_value(&child).expect("serializes");
        applied["metadata"]["resourceVersion"] = json!("7");
        applied["metadata"]["managedFields"] = json!([
            entry("Update", json!({"f:data": {".": {}, "f:dropped": {}}})),
            entry("Apply", json!({"f:data": {"f:value": {}}})),
            {"manager": "someone-else", "operation": "Update", "apiVersion": "v1"},
        ]);
        let reply = serde_json::to_value(&child).expect("serializes");
        let status_reply = serde_json::to_value(&object).expect("serializes");
        let (shared, mut server) = mock_shared::<Thing>(children);
        let (child_path, status_path) = (path_of(&child), format!("{}/status", path_of(&object)));
        let events = events_path(&object);
        let scenario = async move {
            let first = server
                .expect(Method::PATCH, &child_path, StatusCode::OK, applied)
                .await;
            assert!(first.query.contains("force=true"), "{}", first.query);
            let handover = server
                .expect(Method::PATCH, &child_path, StatusCode::OK, reply.clone())
                .await;
            let metadata = &handover.body["metadata"];
            assert_eq!(metadata["resourceVersion"], "7", "guarded by the version");
            let entries = metadata["managedFields"].as_array().expect("entries");
            assert_eq!(entries.len(), 2, "the Update entry is gone: {entries:?}");
            assert_eq!(entries[0]["operation"], "Apply");
            assert_eq!(
                entries[0]["fieldsV1"],
                json!({"f:data": {".": {}, "f:dropped": {}, "f:value": {}}}),
                "the create's fields join the apply's"
            );
            assert_eq!(
                entries[1]["manager"], "someone-else",
                "others' entries stay"
            );
            let again = server
                .expect(Method::PATCH, &child_path, StatusCode::OK, reply)
                .await;
            assert!(again.query.contains("force=true"), "applied again");
            assert_eq!(again.body["data"], json!({"value": "a"}));
            server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            server
                .expect(Method::PATCH, &status_path, StatusCode::OK, status_reply)
                .await;
            server
        };
        let (action, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
        assert_eq!(action.expect("reconcile succeeds"), Action::requeue(RESYNC));
        assert!(
            hand_over_created_fields(&child, crate::testing::MANAGER).is_none(),
            "nothing to hand over without an Update entry"
        );
    }

    /// A reconcile started before the caches of children and names have their first list
    /// waits for them: with the child in the cache, a converged object needs no request.
    #[tokio::test]
    async fn a_reconcile_waits_for_the_first_lists_of_its_caches() {
        let object = converged(&thing("a"));
        let (ctx, server) = crate::testing::mock_context();
        let (children, mut children_writer) = reflector::store();
        let (names, mut names_writer) = reflector::store();
        let shared = Arc::new(Shared::<Thing>::new(ctx, children, names));
        let mut reconciling = Box::pin(reconcile(Arc::new(object.clone()), shared));
        let early = tokio::time::timeout(Duration::from_millis(200), &mut reconciling).await;
        assert!(early.is_err(), "it waits for the caches");
        crate::testing::fill(&mut children_writer, applied_children(&object));
        crate::testing::fill(&mut names_writer, Vec::new());
        let (action, requests) = converse(async move { server }, reconciling).await;
        assert_eq!(action.expect("reconcile succeeds"), Action::requeue(RESYNC));
        assert!(requests.is_empty(), "nothing to write: {requests:?}");
    }

    /// The cache may hand over the version of an object its children were just applied and
    /// its status just written for; neither is written again for it.
    #[tokio::test]
    async fn a_status_is_written_once_per_version_of_the_object() {
        let object = thing("a");
        let (ctx, mut server) = crate::testing::mock_context();
        let shared = Arc::new(Shared::<Thing>::new(
            ctx,
            crate::testing::store_of(applied_children(&object)),
            crate::testing::store_of(Vec::new()),
        ));
        let status_path = format!("{}/status", path_of(&object));
        let reply = serde_json::to_value(converged(&object)).expect("serializes");
        let child = applied_children(&object).remove(0);
        let (child_path, child_reply) = (
            path_of(&child),
            serde_json::to_value(&child).expect("serializes"),
        );
        let events = events_path(&object);
        let scenario = async move {
            // Never reconciled: the children are applied once, whatever the cache says.
            server
                .expect(Method::PATCH, &child_path, StatusCode::OK, child_reply)
                .await;
            server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            server
                .expect(Method::PATCH, &status_path, StatusCode::OK, reply)
                .await;
            server
        };
        let twice = {
            let shared = shared.clone();
            let object = Arc::new(object);
            async move {
                let first = reconcile(object.clone(), shared.clone()).await;
                let second = reconcile(object, shared).await;
                (first.is_ok(), second.is_ok())
            }
        };
        let ((first, second), requests) = converse(scenario, async move {
            let outcome = twice.await;
            drop(shared);
            outcome
        })
        .await;
        assert!(first && second);
        assert_eq!(
            requests.len(),
            3,
            "the second reconcile sent nothing: {requests:?}"
        );
    }

    #[tokio::test]
    async fn a_failure_sets_ready_false_and_only_the_ready_condition_is_applied() {
        let mut object = converged(&thing("invalid"));
        let json = serde_json::to_value(&object).expect("serializes");
        let mut with_foreign = json.clone();
        with_foreign["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(json!({
                "type": "Backup", "status": "True", "reason": "Done", "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z"
            }));
        object = serde_json::from_value(with_foreign).expect("deserializes");
        let (shared, mut server) = mock_shared::<Thing>(Vec::new());
        let status_path = format!("{}/status", path_of(&object));
        let events = events_path(&object);
        let scenario = async move {
            let request = server
                .expect(Method::PATCH, &status_path, StatusCode::OK, json)
                .await;
            let conditions = request.body["status"]["conditions"]
                .as_array()
                .expect("conditions");
            assert_eq!(conditions.len(), 1, "only Ready is applied: {conditions:?}");
            assert_eq!(conditions[0]["type"], "Ready");
            assert_eq!(conditions[0]["status"], "False");
            assert_eq!(conditions[0]["reason"], "InvalidSpec");
            let event = server
                .expect(Method::POST, &events, StatusCode::CREATED, json!({}))
                .await;
            assert_eq!(event.body["reason"], "InvalidSpec");
            server
        };
        let (result, _) = converse(scenario, reconcile(Arc::new(object), shared)).await;
        let error = result.expect_err("invalid spec");
        let (shared, _server) = mock_shared::<Thing>(Vec::new());
        assert_eq!(
            error_policy(Arc::new(thing("invalid")), &error, shared),
            Action::await_change(),
            "invalid input waits for a change"
        );
    }
}
