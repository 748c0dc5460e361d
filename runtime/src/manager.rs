//! The manager: starts the probe and metrics servers, elects a leader if asked, runs the
//! controllers (and serves the webhooks), and shuts everything down in order on SIGTERM.
//!
//! A project registers what is its own (controllers, webhooks) and hands over its flags:
//!
//! ```no_run
//! # async fn example(config: kopgen_runtime::Config) -> kopgen_runtime::Result<()> {
//! use kopgen_runtime::{Manager, Start};
//!
//! const CONTROLLERS: &[Start] = &[/* kopgen_runtime::reconciler::start::<BlogReconciler>, ... */];
//!
//! Manager::new("blog-operator", "example.com")
//!     .controllers(CONTROLLERS)
//!     .run(config)
//!     .await
//! # }
//! ```

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Client;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::{
    Context, Error, Identity, Result, State, config::Config, context::Timeouts, leader,
    metrics::Metrics, server, sync::CacheSync, telemetry, tls,
};

/// A controller's entry point: runs it until the token is cancelled, then drains it; fails if
/// the controller cannot run (its caches do not fill in time).
pub type Start = fn(Arc<Context>, CancellationToken) -> BoxFuture<'static, Result<()>>;

/// What a project runs: its identity, its controllers and (with the `webhooks` feature) its
/// webhooks.
pub struct Manager {
    identity: Identity,
    controllers: Vec<Start>,
    state: State,
    #[cfg(feature = "webhooks")]
    webhooks: crate::webhook::Webhooks,
}

impl Manager {
    /// The manager of the project `name` in `domain` (see [`Identity`]).
    pub fn new(name: &str, domain: &str) -> Self {
        Self {
            identity: Identity::new(name, domain),
            controllers: Vec::new(),
            state: State::default(),
            #[cfg(feature = "webhooks")]
            webhooks: crate::webhook::Webhooks::default(),
        }
    }

    /// The manager's identity.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Adds controllers to run.
    pub fn controllers(mut self, controllers: &[Start]) -> Self {
        self.controllers.extend_from_slice(controllers);
        self
    }

    /// Hands `value` to every reconcile and webhook, as [`Context::state`]: what the project's
    /// code needs beside the cluster client (a client of a cloud API that `cleanup` calls,
    /// settings from the project's own flags). One value per type.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Adds admission webhooks (each a function giving its routes) and conversions to serve.
    #[cfg(feature = "webhooks")]
    pub fn webhooks(
        mut self,
        routes: &[fn() -> crate::webhook::Routes],
        conversions: &[fn() -> Box<dyn crate::webhook::Convert>],
    ) -> Self {
        self.webhooks.routes.extend_from_slice(routes);
        self.webhooks.conversions.extend_from_slice(conversions);
        self
    }

    /// A context for this manager's controllers: what [`Manager::run`] hands them, for tests
    /// that run the controllers themselves (see [`Manager::run_controllers`]).
    pub fn context(&self, client: Client, config: &Config) -> Context {
        let mut ctx = self.context_watching(client, config.watch_namespace());
        let sharded = config.shards == crate::config::Sharding::Auto;
        if config.leader_elect || sharded {
            ctx.leadership = crate::Leadership::elected();
            ctx.events = ctx.events.fenced(ctx.leadership.clone());
        }
        if sharded {
            ctx.shards = Some(crate::shards::Shards::default());
        }
        ctx.concurrency = config.max_concurrent_reconciles;
        ctx.sync = CacheSync::new(config.cache_sync_timeout);
        ctx.timeouts = Timeouts {
            reconcile: config.reconcile_timeout,
            graceful_shutdown: config.graceful_shutdown_timeout,
            resync: config.sync_period,
        };
        ctx
    }

    /// This manager's context (its name, metrics and state) watching `namespace`, or every
    /// namespace with `None`.
    pub(crate) fn context_watching(&self, client: Client, namespace: Option<String>) -> Context {
        let metrics = Arc::new(Metrics::new(&self.identity.metrics_prefix()));
        let mut ctx = Context::new(client, &self.identity.manager(), metrics, namespace);
        ctx.state = self.state.clone();
        ctx
    }

