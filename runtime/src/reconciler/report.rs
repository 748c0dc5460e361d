//! How a reconcile reports on the object's status: the `Ready` condition and
//! `observedGeneration` (the reconciler's), and the kind's own status fields (the project's),
//! each with a field manager of its own so that neither write removes the other's fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{
    Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::EventType,
};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::{
    Reconcile, Shared,
    apply::{Written, contains},
    desired::Progress,
    lock, publish,
};
use crate::{Error, Result, error::Retry, status};

/// The conditions this reconciler owns on an object's status: `Ready`, and kstatus'
/// abnormal-true conditions, present only while they hold (`Reconciling`: not ready yet, no
/// failure; `Stalled`: failed until the object changes).
pub(crate) const OWN_CONDITIONS: [&str; 3] = ["Ready", "Reconciling", "Stalled"];

/// The object's status as JSON (its type is the kind's own).
fn status_of<K: serde::Serialize>(object: &K) -> Value {
    serde_json::to_value(object)
        .map(|mut value| value["status"].take())
        .unwrap_or_default()
}

/// Whether `object` says it was reconciled at its generation, whatever the outcome (a failure
/// stands until its retry): its `observedGeneration` and its `Ready` condition's are its
/// generation. An object being deleted never says so: its finalizer waits for a reconcile.
pub(super) fn observed<K: Resource + serde::Serialize>(object: &K) -> bool {
    let meta = object.meta();
    let Some(generation) = meta
        .generation
        .filter(|_| meta.deletion_timestamp.is_none())
    else {
        return false;
    };
    let status = status_of(object);
    status["observedGeneration"] == json!(generation)
        && conditions_of(&status)
            .iter()
            .any(|c| c.type_ == "Ready" && c.observed_generation == Some(generation))
}

fn conditions_of(status: &Value) -> Vec<Condition> {
    (status["conditions"].as_array().into_iter().flatten())
        .filter_map(|c| serde_json::from_value(c.clone()).ok())
        .collect()
}

/// Applies the kind's own status fields (`own`, the JSON of the kind's status type) with the
/// field manager `<manager>-status`, so that the `Ready` apply never removes them, unless the
/// object already says all of it and nothing more. Conditions keep their transition time while
/// their status stays; `Ready` and `observedGeneration` are the reconciler's and left out. A
/// field the project stops setting is removed: this controller owns the kind's status.
pub(super) async fn own_status<R: Reconcile>(
    object: &R::Kind,
    own: &Value,
    shared: &Shared<R>,
) -> Result<()> {
    let status = status_of(object);
    let mut own = own.clone();
    let Value::Object(fields) = &mut own else {
        return Err(Error::InvalidSpec(
            "the status given to Desired::status is not a JSON object".into(),
        ));
    };
    fields.remove("observedGeneration");
    fields.retain(|_, value| !value.is_null());
    if let Some(Value::Array(conditions)) = fields.get_mut("conditions") {
        let mut merged = conditions_of(&status);
        let mut mine = Vec::new();
        for condition in conditions.drain(..) {
            let condition: Condition = serde_json::from_value(condition)?;
            if OWN_CONDITIONS.contains(&condition.type_.as_str()) {
                continue;
            }
            let type_ = condition.type_.clone();
            status::set_condition(&mut merged, condition);
            let kept = merged.iter().find(|c| c.type_ == type_);
            mine.push(serde_json::to_value(kept)?);
        }
        *conditions = mine;
    }
    let stale = (status.as_object().into_iter().flatten()).any(|(key, _)| {
        !matches!(key.as_str(), "conditions" | "observedGeneration") && !fields.contains_key(key)
    });
    let summary = own.to_string();
    let uid = object.uid().unwrap_or_default();
    let version = object.resource_version().unwrap_or_default();
    let written_here = lock(&shared.own_written)
        .get(&uid)
        .is_some_and(|(v, s)| *v == version && *s == summary);
    if written_here || (contains(&status, &own) && !stale) {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": R::Kind::api_version(&()),
        "kind": R::Kind::kind(&()),
        "status": own,
    });
    let manager = format!("{}-status", shared.ctx.manager);
    let written = patch_status(&shared.ctx, object, &manager, &patch).await?;
    let version = written.resource_version.unwrap_or_default();
    lock(&shared.own_written).insert(uid, (version, summary));
    Ok(())
}

