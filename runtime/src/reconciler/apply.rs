//! How a reconcile writes: each desired child created when missing and applied when one of the
//! fields this manager sets differs, children no longer desired deleted where asked, the
//! `Ready` condition, and the kind's own status fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, FieldsV1, ManagedFieldsEntry, OwnerReference,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions},
    runtime::events::EventType,
};
use serde::Serialize;
use serde_json::{Value, json};
use tracing::{info, warn};

use super::{MANAGED_BY, Reconcile, Shared, namespaced, publish};
use crate::{
    Context, Error, Result,
    children::{Desired, dynamic, is_controlled_by, not_a_child},
    status,
};

/// The object's status as JSON (its type is the kind's own): the generation it says was last
/// reconciled, and its conditions.
pub(super) fn status_of<K: Reconcile>(object: &K) -> Value {
    serde_json::to_value(object)
        .map(|mut value| value["status"].take())
        .unwrap_or_default()
}

/// Creates each missing child and updates each one whose applied fields differ; refuses to
/// take over an object of the same name this owner does not control; deletes the children of
/// pruned kinds that are no longer desired.
pub(super) async fn apply_children<K: Reconcile>(
    object: &K,
    desired: &Desired<K>,
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
    let mut wanted = Vec::new();
    for child in &desired.children {
        let child = owned(child.clone(), &owner, &ctx.manager)?;
        let (namespace, name) = place(object, &child, ctx)?;
        let kind = child["kind"].as_str().unwrap_or_default().to_owned();
        let (resource, cache) = (shared.caches.of(&child)).ok_or_else(|| not_a_child(&kind))?;
        wanted.push((kind.clone(), namespace.clone(), name.clone()));
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &namespace, resource);
        let not_owned = || Error::NotOwned {
            kind: kind.clone(),
            name: format!("{namespace}/{name}"),
        };
        let actual = cache.child(&namespace, &name)?;
        // Not among the labelled children: the name may still be taken by someone else's
        // object, which is never taken over.
        if actual.is_none() && cache.taken(&namespace, &name, &owner.uid)? {
            return Err(not_owned());
        }
        let reason = match &actual {
            None => {
                // A create, not an apply: the API server refuses it (409) if an object of this
                // name exists that the caches have not shown yet, so none is ever taken over.
                let params = PostParams {
                    field_manager: Some(ctx.manager.clone()),
                    ..PostParams::default()
                };
                api.create(&params, &dynamic(&child)?).await?;
                "Created"
            }
            Some(actual) if !is_controlled_by(actual, &owner.uid) => return Err(not_owned()),
            // After a spec change the child is applied whatever the comparison says: a field
            // the new spec no longer asks for is only removed by applying without it.
            Some(actual) if !spec_changed && contains(actual, &child) => continue,
            Some(_) => {
                let params = PatchParams::apply(&ctx.manager).force();
                let applied = api.patch(&name, &params, &Patch::Apply(&child)).await?;
                if let Some(handover) = hand_over_created_fields(&applied, &ctx.manager) {
                    let merge = PatchParams::default();
                    api.patch(&name, &merge, &Patch::Merge(handover)).await?;
                    api.patch(&name, &params, &Patch::Apply(&child)).await?;
                }
                "Updated"
            }
        };
        let note = format!("{reason} {kind} {namespace}/{name}");
        publish(ctx, object, EventType::Normal, reason, note);
    }
    for (resource, cache) in desired.pruned(&shared.caches) {
        for existing in cache.controlled_by(&owner.uid)? {
            let metadata = &existing["metadata"];
            let namespace = metadata["namespace"].as_str().unwrap_or_default();
            let name = metadata["name"].as_str().unwrap_or_default();
            let key = (resource.kind.clone(), namespace.to_owned(), name.to_owned());
            if wanted.contains(&key) {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(ctx.client.clone(), namespace, resource);
            // Only the object that was cached: never a new one of the same name.
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: metadata["uid"].as_str().map(str::to_owned),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match api.delete(name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => continue,
                Err(error) => return Err(error.into()),
            }
            let note = format!("Deleted {} {namespace}/{name}", resource.kind);
            publish(ctx, object, EventType::Normal, "Deleted", note);
        }
    }
    if spec_changed {
        shared.remember_applied(object);
    }
    Ok(())
}

