//! The crate's one error type: what can go wrong around the rules, never a
//! rule's own verdict (a denial is an answer, not an error).

use std::path::PathBuf;

/// Everything that can fail while serving admission reviews.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate or key file could not be read.
    #[error("reading {path}: {source}; check --cert and --key and the mounted Secret")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A certificate or key file holds no usable PEM.
    #[error("{path}: {problem}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The key does not fit the certificate, or rustls refused them.
    #[error(
        "certificate {cert} with key {key}: {source}; the key must belong to the first certificate"
    )]
    Certificate {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        source: rustls::Error,
    },
    /// A SubjectAccessReview could not be made.
    #[error("asking the apiserver for a SubjectAccessReview failed: {0}")]
    SubjectAccessReview(#[source] kube::Error),
    /// A lookup the rules need (a ConfigMap) failed.
    #[error("reading {what}: {source}")]
    Lookup {
        /// What was being read.
        what: String,
        /// What the apiserver said.
        source: kube::Error,
    },
}

impl Error {
    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::ReadFile { .. } => "read_file",
            Self::Pem { .. } => "pem",
            Self::Certificate { .. } => "certificate",
            Self::SubjectAccessReview(_) => "subject_access_review",
            Self::Lookup { .. } => "lookup",
        }
    }
}
