//! A serving certificate read from PEM files (a mounted Secret, e.g. written
//! by cert-manager), and swapped in when the files change, without a
//! restart and without dropping connections. The admission webhooks and the
//! resolver API both serve through it.
//!
//! rustls asks a [`ResolvesServerCert`] for the certificate on every
//! handshake; [`ReloadingCert`] answers with whatever it loaded last. A
//! watcher ([`ReloadingCert::watch`]) compares the files' bytes every few
//! seconds (bytes, not mtimes: a Secret volume swaps a symlink, and two
//! writes within one mtime tick would be missed) and loads a new pair only
//! if it is whole and the key fits the certificate; otherwise it keeps
//! serving the old one and reports an error. Connections already open keep
//! their session; new handshakes get the new certificate.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How often a server looks at its certificate files unless told otherwise:
/// a renewal is served within seconds, and reading two small files that
/// often costs nothing.
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// The two files the certificate comes from.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// PEM certificate chain, leaf first (`tls.crt`).
    pub cert: PathBuf,
    /// PEM private key (`tls.key`).
    pub key: PathBuf,
}

/// Which of the two files an error is about, so a caller can name its flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PemFile {
    /// The certificate chain.
    Cert,
    /// The private key.
    Key,
}

/// Why a certificate pair cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error(
        "cannot read {path}: {source}; check the path and that the Secret holding it is mounted"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// Which of the pair it is.
        file: PemFile,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds no usable PEM.
    #[error("{path}: {problem}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// Which of the pair it is.
        file: PemFile,
        /// What is wrong with it and what to write instead, in words.
        problem: String,
    },
    /// The key parses but ring cannot sign with it.
    #[error(
        "{path}: the private key cannot be used for TLS ({reason}); use an RSA, ECDSA P-256/P-384 or Ed25519 key"
    )]
    UnusableKey {
        /// The key file.
        path: PathBuf,
        /// What rustls said.
        reason: String,
    },
    /// The key is not the one the leaf certificate was issued for.
    #[error(
        "the key in {key} does not belong to the first certificate in {cert}; write a certificate and the key it was issued for (a renewal written half-way is retried at the next check)"
    )]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

impl TlsError {
    /// The file to fix.
    pub fn file(&self) -> PemFile {
        match self {
            Self::Read { file, .. } | Self::Pem { file, .. } => *file,
            Self::UnusableKey { .. } | Self::Mismatch { .. } => PemFile::Key,
        }
    }

    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Read { .. } => "read_file",
            Self::Pem { .. } => "pem",
            Self::UnusableKey { .. } => "unusable_key",
            Self::Mismatch { .. } => "mismatch",
        }
    }
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
    pub fn load(files: CertFiles) -> Result<Arc<Self>, TlsError> {
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

    /// The files it reads.
    pub fn files(&self) -> &CertFiles {
        &self.files
    }

    /// The pair new handshakes get.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .expect("certificate lock poisoned")
            .clone()
    }

    /// When the certificate new handshakes get stops being valid, in
    /// seconds since the Unix epoch (`notAfter` of the leaf), read from the
    /// certificate at each call so it follows every reload; `None` if the
    /// leaf does not parse as X.509 (rustls serves it as bytes).
    pub fn not_after(&self) -> Option<i64> {
        let current = self.current();
        let leaf = current.cert.first()?;
        let (_, parsed) = x509_parser::parse_x509_certificate(leaf).ok()?;
        Some(parsed.validity().not_after.timestamp())
    }

    /// Reloads if the files' bytes changed: `Ok(true)` when a new pair is
    /// now served, `Ok(false)` when nothing changed, `Err` (old pair kept)
    /// when the new files are unusable, e.g. the key not yet written.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
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

    /// Checks the files every `interval`, forever (drop or abort the future
    /// to stop). Logs what it does, and tells `reloaded` each time something
    /// happened: `Ok(())` when a new pair is served, `Err` when changed files
    /// were refused and the old pair kept (again at every check until they
    /// are fixed); nothing when the files did not change.
    pub async fn watch<F>(self: Arc<Self>, interval: Duration, mut reloaded: F)
    where
        F: FnMut(Result<(), &TlsError>) + Send,
    {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let this = self.clone();
            // Reading files blocks; keep it off the threads serving requests.
            let outcome = tokio::task::spawn_blocking(move || this.reload_if_changed()).await;
            match outcome {
                Ok(Ok(true)) => {
                    tracing::info!(cert = %self.files.cert.display(), "serving a new certificate");
                    reloaded(Ok(()));
                }
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, "keeping the old certificate");
                    reloaded(Err(&error));
                }
                Err(error) => tracing::error!(%error, "certificate reload task failed"),
            }
        }
    }

    /// The rustls server configuration that resolves through this
    /// certificate, offering the `alpn` protocols (e.g. `[b"h2",
    /// b"http/1.1"]`). Offer only what the server speaks: a client that
    /// negotiates h2 with an HTTP/1.1-only server fails on its first frame.
    pub fn server_config(self: &Arc<Self>, alpn: &[&[u8]]) -> Arc<ServerConfig> {
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .expect("the ring provider has cipher suites for TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
        Arc::new(config)
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn read(path: &Path, file: PemFile) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        file,
        source,
    })
}