    /// Runs every controller until `shutdown` is cancelled and each has drained its in-flight
    /// reconciles (for at most the graceful shutdown timeout); fails, stopping the others, as
    /// soon as one controller fails.
    pub async fn run_controllers(
        &self,
        ctx: Arc<Context>,
        shutdown: CancellationToken,
    ) -> Result<()> {
        if self.controllers.is_empty() {
            tracing::warn!("no controllers registered; add one with `kopgen create api`");
            shutdown.cancelled().await;
            return Ok(());
        }
        ctx.sync.starting(self.controllers.len());
        let running = (self.controllers.iter()).map(|start| start(ctx.clone(), shutdown.clone()));
        let all = futures::future::try_join_all(running);
        let drain = ctx.timeouts.graceful_shutdown;
        let deadline = async {
            shutdown.cancelled().await;
            tokio::time::sleep(drain).await;
        };
        tokio::select! {
            outcome = all => {
                // One failed: stop the others too.
                shutdown.cancel();
                outcome.map(|_| ())
            }
            () = deadline => {
                tracing::warn!(
                    "in-flight reconciles did not finish within {drain:?} \
                     (--graceful-shutdown-timeout); stopping anyway"
                );
                Ok(())
            }
        }
    }

    /// Runs the manager with `config` until SIGTERM or Ctrl-C, then shuts down gracefully.
    pub async fn run(self, config: Config) -> Result<()> {
        telemetry::init(config.log_format, &config.log_level)?;

        let shutdown = CancellationToken::new();
        tokio::spawn(shutdown_on_signal(shutdown.clone()));

        // Bound first: a port in use stops the manager here, as in controller-runtime.
        let listeners = server::bind(
            &config.health_probe_bind_address,
            &config.metrics_bind_address,
        )
        .await?;
        let mut kube_config = kube::Config::infer()
            .await
            .map_err(|e| Error::Config(format!("no cluster to talk to: {e}")))?;
        // An API server that stops answering fails a request instead of holding it: longer than
        // a watch's own 290 s (the watcher's requests end there), counted from each request.
        kube_config.read_timeout = Some(std::time::Duration::from_secs(295));
        kube_config.reset_reader_on_write = true;
        let client = Client::try_from(kube_config.clone())?;
        #[cfg(feature = "webhooks")]
        let webhook_server = self
            .webhooks
            .bind(&config, &self.identity, &client, &shutdown)
            .await?;
        let metrics_tls = match (config.metrics_secure, config.metrics_certificate()) {
            (false, _) => None,
            (true, Some(certificate)) => Some(tls::load(certificate).await?),
            (true, None) => Some(tls::self_signed(vec!["localhost".into()]).await?),
        };
        let sharded = config.shards == crate::config::Sharding::Auto;
        let election = match config.leader_elect || sharded {
            true => Some(config.leader_election(&self.identity)?),
            false => None,
        };
        let ctx = Arc::new(self.context(client.clone(), &config));
        let state = server::State::new(ctx.metrics.clone(), ctx.sync.clone());
        let security = match metrics_tls {
            Some(tls) => server::Security::Https {
                tls,
                client: client.clone(),
            },
            None => server::Security::Http,
        };
        let servers = tokio::spawn(server::serve(
            listeners,
            state.clone(),
            security,
            shutdown.clone(),
        ));
        #[cfg(feature = "webhooks")]
        let webhook_server = webhook_server.map(|(listener, tls)| {
            let health = state.certificate_health();
            let router = self.webhooks.router(ctx.clone());
            tokio::spawn(tls::serve(listener, router, tls, health, shutdown.clone()))
        });

        state.set_ready();
        let manager = self.identity.manager();
        info!(namespace = ?config.watch_namespace(), "starting {manager}");

        let metrics = ctx.metrics.clone();
        let leadership = ctx.leadership.clone();
        let ctx_shards = ctx.shards.clone();
        // Every replica runs its controllers at once: caches filled, webhooks served; only the
        // leader's reconciles go past `Leadership::leading`, and only while it leads do its
        // writes leave (warm standbys, as controller-runtime's `EnableWarmup`).
        let controllers = self.run_controllers(ctx, shutdown.clone());
        let result = match (election, ctx_shards) {
            (Some(election), Some(shards)) => {
                // Every replica reconciles the buckets it holds; its writes are fenced on its
                // own Lease as a leader's are on the one Lease.
                let release = CancellationToken::new();
                let drain = config.graceful_shutdown_timeout;
                let coordinator = leader::on_own_thread(kube_config, "shards", {
                    let release = release.clone();
                    move |client| async move {
                        crate::shards::coordinate::run(
                            client, &election, shards, leadership, metrics, release, drain,
                        )
                        .await
                    }
                });
                leader::run_while_leading(coordinator, release, shutdown.clone(), controllers).await
            }
            (Some(election), None) => {
                // `leader_election_master_status`, as client-go reports it: 1 while leading.
                let lease = election.lease_name.clone();
                metrics.leading(&lease, false);
                let gauge = {
                    let (leadership, metrics, lease) =
                        (leadership.clone(), metrics.clone(), lease.clone());
                    tokio::spawn(async move {
                        leadership.leading().await;
                        metrics.leading(&lease, true);
                    })
                };
                let release = CancellationToken::new();
                let elector = leader::on_own_thread(kube_config, "leader-election", {
                    let release = release.clone();
                    move |client| async move {
                        leader::elect(client, &election, leadership, release).await
                    }
                });
                let result =
                    leader::run_while_leading(elector, release, shutdown.clone(), controllers)
                        .await;
                gauge.abort();
                metrics.leading(&lease, false);
                result
            }
            (None, _) => controllers.await,
        };

        // Whatever ended the controllers, stop the servers too before exiting.
        shutdown.cancel();
        servers.await.map_err(|e| Error::Task(e.to_string()))??;
        #[cfg(feature = "webhooks")]
        if let Some(webhook_server) = webhook_server {
            webhook_server
                .await
                .map_err(|e| Error::Task(e.to_string()))??;
        }
        result
    }
}

