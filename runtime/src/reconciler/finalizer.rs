//! The finalizer: added before the first child is written (only when the controller has
//! one), and released once cleanup is done, with the finalizers the controller retired.
//!
//! The finalizer list is changed with a JSON patch that first tests the list as read: a write
//! of anything else meanwhile (cleanup setting a condition, a status write, a label) does not
//! get in the way, as a guard on the resource version would, and a finalizer another manager
//! added meanwhile is never dropped (the test fails, and the reconcile retries on the list as
//! it is then).

use json_patch::{
    AddOperation, Patch as JsonPatch, PatchOperation, ReplaceOperation, TestOperation,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::EventType,
};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Reconcile, Shared, publish, report};
use crate::{Error, Result, leadership::Leadership};

/// Adds `finalizer` to the object's finalizers as read, while this replica leads.
pub(super) async fn add<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    leadership: &Leadership,
) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    leadership.check()?;
    set(api, object, finalizers).await
}

/// An object being deleted: runs cleanup if the controller's finalizer is on it, then removes
/// that finalizer and any retired one. A cleanup that fails is told (an event, and
/// `Ready=False` with reason `CleanupFailed` where the controller owns the status) and retried.
pub(super) async fn finalize<R: Reconcile>(
    api: &Api<R::Kind>,
    object: &R::Kind,
    shared: &Shared<R>,
) -> Result<()> {
    let ctx = &shared.ctx;
    let has = |f: &str| object.finalizers().iter().any(|own| own == f);
    let cleans_up = R::FINALIZER.is_some_and(has);
    if cleans_up
        && let Err(error) = crate::error::recover(shared.reconciler.cleanup(object, ctx)).await
    {
        let error = Error::Cleanup(Box::new(error));
        if R::OWNS_STATUS {
            // Publishes the warning event too.
            let _ = report::ready(object, Some(&error), None, shared).await;
        } else {
            let note = error.to_string();
            publish(ctx, object, EventType::Warning, error.reason(), note);
        }
        return Err(error);
    }
    let ours = |f: &String| {
        R::FINALIZER == Some(f.as_str()) || R::RETIRED_FINALIZERS.contains(&f.as_str())
    };
    if !object.finalizers().iter().any(ours) {
        return Ok(());
    }
    let kept = object.finalizers().iter().filter(|f| !ours(f)).cloned();
    ctx.leadership.check()?;
    set(api, object, kept.collect()).await?;
    if cleans_up {
        publish(
            ctx,
            object,
            EventType::Normal,
            "CleanedUp",
            "cleanup done".into(),
        );
    }
    Ok(())
}

/// Replaces the object's finalizers with `finalizers`, provided they are still those it was
/// read with. An object read without any is guarded by its resource version instead (there is
/// no list to test).
async fn set<K>(api: &Api<K>, object: &K, finalizers: Vec<String>) -> Result<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let name = object.name_any();
    let params = PatchParams::default();
    let written = match &object.meta().finalizers {
        Some(read) => {
            let path = |p: &str| p.parse().map_err(|e| Error::Conflict(format!("{e}")));
            let patch = JsonPatch(vec![
                PatchOperation::Test(TestOperation {
                    path: path("/metadata/finalizers")?,
                    value: json!(read),
                }),
                PatchOperation::Replace(ReplaceOperation {
                    path: path("/metadata/finalizers")?,
                    value: json!(finalizers),
                }),
            ]);
            api.patch(&name, &params, &Patch::<()>::Json(patch)).await
        }
        None => {
            let patch = JsonPatch(vec![
                PatchOperation::Test(TestOperation {
                    path: "/metadata/resourceVersion"
                        .parse()
                        .map_err(|e| Error::Conflict(format!("{e}")))?,
                    value: json!(object.resource_version()),
                }),
                PatchOperation::Add(AddOperation {
                    path: "/metadata/finalizers"
                        .parse()
                        .map_err(|e| Error::Conflict(format!("{e}")))?,
                    value: json!(finalizers),
                }),
            ]);
            api.patch(&name, &params, &Patch::<()>::Json(patch)).await
        }
    };
    match written {
        Ok(_) => Ok(()),
        // Gone meanwhile: nothing is left to hold.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        // The test failed: the object changed since it was read.
        Err(kube::Error::Api(status)) if status.code == 422 || status.code == 409 => {
            Err(Error::Conflict(format!(
                "the finalizers of {name} changed meanwhile: {}",
                status.message
            )))
        }
        Err(error) => Err(error.into()),
    }
}
