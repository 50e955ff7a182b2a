//! `https://` tarballs: `https://HOST/PATH/bundle.tar.gz[#sha256=HEX]`.
//!
//! The body is a tar stream, gzip'd or not (detected by its magic bytes,
//! when it is unpacked). The optional fragment `#sha256=` followed by 64 hex
//! digits pins the tarball: the downloaded bytes must hash to it, or the
//! download is an error naming both digests, and nothing is unpacked.
//!
//! Security choices:
//! - **HTTPS only**, redirects included (a redirect to `http://` fails);
//!   TLS is rustls on the ring provider, trusting the system's roots and
//!   [`SourceOptions::extra_roots`].
//! - **Public addresses only**, unless the class allows internal ones
//!   ([`super::address`]): the ref's host, every address a name resolves
//!   to and every redirect hop is checked, and nothing is sent to a
//!   refused one. Such fetches connect directly, never through a proxy
//!   from the environment (a proxy resolves names where no check can
//!   see); a class that allows internal addresses uses the proxy.
//! - **No echo**: an error status is reported by its code; the body is
//!   logged for the operator at debug level, never put in a status the
//!   requester reads.
//! - **No credentials in refs**: a ref with `user:password@` is refused
//!   (Bundles are readable by many; a token in one is a leaked token).
//!   Credentials a provisioner registered for a server
//!   ([`super::authorizations`]) are sent to that server only.
//! - **Bounded**: a connect timeout, a read timeout (the longest silence
//!   mid-body), a limit for the answer's headers and one for the whole
//!   download; a `Content-Length` over the size limit fails before the body
//!   is read, and the bytes actually received are counted, so an endless
//!   body stops at the limit.
//! - Nothing is decompressed in transit (no `Accept-Encoding`), so the
//!   digest is the one of the file as published.

use std::fmt;
use std::sync::OnceLock;

use futures_util::StreamExt as _;
use reqwest::Url;

use super::address::{self, Reach, Refusal};

mod error;

pub use error::HttpsError;

use super::error::{TransportFailure, one_line};
use super::{SourceOptions, options};
use crate::store::Digest;

/// The fragment that pins a tarball's sha256.
const PIN_PREFIX: &str = "sha256=";
/// How many characters of an error body are logged (never put in a message).
const BODY_SNIPPET_CHARS: usize = 200;
/// Redirects followed at most.
const MAX_REDIRECTS: usize = 10;
/// The environment variables reqwest takes a proxy from.
const PROXY_VARIABLES: &[&str] = &[
    "https_proxy",
    "HTTPS_PROXY",
    "http_proxy",
    "HTTP_PROXY",
    "all_proxy",
    "ALL_PROXY",
];

/// A parsed `https://` tarball ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TarballRef {
    url: Url,
    pin: Option<Digest>,
}

impl TarballRef {
    /// Parses `https://HOST[:PORT]/PATH[?QUERY][#sha256=HEX]`.
    pub fn parse(input: &str) -> Result<Self, HttpsError> {
        let invalid = |problem: String| HttpsError::InvalidRef {
            input: input.to_owned(),
            problem,
        };
        let mut url = Url::parse(input).map_err(|error| {
            invalid(format!(
                "{error}; write https://HOST/PATH/bundle.tar.gz[#sha256=HEX]"
            ))
        })?;
        match url.scheme() {
            "https" => {}
            "http" => {
                return Err(invalid(
                    "plain http:// is refused: the content could be read or changed on \
                     the way; serve it over https://"
                        .into(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "the scheme {other}:// is not a tarball URL; write https://HOST/PATH/bundle.tar.gz"
                )));
            }
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid(
                "it names no host; write https://HOST/PATH/bundle.tar.gz".into(),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid(
                "it carries credentials (user:password@); Bundles are readable by many, \
                 so serve the tarball without them (e.g. a pre-signed URL) or publish it \
                 as an image and use the class's pullSecrets"
                    .into(),
            ));
        }
        let pin = match url.fragment() {
            None => None,
            Some(fragment) => Some(parse_pin(fragment).map_err(invalid)?),
        };
        url.set_fragment(None);
        Ok(Self { url, pin })
    }

