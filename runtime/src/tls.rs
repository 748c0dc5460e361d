//! TLS for the manager's HTTPS servers (webhooks, and metrics unless `--metrics-secure=false`):
//! a certificate from files, reloaded in place when they change (cert-manager renews them in
//! place), as controller-runtime's certwatcher does; or, for metrics given none, one generated at
//! start.

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::Duration,
};

use axum::Router;
use axum_server::tls_rustls::RustlsConfig;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{Error, Result};

/// How often the certificate files are read for changes (controller-runtime's certwatcher
/// polls every 10 s beside its file events).
const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// Where a serving certificate and its key are (Kubebuilder's `--webhook-cert-*` and
/// `--metrics-cert-*` flags).
#[derive(Debug, Clone)]
pub struct Certificate {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

/// Whether the servers hold valid certificates; `/healthz` reports it.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<RwLock<Option<String>>>);

impl Health {
    /// `Err` with the last certificate problem, if any.
    pub fn check(&self) -> std::result::Result<(), String> {
        match self.0.read().map(|problem| problem.clone()) {
            Ok(None) => Ok(()),
            Ok(Some(problem)) => Err(problem),
            Err(_) => Err("certificate health unknown".into()),
        }
    }

    fn set(&self, problem: Option<String>) {
        if let Ok(mut slot) = self.0.write() {
            *slot = problem;
        }
    }
}

/// Binds the webhook port, on every interface; a port in use stops the manager at start, not at
/// the first request.
pub fn bind_port(what: &'static str, port: u16) -> Result<TcpListener> {
    let address = SocketAddr::from(([0, 0, 0, 0], port));
    let bind_error = |source| Error::Bind {
        what,
        address: address.to_string(),
        source,
    };
    let listener = TcpListener::bind(address).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    Ok(listener)
}

/// A certificate loaded for serving, with the files and bytes it was loaded from (no files for
/// one held in memory). Clones share the certificate: reloading one reloads them all.
#[derive(Clone)]
pub struct Tls {
    config: RustlsConfig,
    certificate: Option<Certificate>,
    loaded: (Vec<u8>, Vec<u8>),
}

/// Loads the serving certificate; the manager stops at start if it cannot, as
/// controller-runtime's does.
pub async fn load(certificate: Certificate) -> Result<Tls> {
    let loaded = read_pair(&certificate).await?;
    let config = RustlsConfig::from_pem(loaded.0.clone(), loaded.1.clone())
        .await
        .map_err(|e| Error::Certificate(format!("{}: {e}", certificate.cert.display())))?;
    Ok(Tls {
        config,
        certificate: Some(certificate),
        loaded,
    })
}

/// A self-signed certificate made at start, for an endpoint given no certificate: the traffic
/// is encrypted and clients that do not pin it skip verification, as with controller-runtime's
/// metrics server.
pub async fn self_signed(names: Vec<String>) -> Result<Tls> {
    let generated = rcgen::generate_simple_self_signed(names)
        .map_err(|e| Error::Certificate(format!("cannot generate a certificate: {e}")))?;
    from_pem(
        generated.cert.pem().into_bytes(),
        generated.signing_key.serialize_pem().into_bytes(),
    )
    .await
}

/// A certificate and key held in memory (PEM), e.g. from a Secret the manager keeps itself.
pub async fn from_pem(cert: Vec<u8>, key: Vec<u8>) -> Result<Tls> {
    let config = RustlsConfig::from_pem(cert.clone(), key.clone())
        .await
        .map_err(|e| Error::Certificate(e.to_string()))?;
    Ok(Tls {
        config,
        certificate: None,
        loaded: (cert, key),
    })
}

impl Tls {
    /// Serves `cert` and `key` (PEM) from now on, on every server given a clone of this.
    pub async fn reload(&self, cert: Vec<u8>, key: Vec<u8>) -> Result<()> {
        self.config
            .reload_from_pem(cert, key)
            .await
            .map_err(|e| Error::Certificate(e.to_string()))
    }
}

/// Serves `router` over TLS on `listener` until `shutdown`, reloading the certificate when its
/// files change.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Tls,
    health: Health,
    shutdown: CancellationToken,
) -> Result<()> {
    let config = tls.config.clone();
    if tls.certificate.is_some() {
        tokio::spawn(reload(tls, health, shutdown.clone()));
    }
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    tokio::spawn(async move {
        shutdown.cancelled().await;
        stopping.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    info!(address = ?listener.local_addr().ok(), "serving over TLS");
    axum_server::from_tcp_rustls(listener, config)
        .map_err(|e| Error::Certificate(e.to_string()))?
        .handle(handle)
        .serve(router.into_make_service())
        .await?;
    Ok(())
}

async fn read_pair(certificate: &Certificate) -> Result<(Vec<u8>, Vec<u8>)> {
    let read = |path: &Path| {
        let path = path.to_path_buf();
        async move {
            tokio::fs::read(&path)
                .await
                .map_err(|e| Error::Certificate(format!("{}: {e}", path.display())))
        }
    };
    Ok((
        read(&certificate.cert).await?,
        read(&certificate.key).await?,
    ))
}

/// Reads the files every few seconds and loads them when they changed. A pair that does not
/// load (half-written, mismatched) keeps the previous certificate in service and makes
/// `/healthz` fail until a good pair arrives.
async fn reload(tls: Tls, health: Health, shutdown: CancellationToken) {
    let Tls {
        config,
        certificate: Some(certificate),
        mut loaded,
    } = tls
    else {
        return;
    };
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(RELOAD_EVERY) => {}
        }
        let pair = match read_pair(&certificate).await {
            Ok(pair) => pair,
            Err(error) => {
                warn!(%error, "cannot read the certificate");
                health.set(Some(error.to_string()));
                continue;
            }
        };
        if pair == loaded {
            continue;
        }
        match config.reload_from_pem(pair.0.clone(), pair.1.clone()).await {
            Ok(()) => {
                info!(cert = %certificate.cert.display(), "certificate reloaded");
                loaded = pair;
                health.set(None);
            }
            Err(error) => {
                warn!(%error, "the new certificate does not load; keeping the old one");
                let file = certificate.cert.display();
                health.set(Some(format!("certificate {file}: {error}")));
            }
        }
    }
}
