//! The finalizer: added before the first child is written (only when the controller has
//! one), and released once cleanup is done, with the finalizers the controller retired.

use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::EventType,
};
use serde_json::json;

use super::{Reconcile, Shared, publish, report};
use crate::{Error, Result};

/// How often the release is tried on a freshly read object before the reconcile backs off.
const RELEASE_ATTEMPTS: usize = 3;

/// Adds `finalizer`, guarded by the resource version: if anyone changed the object since it
/// was read, the API server refuses (409) and the reconcile retries on fresh data.
pub(super) async fn add<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
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
            let _ = report::ready(api, object, Some(&error), shared).await;
        } else {
            publish(
                ctx,
                object,
                EventType::Warning,
                error.reason(),
                error.to_string(),
            );
        }
        return Err(error);
    }
    let ours = |f: &String| {
        R::FINALIZER == Some(f.as_str()) || R::RETIRED_FINALIZERS.contains(&f.as_str())
    };
    if !object.finalizers().iter().any(ours) {
        return Ok(());
    }
    release(api, object, ours).await?;
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

/// Removes the finalizers `ours` picks from the object as the API server has it now: cleanup may
/// have written the object (a condition, an annotation), so the version read before it is
/// stale. Each attempt is guarded by the version it read, so another manager's finalizer that
/// came meanwhile is never dropped.
async fn release<K>(api: &Api<K>, object: &K, ours: impl Fn(&String) -> bool) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = object.name_any();
    let mut last = None;
    for _ in 0..RELEASE_ATTEMPTS {
        let Some(current) = api.get_opt(&name).await? else {
            return Ok(());
        };
        let kept: Vec<&String> = current.finalizers().iter().filter(|f| !ours(f)).collect();
        if kept.len() == current.finalizers().len() {
            return Ok(());
        }
        let patch = json!({
            "metadata": {
                "finalizers": kept,
                "resourceVersion": current.resource_version(),
            }
        });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => last = Some(status),
            Err(error) => return Err(error.into()),
        }
    }
    Err(
        last.map_or(Error::Timeout("releasing the finalizer".into()), |status| {
            Error::Kube(kube::Error::Api(status))
        }),
    )
}
