//! What can go wrong fetching an image, in words that say what to do.

use std::error::Error as StdError;
use std::time::Duration;

use oci_client::errors::{OciDistributionError, OciEnvelope, OciErrorCode};

use super::ImageRef;

/// Why an image could not be resolved, pulled or pushed.
///
/// Messages name the image and the registry, say what the registry answered
/// (HTTP status, the distribution spec's error codes; never its own text),
/// and end with what to do.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The ref is not an image ref.
    #[error("{input:?} is not a valid image ref: {problem}")]
    InvalidRef {
        /// The ref as written.
        input: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// Plain HTTP was asked for a registry the policy keeps on HTTPS.
    #[error(
        "refusing plain HTTP to registry {registry}: it is not on loopback, so content and \
         credentials would cross the network unprotected; use HTTPS, or allow plain HTTP \
         for it explicitly"
    )]
    PlainHttpRefused {
        /// The registry.
        registry: String,
    },
    /// No connection could be made.
    #[error(
        "cannot reach registry {registry} to {action} {image}: {cause}; is the registry running at {registry}?"
    )]
    Unreachable {
        /// The registry (`host:port`).
        registry: String,
        /// `resolve`, `pull` or `push`.
        action: &'static str,
        /// The image.
        image: String,
        /// The system's words, e.g. `Connection refused (os error 111)`.
        cause: String,
    },
    /// The registry did not answer in time.
    #[error(
        "{action} {image} timed out after {after:?}: registry {registry} did not answer in time; check that it is up and not overloaded"
    )]
    Timeout {
        /// The registry.
        registry: String,
        /// `resolve`, `pull` or `push`.
        action: &'static str,
        /// The image.
        image: String,
        /// The limit that passed.
        after: Duration,
    },
    /// The TLS handshake failed (bad certificate, or a plain-HTTP server).
    #[error("TLS with registry {registry} failed while trying to {action} {image}: {cause}{hint}")]
    Tls {
        /// The registry.
        registry: String,
        /// `resolve`, `pull` or `push`.
        action: &'static str,
        /// The image.
        image: String,
        /// What rustls said.
        cause: String,
        /// A suggestion, starting with `; `, or empty.
        hint: String,
    },
    /// The tag, digest or repository does not exist.
    #[error(
        "registry {registry} has no image {image}: {registry_says}; check the repository and tag, or push the image first"
    )]
    NotFound {
        /// The registry.
        registry: String,
        /// The image.
        image: String,
        /// What the registry answered: its status or error codes.
        registry_says: String,
    },
    /// The registry wants (other) credentials.
    #[error(
        "registry {registry} refused to let us {action} {image} without valid credentials: {registry_says}; give credentials that may {action} it (a pull secret for a Bundle, `--username` for `pakket bundle push`)"
    )]
    Unauthorized {
        /// The registry.
        registry: String,
        /// `resolve`, `pull` or `push`.
        action: &'static str,
        /// The image.
        image: String,
        /// What the registry answered: its status or error codes.
        registry_says: String,
    },
    /// The image is bigger than the caller allows.
    #[error(
        "image {image} is too large: {detail}, over the limit of {limit} bytes; raise the limit or make the image smaller"
    )]
    TooLarge {
        /// The image.
        image: String,
        /// How large, and which layer.
        detail: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A layer could not be written to (or read from) its temporary file.
    #[error(
        "pulling {image}: cannot spool a layer to a temporary file ({cause}); check that the provisioner's temporary directory (TMPDIR, /tmp) is writable and has room"
    )]
    Spool {
        /// The image.
        image: String,
        /// The filesystem error.
        cause: String,
    },
    /// A layer Pakket cannot unpack.
    #[error(
        "image {image} has layer {digest} of media type {media_type}; Pakket unpacks tar and gzip'd tar layers only, so rebuild the image with those (e.g. `pakket bundle push`)"
    )]
    UnsupportedLayer {
        /// The image.
        image: String,
        /// The layer's digest.
        digest: String,
        /// Its media type, quoted, as `media_type_words` shows it.
        media_type: String,
    },
    /// Content did not match its digest: corrupted or tampered with.
    #[error(
        "content of {image} from registry {registry} does not match its digest: {cause}; the registry or something between us and it changed the data"
    )]
    DigestMismatch {
        /// The registry.
        registry: String,
        /// The image.
        image: String,
        /// Expected and actual digests.
        cause: String,
    },
    /// Any other refusal or malformed answer from the registry.
    #[error("registry {registry} failed to {action} {image}: {registry_says}")]
    Registry {
        /// The registry.
        registry: String,
        /// `resolve`, `pull` or `push`.
        action: &'static str,
        /// The image.
        image: String,
        /// What the registry answered (status, codes), or what was wrong with its answer.
        registry_says: String,
    },
    /// A layer could not be unpacked safely.
    #[error("cannot unpack layer {layer} of {image}: {error}")]
    Unpack {
        /// The image, pinned.
        image: String,
        /// The layer's digest.
        layer: String,
        /// What the archive checks found.
        #[source]
        error: crate::archive::ArchiveError,
    },
    /// The HTTP client could not be built (e.g. no usable TLS roots).
    #[error("cannot set up an HTTP client for registries: {cause}")]
    Client {
        /// Why.
        cause: String,
    },
}

