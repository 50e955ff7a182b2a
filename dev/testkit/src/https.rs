//! A real HTTPS server on loopback for tests that fetch over `https://`:
//! a fresh rcgen CA per server, rustls (ring) through tokio-rustls, hyper
//! serving an axum router on a thread of its own (so it outlives the
//! runtime of the test that started it).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// An HTTPS server on `127.0.0.1`, with a certificate for `127.0.0.1` and
/// `localhost` signed by a CA of its own.
pub struct HttpsServer {
    /// `127.0.0.1:PORT`.
    pub address: SocketAddr,
    /// The CA's certificate, PEM: what a client must trust.
    pub ca_pem: String,
}

impl HttpsServer {
    /// Serves `router` until the test binary exits.
    pub fn start(router: Router) -> Self {
        let (ca_pem, config) = tls_config();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = listener.local_addr().expect("address");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let (acceptor, router) = (acceptor.clone(), router.clone());
                    tokio::spawn(async move {
                        // A client that refuses our certificate ends here.
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), TowerToHyperService::new(router))
                            .await;
                    });
                }
            });
        });
        Self { address, ca_pem }
    }

    /// `https://127.0.0.1:PORT/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}/{}", self.address, path.trim_start_matches('/'))
    }
}

/// A fresh CA and a certificate for `127.0.0.1` and `localhost` it signed,
/// as PEM: the CA's certificate (what a client trusts), the server's
/// certificate and its key.
pub struct TestCertificate {
    /// The CA's certificate.
    pub ca_pem: String,
    /// The server's certificate.
    pub cert_pem: String,
    /// The server's private key.
    pub key_pem: String,
}

impl TestCertificate {
    /// Makes the CA and the certificate.
    pub fn new() -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "pakket test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        Self {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

impl Default for TestCertificate {
    fn default() -> Self {
        Self::new()
    }
}

/// A fresh CA and a server certificate it signed; (CA PEM, rustls config).
fn tls_config() -> (String, rustls::ServerConfig) {
    let made = TestCertificate::new();
    let chain = vec![CertificateDer::from_pem_slice(made.cert_pem.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(made.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    (made.ca_pem, config)
}