/// Cancels `shutdown` on SIGTERM (what the kubelet sends) or Ctrl-C, so controllers drain
/// their in-flight reconciles and the lease is released before the process exits.
async fn shutdown_on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(error) => {
                    tracing::error!(%error, "cannot listen for SIGTERM; stop with Ctrl-C");
                    let _ = ctrl_c.await;
                    shutdown.cancel();
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    info!("shutdown signal received, draining controllers");
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn stuck(_: Arc<Context>, _: CancellationToken) -> BoxFuture<'static, Result<()>> {
        Box::pin(std::future::pending())
    }

    fn failing(_: Arc<Context>, _: CancellationToken) -> BoxFuture<'static, Result<()>> {
        Box::pin(async { Err(Error::Timeout("caches did not fill".into())) })
    }

    /// In-flight reconciles that do not finish are left after the graceful shutdown timeout, so
    /// that the Lease is released within the pod's grace period.
    #[tokio::test]
    async fn the_drain_at_shutdown_is_bounded() {
        let manager = Manager::new("test", "example.com").controllers(&[stuck]);
        let (mut ctx, _server) = crate::testing::mock_context_owned();
        ctx.timeouts.graceful_shutdown = Duration::from_millis(100);
        let shutdown = CancellationToken::new();
        let stop = {
            let shutdown = shutdown.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                shutdown.cancel();
            }
        };
        let started = Instant::now();
        let (outcome, ()) = tokio::join!(manager.run_controllers(Arc::new(ctx), shutdown), stop);
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    /// A controller that fails (its caches did not fill) stops the manager's other controllers
    /// and is the manager's error.
    #[tokio::test]
    async fn a_failing_controller_stops_the_others() {
        let manager = Manager::new("test", "example.com").controllers(&[stuck, failing]);
        let (ctx, _server) = crate::testing::mock_context_owned();
        let shutdown = CancellationToken::new();
        let outcome = tokio::time::timeout(
            Duration::from_secs(5),
            manager.run_controllers(Arc::new(ctx), shutdown.clone()),
        )
        .await
        .expect("returns");
        assert!(outcome.is_err_and(|e| e.to_string().contains("caches did not fill")));
        assert!(shutdown.is_cancelled(), "the others are told to stop");
    }
}