impl SourceError {
    /// The condition reason a provisioner writes for this error (`Unpacked` condition).
    pub fn reason(&self) -> &'static str {
        "UnpackFailed"
    }

    /// Whether retrying the same Bundle cannot help: its ref or its content
    /// is wrong, not the registry's current state.
    pub fn is_terminal(&self) -> bool {
        if let Self::Unpack { error, .. } = self {
            return error.is_terminal();
        }
        matches!(
            self,
            Self::InvalidRef { .. }
                | Self::PlainHttpRefused { .. }
                | Self::TooLarge { .. }
                | Self::UnsupportedLayer { .. }
        )
    }

    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidRef { .. } => "invalid_ref",
            Self::PlainHttpRefused { .. } => "plain_http_refused",
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout { .. } => "timeout",
            Self::Tls { .. } => "tls",
            Self::NotFound { .. } => "not_found",
            Self::Unauthorized { .. } => "unauthorized",
            Self::TooLarge { .. } => "too_large",
            Self::UnsupportedLayer { .. } => "unsupported_layer",
            Self::DigestMismatch { .. } => "digest_mismatch",
            Self::Registry { .. } => "registry",
            Self::Unpack { error, .. } => error.metric_label(),
            Self::Client { .. } => "client",
            Self::Spool { .. } => "spool",
        }
    }

    /// What a registry's error envelope (the distribution spec's codes)
    /// at `url` says: unauthorized, not found, or another refusal.
    fn from_envelope(
        envelope: &OciEnvelope,
        url: &str,
        action: &'static str,
        image: &ImageRef,
    ) -> Self {
        let (registry, name) = (image.registry().to_owned(), image.to_string());
        let codes = || envelope.errors.iter().map(|error| &error.code);
        let says = codes().map(code_name).collect::<Vec<_>>().join(", ");
        let registry_says = format!("it answered {says} at {}", without_query(url));
        let refused =
            codes().any(|code| matches!(code, OciErrorCode::Unauthorized | OciErrorCode::Denied));
        let missing = codes().any(|code| {
            matches!(
                code,
                OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::NotFound
                    | OciErrorCode::BlobUnknown
            )
        });
        if refused {
            Self::Unauthorized {
                registry,
                action,
                image: name,
                registry_says,
            }
        } else if missing {
            Self::NotFound {
                registry,
                image: name,
                registry_says,
            }
        } else {
            Self::Registry {
                registry,
                action,
                image: name,
                registry_says,
            }
        }
    }

    /// Describes an `oci_client` failure to `action` (`resolve`, `pull`,
    /// `push`) `image` by what the requester may know: the HTTP status and
    /// the distribution spec's error codes. The registry's own text (error
    /// messages, bodies, token service answers) is logged at debug level,
    /// never put in the message: a Bundle's status is read by its
    /// requester, and the registry answered the provisioner.
    pub fn from_registry(
        error: OciDistributionError,
        action: &'static str,
        image: &ImageRef,
    ) -> Self {
        tracing::debug!(image = %image, action, error = %error, "registry error");
        let registry = image.registry().to_owned();
        let name = image.to_string();
        match error {
            OciDistributionError::RegistryError { envelope, url } => {
                Self::from_envelope(&envelope, &url, action, image)
            }
            OciDistributionError::UnauthorizedError { url } => Self::Unauthorized {
                registry,
                action,
                image: name,
                registry_says: format!("401 Unauthorized at {}", without_query(&url)),
            },
            OciDistributionError::AuthenticationFailure(_) => Self::Unauthorized {
                registry,
                action,
                image: name,
                registry_says: "its token service refused to issue a token".into(),
            },
            // Push endpoints hand back the body unparsed; it is usually the
            // spec's error envelope, whose codes say more than the status.
            OciDistributionError::ServerError { url, message, .. }
                if serde_json::from_str::<OciEnvelope>(&message).is_ok() =>
            {
                let envelope = serde_json::from_str(&message).expect("parsed just above");
                Self::from_registry(
                    OciDistributionError::RegistryError { envelope, url },
                    action,
                    image,
                )
            }
            OciDistributionError::ServerError {
                code: code @ (401 | 403),
                url,
                ..
            } => Self::Unauthorized {
                registry,
                action,
                image: name,
                registry_says: format!("HTTP {code} at {}", without_query(&url)),
            },
            OciDistributionError::ServerError { code: 404, url, .. } => Self::NotFound {
                registry,
                image: name,
                registry_says: format!("HTTP 404 at {}", without_query(&url)),
            },
            OciDistributionError::ServerError { code, url, .. } => Self::Registry {
                registry,
                action,
                image: name,
                registry_says: format!("HTTP {code} at {}", without_query(&url)),
            },
            OciDistributionError::DigestError(error) => Self::DigestMismatch {
                registry,
                image: name,
                cause: error.to_string(),
            },
            OciDistributionError::ImageManifestNotFoundError(message) => Self::NotFound {
                registry,
                image: name,
                // oci-client's own words (no platform in an index, ...).
                registry_says: message,
            },
            other => Self::from_transport(&other, action, image),
        }
    }

    /// Describes a failure below HTTP (connection, TLS, timeouts) or any
    /// other error, by walking its chain of causes.
    pub(super) fn from_transport(
        error: &(dyn StdError + 'static),
        action: &'static str,
        image: &ImageRef,
    ) -> Self {
        let registry = image.registry().to_owned();
        let name = image.to_string();
        match TransportFailure::of(error) {
            TransportFailure::Tls(cause) => {
                let hint = if image.is_loopback() {
                    "; if this loopback registry serves plain HTTP, allow plain HTTP for loopback (`--plain-http`)"
                } else {
                    "; check the registry's certificate and that it serves HTTPS"
                };
                Self::Tls {
                    registry,
                    action,
                    image: name,
                    cause,
                    hint: hint.into(),
                }
            }
            TransportFailure::Unreachable(cause) => Self::Unreachable {
                registry,
                action,
                image: name,
                cause,
            },
            TransportFailure::Other(registry_says) => Self::Registry {
                registry,
                action,
                image: name,
                registry_says,
            },
        }
    }
}

