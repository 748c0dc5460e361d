//! TLS for the manager's HTTPS servers (webhooks, and metrics unless `--metrics-secure=false`):
//! a certificate from files, reloaded in place when they change (cert-manager renews them in
//! place), as controller-runtime's certwatcher does; or, for metrics given none, one generated at
//! start.
//!
//! The servers speak HTTP/1.1 only (Kubebuilder turns HTTP/2 off by default since its "rapid
//! reset" attacks), give a client 30 s to send a request's headers and 10 s for the TLS
//! handshake, and take at most [`MAX_CONNECTIONS`] connections at once.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::Duration,
};

use axum::Router;
use axum_server::{accept::Accept, tls_rustls::RustlsConfig};
use futures::future::BoxFuture;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{Error, Result};

/// How many connections a server takes at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// How long a client may take to send a request's headers (hyper's default, which axum-server
/// turns off).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

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

/// Binds the webhook port on every interface, IPv6 and IPv4 (see [`crate::listen`]); a port in
/// use stops the manager at start, not at the first request.
#[cfg(feature = "webhooks")]
pub fn bind_port(what: &'static str, port: u16) -> Result<TcpListener> {
    crate::listen::bind_std(what, &format!(":{port}"))
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
    let config = http1_config(loaded.0.clone(), loaded.1.clone())
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
    let config = http1_config(cert.clone(), key.clone())
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
    #[cfg(any(test, feature = "self-managed-certs"))]
    pub async fn reload(&self, cert: Vec<u8>, key: Vec<u8>) -> Result<()> {
        let fresh = http1_config(cert, key)
            .await
            .map_err(|e| Error::Certificate(e.to_string()))?;
        self.config.reload_from_config(fresh.get_inner());
        Ok(())
    }
}

/// A TLS configuration for `cert` and `key` (PEM) that offers HTTP/1.1 only in ALPN.
async fn http1_config(cert: Vec<u8>, key: Vec<u8>) -> std::io::Result<RustlsConfig> {
    let config = RustlsConfig::from_pem(cert, key).await?;
    let mut inner = (*config.get_inner()).clone();
    inner.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(RustlsConfig::from_config(Arc::new(inner)))
}

/// An acceptor that takes at most as many connections at once as it has permits, closing any
/// beyond, before their TLS handshake.
#[derive(Clone)]
struct Capped<A> {
    inner: A,
    permits: Arc<Semaphore>,
}

impl<A, S> Accept<tokio::net::TcpStream, S> for Capped<A>
where
    A: Accept<Counted<tokio::net::TcpStream>, S>,
    A::Future: Send + 'static,
{
    type Stream = A::Stream;
    type Service = A::Service;
    type Future = BoxFuture<'static, std::io::Result<(A::Stream, A::Service)>>;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => Box::pin(self.inner.accept(
                Counted {
                    stream,
                    _permit: permit,
                },
                service,
            )),
            Err(_) => Box::pin(async {
                Err(std::io::Error::other(format!(
                    "{MAX_CONNECTIONS} connections already open; closing this one"
                )))
            }),
        }
    }
}

/// A connection that holds one of the server's permits until it closes.
struct Counted<S> {
    stream: S,
    _permit: OwnedSemaphorePermit,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
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
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut server = axum_server::from_tcp_rustls(listener, config)
        .map_err(|e| Error::Certificate(e.to_string()))?
        .map(|inner| Capped { inner, permits })
        .http1_only()
        .handle(handle);
    server
        .http_builder()
        .http1()
        .header_read_timeout(Some(HEADER_READ_TIMEOUT));
    server.serve(router.into_make_service()).await?;
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
        match http1_config(pair.0.clone(), pair.1.clone()).await {
            Ok(fresh) => {
                config.reload_from_config(fresh.get_inner());
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

#[cfg(test)]
mod tests {
    use axum_server::accept::DefaultAcceptor;

    use super::*;

    #[tokio::test]
    async fn only_http1_is_offered() {
        let tls = self_signed(vec!["localhost".into()])
            .await
            .expect("a certificate");
        assert_eq!(
            tls.config.get_inner().alpn_protocols,
            [b"http/1.1".to_vec()]
        );
        let fresh = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("made");
        let (cert, key) = (fresh.cert.pem(), fresh.signing_key.serialize_pem());
        tls.reload(cert.into_bytes(), key.into_bytes())
            .await
            .expect("reloads");
        assert_eq!(
            tls.config.get_inner().alpn_protocols,
            [b"http/1.1".to_vec()],
            "after a reload too"
        );
    }

    #[tokio::test]
    async fn connections_past_the_cap_are_closed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let capped = Capped {
            inner: DefaultAcceptor,
            permits: Arc::new(Semaphore::new(1)),
        };
        let mut open = Vec::new();
        for _ in 0..3 {
            let _client = tokio::net::TcpStream::connect(address)
                .await
                .expect("connects");
            let (stream, _) = listener.accept().await.expect("accepts");
            open.push((capped.accept(stream, ()).await, _client));
        }
        assert!(open[0].0.is_ok(), "the first connection is served");
        assert!(
            open[1].0.is_err() && open[2].0.is_err(),
            "the others are closed"
        );
        open.clear();
        let _client = tokio::net::TcpStream::connect(address)
            .await
            .expect("connects");
        let (stream, _) = listener.accept().await.expect("accepts");
        assert!(
            capped.accept(stream, ()).await.is_ok(),
            "a permit came back"
        );
    }
}
