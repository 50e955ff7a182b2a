//! The crate's one error type: what can go wrong around the rules, never a
//! rule's own verdict (a denial is an answer, not an error).

/// Everything that can fail while serving admission reviews.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The serving certificate's files cannot be served.
    #[error("the serving certificate (--cert, --key): {0}")]
    Tls(#[from] pakket_runtime::kernel::tls::TlsError),
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
            Self::Tls(error) => error.metric_label(),
            Self::SubjectAccessReview(_) => "subject_access_review",
            Self::Lookup { .. } => "lookup",
        }
    }
}