    /// The URL fetched (without the pin).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The sha256 the ref pins the tarball to, if any.
    pub fn pin(&self) -> Option<&Digest> {
        self.pin.as_ref()
    }
}

impl fmt::Display for TarballRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.url)?;
        if let Some(pin) = &self.pin {
            write!(f, "#{PIN_PREFIX}{}", pin.hex())?;
        }
        Ok(())
    }
}

/// `sha256=<64 hex>` (hex in either case) as a digest.
fn parse_pin(fragment: &str) -> Result<Digest, String> {
    let usage = "write the pin as #sha256= followed by the tarball's 64 hex digits \
                 (sha256sum bundle.tar.gz)";
    let Some(hex) = fragment.strip_prefix(PIN_PREFIX) else {
        return Err(format!("the fragment #{fragment} is not a pin; {usage}"));
    };
    Digest::parse(&format!("sha256:{}", hex.to_ascii_lowercase())).map_err(|error| {
        format!(
            "the pin #{fragment} is invalid ({}); {usage}",
            error.problem
        )
    })
}

/// A downloaded tarball, verified against its pin.
#[derive(Debug)]
pub struct Downloaded {
    /// The sha256 of the bytes: the content store key.
    pub digest: Digest,
    /// How many bytes were served.
    pub size: u64,
    /// The bytes as served (still compressed, if they were), spooled to an
    /// unnamed temporary file: memory holds one chunk at a time.
    pub file: std::fs::File,
}

impl Downloaded {
    /// A reader of the bytes from the start.
    pub fn reader(&self) -> std::io::Result<&std::fs::File> {
        use std::io::Seek as _;
        let mut file = &self.file;
        file.seek(std::io::SeekFrom::Start(0))?;
        Ok(file)
    }
}

/// Downloads tarballs over HTTPS under one set of [`SourceOptions`]; one
/// HTTP client, built on first use, so connections are reused.
pub struct HttpsSource {
    options: SourceOptions,
    /// Public addresses only (the default).
    guarded: OnceLock<Result<reqwest::Client, String>>,
    /// Any address, for classes with `allowInternalAddresses: true`.
    open: OnceLock<Result<reqwest::Client, String>>,
}

impl HttpsSource {
    /// A source with these timeouts and roots.
    pub fn new(options: SourceOptions) -> Self {
        options::install_ring_provider();
        Self {
            options,
            guarded: OnceLock::new(),
            open: OnceLock::new(),
        }
    }

    fn client(&self, reach: &Reach) -> Result<&reqwest::Client, HttpsError> {
        let guarded = matches!(reach, Reach::Public { .. });
        let cell = if guarded { &self.guarded } else { &self.open };
        cell.get_or_init(|| {
            let roots = self
                .options
                .extra_root_certificates()?
                .into_iter()
                .map(|der| reqwest::Certificate::from_der(&der))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| format!("an extra root is not a certificate: {error}"))?;
            let builder = reqwest::Client::builder()
                .https_only(true)
                .connect_timeout(self.options.connect_timeout)
                .read_timeout(self.options.read_timeout)
                .user_agent(concat!("pakket/", env!("CARGO_PKG_VERSION")))
                .tls_certs_merge(roots);
            let builder = if guarded {
                if PROXY_VARIABLES
                    .iter()
                    .any(|name| std::env::var_os(name).is_some())
                {
                    tracing::info!(
                        "a proxy is set in the environment; https:// refs of classes that do \
                         not allow internal addresses connect directly, as a proxy would \
                         resolve their names out of reach of the address check"
                    );
                }
                builder
                    .no_proxy()
                    .dns_resolver(address::guard::guarded_resolver())
                    .redirect(address::guard::redirect_policy(MAX_REDIRECTS))
            } else {
                builder.redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            };
            builder.build().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|cause| HttpsError::Client {
            cause: cause.clone(),
        })
    }

    /// The credentials a provisioner registered for `url`'s server.
    pub fn authorizations_for(&self, url: &Url) -> Option<String> {
        self.options.authorizations.for_url(url)
    }

