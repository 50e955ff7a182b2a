//! Why a pass stopped before the package was installed: each variant knows
//! its condition reason, whether retrying the same spec can help, and its
//! metric label.

use pakket_packages_api::conditions::PackageReason;

/// Why a pass of the package controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// It cannot go on as it is: `Failed`, with this reason; looked at
    /// again in case the world changes.
    #[error("{message}")]
    Failed {
        /// The reason on `Ready` and `Failed`.
        reason: PackageReason,
        /// Names the object or field and says what to do.
        message: String,
    },
    /// On its way: `Pending`, with this reason.
    #[error("{message}")]
    Waiting {
        /// The reason on `Ready` and `Failed`.
        reason: PackageReason,
        /// What it waits for.
        message: String,
    },
    /// The apiserver failed us: nothing is said on the package; retried.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl Error {
    /// `Failed` with `reason`.
    pub fn failed(reason: PackageReason, message: impl Into<String>) -> Self {
        Self::Failed {
            reason,
            message: message.into(),
        }
    }

    /// `Pending` with `reason`.
    pub fn waiting(reason: PackageReason, message: impl Into<String>) -> Self {
        Self::Waiting {
            reason,
            message: message.into(),
        }
    }

    /// The reason the package's `Ready` and `Failed` say this with
    /// (`None`: an apiserver error, not written on the package).
    pub fn reason(&self) -> Option<PackageReason> {
        match self {
            Self::Failed { reason, .. } | Self::Waiting { reason, .. } => Some(*reason),
            Self::Api(_) => None,
        }
    }

    /// Whether retrying with the same spec cannot help by itself (only a
    /// change of the package, its repository or what it reads can).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Failed { .. })
    }

    /// A short label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Failed { .. } => "failed",
            Self::Waiting { .. } => "waiting",
            Self::Api(_) => "api",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stop_knows_its_reason_and_whether_it_is_terminal() {
        let failed = Error::failed(PackageReason::UnsupportedFormat, "cluster-scoped");
        assert_eq!(failed.reason(), Some(PackageReason::UnsupportedFormat));
        assert!(failed.is_terminal());
        assert_eq!(failed.metric_label(), "failed");
        assert_eq!(failed.to_string(), "cluster-scoped");
        let waiting = Error::waiting(PackageReason::Pending, "waiting for PackageInfo x");
        assert_eq!(waiting.reason(), Some(PackageReason::Pending));
        assert!(!waiting.is_terminal());
        assert_eq!(waiting.metric_label(), "waiting");
    }
}