fn read_pair(files: &CertFiles) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    Ok((
        read(&files.cert, PemFile::Cert)?,
        read(&files.key, PemFile::Key)?,
    ))
}

fn certified_key(
    files: &CertFiles,
    cert: &[u8],
    key: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    const WRITE_CHAIN: &str = "write the certificate chain as PEM CERTIFICATE blocks, leaf first";
    const WRITE_KEY: &str = "write the private key as one PEM PRIVATE KEY block";
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::Pem {
            path: files.cert.clone(),
            file: PemFile::Cert,
            problem: format!("{}; {WRITE_CHAIN}", pem_words(&error)),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Pem {
            path: files.cert.clone(),
            file: PemFile::Cert,
            problem: format!("holds no CERTIFICATE block; {WRITE_CHAIN}"),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|error| TlsError::Pem {
        path: files.key.clone(),
        file: PemFile::Key,
        problem: match error {
            pem::Error::NoItemsFound => format!("holds no PRIVATE KEY block; {WRITE_KEY}"),
            error => format!("{}; {WRITE_KEY}", pem_words(&error)),
        },
    })?;
    // What `CertifiedKey::from_der` does, in two steps so each failure gets
    // its own words (rustls prints a mismatch as a Debug value).
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|error| TlsError::UnusableKey {
            path: files.key.clone(),
            reason: error.to_string(),
        })?;
    let certified = CertifiedKey::new(chain, signing);
    match certified.keys_match() {
        // A key that cannot tell its public half is not refused (as in rustls).
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(certified)
        }
        Err(_) => Err(TlsError::Mismatch {
            cert: files.cert.clone(),
            key: files.key.clone(),
        }),
    }
}

