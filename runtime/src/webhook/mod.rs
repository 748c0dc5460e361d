//! The webhook server: the API server asks it, over TLS, to default and to validate objects
//! before it stores them, and to convert them between versions. Each kind's module in the
//! project's `webhooks/` implements [`Defaulter`] and [`Validator`] for the kind, and gives
//! its versions' conversions; [`admission`] and [`conversion`] turn that into
//! `AdmissionReview` and `ConversionReview` answers, which the manager serves on
//! `--webhook-port` over TLS.
//!
//! ```
//! use kopgen_runtime::webhook::{
//!     self, Defaulter, Denied, FieldError, Review, Routes, Validator, Verdict, Warnings,
//! };
//! # use kopgen_runtime::kube::CustomResource;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, schemars::JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Blog", namespaced)]
//! # pub struct BlogSpec { replicas: Option<i32> }
//!
//! impl Defaulter for Blog {
//!     async fn set_defaults(&mut self, _: &Review<'_>) -> Result<(), Denied> {
//!         self.spec.replicas.get_or_insert(1);
//!         Ok(())
//!     }
//! }
//!
//! impl Validator for Blog {
//!     async fn validate_create(&self, _: &Review<'_>) -> Verdict {
//!         match self.spec.replicas {
//!             Some(n) if n > 10 => Err(Denied::invalid([FieldError::invalid(
//!                 "spec.replicas",
//!                 n,
//!                 "must be at most 10",
//!             )])),
//!             _ => Ok(Warnings::new()),
//!         }
//!     }
//!
//!     async fn validate_update(&self, _old: &Self, review: &Review<'_>) -> Verdict {
//!         self.validate_create(review).await
//!     }
//! }
//!
//! /// What the project registers with `Manager::webhooks`.
//! pub fn routes() -> Routes {
//!     webhook::defaulting::<Blog>("/mutate-example-com-v1-blog")
//!         .merge(webhook::validating::<Blog>("/validate-example-com-v1-blog"))
//! }
//! ```

pub mod admission;
#[cfg(test)]
mod admission_tests;
pub mod conversion;
#[cfg(test)]
mod conversion_tests;

use std::sync::Arc;

pub use admission::{
    Admitted, Defaulter, Denied, FieldError, Review, Validator, Verdict, Warnings, defaulting,
    validating,
};
pub use conversion::{Conversion, Convert, FieldsDiffer, same_fields};

use crate::Context;
use conversion::converting;

/// A kind's webhook routes; each handler gets the manager's [`Context`].
pub type Routes = axum::Router<Arc<Context>>;

/// The webhooks a project registered with [`crate::Manager::webhooks`].
#[derive(Default)]
pub(crate) struct Webhooks {
    pub(crate) routes: Vec<fn() -> Routes>,
    pub(crate) conversions: Vec<fn() -> Box<dyn Convert>>,
}

impl Webhooks {
    /// One router for every webhook, each handler given `context`.
    pub(crate) fn router(&self, context: Arc<Context>) -> axum::Router {
        let mut router =
            (self.routes.iter()).fold(Routes::new(), |router, routes| router.merge(routes()));
        if !self.conversions.is_empty() {
            let conversions = (self.conversions.iter())
                .map(|conversion| conversion())
                .collect();
            router = router.merge(converting(conversions));
        }
        router
            .layer(axum::middleware::from_fn_with_state(context.clone(), guard))
            .with_state(context)
    }

