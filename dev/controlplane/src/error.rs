//! The one error type of this crate.

use std::path::PathBuf;

/// Why the control plane could not be built, started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Certificate(#[from] rcgen::Error),
    /// The Go build of the control-plane binaries failed.
    #[error("building the control plane failed ({detail}); rerun {script} to see the Go output")]
    Build {
        /// The build script that failed or should have built the binary.
        script: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// A component exited while starting.
    #[error("{component} exited during start-up ({status}); last lines of {log}:\n{tail}")]
    Exited {
        /// etcd, kube-apiserver, kube-controller-manager, kube-scheduler or kwok.
        component: String,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// The control plane did not become ready in time.
    #[error("{what} not ready after {seconds}s: {detail}; see the logs in {logs}")]
    NotReady {
        /// What was waited for.
        what: &'static str,
        /// How long.
        seconds: u64,
        /// The last error seen.
        detail: String,
        /// The log folder.
        logs: PathBuf,
    },
    /// A kubeconfig or state file could not be written or read.
    #[error("{0}")]
    Config(String),
    /// A kube client call failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

impl Error {
    /// An I/O error on `path` while doing `action`.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }
}

/// Result with this crate's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