/// A PEM parse error in words; rustls' own text shows bytes as number lists.
fn pem_words(error: &pem::Error) -> String {
    match error {
        pem::Error::MissingSectionEnd { end_marker } => format!(
            "a PEM block has no end line (-----END {}-----)",
            String::from_utf8_lossy(end_marker).trim()
        ),
        pem::Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".to_owned(),
        pem::Error::Base64Decode(reason) => {
            format!("a PEM block is not valid base64 ({reason})")
        }
        pem::Error::NoItemsFound => "holds no PEM block of the expected kind".to_owned(),
        pem::Error::SectionTooLarge => "a PEM block is larger than 256 MB".to_owned(),
        other => format!("not valid PEM ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    use tokio::sync::mpsc;

    use super::*;

    /// A fresh CA and a leaf for 127.0.0.1 it signed, written to `files`
    /// (each file in one rename, as a Secret volume does); returns the
    /// leaf's DER.
    fn issue(files: &CertFiles) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        for (path, pem) in [(&files.cert, leaf.pem()), (&files.key, key.serialize_pem())] {
            let staged = path.with_extension("new");
            std::fs::write(&staged, pem).unwrap();
            std::fs::rename(&staged, path).unwrap();
        }
        leaf.der().to_vec()
    }

    /// The watcher's next report but mismatches (the watcher may look
    /// between the two renames of one issuance).
    async fn next(
        told: &mut mpsc::UnboundedReceiver<Result<(), &'static str>>,
    ) -> Result<(), &'static str> {
        loop {
            let outcome = tokio::time::timeout(Duration::from_secs(30), told.recv())
                .await
                .expect("the watcher reports within 30 s")
                .unwrap();
            if outcome != Err("mismatch") {
                return outcome;
            }
        }
    }

    fn files_in(dir: &Path) -> CertFiles {
        CertFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }
    }

    fn served(cert: &ReloadingCert) -> Vec<u8> {
        cert.current().cert[0].to_vec()
    }

    #[test]
    fn a_changed_pair_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let first = issue(&files);
        let cert = ReloadingCert::load(files.clone()).unwrap();
        assert_eq!(served(&cert), first);
        assert!(!cert.reload_if_changed().unwrap());

        let second = issue(&files);
        assert!(cert.reload_if_changed().unwrap());
        assert_eq!(served(&cert), second);

        // Half of a renewal: the key of another issuance.
        let other = tempfile::tempdir().unwrap();
        let stray = files_in(other.path());
        issue(&stray);
        std::fs::copy(&stray.key, &files.key).unwrap();
        let error = cert.reload_if_changed().unwrap_err();
        assert!(matches!(error, TlsError::Mismatch { .. }), "{error}");
        assert_eq!(error.file(), PemFile::Key);
        assert_eq!(served(&cert), second);

        std::fs::write(&files.key, "not a key").unwrap();
        let error = cert.reload_if_changed().unwrap_err();
        assert_eq!(error.file(), PemFile::Key);
        assert_eq!(
            error.to_string(),
            format!(
                "{}: holds no PRIVATE KEY block; write the private key as one PEM PRIVATE KEY block",
                files.key.display()
            )
        );
        assert_eq!(served(&cert), second);

        std::fs::remove_file(&files.cert).unwrap();
        let error = cert.reload_if_changed().unwrap_err();
        assert_eq!(error.file(), PemFile::Cert);
        assert!(
            error.to_string().starts_with(&format!(
                "cannot read {}: No such file",
                files.cert.display()
            )),
            "{error}"
        );
        assert_eq!(served(&cert), second);
    }

    #[test]
    fn not_after_is_the_served_leafs() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        issue(&files);
        let cert = ReloadingCert::load(files).unwrap();
        // rcgen's default validity ends in 4096.
        let in_4096: jiff::Timestamp = "4096-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(cert.not_after(), Some(in_4096.as_second()));
    }

    #[test]
    fn errors_name_the_file_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        issue(&files);
        std::fs::write(&files.cert, "-----BEGIN CERTIFICATE-----\nAAAA\n").unwrap();
        let error = ReloadingCert::load(files.clone()).unwrap_err();
        assert_eq!(error.file(), PemFile::Cert);
        assert_eq!(
            error.to_string(),
            format!(
                "{}: a PEM block has no end line (-----END CERTIFICATE-----); write the certificate chain as PEM CERTIFICATE blocks, leaf first",
                files.cert.display()
            )
        );
        std::fs::write(&files.cert, "").unwrap();
        let error = ReloadingCert::load(files.clone()).unwrap_err();
        assert!(
            error.to_string().contains("holds no CERTIFICATE block"),
            "{error}"
        );
    }

    #[test]
    fn the_config_offers_what_the_caller_serves() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        issue(&files);
        let cert = ReloadingCert::load(files).unwrap();
        let config = cert.server_config(&[b"http/1.1"]);
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[tokio::test]
    async fn the_watcher_reports_each_reload() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        issue(&files);
        let cert = ReloadingCert::load(files.clone()).unwrap();
        let (tell, mut told) = mpsc::unbounded_channel();
        let watcher = tokio::spawn(
            cert.clone()
                .watch(Duration::from_millis(20), move |outcome| {
                    let _ = tell.send(outcome.map_err(TlsError::metric_label));
                }),
        );
        let second = issue(&files);
        assert_eq!(next(&mut told).await, Ok(()));
        assert_eq!(served(&cert), second);
        std::fs::write(&files.key, "not a key").unwrap();
        assert_eq!(next(&mut told).await, Err("pem"));
        assert_eq!(served(&cert), second);
        watcher.abort();
    }
}
