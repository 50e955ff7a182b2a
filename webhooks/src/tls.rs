//! The serving certificate: read from PEM files (a mounted Secret, e.g.
//! written by cert-manager), and swapped in when the files change, without a
//! restart and without dropping connections.
//!
//! rustls asks a [`ResolvesServerCert`] for the certificate on every
//! handshake; [`ReloadingCert`] answers with whatever it loaded last. A
//! watcher task compares the files' bytes every few seconds (bytes, not
//! mtimes: a Secret volume swaps a symlink, and two writes within one mtime
//! tick would be missed) and loads a new pair only if it is whole and the key
//! fits the certificate; otherwise it keeps serving the old one and counts an
//! error. Connections already open keep their session; new handshakes get
//! the new certificate.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::Error;
use crate::metrics::Metrics;

/// The two files the certificate comes from.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// PEM certificate chain, leaf first (`tls.crt`).
    pub cert: PathBuf,
    /// PEM private key (`tls.key`).
    pub key: PathBuf,
}

/// The ring provider: the only one this workspace builds.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Serves the last certificate read from [`CertFiles`].
#[derive(Debug)]
pub struct ReloadingCert {
    files: CertFiles,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The bytes `current` was made from, to notice changes.
    seen: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl ReloadingCert {
    /// Loads the pair now; fails if it cannot serve with them.
    pub fn load(files: CertFiles) -> Result<Arc<Self>, Error> {
        let provider = provider();
        let (cert, key) = read_pair(&files)?;
        let certified = certified_key(&files, &cert, &key, &provider)?;
        Ok(Arc::new(Self {
            files,
            provider,
            current: RwLock::new(Arc::new(certified)),
            seen: Mutex::new((cert, key)),
        }))
    }

    /// Reloads if the files' bytes changed: `Ok(true)` when a new pair is
    /// now served, `Ok(false)` when nothing changed, `Err` (old pair kept)
    /// when the new files are unusable, e.g. the key not yet written.
    pub fn reload_if_changed(&self) -> Result<bool, Error> {
        let (cert, key) = read_pair(&self.files)?;
        let mut seen = self.seen.lock().expect("certificate lock poisoned");
        if seen.0 == cert && seen.1 == key {
            return Ok(false);
        }
        let certified = certified_key(&self.files, &cert, &key, &self.provider)?;
        *self.current.write().expect("certificate lock poisoned") = Arc::new(certified);
        *seen = (cert, key);
        Ok(true)
    }

    /// Checks the files every `interval`, forever.
    pub async fn watch(self: Arc<Self>, interval: Duration, metrics: Arc<Metrics>) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let this = self.clone();
            let reloaded = tokio::task::spawn_blocking(move || this.reload_if_changed()).await;
            match reloaded {
                Ok(Ok(true)) => {
                    metrics.certificate_reloaded("ok");
                    tracing::info!(cert = %self.files.cert.display(), "serving a new certificate");
                }
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    metrics.certificate_reloaded("error");
                    tracing::warn!(%error, "keeping the old certificate");
                }
                Err(error) => tracing::error!(%error, "certificate reload task failed"),
            }
        }
    }

    /// The rustls server configuration that resolves through this
    /// certificate; offers HTTP/2 and HTTP/1.1 (the apiserver speaks both).
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>, Error> {
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|source| Error::Certificate {
                cert: self.files.cert.clone(),
                key: self.files.key.clone(),
                source,
            })?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .expect("certificate lock poisoned")
                .clone(),
        )
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })
}

fn read_pair(files: &CertFiles) -> Result<(Vec<u8>, Vec<u8>), Error> {
    Ok((read(&files.cert)?, read(&files.key)?))
}

fn certified_key(
    files: &CertFiles,
    cert: &[u8],
    key: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, Error> {
    let pem_error = |path: &PathBuf, problem: String| Error::Pem {
        path: path.clone(),
        problem,
    };
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| pem_error(&files.cert, format!("not a PEM certificate chain: {error}")))?;
    if chain.is_empty() {
        return Err(pem_error(&files.cert, "holds no CERTIFICATE block".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|error| pem_error(&files.key, format!("not a PEM private key: {error}")))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| Error::Certificate {
        cert: files.cert.clone(),
        key: files.key.clone(),
        source,
    })
}
