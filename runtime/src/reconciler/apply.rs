//! How a reconcile writes its children: each desired child created when missing and applied
//! when what this manager sets differs, children no longer desired deleted where asked, then
//! the kind's own status fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
    },
    runtime::events::EventType,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{APPLIED, Desired, MANAGED_BY, Reconcile, Shared, lock, namespaced, publish, report};
use crate::{
    Context, Error, Result,
    caches::Cached,
    children::{Cache, is_controlled_by, not_a_child},
    leadership::Leadership,
};

/// Creates each missing child and updates each one whose applied fields differ, refusing to
/// take over an object of the same name this owner does not control; deletes the children of
/// pruned kinds that are no longer desired; then applies the kind's own status fields. A child
/// that fails does not stop the others: the first error is returned once all were tried.
pub(super) async fn write<R: Reconcile>(
    object: &R::Kind,
    desired: &Desired<R>,
    shared: &Shared<R>,
) -> Result<()> {
    let owner = object
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey("metadata.uid"))?;
    let mut first_error = None;
    let mut wanted = Vec::new();
    for child in &desired.children {
        match apply_child(object, child, &owner, shared).await {
            Ok(key) => wanted.push(key),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    // Names of children that failed are still wanted: never pruned. A child that failed
    // before it had a name or a namespace cannot be told from the copy that exists: nothing
    // is pruned then.
    let mut unplaced = false;
    for child in &desired.children {
        let cached = shared.caches.of(child);
        let metadata = &child["metadata"];
        unplaced |= !metadata["name"].is_string()
            || (cached.is_none_or(|c| c.namespaced) && !metadata["namespace"].is_string());
        let key = (
            child["kind"].as_str().unwrap_or_default().to_owned(),
            metadata["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            metadata["name"].as_str().unwrap_or_default().to_owned(),
        );
        if !wanted.contains(&key) {
            wanted.push(key);
        }
    }
    if !unplaced && let Err(error) = prune(object, desired, &owner.uid, &wanted, shared).await {
        first_error.get_or_insert(error);
    }
    if let Err(error) = delete_asked(object, desired, &owner.uid, shared).await {
        first_error.get_or_insert(error);
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    match &desired.status {
        Some(_) if !R::OWNS_STATUS => Err(Error::Config(format!(
            "{} gives status fields, but `Reconcile::OWNS_STATUS` is false",
            R::NAME
        ))),
        Some(own) => report::own_status(object, own, shared).await,
        None => Ok(()),
    }
}

/// Writes one child if it is not as desired; returns its kind, namespace and name.
async fn apply_child<R: Reconcile>(
    object: &R::Kind,
    child: &Value,
    owner: &OwnerReference,
    shared: &Shared<R>,
) -> Result<(String, String, String)> {
    let ctx = &shared.ctx;
    let sharded = ctx.shards.is_some();
    let child = as_applied(child.clone(), owner, &ctx.manager, sharded)?;
    let hash = child["metadata"]["annotations"][APPLIED]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let kind = child["kind"].as_str().unwrap_or_default().to_owned();
    let cached = (shared.caches.of(&child)).ok_or_else(|| not_a_child(&kind))?;
    let (namespace, name) = place::<R>(object, &child, cached.namespaced, ctx)?;
    let cache = &*cached.cache;
    let writer = Writer {
        client: &ctx.client,
        leadership: &ctx.leadership,
        resource: &cached.resource,
        namespace: (cached.namespaced).then_some(namespace.as_str()),
        manager: &ctx.manager,
    };
    let not_owned = |cache: &dyn Cache| {
        cache.wait_for(&namespace, &name, owner, object.namespace());
        Error::NotOwned {
            kind: kind.clone(),
            name: display(&namespace, &name),
        }
    };
    let key = (kind.clone(), namespace.clone(), name.clone());
    let actual = match cache.child(&namespace, &name)? {
        Some(actual) => Some(actual),
        // Not among the labelled children: the name may be held by someone else's object,
        // which is never taken over, or by this owner's child whose label was removed, which
        // is applied back.
        None => match cache.other(&namespace, &name)? {
            Some(other) if is_controlled_by(&other, &owner.uid) => Some(other),
            Some(_) => return Err(not_owned(cache)),
            None => None,
        },
    };
    let refused = |error: Error| match error {
        Error::Kube(kube::Error::Api(status)) if matches!(status.code, 400 | 422) => {
            Error::ChildRefused {
                kind: kind.clone(),
                name: display(&namespace, &name),
                source: Box::new(Error::Kube(kube::Error::Api(status))),
            }
        }
        error => error,
    };
    let (reason, written) = match &actual {
        // Created by a reconcile a moment ago, and not in the cache yet: its watch event
        // brings the owner back once it is.
        None if cache.unseen(&namespace, &name) => return Ok(key),
        // A create, not an apply: the API server refuses it (409) if an object of this name
        // exists that the caches have not shown yet, so none is ever taken over. Such an
        // object is this owner's child that another manager's reconcile (a replica before
        // this one) created, or someone else's: either way the watches bring the owner back
        // once the cache shows it, and that reconcile decides.
        None => match writer.create(&child).await {
            Err(Error::Kube(kube::Error::Api(status))) if status.code == 409 => {
                cache.wait_for(&namespace, &name, owner, object.namespace());
                return Ok(key);
            }
            created => {
                let created = created.map_err(refused)?;
                cache.created(&namespace, &name);
                ("Created", created)
            }
        },
        Some(actual) if !is_controlled_by(actual, &owner.uid) => return Err(not_owned(cache)),
        Some(actual) if up_to_date(actual, &child, &hash, shared) => return Ok(key),
        Some(actual) => {
            let mut applied = writer.apply(&name, &child).await.map_err(refused)?;
            if let Some(handover) = hand_over_created_fields(&applied, &ctx.manager) {
                writer.merge(&name, &handover).await?;
                applied = writer.apply(&name, &child).await?;
            }
            let before = actual["metadata"]["resourceVersion"].as_str();
            if applied.resource_version.as_deref() == before {
                // The API server had it all already (a value it normalises): nothing to tell.
                remember(shared, &applied, hash);
                return Ok(key);
            }
            ("Updated", applied)
        }
    };
    remember(shared, &written, hash);
    let note = format!("{reason} {kind} {}", display(&namespace, &name));
    publish(ctx, object, EventType::Normal, reason, note);
    Ok(key)
}

/// `namespace/name`, or `name` for a cluster-scoped object.
fn display(namespace: &str, name: &str) -> String {
    match namespace {
        "" => name.to_owned(),
        namespace => format!("{namespace}/{name}"),
    }
}

/// Writes children of one kind in one namespace, sending their JSON as it is and reading of
/// the API server's answer only the metadata: a reconcile needs the answer's keys and managed
/// fields, not the whole object decoded.
struct Writer<'a> {
    client: &'a Client,
    /// Checked before each write.
    leadership: &'a Leadership,
    resource: &'a ApiResource,
    /// `None` for a cluster-scoped kind.
    namespace: Option<&'a str>,
    manager: &'a str,
}

/// The metadata of the object an API server's answer holds; serde skips the rest.
#[derive(Deserialize)]
pub(crate) struct Written {
    pub(crate) metadata: ObjectMeta,
}

impl Writer<'_> {
    fn request(&self) -> kube::core::Request {
        let path = DynamicObject::url_path(self.resource, self.namespace);
        kube::core::Request::new(path)
    }

    async fn create(&self, child: &Value) -> Result<ObjectMeta> {
        self.leadership.check()?;
        let params = PostParams {
            field_manager: Some(self.manager.to_owned()),
            ..PostParams::default()
        };
        let request = (self.request().create(&params, serde_json::to_vec(child)?))
            .map_err(kube::Error::BuildRequest)?;
        Ok(self.client.request::<Written>(request).await?.metadata)
    }

    async fn apply(&self, name: &str, child: &Value) -> Result<ObjectMeta> {
        self.leadership.check()?;
        let params = PatchParams::apply(self.manager).force();
        let request = (self.request().patch(name, &params, &Patch::Apply(child)))
            .map_err(kube::Error::BuildRequest)?;
        Ok(self.client.request::<Written>(request).await?.metadata)
    }

    async fn merge(&self, name: &str, patch: &Value) -> Result<()> {
        self.leadership.check()?;
        let params = PatchParams::default();
        let request = (self.request().patch(name, &params, &Patch::Merge(patch)))
            .map_err(kube::Error::BuildRequest)?;
        self.client.request::<Written>(request).await?;
        Ok(())
    }
}

/// Whether `actual` is as `desired` asks: it holds every field `desired` sets (see
/// [`contains`]), or it is still the version the API server returned when this manager last
/// wrote the same desired state (the server may have normalised a value since: `500m` for
/// `0.5`).
fn up_to_date<R: Reconcile>(
    actual: &Value,
    desired: &Value,
    hash: &str,
    shared: &Shared<R>,
) -> bool {
    if contains(actual, desired) {
        return true;
    }
    let metadata = &actual["metadata"];
    let (Some(uid), Some(version)) = (
        metadata["uid"].as_str(),
        metadata["resourceVersion"].as_str(),
    ) else {
        return false;
    };
    lock(&shared.applied)
        .get(uid)
        .is_some_and(|(v, h)| v == version && h == hash)
}

fn remember<R: Reconcile>(shared: &Shared<R>, written: &ObjectMeta, hash: String) {
    if let (Some(uid), Some(version)) = (&written.uid, &written.resource_version) {
        lock(&shared.applied).insert(uid.clone(), (version.clone(), hash));
    }
}

/// `child` as this manager applies it: owned (see [`owned`]), with the hash of all that in the
/// [`APPLIED`] annotation.
pub(crate) fn as_applied(
    child: Value,
    owner: &OwnerReference,
    manager: &str,
    sharded: bool,
) -> Result<Value> {
    let mut child = owned(child, owner, manager, sharded)?;
    let hash = hash_of(&child)?;
    child["metadata"]["annotations"][APPLIED] = hash.into();
    Ok(child)
}

/// A hash of what is applied to a child, to tell when it changed (see [`APPLIED`]): SHA-256 of
/// its JSON (keys in order), the first 96 bits in hex.
fn hash_of(child: &Value) -> Result<String> {
    let digest = ring::digest::digest(&ring::digest::SHA256, &serde_json::to_vec(child)?);
    Ok(digest.as_ref()[..12]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Deletes the children of pruned kinds that `uid` controls and that are not `wanted`.
async fn prune<R: Reconcile>(
    object: &R::Kind,
    desired: &Desired<R>,
    uid: &str,
    wanted: &[(String, String, String)],
    shared: &Shared<R>,
) -> Result<()> {
    for cached in desired.pruned(&shared.caches) {
        for existing in cached.cache.controlled_by(uid)? {
            let metadata = &existing["metadata"];
            let namespace = metadata["namespace"].as_str().unwrap_or_default();
            let name = metadata["name"].as_str().unwrap_or_default();
            let key = (
                cached.resource.kind.clone(),
                namespace.to_owned(),
                name.to_owned(),
            );
            if wanted.contains(&key) {
                continue;
            }
            let uid = metadata["uid"].as_str().unwrap_or_default();
            delete_child(object, cached, namespace, name, uid, shared).await?;
        }
    }
    Ok(())
}

/// Deletes the children `desired()` asked to delete, each only if this object controls it.
async fn delete_asked<R: Reconcile>(
    object: &R::Kind,
    desired: &Desired<R>,
    uid: &str,
    shared: &Shared<R>,
) -> Result<()> {
    for deletion in &desired.deletions {
        let kind = (shared.caches.by_type(deletion.type_id)).ok_or_else(|| not_a_child("?"))?;
        let Some(child) = kind.cache.child(&deletion.namespace, &deletion.name)? else {
            // Gone already, or not a child of this manager's: nothing of ours to delete.
            continue;
        };
        if !is_controlled_by(&child, uid) {
            return Err(Error::InvalidSpec(format!(
                "{} {}: asked to delete an object this one does not control",
                kind.resource.kind,
                display(&deletion.namespace, &deletion.name)
            )));
        }
        let (namespace, name) = (&deletion.namespace, &deletion.name);
        delete_child(object, kind, namespace, name, &deletion.uid, shared).await?;
    }
    Ok(())
}

/// Deletes the child `namespace/name` whose UID is `uid` (never a new object of its name),
/// with its dependents in the background, and says so in an event; one already gone is fine.
async fn delete_child<R: Reconcile>(
    object: &R::Kind,
    cached: &Cached,
    namespace: &str,
    name: &str,
    uid: &str,
    shared: &Shared<R>,
) -> Result<()> {
    let ctx = &shared.ctx;
    let api: Api<DynamicObject> = match cached.namespaced {
        true => Api::namespaced_with(ctx.client.clone(), namespace, &cached.resource),
        false => Api::all_with(ctx.client.clone(), &cached.resource),
    };
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    ctx.leadership.check()?;
    match api.delete(name, &params).await {
        Ok(_) => {}
        // Gone, or (409) a new object of the name: not the one asked for.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    }
    let note = format!(
        "Deleted {} {}",
        cached.resource.kind,
        display(namespace, name)
    );
    publish(ctx, object, EventType::Normal, "Deleted", note);
    Ok(())
}

/// `child` with this manager's label and `owner` as its controller owner reference, which
/// blocks a foreground deletion of the owner until the child is gone; `sharded`, with the
/// owner's bucket as a label too, so that each replica's watch of children asks the API server
/// for its buckets' alone ([`crate::shards::SHARD_LABEL`]).
fn owned(mut child: Value, owner: &OwnerReference, manager: &str, sharded: bool) -> Result<Value> {
    let metadata = &mut child["metadata"];
    if !metadata.is_object() {
        *metadata = json!({});
    }
    for map in ["labels", "annotations"] {
        if !metadata[map].is_object() {
            metadata[map] = json!({});
        }
    }
    metadata["labels"][MANAGED_BY] = manager.into();
    if sharded {
        let bucket = crate::shards::bucket_of_uid(&owner.uid);
        metadata["labels"][crate::shards::SHARD_LABEL] = bucket.to_string().into();
    }
    let references = &mut metadata["ownerReferences"];
    if !references.is_array() {
        *references = json!([]);
    }
    if let Value::Array(references) = references
        && !references.iter().any(|r| r["uid"] == owner.uid.as_str())
    {
        let owner = OwnerReference {
            block_owner_deletion: Some(true),
            ..owner.clone()
        };
        references.push(serde_json::to_value(owner)?);
    }
    Ok(child)
}

/// The namespace (`""` for a cluster-scoped kind) and name of `child`, which must be where the
/// garbage collector and the manager's caches can follow it: in its owner's namespace for a
/// namespaced owner, and in a namespace the manager watches; a cluster-scoped child only of a
/// cluster-scoped owner.
fn place<R: Reconcile>(
    object: &R::Kind,
    child: &Value,
    namespaced_child: bool,
    ctx: &Context,
) -> Result<(String, String)> {
    let metadata = &child["metadata"];
    let name =
        (metadata["name"].as_str()).ok_or(Error::MissingObjectKey("metadata.name of a child"))?;
    let kind = child["kind"].as_str().unwrap_or_default();
    if !namespaced_child {
        if namespaced::<R>() {
            return Err(Error::InvalidSpec(format!(
                "{kind} {name}: a namespaced object cannot own a cluster-scoped child; the \
                 garbage collector deletes such children at once. Make the owner's kind \
                 cluster-scoped, or create the child without an owner"
            )));
        }
        if let Some(namespace) = metadata["namespace"].as_str().filter(|ns| !ns.is_empty()) {
            return Err(Error::InvalidSpec(format!(
                "{kind} {name} is cluster-scoped: give it no namespace (it has {namespace})"
            )));
        }
        return Ok((String::new(), name.to_owned()));
    }
    let namespace = (metadata["namespace"].as_str())
        .ok_or(Error::MissingObjectKey("metadata.namespace of a child"))?;
    if namespaced::<R>()
        && let Some(own) = object.namespace()
        && own != namespace
    {
        return Err(Error::InvalidSpec(format!(
            "{kind} {namespace}/{name}: a child of a namespaced object must be in its namespace \
             ({own}); the garbage collector deletes children whose owner is in another"
        )));
    }
    if let Some(watched) = &ctx.namespace
        && watched != namespace
    {
        return Err(Error::InvalidSpec(format!(
            "{kind} {namespace}/{name}: the manager watches only namespace {watched}"
        )));
    }
    Ok((namespace.to_owned(), name.to_owned()))
}

/// The merge patch that hands the fields this manager's create recorded to its apply: a create
/// records them under the manager's `Update` entry of the managed fields, which no apply ever
/// prunes, so a field the spec stops asking for would stay. Done once, at a child's first
/// update that stops setting one of them, as client-go's `csaupgrade` does for clients moving
/// to server-side apply: the entry's fields join the `Apply` entry, guarded by the resource
/// version (a 409 if the child changed meanwhile); the apply that follows removes what it no
/// longer sets. `None` when there is nothing to hand over, and while the apply still sets every
/// field the create did: then no field is kept by the `Update` entry alone, and the two writes
/// of a handover would change nothing (an update that changes values only, the usual one, is
/// one write).
pub(crate) fn hand_over_created_fields(child: &ObjectMeta, manager: &str) -> Option<Value> {
    let entries = child.managed_fields.as_ref()?;
    let ours = |entry: &ManagedFieldsEntry, operation: &str| {
        entry.manager.as_deref() == Some(manager)
            && entry.operation.as_deref() == Some(operation)
            && entry.subresource.as_deref().unwrap_or_default().is_empty()
    };
    let created = entries.iter().find(|entry| ours(entry, "Update"))?;
    let created_fields = &created.fields_v1.as_ref()?.0;
    // Checked before any entry is copied: the `Update` entry stays until a handover, so this
    // runs at every apply of the child.
    let applied = entries.iter().find(|entry| ours(entry, "Apply"))?;
    let none = json!({});
    if covers(
        applied.fields_v1.as_ref().map_or(&none, |f| &f.0),
        created_fields,
    ) {
        return None;
    }
    let mut handed: Vec<ManagedFieldsEntry> = entries
        .iter()
        .filter(|entry| !ours(entry, "Update"))
        .cloned()
        .collect();
    let applied = handed.iter_mut().find(|entry| ours(entry, "Apply"))?;
    let fields = applied.fields_v1.get_or_insert_with(|| FieldsV1(json!({})));
    add_fields(&mut fields.0, created_fields.clone());
    Some(json!({
        "metadata": { "resourceVersion": child.resource_version.as_ref()?, "managedFields": handed }
    }))
}

/// Whether the field set `applied` has every field of `created` (both `FieldsV1`). A create
/// records a map or list item it adds as a field of its own (`.`), an apply does not: such a
/// `.` counts as applied where the apply sets something in that map or item, since the API
/// server keeps it while it holds a field the apply sets.
fn covers(applied: &Value, created: &Value) -> bool {
    let (Value::Object(applied), Value::Object(created)) = (applied, created) else {
        return false;
    };
    created.iter().all(|(key, fields)| match applied.get(key) {
        Some(set) => covers(set, fields),
        None => key == "." && !applied.is_empty(),
    })
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

/// Whether every field of `desired` has its value in `actual`: what this manager applies, not
/// the whole object, so fields other managers or the API server added never count as drift.
#[cfg(test)]
pub(crate) fn is_applied<T: serde::Serialize>(desired: &T, actual: &T) -> Result<bool> {
    Ok(contains(
        &serde_json::to_value(actual)?,
        &serde_json::to_value(desired)?,
    ))
}

/// `actual` holds exactly what `desired` sets: objects key by key (keys `desired` does not set
/// are others' and never count), lists of scalars equal (`args` reordered or extended is
/// drift), lists of objects each desired item in order among the actual ones (a list keyed by
/// a field holds others' items too), scalars equal. A field `desired` sets is
/// never matched by its absence, whatever its value (`allowPrivilegeEscalation: false`, a key
/// of `""`): only an explicit `null` is. What the API server drops or rewrites on this
/// manager's own apply (Go's `omitempty`, `0.5` to `500m`) is absorbed by remembering the
/// version the server returned for that apply, not by leniency here, so someone else's removal
/// of such a value is repaired.
pub(crate) fn contains(actual: &Value, desired: &Value) -> bool {
    match (actual, desired) {
        (Value::Object(actual), Value::Object(desired)) => {
            desired.iter().all(|(key, value)| match actual.get(key) {
                Some(actual) => contains(actual, value),
                None => value.is_null(),
            })
        }
        (Value::Array(actual), Value::Array(desired))
            if desired.iter().all(|item| !item.is_object()) =>
        {
            actual == desired
        }
        (Value::Array(actual), Value::Array(desired)) => {
            // A list keyed by a field (containers, conditions) may hold others' items too.
            let mut actual = actual.iter();
            desired.iter().all(|item| actual.any(|a| contains(a, item)))
        }
        (actual, desired) => actual == desired,
    }
}
