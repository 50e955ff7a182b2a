//! A throwaway certificate authority for a webhook server on 127.0.0.1: the
//! apiserver trusts it through the configurations' `caBundle`, so nothing
//! outside the process (cert-manager, a Secret) is needed.
//!
//! Keys live in memory; [`LoopbackCa::issue`] writes a serving pair to the
//! files [`crate::tls::ReloadingCert`] reads, each file replaced in one
//! rename so the reloader never sees half of one.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

use super::Error;
use crate::tls::CertFiles;

/// A private CA that issues serving certificates for `127.0.0.1`.
pub struct LoopbackCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for LoopbackCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("LoopbackCa").finish_non_exhaustive()
    }
}

impl LoopbackCa {
    /// A fresh CA (new key) whose certificate says `common_name`.
    pub fn new(common_name: &str) -> Result<Self, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Self { issuer })
    }

    /// The CA certificate, PEM: what the apiserver is told to trust.
    pub fn ca_pem(&self) -> String {
        self.issuer.pem()
    }

    /// Writes a new serving certificate (new key) for `127.0.0.1` to `files`.
    /// Called again, it renews: same CA, new key and certificate.
    pub fn issue(&self, files: &CertFiles, common_name: &str) -> Result<(), Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.subject_alt_names = vec![SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into())];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer)?;
        write_atomically(&files.key, key.serialize_pem().as_bytes())?;
        write_atomically(&files.cert, cert.pem().as_bytes())
    }
}

/// Writes `path` whole (staged beside it, then renamed), so a reader never
/// sees half of it. `bootstrap` writes its files the same way.
pub(crate) fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let staged = path.with_extension("new");
    let failed = |source| Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(&staged, contents).map_err(failed)?;
    std::fs::rename(&staged, path).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_pair_loads_and_chains_to_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let files = CertFiles {
            cert: dir.path().join("tls.crt"),
            key: dir.path().join("tls.key"),
        };
        let ca = LoopbackCa::new("unit-test CA").unwrap();
        ca.issue(&files, "unit-test").unwrap();
        // The server accepts the pair (the key fits the certificate) ...
        crate::tls::ReloadingCert::load(files.clone()).unwrap();
        // ... and a client trusting only this CA accepts the certificate for 127.0.0.1.
        use rustls::client::danger::ServerCertVerifier;
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.ca_pem().as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            roots.into(),
            crate::tls::provider(),
        )
        .build()
        .unwrap();
        let leaf = CertificateDer::from_pem_file(&files.cert).unwrap();
        verifier
            .verify_server_cert(
                &leaf,
                &[],
                &ServerName::try_from("127.0.0.1").unwrap(),
                &[],
                UnixTime::now(),
            )
            .unwrap();
        assert!(
            !std::fs::exists(files.cert.with_extension("new")).unwrap(),
            "staged file left behind"
        );
    }
}
