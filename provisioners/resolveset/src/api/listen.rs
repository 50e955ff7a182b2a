//! Serving the API: HTTPS (rustls on ring) with a certificate from files,
//! or plain HTTP on a loopback address for local use
//! (`--api-insecure-loopback`), where nothing crosses a network.
//!
//! The certificate is a [`ReloadingCert`]: while the API serves, its files
//! are checked every few seconds, and a renewed pair (cert-manager rotating
//! the mounted Secret) is served to new connections without a restart; a
//! pair that is half-written or broken is refused and the old one kept.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use pakket_runtime::kernel::tls::{self, CertFiles, PemFile, ReloadingCert, TlsError};
use pakket_runtime::kernel::tls_accept::{self, AcceptLimits};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// What the API offers in ALPN: the accept loop speaks HTTP/1.1 only, and a
/// client offered h2 would send frames it cannot read.
const ALPN: &[&[u8]] = &[b"http/1.1"];

/// How the API is served.
#[derive(Debug)]
pub enum Transport {
    /// HTTPS with the certificate from files, reloaded when they change.
    Tls {
        /// The certificate new handshakes get.
        cert: Arc<ReloadingCert>,
        /// How often its files are checked.
        reload_interval: Duration,
    },
    /// Plain HTTP; only ever on loopback.
    InsecureLoopback,
}

/// Why the API cannot be served as configured.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Plain HTTP was asked for off loopback.
    #[error(
        "--api-insecure-loopback serves without TLS or authentication, so it needs a loopback --api-address (127.0.0.1:PORT or [::1]:PORT), not {0}"
    )]
    NotLoopback(SocketAddr),
    /// Neither TLS files nor the loopback opt-in.
    #[error(
        "the resolver API needs --api-tls-cert and --api-tls-key (PEM files), or --api-insecure-loopback with a loopback --api-address for local use"
    )]
    NoTls,
    /// A TLS file cannot be served.
    #[error("{flag}: {source}")]
    TlsFile {
        /// The flag naming the file to fix.
        flag: &'static str,
        /// What is wrong, naming the file.
        source: TlsError,
    },
}

impl Transport {
    /// The transport the flags ask for, checked; the certificate files are
    /// read now and then every [`tls::DEFAULT_RELOAD_INTERVAL`].
    pub fn from_flags(
        address: SocketAddr,
        insecure_loopback: bool,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<Self, ListenError> {
        if insecure_loopback {
            if !address.ip().is_loopback() {
                return Err(ListenError::NotLoopback(address));
            }
            return Ok(Self::InsecureLoopback);
        }
        let (Some(cert), Some(key)) = (cert, key) else {
            return Err(ListenError::NoTls);
        };
        let files = CertFiles {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        };
        let cert = ReloadingCert::load(files).map_err(|source| ListenError::TlsFile {
            flag: match source.file() {
                PemFile::Cert => "--api-tls-cert",
                PemFile::Key => "--api-tls-key",
            },
            source,
        })?;
        Ok(Self::Tls {
            cert,
            reload_interval: tls::DEFAULT_RELOAD_INTERVAL,
        })
    }

    /// The same transport, its certificate files checked every `interval`.
    pub fn with_reload_interval(self, interval: Duration) -> Self {
        match self {
            Self::Tls { cert, .. } => Self::Tls {
                cert,
                reload_interval: interval,
            },
            Self::InsecureLoopback => Self::InsecureLoopback,
        }
    }

    /// Whether callers are checked: always, except on insecure loopback.
    pub fn authenticates(&self) -> bool {
        matches!(self, Self::Tls { .. })
    }
}

/// Serves `router` on `listener` until the task is dropped; over TLS, the
/// certificate files are watched for as long.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    transport: Transport,
) -> std::io::Result<()> {
    let (cert, reload_interval) = match transport {
        Transport::InsecureLoopback => return axum::serve(listener, router).await,
        Transport::Tls {
            cert,
            reload_interval,
        } => (cert, reload_interval),
    };
    let acceptor = TlsAcceptor::from(cert.server_config(ALPN));
    // Both run forever, in this future: dropping it stops the watcher too.
    // The watcher logs each reload; there is nothing more to count here.
    tokio::join!(
        cert.watch(reload_interval, |_| {}),
        accept(listener, acceptor, router)
    );
    Ok(())
}

