//! What can go wrong fetching a tarball, in words that say what to do.

use std::time::Duration;

use crate::archive::ArchiveError;
use crate::source::address::Refusal;
use crate::store::Digest;

/// Why a tarball could not be downloaded or unpacked. Messages name the URL
/// and end with what to do.
#[derive(Debug, thiserror::Error)]
pub enum HttpsError {
    /// The ref is not an `https://` tarball ref.
    #[error("{input:?} is not a valid https:// tarball ref: {problem}")]
    InvalidRef {
        /// The ref as written.
        input: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// No connection could be made.
    #[error(
        "cannot reach {host} to download {url}: {cause}; is the server up and the host name right?"
    )]
    Unreachable {
        /// The server's host (and port).
        host: String,
        /// The URL.
        url: String,
        /// The system's words.
        cause: String,
    },
    /// The server did not answer, or went silent, for too long.
    #[error(
        "downloading {url} timed out after {after:?} ({what}); check that the server is up and not overloaded"
    )]
    Timeout {
        /// The URL.
        url: String,
        /// Which limit passed.
        what: &'static str,
        /// The limit.
        after: Duration,
    },
    /// The TLS handshake failed.
    #[error(
        "TLS with {host} failed while downloading {url}: {cause}; check that it serves HTTPS \
         with a valid certificate (a private CA's certificate goes into the provisioner's \
         extra roots)"
    )]
    Tls {
        /// The server's host.
        host: String,
        /// The URL.
        url: String,
        /// What rustls said.
        cause: String,
    },
    /// The server answered with an error status. Its body is never
    /// echoed: the requester reads this message, and the body is what the
    /// provisioner saw, not what the requester may see.
    #[error("{url}: the server answered HTTP {status} {reason}; {advice}")]
    Status {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The code's standard reason phrase (not the server's).
        reason: &'static str,
        /// What to do.
        advice: &'static str,
    },
    /// The host (or a redirect's) is internal and the class does not allow
    /// that; nothing was sent to it.
    #[error("{url}: {refusal}; nothing was sent to it. {advice}")]
    Internal {
        /// The URL of the ref.
        url: String,
        /// Which host, and what it is.
        refusal: Refusal,
        /// What to do.
        advice: String,
    },
    /// The tarball is bigger than allowed.
    #[error(
        "{url} is too large: {detail}, over the limit of {limit} bytes; raise the limit or make the bundle smaller"
    )]
    TooLarge {
        /// The URL.
        url: String,
        /// How large.
        detail: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes do not hash to the ref's pin.
    #[error(
        "{url} does not match its pin: expected {expected}, got {actual}; the file changed \
         since the ref was written, or something between us and the server changed it: \
         check the file, and fix the pin only if the new file is trusted"
    )]
    DigestMismatch {
        /// The URL.
        url: String,
        /// The pin.
        expected: Digest,
        /// What the bytes hash to.
        actual: Digest,
    },
    /// The transfer failed some other way (a redirect to plain HTTP, a
    /// connection cut mid-body), in fixed words.
    #[error("downloading {url} failed: {cause}")]
    Transfer {
        /// The URL.
        url: String,
        /// What went wrong.
        cause: String,
    },
    /// A single manifest or catalog file over the per-file limit.
    #[error(
        "{url} is {size} bytes, over the limit of {limit} bytes per file (the class's maxObjectSize); split the file or raise the limit"
    )]
    FileTooLarge {
        /// The URL.
        url: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The tarball could not be unpacked safely.
    #[error("cannot unpack {url}: {error}")]
    Unpack {
        /// The URL.
        url: String,
        /// What the archive checks found.
        #[source]
        error: ArchiveError,
    },
    /// The download could not be written to its temporary file.
    #[error(
        "downloading {url}: cannot spool it to a temporary file ({cause}); check that the provisioner's temporary directory (TMPDIR, /tmp) is writable and has room"
    )]
    Spool {
        /// The URL.
        url: String,
        /// The filesystem error.
        cause: String,
    },
    /// The HTTP client could not be built (e.g. a bad extra root).
    #[error("cannot set up an HTTPS client: {cause}")]
    Client {
        /// Why.
        cause: String,
    },
}

impl HttpsError {
    /// Whether retrying the same Bundle cannot help.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Unpack { error, .. } => error.is_terminal(),
            Self::InvalidRef { .. }
            | Self::TooLarge { .. }
            | Self::FileTooLarge { .. }
            | Self::DigestMismatch { .. }
            | Self::Internal { .. } => true,
            _ => false,
        }
    }

    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidRef { .. } => "invalid_ref",
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout { .. } => "timeout",
            Self::Tls { .. } => "tls",
            Self::Status { .. } => "http_status",
            Self::TooLarge { .. } | Self::FileTooLarge { .. } => "too_large",
            Self::DigestMismatch { .. } => "digest_mismatch",
            Self::Transfer { .. } => "transfer",
            Self::Unpack { error, .. } => error.metric_label(),
            Self::Client { .. } => "client",
            Self::Spool { .. } => "spool",
            Self::Internal { .. } => "internal_address",
        }
    }
}