    /// Downloads `tarball`, at most `max_size` bytes, connecting only where
    /// `reach` allows, and checks its pin.
    pub async fn download(
        &self,
        tarball: &TarballRef,
        max_size: u64,
        reach: &Reach,
    ) -> Result<Downloaded, HttpsError> {
        // Credentials a provisioner registered for this URL's server (a
        // package repository's), never ones written in the ref.
        let registered = self.options.authorizations.for_url(tarball.url());
        self.download_authorized(tarball, max_size, reach, registered.as_deref())
            .await
    }

    /// [`Self::download`], sending `authorization` as the `Authorization`
    /// header (a package repository's credentials). reqwest drops it on a
    /// redirect to another host, so it reaches only the host named.
    pub async fn download_authorized(
        &self,
        tarball: &TarballRef,
        max_size: u64,
        reach: &Reach,
        authorization: Option<&str>,
    ) -> Result<Downloaded, HttpsError> {
        let limit = self.options.pull_timeout;
        let url = tarball.url().to_string();
        // A literal IP skips the resolver, so the ref's own host is checked
        // here; redirects and resolved names are checked by the client.
        if let Reach::Public { .. } = reach
            && let Err(refusal) = address::check_host(tarball.url().host_str().unwrap_or_default())
        {
            return Err(internal(tarball.url(), refusal, reach));
        }
        let downloaded =
            tokio::time::timeout(limit, self.fetch(tarball, max_size, reach, authorization))
                .await
                .unwrap_or_else(|_| {
                    Err(HttpsError::Timeout {
                        url: url.clone(),
                        what: "the whole download",
                        after: limit,
                    })
                })?;
        if let Some(expected) = tarball.pin()
            && *expected != downloaded.digest
        {
            return Err(HttpsError::DigestMismatch {
                url,
                expected: expected.clone(),
                actual: downloaded.digest,
            });
        }
        Ok(downloaded)
    }

    async fn fetch(
        &self,
        tarball: &TarballRef,
        max_size: u64,
        reach: &Reach,
        authorization: Option<&str>,
    ) -> Result<Downloaded, HttpsError> {
        let url = tarball.url();
        let client = self.client(reach)?;
        let limit = self.options.request_timeout;
        let mut request = client.get(url.clone());
        if let Some(value) = authorization {
            let mut value =
                reqwest::header::HeaderValue::from_str(value).map_err(|_| HttpsError::Client {
                    cause: "the credentials hold characters a header cannot".into(),
                })?;
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        let response = tokio::time::timeout(limit, request.send())
            .await
            .map_err(|_| HttpsError::Timeout {
                url: url.to_string(),
                what: "waiting for the server's answer",
                after: limit,
            })?
            .map_err(|error| self.refused_or_transport_error(url, &error, reach))?;
        let status = response.status();
        if !status.is_success() {
            // For the operator's log only: the requester reads the status.
            let server_says = tokio::time::timeout(limit, body_snippet(response))
                .await
                .unwrap_or_default();
            tracing::debug!(%url, status = status.as_u16(), %server_says, "error answer");
            return Err(HttpsError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                reason: status.canonical_reason().unwrap_or_default(),
                advice: advice_for(status.as_u16()),
            });
        }
        if let Some(declared) = response.content_length()
            && declared > max_size
        {
            return Err(HttpsError::TooLarge {
                url: url.to_string(),
                detail: format!("the server declares {declared} bytes"),
                limit: max_size,
            });
        }
        use tokio::io::AsyncWriteExt as _;
        let spool_error = |error: std::io::Error| HttpsError::Spool {
            url: url.to_string(),
            cause: error.to_string(),
        };
        let file = tempfile::tempfile().map_err(spool_error)?;
        let mut writer = tokio::fs::File::from_std(file.try_clone().map_err(spool_error)?);
        let mut size: u64 = 0;
        let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|error| self.transport_error(url, &error))?;
            if size + chunk.len() as u64 > max_size {
                return Err(HttpsError::TooLarge {
                    url: url.to_string(),
                    detail: format!("the server sent more than {max_size} bytes"),
                    limit: max_size,
                });
            }
            size += chunk.len() as u64;
            sha2::Digest::update(&mut hasher, &chunk);
            writer.write_all(&chunk).await.map_err(spool_error)?;
        }
        writer.flush().await.map_err(spool_error)?;
        let digest = Digest::from_sha256(sha2::Digest::finalize(hasher).into());
        Ok(Downloaded { digest, size, file })
    }

    /// A refusal by the address guard (resolver or redirect policy), or
    /// else [`Self::transport_error`].
    fn refused_or_transport_error(
        &self,
        url: &Url,
        error: &reqwest::Error,
        reach: &Reach,
    ) -> HttpsError {
        if let Reach::Public { .. } = reach
            && let Some(refusal) = address::guard::refusal_in(error)
        {
            return internal(url, refusal, reach);
        }
        self.transport_error(url, error)
    }

    /// Describes a reqwest failure: timeout, TLS, no connection, or other.
    fn transport_error(&self, url: &Url, error: &reqwest::Error) -> HttpsError {
        let host = match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => String::new(),
        };
        if error.is_timeout() {
            return HttpsError::Timeout {
                url: url.to_string(),
                what: "the server went silent",
                after: self.options.read_timeout,
            };
        }
        match TransportFailure::of(error) {
            TransportFailure::Tls(cause) => HttpsError::Tls {
                host,
                url: url.to_string(),
                cause,
            },
            TransportFailure::Unreachable(cause) => HttpsError::Unreachable {
                host,
                url: url.to_string(),
                cause,
            },
            TransportFailure::Other(cause) => HttpsError::Transfer {
                url: url.to_string(),
                cause,
            },
        }
    }
}

