//! The manager's HTTP endpoints: `/healthz` and `/readyz` for the kubelet's probes, `/metrics`
//! for Prometheus.
//! Probes and metrics listen on separate addresses, as in controller-runtime, so that a
//! NetworkPolicy can expose metrics without exposing probes.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{Router, extract, http::StatusCode, http::header, response::IntoResponse, routing::get};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{Result, metrics::Metrics, metrics_auth, sync::CacheSync, tls};

/// What the probe and metrics endpoints read: the metrics, readiness, certificate health.
#[derive(Clone)]
pub struct State {
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
    sync: CacheSync,
    certificates: tls::Health,
}

impl State {
    /// Not ready yet, certificates healthy until a TLS server says otherwise; ready once
    /// [`State::set_ready`] was called; the caches in `sync` are a check of their own.
    pub fn new(metrics: Arc<Metrics>, sync: CacheSync) -> Self {
        Self {
            metrics,
            ready: Arc::default(),
            sync,
            certificates: tls::Health::default(),
        }
    }

    /// What `/healthz` learns from the TLS servers: whether their certificates load.
    pub fn certificate_health(&self) -> tls::Health {
        self.certificates.clone()
    }

    /// Marks the manager's servers (probes, metrics, webhooks) up: it is ready. Its caches
    /// filling is `/readyz/caches`, not a condition of readiness: a pod whose webhooks serve
    /// must stay in the Service while a new leader's caches fill, or every admission and
    /// conversion of its kinds fails cluster-wide meanwhile.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }
}

/// `/healthz`, `/readyz` (the servers are up) and `/readyz/caches` (every controller's caches
/// have filled), as Kubernetes names its components' individual checks.
pub fn probes_router(state: State) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/readyz/caches", get(caches))
        .with_state(state)
}

/// `/metrics`, in OpenMetrics text format.
pub fn metrics_router(state: State) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn healthz(extract::State(state): extract::State<State>) -> impl IntoResponse {
    match state.certificates.check() {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(problem) => (StatusCode::INTERNAL_SERVER_ERROR, problem),
    }
}

async fn readyz(extract::State(state): extract::State<State>) -> impl IntoResponse {
    match state.ready.load(Ordering::Acquire) {
        true => (StatusCode::OK, "ok"),
        false => (StatusCode::SERVICE_UNAVAILABLE, "not ready"),
    }
}

async fn caches(extract::State(state): extract::State<State>) -> impl IntoResponse {
    match state.sync.is_synced() {
        true => (StatusCode::OK, "ok"),
        false => (StatusCode::SERVICE_UNAVAILABLE, "caches not filled yet"),
    }
}

