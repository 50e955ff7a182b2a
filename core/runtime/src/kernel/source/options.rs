//! How sources talk to servers: transport policy, credentials, timeouts,
//! trusted roots, and where pull secrets are read from.

use std::fmt;
use std::sync::Once;
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use super::reference::is_loopback_registry;

/// When plain (unencrypted) HTTP may be used instead of HTTPS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PlainHttp {
    /// HTTPS to every registry, loopback ones included.
    Never,
    /// Plain HTTP to registries on loopback (`localhost`, `127.0.0.0/8`,
    /// `::1`), HTTPS to every other one. The Docker daemon treats
    /// `127.0.0.0/8` the same way: traffic that never leaves the host has no
    /// network to be read or changed on.
    #[default]
    Loopback,
    /// Plain HTTP to every registry. Only for an explicit opt-in (a
    /// ProvisionerClass parameter, `pakket bundle push --insecure-plain-http`):
    /// content and credentials then cross the network unprotected.
    Everywhere,
}

impl PlainHttp {
    /// Whether requests to `registry` go over plain HTTP under this policy.
    pub fn applies_to(self, registry: &str) -> bool {
        match self {
            Self::Never => false,
            Self::Loopback => is_loopback_registry(registry),
            Self::Everywhere => true,
        }
    }
}

/// Basic-auth credentials for a registry, given to a source or read from a
/// pull secret.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password or token; never printed.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// What the sources (images, `https://` tarballs, git) may do and how long
/// they wait.
#[derive(Clone, Debug)]
pub struct SourceOptions {
    /// When plain HTTP is used; HTTPS otherwise.
    pub plain_http: PlainHttp,
    /// Credentials sent to every registry this source talks to; anonymous if `None`.
    pub credentials: Option<Credentials>,
    /// Longest wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Longest silence while reading a response, so a stalled transfer fails
    /// instead of holding a worker forever.
    pub read_timeout: Duration,
    /// Longest time for one small exchange: resolving a tag, fetching a manifest.
    pub request_timeout: Duration,
    /// Longest time for a whole pull, every layer included (and a whole
    /// tarball download or git fetch).
    pub pull_timeout: Duration,
    /// CA certificates (PEM text; one string may hold several) trusted in
    /// addition to the system's roots, for registries, `https://` tarballs
    /// and git servers whose certificates a private CA signed. The system's
    /// roots (the web PKI, as the OS trust store holds it) stay trusted.
    pub extra_roots: Vec<String>,
    /// The namespace pull secrets are read from: the provisioner's own
    /// (a provisioner sets it from `POD_NAMESPACE`). `None`: a class that
    /// names `pullSecrets` fails to unpack with an error saying so.
    ///
    /// Only this namespace, never the Bundle's or the class's choice:
    /// Bundles are written by users, and if a Bundle could name a Secret's
    /// namespace its author could make the provisioner pull with someone
    /// else's credentials. Cluster admins own the classes and this
    /// namespace, so they alone decide which credentials are used.
    pub secret_namespace: Option<String>,
    /// Credentials a provisioner registered for `https://` servers it
    /// reads with them (see [`super::authorizations`]); shared by every
    /// clone of these options.
    pub authorizations: super::authorizations::HttpsAuthorizations,
}

impl Default for SourceOptions {
    fn default() -> Self {
        Self {
            plain_http: PlainHttp::default(),
            credentials: None,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            pull_timeout: Duration::from_secs(600),
            extra_roots: Vec::new(),
            secret_namespace: None,
            authorizations: Default::default(),
        }
    }
}

impl SourceOptions {
    /// The credentials as `oci_client` takes them.
    pub fn registry_auth(&self) -> RegistryAuth {
        registry_auth(self.credentials.as_ref())
    }

    /// The certificates of [`SourceOptions::extra_roots`], in DER, in order.
    /// An entry with no certificate, or one that is not PEM, is an error
    /// naming it.
    pub fn extra_root_certificates(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let mut certificates = Vec::new();
        for (index, pem) in self.extra_roots.iter().enumerate() {
            let before = certificates.len();
            for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                certificates.push(
                    certificate.map_err(|error| {
                        format!("extra_roots[{index}] is not valid PEM: {error}")
                    })?,
                );
            }
            if certificates.len() == before {
                return Err(format!(
                    "extra_roots[{index}] holds no certificate; give PEM text with \
                     -----BEGIN CERTIFICATE----- blocks"
                ));
            }
        }
        Ok(certificates)
    }

    /// An `oci_client` configuration speaking `protocol` with these timeouts
    /// and roots.
    pub(super) fn client_config(&self, protocol: ClientProtocol) -> Result<ClientConfig, String> {
        let extra_root_certificates = self
            .extra_root_certificates()?
            .into_iter()
            .map(|der| Certificate {
                encoding: CertificateEncoding::Der,
                data: der.to_vec(),
            })
            .collect();
        Ok(ClientConfig {
            protocol,
            connect_timeout: Some(self.connect_timeout),
            read_timeout: Some(self.read_timeout),
            extra_root_certificates,
            // Bundles are small; a few parallel blob transfers are plenty and
            // keep a provisioner from opening dozens of connections per image.
            max_concurrent_download: 4,
            max_concurrent_upload: 4,
            ..ClientConfig::default()
        })
    }
}

/// `credentials` as `oci_client` takes them; anonymous if `None`.
pub(super) fn registry_auth(credentials: Option<&Credentials>) -> RegistryAuth {
    match credentials {
        Some(credentials) => {
            RegistryAuth::Basic(credentials.username.clone(), credentials.password.clone())
        }
        None => RegistryAuth::Anonymous,
    }
}

/// Makes rustls use the ring provider for this process, unless the program
/// already chose one. oci-client is built with `rustls-tls-no-provider`, so
/// without this its HTTP client could not be built; choosing ring here keeps
/// aws-lc out of the build (see STYLE.md). The `https://` source's reqwest
/// client needs it too.
pub(super) fn install_ring_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider is installed already: the
        // program's own choice, which we keep.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_where_the_policy_allows_it() {
        let cases = [
            (PlainHttp::Never, "127.0.0.1:5000", false),
            (PlainHttp::Loopback, "127.0.0.1:5000", true),
            (PlainHttp::Loopback, "localhost:5000", true),
            (PlainHttp::Loopback, "quay.io", false),
            (PlainHttp::Loopback, "registry.internal:5000", false),
            (PlainHttp::Everywhere, "quay.io", true),
        ];
        for (policy, registry, plain) in cases {
            assert_eq!(policy.applies_to(registry), plain, "{policy:?} {registry}");
        }
        assert_eq!(PlainHttp::default(), PlainHttp::Loopback);
    }

    #[test]
    fn passwords_are_never_printed() {
        let options = SourceOptions {
            credentials: Some(Credentials {
                username: "alice".into(),
                password: "s3cret".into(),
            }),
            ..SourceOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(
            shown.contains("alice") && !shown.contains("s3cret"),
            "{shown}"
        );
    }
}