/// Sets `Ready` (and `observedGeneration`) from the reconcile's outcome, with `Reconciling`
/// while the object is progressing and `Stalled` while it failed for good, unless the object
/// already says exactly that, or this manager wrote exactly that for this version of the
/// object (its cache may not show the write yet). A success right after a failure is written
/// even while the cache shows the success before it.
pub(super) async fn ready<R: Reconcile>(
    object: &R::Kind,
    error: Option<&Error>,
    progress: Option<&Progress>,
    shared: &Shared<R>,
) -> Result<()> {
    let ctx = &shared.ctx;
    let name = object.name_any();
    let generation = object.meta().generation;
    let (ready, reason, message) = match (error, progress) {
        (Some(error), _) => (false, error.reason().to_owned(), error.to_string()),
        (None, Some(progress)) => (false, progress.reason.clone(), progress.message.clone()),
        (None, None) => (
            true,
            "Reconciled".to_owned(),
            "all children are up to date".to_owned(),
        ),
    };
    let reconciling = error.is_none() && progress.is_some();
    let stalled = error.is_some_and(|error| error.retry() == Retry::OnChange);
    let status = status_of(object);
    let existing = conditions_of(&status);
    let previous = existing.iter().find(|c| c.type_ == "Ready");
    let holds = |type_: &str, holds: bool| {
        let found = existing.iter().find(|c| c.type_ == type_);
        match holds {
            true => found.is_some_and(|c| {
                c.status == "True"
                    && c.reason == reason
                    && c.message == message
                    && c.observed_generation == generation
            }),
            false => found.is_none(),
        }
    };
    let says_it = previous.is_some_and(|c| {
        c.status == if ready { "True" } else { "False" }
            && c.reason == reason
            && c.message == message
            && c.observed_generation == generation
    }) && holds("Reconciling", reconciling)
        && holds("Stalled", stalled)
        && status["observedGeneration"] == json!(generation);
    let summary = format!("{ready}/{reconciling}/{stalled}/{reason}/{message}/{generation:?}");
    let uid = object.uid().unwrap_or_default();
    let version = object.resource_version().unwrap_or_default();
    let last = lock(&shared.written).get(&uid).cloned();
    let unchanged = match &last {
        // This manager's last write for this object: it stands if the object has not moved
        // since (the cache may not show it yet), or if the object says it.
        Some((v, s)) => *s == summary && (*v == version || says_it),
        None => says_it,
    };
    if unchanged {
        return Ok(());
    }
    let mut conditions = existing.clone();
    let mut set = |type_: &str, status: bool| {
        let condition = status::condition(type_, status, &reason, message.clone(), generation);
        status::set_condition(&mut conditions, condition);
    };
    set("Ready", ready);
    if reconciling {
        set("Reconciling", true);
    }
    if stalled {
        set("Stalled", true);
    }
    let wanted = |c: &Condition| match c.type_.as_str() {
        "Ready" => true,
        "Reconciling" => reconciling,
        "Stalled" => stalled,
        _ => false,
    };
    let owned: Vec<Condition> = conditions.into_iter().filter(wanted).collect();
    // Only these conditions: `conditions` is a list keyed by type, so this manager owns those
    // entries (and drops the ones it no longer sets) while other managers' stay theirs.
    let patch = json!({
        "apiVersion": R::Kind::api_version(&()),
        "kind": R::Kind::kind(&()),
        "status": { "conditions": owned, "observedGeneration": generation },
    });
    let written = patch_status(ctx, object, &ctx.manager, &patch).await;
    let was_ready = previous.is_none_or(|c| c.status == "True");
    if error.is_some() && was_ready {
        publish(ctx, object, EventType::Warning, &reason, message);
    } else if ready && !was_ready {
        info!(controller = R::NAME, %name, "ready again");
    }
    match written {
        Ok(_) => {
            lock(&shared.written).insert(uid, (version, summary));
            Ok(())
        }
        Err(error) => {
            warn!(controller = R::NAME, %name, %error, "failed to write status");
            Err(error)
        }
    }
}

/// Applies `patch` to the object's status as `manager`, reading of the answer only its
/// metadata (the whole object decoded would be a cost at every status write), while this
/// replica leads.
async fn patch_status<K: Resource<DynamicType = ()>>(
    ctx: &crate::Context,
    object: &K,
    manager: &str,
    patch: &Value,
) -> Result<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
    ctx.leadership.check()?;
    let path = K::url_path(&(), object.meta().namespace.as_deref());
    let params = PatchParams::apply(manager).force();
    let request = kube::core::Request::new(path)
        .patch_subresource("status", &object.name_any(), &params, &Patch::Apply(patch))
        .map_err(kube::Error::BuildRequest)?;
    Ok(ctx.client.request::<Written>(request).await?.metadata)
}