async fn metrics(extract::State(state): extract::State<State>) -> impl IntoResponse {
    match state.metrics.encode() {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The bound probe and metrics sockets. Binding comes first, before the manager starts
/// anything, so that an address in use stops the manager with a clear error instead of
/// leaving it running without probes.
pub struct Listeners {
    probes: TcpListener,
    metrics: Option<TcpListener>,
}

/// Binds the probe address and, unless it is "0", the metrics address. Addresses take
/// controller-runtime's forms too: `:8081` means every interface.
pub async fn bind(probe_addr: &str, metrics_addr: &str) -> Result<Listeners> {
    let probes = bind_one("health probe", probe_addr).await?;
    let metrics = match metrics_addr {
        "0" => None,
        addr => Some(bind_one("metrics", addr).await?),
    };
    Ok(Listeners { probes, metrics })
}

async fn bind_one(what: &'static str, addr: &str) -> Result<TcpListener> {
    Ok(TcpListener::from_std(crate::listen::bind_std(what, addr)?)?)
}

/// How `/metrics` is served.
pub enum Security {
    /// Plain HTTP, to anyone who reaches the port (`--metrics-secure=false`).
    Http,
    /// HTTPS, to clients whose token may `get` `/metrics`; `client` asks the API server.
    Https {
        /// The server's certificate.
        tls: tls::Tls,
        /// Asks the API server about each request's token.
        client: kube::Client,
    },
}

/// Serves probes and metrics until `shutdown` is cancelled.
pub async fn serve(
    listeners: Listeners,
    state: State,
    security: Security,
    shutdown: CancellationToken,
) -> Result<()> {
    let probes = serve_one(
        listeners.probes,
        probes_router(state.clone()),
        shutdown.clone(),
    );
    let Some(listener) = listeners.metrics else {
        return probes.await;
    };
    let health = state.certificate_health();
    let router = metrics_router(state);
    let metrics = async move {
        match security {
            Security::Http => serve_one(listener, router, shutdown).await,
            Security::Https { tls, client } => {
                let router = router.layer(axum::middleware::from_fn_with_state(
                    metrics_auth::Checker::new(client),
                    metrics_auth::authorize,
                ));
                tls::serve(listener.into_std()?, router, tls, health, shutdown).await
            }
        }
    };
    tokio::try_join!(probes, metrics).map(|_| ())
}

async fn serve_one(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving");
    }
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    #[tokio::test]
    async fn probes_report_readiness_and_metrics_are_openmetrics() {
        let sync = CacheSync::default();
        let state = State::new(Arc::new(Metrics::default()), sync.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = probes_router(state.clone()).merge(metrics_router(state.clone()));
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(
            axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .into_future(),
        );

        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        state.set_ready();
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        // A controller starts: its caches are a check of their own, readiness stays.
        sync.starting(1);
        let waiting = get(addr, "/readyz/caches").await;
        assert!(waiting.starts_with("HTTP/1.1 503"), "{waiting}");
        assert!(waiting.ends_with("caches not filled yet"), "{waiting}");
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        let errors = crate::sync::WatchErrors::default();
        let filled = async { Ok(()) };
        (sync.clone())
            .wait("test", errors, filled, shutdown.clone())
            .await
            .expect("filled");
        assert!(
            get(addr, "/readyz/caches")
                .await
                .starts_with("HTTP/1.1 200")
        );
        let metrics = get(addr, "/metrics").await;
        assert!(
            metrics.contains("application/openmetrics-text"),
            "{metrics}"
        );
        assert!(metrics.contains("# EOF"), "{metrics}");

        shutdown.cancel();
        server.await.expect("server task").expect("server ran");
    }

    #[tokio::test]
    async fn an_address_in_use_is_an_error_naming_it() {
        let taken = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = taken.local_addr().expect("addr").to_string();
        let Err(error) = bind(&addr, "0").await else {
            panic!("binding a taken address succeeded");
        };
        let message = error.to_string();
        assert!(
            message.contains("health probe") && message.contains(&addr),
            "{message}"
        );
    }

    #[tokio::test]
    async fn an_address_without_a_port_is_an_error_naming_it() {
        let error = bind_one("metrics", ":http")
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("metrics") && e.contains(":http")),
            "{error:?}"
        );
    }

    /// `:port` takes IPv6 and IPv4 clients alike, as the probes of an IPv6-only cluster and
    /// the API server reaching webhooks over IPv6 need.
    #[tokio::test]
    async fn the_wildcard_listens_on_ipv6_and_ipv4() {
        let listener = bind_one("health probe", ":0").await.expect("binds");
        let port = listener.local_addr().expect("addr").port();
        let accept = tokio::spawn(async move {
            for _ in 0..2 {
                let _ = listener.accept().await.expect("accepts");
            }
        });
        if std::net::TcpListener::bind("[::1]:0").is_ok() {
            tokio::net::TcpStream::connect(("::1", port))
                .await
                .expect("an IPv6 client connects");
        } else {
            eprintln!("notice: this host has no IPv6 loopback; checking IPv4 only");
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("an IPv4 client connects");
        }
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("an IPv4 client connects");
        accept.await.expect("accepted both");
    }
}
