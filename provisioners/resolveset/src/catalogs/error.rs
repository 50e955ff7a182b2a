//! The crate's one error type: each variant knows its condition reason,
//! whether retrying can help, and its metric label.

use crate::Reason;

/// Why a Catalog's newest content is not served.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source could not be fetched or unpacked; the message names the
    /// Catalog's field.
    #[error("{message}")]
    Fetch {
        /// Names the field and says what to do.
        message: String,
        /// Whether the same spec can never succeed.
        terminal: bool,
    },
    /// The content was fetched but is not a catalog the engine can serve.
    #[error("{message}")]
    Invalid {
        /// Names the file or what is missing, and says what to do.
        message: String,
    },
    /// Writing the Catalog's status failed.
    #[error("writing the Catalog status: {0}")]
    Status(#[source] kube::Error),
    /// A loading task died.
    #[error("loading the catalog stopped: {0}")]
    Task(String),
}

impl Error {
    /// The `Unpacked` reason this error is reported with.
    pub fn reason(&self) -> Reason {
        match self {
            Self::Invalid { .. } => Reason::CatalogInvalid,
            Self::Fetch { .. } | Self::Status(_) | Self::Task(_) => Reason::UnpackFailed,
        }
    }

    /// Whether retrying with the same spec cannot help (an image that is
    /// not there, content that does not parse).
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Fetch { terminal, .. } => *terminal,
            Self::Invalid { .. } => true,
            Self::Status(_) | Self::Task(_) => false,
        }
    }

    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Fetch { .. } => "fetch",
            Self::Invalid { .. } => "invalid",
            Self::Status(_) => "status",
            Self::Task(_) => "task",
        }
    }
}