/// A client that has not sent a request's headers by then is dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The runtime's accept loop ([`pakket_runtime::kernel::tls_accept`]: handshake
/// timeout, connection cap below the file limit, rate-limited warnings),
/// each connection served over HTTP/1.1.
async fn accept(listener: TcpListener, acceptor: TlsAcceptor, router: Router) {
    let limits = AcceptLimits::from_file_limit();
    tracing::info!(
        max_connections = limits.max_connections,
        "serving the resolver API over TLS"
    );
    let connection = move |tls| {
        let service = TowerToHyperService::new(router.clone());
        async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(tls), service)
                .await;
        }
    };
    tls_accept::accept_tls(
        &listener,
        acceptor,
        limits,
        std::future::pending(),
        connection,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use rustls::pki_types::ServerName;
    use rustls::pki_types::pem::PemObject as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpStream;
    use tokio_rustls::TlsConnector;
    use tokio_rustls::client::TlsStream;

    use super::*;
    use crate::api::{self, ApiState};
    use crate::catalogs::serving::Catalogs;

    /// A private CA that writes serving pairs for 127.0.0.1.
    struct TestCa(CertifiedIssuer<'static, KeyPair>);

    impl TestCa {
        fn new() -> Self {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            Self(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
        }

        /// Writes a new pair to `cert` and `key`, each file in one rename
        /// (as a Secret volume does); returns the leaf's DER.
        fn issue(&self, cert: &Path, key: &Path) -> Vec<u8> {
            let pair = KeyPair::generate().unwrap();
            let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
                .unwrap()
                .signed_by(&pair, &self.0)
                .unwrap();
            for (path, pem) in [(cert, leaf.pem()), (key, pair.serialize_pem())] {
                let staged = path.with_extension("new");
                std::fs::write(&staged, pem).unwrap();
                std::fs::rename(&staged, path).unwrap();
            }
            leaf.der().to_vec()
        }

        /// A TLS connection to `address` from a client trusting only this
        /// CA and offering h2 and HTTP/1.1; fails if it refuses the server.
        async fn connect(&self, address: SocketAddr) -> std::io::Result<TlsStream<TcpStream>> {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(
                    rustls::pki_types::CertificateDer::from_pem_slice(self.0.pem().as_bytes())
                        .unwrap(),
                )
                .unwrap();
            let mut config = rustls::ClientConfig::builder_with_provider(tls::provider())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            let tcp = TcpStream::connect(address).await?;
            TlsConnector::from(Arc::new(config))
                .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
                .await
        }

        /// The leaf a new connection trusting this CA is served, if it
        /// trusts it.
        async fn served(&self, address: SocketAddr) -> Option<Vec<u8>> {
            let stream = self.connect(address).await.ok()?;
            Some(stream.get_ref().1.peer_certificates()?[0].to_vec())
        }
    }

    #[tokio::test]
    async fn a_renewed_certificate_is_served_to_new_connections_and_a_broken_key_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let (first_ca, second_ca) = (TestCa::new(), TestCa::new());
        let first = first_ca.issue(&cert, &key);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let transport = Transport::from_flags(address, false, Some(&cert), Some(&key))
            .unwrap()
            .with_reload_interval(Duration::from_millis(50));
        let router = api::router(ApiState {
            catalogs: Arc::new(Catalogs::new()),
            auth: None,
        });
        let server = tokio::spawn(serve(listener, router, transport));

        // The first pair, over HTTP/1.1 (the only protocol offered).
        let mut open = first_ca.connect(address).await.unwrap();
        assert_eq!(
            open.get_ref().1.peer_certificates().unwrap()[0].as_ref(),
            first
        );
        assert_eq!(open.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        open.write_all(
            b"GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut answer = Vec::new();
        // Whether the server ends with close_notify does not matter here.
        let _ = open.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

        // cert-manager renews from another CA: new connections get the new pair.
        let second = second_ca.issue(&cert, &key);
        let (second_ca, second) = (&second_ca, &second);
        pakket_testkit::eventually("the renewed certificate being served", || async move {
            second_ca.served(address).await.as_ref() == Some(second)
        })
        .await;
        assert_eq!(first_ca.served(address).await, None);

        // A key that is no key: refused, the renewed pair still served.
        std::fs::write(&key, "not a key").unwrap();
        // Some twenty checks; the assertion holds however many ran.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(second_ca.served(address).await.as_ref(), Some(second));

        // And the watcher still takes a good pair after refusing one.
        let third = first_ca.issue(&cert, &key);
        let first_ca = &first_ca;
        let third = &third;
        pakket_testkit::eventually("a good pair after a bad one", || async move {
            first_ca.served(address).await.as_ref() == Some(third)
        })
        .await;
        server.abort();
    }

    #[tokio::test]
    async fn silent_clients_are_dropped_and_do_not_hold_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let ca = TestCa::new();
        ca.issue(&cert, &key);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let transport = Transport::from_flags(address, false, Some(&cert), Some(&key)).unwrap();
        let router = api::router(ApiState {
            catalogs: Arc::new(Catalogs::new()),
            auth: None,
        });
        let server = tokio::spawn(serve(listener, router, transport));
        // One client never starts TLS; another finishes it and never asks.
        let mut silent = TcpStream::connect(address).await.unwrap();
        let mut idle = ca.connect(address).await.unwrap();
        // A legitimate client is answered meanwhile.
        assert!(ca.served(address).await.is_some());
        let handshake = AcceptLimits::from_file_limit().handshake_timeout;
        let limit = handshake.max(HEADER_READ_TIMEOUT) + Duration::from_secs(5);
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(limit, silent.read(&mut byte)).await;
        assert!(
            matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
            "a client that never starts TLS is dropped: {closed:?}"
        );
        let closed = tokio::time::timeout(limit, idle.read(&mut byte)).await;
        assert!(
            matches!(closed, Ok(Ok(_)) | Ok(Err(_))),
            "a client that never sends a request is dropped: {closed:?}"
        );
        server.abort();
    }

    #[test]
    fn a_bad_tls_file_is_named_by_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let address: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let error = Transport::from_flags(address, false, Some(&cert), Some(&key)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("--api-tls-cert: cannot read {}", cert.display())),
            "{error}"
        );
        TestCa::new().issue(&cert, &key);
        std::fs::write(&key, "not a key").unwrap();
        let error = Transport::from_flags(address, false, Some(&cert), Some(&key)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "--api-tls-key: {}: holds no PRIVATE KEY block; write the private key as one PEM PRIVATE KEY block",
                key.display()
            )
        );
    }

    #[test]
    fn plain_http_only_on_loopback_and_tls_otherwise() {
        let public: SocketAddr = "0.0.0.0:8443".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8443".parse().unwrap();
        let error = Transport::from_flags(public, true, None, None).unwrap_err();
        assert!(
            error.to_string().contains("loopback --api-address"),
            "{error}"
        );
        assert!(Transport::from_flags(local, true, None, None).is_ok());
        let error = Transport::from_flags(public, false, None, None).unwrap_err();
        assert!(error.to_string().contains("--api-tls-cert"), "{error}");
    }
}
