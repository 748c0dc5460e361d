//! A controller for a kind the project does not own (a built-in kind such as `Deployment`):
//! the project gives a function that reacts to one object, the runtime does the watch, the
//! cache (without managedFields), bounded concurrency, metrics and backoff by error class.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use kopgen_runtime::{Context, Result, kube::runtime::controller::Action, observe};
//! use kopgen_runtime::k8s_openapi::api::apps::v1::Deployment;
//!
//! async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action> {
//!     let _ = (deployment, ctx);
//!     Ok(Action::await_change())
//! }
//!
//! fn start(
//!     ctx: Arc<Context>,
//!     shutdown: tokio_util::sync::CancellationToken,
//! ) -> futures::future::BoxFuture<'static, ()> {
//!     Box::pin(observe::run("apps-deployment", reconcile, ctx, shutdown))
//! }
//! ```

use std::{fmt::Debug, future::Future, sync::Arc};

use futures::StreamExt;
use kube::{
    Resource, ResourceExt,
    runtime::{
        WatchStreamExt,
        controller::{self, Action, Controller},
        reflector, watcher,
    },
};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::{Context, Error, Result, backoff::Backoff, reconciler::KindScope, watch};

/// Runs the controller `name` of `K` until `shutdown` is cancelled and in-flight reconciles
/// have finished: `reconcile` is called for every object on each change (and when the action
/// it returns asks), and its errors are retried by class (see [`Error::retry`]).
pub async fn run<K, F, Fut>(
    name: &'static str,
    reconcile: F,
    ctx: Arc<Context>,
    shutdown: CancellationToken,
) where
    K: Resource<DynamicType = (), Scope: KindScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    let api = <K::Scope as KindScope>::api(ctx.client.clone(), ctx.namespace.as_deref());
    let observer = Arc::new(Observer {
        name,
        ctx: ctx.clone(),
        backoff: Backoff::default(),
    });
    let (store, writer) = reflector::store();
    let objects = watch::streaming(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(watch::slim)
        .reflect(writer)
        .applied_objects();
    let reconcile = Arc::new(reconcile);
    Controller::for_stream(objects, store)
        .with_config(controller::Config::default().concurrency(ctx.concurrency))
        .graceful_shutdown_on(shutdown.cancelled_owned())
        .run(
            move |object: Arc<K>, observer: Arc<Observer>| {
                let reconcile = reconcile.clone();
                async move {
                    let _timer = observer.ctx.metrics.reconcile_started(observer.name);
                    let uid = object.uid().unwrap_or_default();
                    let action =
                        crate::error::recover(reconcile(object, observer.ctx.clone())).await?;
                    observer.backoff.forget(&uid);
                    Ok::<_, Error>(action)
                }
            },
            |object: Arc<K>, error: &Error, observer: Arc<Observer>| {
                observer.error_policy(&*object, error)
            },
            observer,
        )
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => debug!(%object, "reconciled"),
                // Logged once, by the error policy.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(controller::Error::ObjectNotFound(object)) => {
                    debug!(%object, "deleted before its reconcile")
                }
                Err(error) => warn!(
                    controller = name,
                    %error,
                    "watch failed: may the manager list and watch {}?",
                    K::plural(&())
                ),
            }
        })
        .await;
}

/// One observing controller's state.
struct Observer {
    name: &'static str,
    ctx: Arc<Context>,
    backoff: Backoff,
}

impl Observer {
    /// Requeues a failed object by its error's class, as every controller does.
    fn error_policy<K: Resource>(&self, object: &K, error: &Error) -> Action {
        (self.backoff).requeue_after_failure(self.name, object, error, &self.ctx.metrics)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::ObjectMeta;

    use super::*;
    use crate::testing::mock_context;

    #[tokio::test]
    async fn errors_back_off_per_object() {
        let (ctx, _server) = mock_context();
        let observer = Observer {
            name: "apps-deployment",
            ctx,
            backoff: Backoff::default(),
        };
        let object = Deployment {
            metadata: ObjectMeta {
                name: Some("test".into()),
                uid: Some("uid-1".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        let error = Error::Kube(kube::Error::Api(
            kube::core::Status::failure("unavailable", "ServiceUnavailable")
                .with_code(503)
                .boxed(),
        ));
        let first = observer.error_policy(&object, &error);
        let second = observer.error_policy(&object, &error);
        assert_eq!(first, Action::requeue(std::time::Duration::from_secs(1)));
        assert_eq!(second, Action::requeue(std::time::Duration::from_secs(2)));
        let invalid = Error::InvalidSpec("no".into());
        assert_eq!(
            observer.error_policy(&object, &invalid),
            Action::await_change()
        );
    }
}
