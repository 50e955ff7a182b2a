//! Serving the API: HTTPS (rustls on ring) with a certificate from files,
//! or plain HTTP on a loopback address for local use
//! (`--api-insecure-loopback`), where nothing crosses a network.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;

/// How the API is served.
#[derive(Debug)]
pub enum Transport {
    /// HTTPS with this configuration.
    Tls(Arc<rustls::ServerConfig>),
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
    /// A TLS file could not be read.
    #[error("{flag} {path}: {message}")]
    TlsFile {
        /// The flag naming the file.
        flag: &'static str,
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl Transport {
    /// The transport the flags ask for, checked.
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
        let file_error = |flag: &'static str, path: &Path, message: String| ListenError::TlsFile {
            flag,
            path: path.display().to_string(),
            message,
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|error| file_error("--api-tls-cert", cert, error.to_string()))?;
        if chain.is_empty() {
            return Err(file_error(
                "--api-tls-cert",
                cert,
                "holds no PEM certificate".into(),
            ));
        }
        let private = PrivateKeyDer::from_pem_file(key)
            .map_err(|error| file_error("--api-tls-key", key, error.to_string()))?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|error| file_error("--api-tls-cert", cert, error.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|error| file_error("--api-tls-key", key, error.to_string()))?;
        Ok(Self::Tls(Arc::new(config)))
    }

    /// Whether callers are checked: always, except on insecure loopback.
    pub fn authenticates(&self) -> bool {
        matches!(self, Self::Tls(_))
    }
}

/// Serves `router` on `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    transport: Transport,
) -> std::io::Result<()> {
    let config = match transport {
        Transport::InsecureLoopback => return axum::serve(listener, router).await,
        Transport::Tls(config) => config,
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accepting a connection");
                continue;
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
