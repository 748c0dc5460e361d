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

use crate::{Error, Result, metrics::Metrics, metrics_auth, tls};

/// What the probe and metrics endpoints read: the metrics, readiness, certificate health.
#[derive(Clone)]
pub struct State {
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
    certificates: tls::Health,
}

impl State {
    /// Not ready yet, certificates healthy until a TLS server says otherwise.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            ready: Arc::default(),
            certificates: tls::Health::default(),
        }
    }

    /// What `/healthz` learns from the TLS servers: whether their certificates load.
    pub fn certificate_health(&self) -> tls::Health {
        self.certificates.clone()
    }

    /// Marks the manager ready: the client is configured and controllers are starting.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }
}

/// `/healthz` and `/readyz`.
pub fn probes_router(state: State) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
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
    if state.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
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

/// `:8081` (Go's form for "all interfaces") as `0.0.0.0:8081`; other addresses unchanged.
pub fn socket_address(addr: &str) -> String {
    match addr.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => addr.to_owned(),
    }
}

async fn bind_one(what: &'static str, addr: &str) -> Result<TcpListener> {
    let address = socket_address(addr);
    TcpListener::bind(&address)
        .await
        .map_err(|source| Error::Bind {
            what,
            address,
            source,
        })
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
                    client,
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
        let state = State::new(Arc::new(Metrics::default()));
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

    #[test]
    fn go_style_addresses_mean_every_interface() {
        assert_eq!(socket_address(":8081"), "0.0.0.0:8081");
        assert_eq!(socket_address("127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(socket_address("[::1]:8080"), "[::1]:8080");
    }
}