    /// The webhook server's listener and TLS, unless there is nothing to serve or
    /// `--enable-webhooks=false`. Webhooks are served by every replica, leader or not: the API
    /// server calls any of them.
    pub(crate) async fn bind(
        &self,
        config: &crate::Config,
        identity: &crate::Identity,
        client: &kube::Client,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> crate::Result<Option<(std::net::TcpListener, crate::tls::Tls)>> {
        if !config.enable_webhooks || (self.routes.is_empty() && self.conversions.is_empty()) {
            return Ok(None);
        }
        let listener = crate::tls::bind_port("webhook", config.webhook_port)?;
        #[cfg(feature = "self-managed-certs")]
        if let Some(certificates) = self.self_managed(config, identity, client) {
            let keys = certificates.ensure().await?;
            let tls =
                crate::tls::from_pem(keys.cert.clone().into(), keys.key.clone().into()).await?;
            tokio::spawn(certificates.run(tls.clone(), keys, shutdown.clone()));
            return Ok(Some((listener, tls)));
        }
        if config.webhook_cert_secret.is_some() {
            return Err(crate::Error::Config(
                "--webhook-cert-secret needs kopgen-runtime's `self-managed-certs` feature \
                 (`kopgen edit --webhook-certificates self-managed`)"
                    .into(),
            ));
        }
        let _ = (identity, client, shutdown);
        let certificate = config.webhook_certificate();
        if !certificate.cert.exists() {
            return Err(crate::Error::Config(format!(
                "the webhook server's certificate {} does not exist. On a cluster, cert-manager \
                 mounts it (config/certmanager) or the manager makes its own \
                 (--webhook-cert-secret); from your machine, run without webhooks \
                 (--enable-webhooks=false or ENABLE_WEBHOOKS=false, as `make run` does) or \
                 point --webhook-cert-path at a certificate",
                certificate.cert.display()
            )));
        }
        let tls = crate::tls::load(certificate).await?;
        Ok(Some((listener, tls)))
    }

    /// The self-managed webhook certificate, if `--webhook-cert-secret` asks for one.
    #[cfg(feature = "self-managed-certs")]
    fn self_managed(
        &self,
        config: &crate::Config,
        identity: &crate::Identity,
        client: &kube::Client,
    ) -> Option<crate::certificates::SelfManaged> {
        let secret = config.webhook_cert_secret.clone()?;
        let namespace = config.leader_election_namespace.clone();
        let service =
            (config.webhook_service_name.clone()).unwrap_or_else(|| identity.webhook_service());
        let mut hosts = vec![
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ];
        hosts.extend(config.webhook_cert_hosts.iter().cloned());
        Some(crate::certificates::SelfManaged {
            client: client.clone(),
            manager: identity.manager(),
            namespace,
            secret,
            hosts,
            mutating_configuration: identity.mutating_configuration(),
            validating_configuration: identity.validating_configuration(),
            crds: (self.conversions.iter())
                .map(|conversion| conversion().crd_name())
                .collect(),
            check_every: std::time::Duration::from_secs(config.webhook_cert_check_seconds),
        })
    }
}

/// How long a webhook request may take, its body read included: the API server gives up on a
/// webhook after at most 30 s (`timeoutSeconds`), so nothing past that is of use to it.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Every webhook request, bounded in time and kept from taking the server down: a handler that
/// panics (the project's defaulting, validation or conversion) answers 500 with a message and
/// is counted in `controller_runtime_webhook_panics_total`, as controller-runtime recovers
/// webhook panics; one that (with its body) takes longer than [`REQUEST_TIMEOUT`] answers 504.
async fn guard(
    axum::extract::State(context): axum::extract::State<Arc<Context>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::{http::StatusCode, response::IntoResponse};
    use futures::FutureExt;
    let path = request.uri().path().to_owned();
    let handled = std::panic::AssertUnwindSafe(next.run(request)).catch_unwind();
    match tokio::time::timeout(REQUEST_TIMEOUT, handled).await {
        Ok(Ok(response)) => response,
        Ok(Err(panic)) => {
            context.metrics.webhook_panicked();
            let message = (panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            tracing::error!(%path, %message, "a webhook panicked");
            let answer = format!("the webhook at {path} panicked: {message}");
            (StatusCode::INTERNAL_SERVER_ERROR, answer).into_response()
        }
        Err(_) => {
            let answer = format!("the webhook at {path} took longer than {REQUEST_TIMEOUT:?}");
            (StatusCode::GATEWAY_TIMEOUT, answer).into_response()
        }
    }
}