/// The refusal of a host `reach` does not allow, fetching `url`.
fn internal(url: &Url, refusal: Refusal, reach: &Reach) -> HttpsError {
    HttpsError::Internal {
        url: url.to_string(),
        refusal,
        advice: reach.advice(),
    }
}

/// What to do about an error status.
fn advice_for(status: u16) -> &'static str {
    match status {
        401 | 403 => {
            "Pakket sends no credentials with https:// refs: make the tarball readable \
             without them (e.g. a pre-signed URL), or publish the bundle as an image and \
             name a pull secret in the class's pullSecrets"
        }
        404 | 410 => "check the URL, or publish the tarball there",
        400..=499 => "check the URL",
        _ => "the server failed; it is retried with backoff",
    }
}

/// The start of an error body, as one line of printable text.
async fn body_snippet(response: reqwest::Response) -> String {
    let mut stream = response.bytes_stream();
    let mut head = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        head.extend_from_slice(&chunk);
        if head.len() >= BODY_SNIPPET_CHARS * 4 {
            break;
        }
    }
    one_line(&String::from_utf8_lossy(&head), BODY_SNIPPET_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_url_and_its_pin() {
        let hex = "AB".repeat(32);
        let tarball = TarballRef::parse(&format!(
            "https://example.com:8443/b/etcd.tar.gz?x=1#sha256={hex}"
        ))
        .unwrap();
        assert_eq!(
            tarball.url().as_str(),
            "https://example.com:8443/b/etcd.tar.gz?x=1"
        );
        assert_eq!(
            tarball.pin().unwrap().as_str(),
            format!("sha256:{}", "ab".repeat(32))
        );
        assert_eq!(
            tarball.to_string(),
            format!(
                "https://example.com:8443/b/etcd.tar.gz?x=1#sha256={}",
                "ab".repeat(32)
            )
        );
        let plain = TarballRef::parse("https://example.com/b.tgz").unwrap();
        assert_eq!(plain.pin(), None);
    }

    #[test]
    fn refuses_what_it_cannot_fetch_safely_and_says_what_to_write() {
        for (input, expected) in [
            ("http://example.com/b.tgz", "plain http:// is refused"),
            ("ftp://example.com/b.tgz", "not a tarball URL"),
            ("https://bob:pw@example.com/b.tgz", "carries credentials"),
            ("https://example.com/b.tgz#md5=00", "is not a pin"),
            (
                "https://example.com/b.tgz#sha256=abc",
                "exactly 64 hex digits",
            ),
            ("https://", "empty host"),
        ] {
            let error = TarballRef::parse(input).unwrap_err();
            let message = error.to_string();
            assert!(message.contains(expected), "{input}: {message}");
            assert!(error.is_terminal(), "{input}");
        }
    }
}