/// What went wrong below HTTP, read from an error's chain of causes; shared
/// by the image and `https://` sources. Every text is fixed or the
/// system's (TLS library, OS, resolver): never a server's words.
#[derive(Debug)]
pub(crate) enum TransportFailure {
    /// The TLS handshake failed: rustls's words.
    Tls(String),
    /// No connection, or no answer in time: the system's words.
    Unreachable(String),
    /// Anything else, in fixed words (the whole chain is logged at debug
    /// level).
    Other(String),
}

impl TransportFailure {
    /// Classifies `error` by walking its causes.
    pub(crate) fn of(error: &(dyn StdError + 'static)) -> Self {
        let chain = causes(error);
        let innermost = chain
            .last()
            .map(|error| error.to_string())
            .unwrap_or_default();
        if let Some(tls) = chain
            .iter()
            .find_map(|error| error.downcast_ref::<rustls::Error>())
        {
            return Self::Tls(tls_words(tls));
        }
        if let Some(io) = chain.iter().find_map(|error| {
            error
                .downcast_ref::<std::io::Error>()
                .filter(|io| io.kind() != std::io::ErrorKind::Other)
        }) {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | HostUnreachable
                    | NetworkUnreachable
                    | AddrNotAvailable
                    | NotConnected
            ) {
                return Self::Unreachable(io.to_string());
            }
        }
        let text = chain
            .iter()
            .map(|error| error.to_string())
            .collect::<Vec<_>>()
            .join(": ");
        tracing::debug!(error = %text, "transport failure");
        let lower = text.to_lowercase();
        if lower.contains("dns error") || lower.contains("failed to lookup address") {
            return Self::Unreachable(innermost);
        }
        if lower.contains("timed out") || lower.contains("deadline has elapsed") {
            return Self::Unreachable(format!("no answer in time ({innermost})"));
        }
        Self::Other(other_words(&chain))
    }
}

/// rustls's words, except the names a certificate presented (the server's
/// words): the requester knows the name it asked for.
fn tls_words(error: &rustls::Error) -> String {
    use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
    match error {
        rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. }) => {
            "invalid peer certificate: it is not valid for the host name of the ref".into()
        }
        other => other.to_string(),
    }
}