/// `child` with this manager's label and `owner` as its controller owner reference.
fn owned(mut child: Value, owner: &OwnerReference, manager: &str) -> Result<Value> {
    let metadata = &mut child["metadata"];
    if !metadata.is_object() {
        *metadata = json!({});
    }
    if !metadata["labels"].is_object() {
        metadata["labels"] = json!({});
    }
    metadata["labels"][MANAGED_BY] = manager.into();
    let references = &mut metadata["ownerReferences"];
    if !references.is_array() {
        *references = json!([]);
    }
    if let Value::Array(references) = references
        && !references.iter().any(|r| r["uid"] == owner.uid.as_str())
    {
        references.push(serde_json::to_value(owner)?);
    }
    Ok(child)
}

/// The namespace and name of `child`, which must be where the garbage collector and the
/// manager's caches can follow it: in its owner's namespace for a namespaced owner, and in a
/// namespace the manager watches.
fn place<K: Reconcile>(object: &K, child: &Value, ctx: &Context) -> Result<(String, String)> {
    let metadata = &child["metadata"];
    let name =
        (metadata["name"].as_str()).ok_or(Error::MissingObjectKey("metadata.name of a child"))?;
    let namespace = (metadata["namespace"].as_str())
        .ok_or(Error::MissingObjectKey("metadata.namespace of a child"))?;
    let kind = child["kind"].as_str().unwrap_or_default();
    if namespaced::<K>()
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

fn conditions_of(status: &Value) -> Vec<Condition> {
    (status["conditions"].as_array().into_iter().flatten())
        .filter_map(|c| serde_json::from_value(c.clone()).ok())
        .collect()
}

/// Applies the kind's own status fields (with the field manager `<manager>-status`, so that the
/// `Ready` apply never removes them), unless the object already says all of it. Conditions
/// keep their transition time while their status stays; `Ready` and `observedGeneration` are
/// the reconciler's and left out.
pub(super) async fn write_own_status<K: Reconcile>(
    api: &Api<K>,
    object: &K,
    status: &Value,
    own: &K::Status,
    shared: &Shared<K>,
) -> Result<()> {
    let mut own = serde_json::to_value(own)?;
    let Value::Object(fields) = &mut own else {
        return Err(Error::InvalidSpec(
            "the status given to Desired::status is not a JSON object".into(),
        ));
    };
    fields.remove("observedGeneration");
    fields.retain(|_, value| !value.is_null());
    if let Some(Value::Array(conditions)) = fields.get_mut("conditions") {
        let mut merged = conditions_of(status);
        let mut mine = Vec::new();
        for condition in conditions.drain(..) {
            let condition: Condition = serde_json::from_value(condition)?;
            if condition.type_ == "Ready" {
                continue;
            }
            let type_ = condition.type_.clone();
            status::set_condition(&mut merged, condition);
            let kept = merged.iter().find(|c| c.type_ == type_);
            mine.push(serde_json::to_value(kept)?);
        }
        *conditions = mine;
    }
    if contains(status, &own) {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": own,
    });
    let params = PatchParams::apply(&format!("{}-status", shared.ctx.manager)).force();
    api.patch_status(&object.name_any(), &params, &Patch::Apply(patch))
        .await?;
    Ok(())
}

/// Sets `Ready` (and `observedGeneration`) from the reconcile's outcome, unless the object
/// already says exactly that. A failure to write status is logged: the reconcile's own
/// outcome decides what happens next.
pub(super) async fn write_status<K: Reconcile>(
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
    let existing = conditions_of(status);
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