/// A fixed description of a failure that is neither TLS nor a connection:
/// the first cause in `chain` whose kind is known.
fn other_words(chain: &[&(dyn StdError + 'static)]) -> String {
    for cause in chain {
        if let Some(stopped) = cause.downcast_ref::<super::address::guard::TooManyRedirects>() {
            return stopped.to_string();
        }
        if let Some(words) = cause
            .downcast_ref::<OciDistributionError>()
            .and_then(registry_words)
        {
            return words;
        }
        if let Some(error) = cause.downcast_ref::<reqwest::Error>() {
            let refused_scheme = chain
                .iter()
                .any(|cause| cause.to_string() == "URL scheme is not allowed");
            return if refused_scheme {
                "a redirect went to a URL that is not https://, which is refused".into()
            } else if error.is_redirect() {
                "a redirect could not be followed".into()
            } else if error.is_body() || error.is_decode() {
                "the connection broke while the answer was read".into()
            } else if error.is_connect() {
                "the connection failed".into()
            } else if let Some(status) = error.status() {
                format!("the server answered HTTP {}", status.as_u16())
            } else {
                "the request failed".into()
            };
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return format!("{} (I/O error)", io.kind());
        }
    }
    "an unexpected error; the provisioner's log has the details at debug level".into()
}

/// A fixed description of an `oci_client` error, or `None` for transport
/// errors (which the chain below describes). Parse errors quote what they
/// could not parse, so none of them is repeated.
fn registry_words(error: &OciDistributionError) -> Option<String> {
    use OciDistributionError as E;
    let words = match error {
        E::RequestError(_) | E::IoError(_) => return None,
        E::ManifestParsingError(_)
        | E::VersionedParsingError(_)
        | E::JsonError(_)
        | E::ManifestEncodingError(_) => {
            "the manifest it served is not a valid image manifest".to_owned()
        }
        E::UnsupportedMediaTypeError(media_type) => format!(
            "the manifest has media type {}, which is not an image manifest or index",
            media_type_words(media_type)
        ),
        E::IncompatibleLayerMediaTypeError(media_type) => format!(
            "a layer has media type {}, which cannot be unpacked",
            media_type_words(media_type)
        ),
        E::UnsupportedSchemaVersionError(version) => {
            format!("the manifest has schema version {version}, which is not supported")
        }
        E::RegistryTokenDecodeError(_) => "its token service answered with no valid token".into(),
        E::RegistryNoDigestError | E::RegistryNoLocationError => error.to_string(),
        E::SpecViolationError(_) | E::HeaderValueError(_) | E::UrlParseError(_) => {
            "its answer does not follow the distribution spec".into()
        }
        _ => "its answer could not be used".into(),
    };
    Some(words)
}

/// A media type as a manifest gives it, if it looks like one (a type, a
/// slash, a subtype, of the characters RFC 6838 allows), else a
/// placeholder: the manifest is the registry's text.
pub(crate) fn media_type_words(media_type: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "!#$&-^_.+/".contains(c);
    let looks_right = media_type.len() <= 127
        && media_type.matches('/').count() == 1
        && media_type.chars().all(allowed);
    if looks_right {
        format!("{media_type:?}")
    } else {
        "(not a media type)".into()
    }
}

/// `url` without its query and fragment: a redirect target may carry a
/// signature there (a pre-signed blob URL), which is not the requester's.
pub(crate) fn without_query(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

/// `text` as one line: control characters and runs of white space become
/// one space, cut at `max_chars` characters (with `…`). For quoting a
/// server's body or a tool's stderr in a message.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let mut line = String::new();
    for word in text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
    {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if line.chars().count() > max_chars {
        line = line.chars().take(max_chars).collect();
        line.push('…');
    }
    line
}

/// `error` and its causes, outermost first. `std::io::Error` hides the error
/// it wraps from `source()` (it returns that error's source instead), and
/// reqwest nests io errors, so wrapped errors are listed too.
pub(crate) fn causes<'a>(error: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut causes = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        causes.push(error);
        next = match error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => error.source(),
        };
    }
    causes
}

/// The code as the distribution spec writes it, e.g. `MANIFEST_UNKNOWN`.
fn code_name(code: &OciErrorCode) -> String {
    serde_json::to_value(code)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{code:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_one_short_line() {
        assert_eq!(
            one_line("<h1>Not\r\n Found</h1>\n", 200),
            "<h1>Not Found</h1>"
        );
        let long = one_line(&"x".repeat(500), 200);
        assert_eq!(long.chars().count(), 201);
        assert!(long.ends_with('…'));
    }
}
