//! What can go wrong with a git ref, in words that say what to do.

use std::time::Duration;

use crate::archive::ArchiveError;

/// Why a git ref could not be resolved, fetched or unpacked. Messages name
/// the repository, quote git, and end with what to do.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The host is internal and the class does not allow that.
    #[error("{repository}: {why}; nothing was sent to it. {advice}")]
    Internal {
        /// The repository.
        repository: String,
        /// Which address, and why it is internal.
        why: String,
        /// What to do.
        advice: String,
    },
    /// The ref is not a valid git ref.
    #[error("{input:?} is not a valid git ref: {problem}")]
    InvalidRef {
        /// The ref as written.
        input: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// A `git://` ref: the unencrypted protocol.
    #[error(
        "{input:?} uses git://, the unencrypted git protocol, which anyone on the path \
         could read or change; write it as git+https://… (the same repository over HTTPS)"
    )]
    PlainGitRefused {
        /// The ref as written.
        input: String,
    },
    /// The repository has no such branch or tag.
    #[error(
        "repository {repository} has no branch or tag {reference:?}; check the ref, or push it first"
    )]
    UnknownRef {
        /// The repository.
        repository: String,
        /// The ref.
        reference: String,
    },
    /// A short name that is a branch and a tag.
    #[error(
        "ref {reference:?} of repository {repository} is both a branch and a tag; write \
         ref=refs/heads/{reference} or ref=refs/tags/{reference}"
    )]
    Ambiguous {
        /// The repository.
        repository: String,
        /// The ref.
        reference: String,
    },
    /// git failed; its own words are quoted.
    #[error("git {action} of {repository} failed: {git_says:?}{advice}")]
    Git {
        /// The repository.
        repository: String,
        /// `ls-remote`, `fetch` or `archive`.
        action: &'static str,
        /// git's stderr.
        git_says: String,
        /// A suggestion, starting with `; `, or empty.
        advice: String,
    },
    /// The path does not name a directory of the commit.
    #[error(
        "commit {commit} of {repository} has no directory {path:?} ({git_says}); fix the ref's path"
    )]
    NoSuchPath {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// The path.
        path: String,
        /// git's stderr.
        git_says: String,
    },
    /// git took too long and was stopped.
    #[error(
        "git {action} of {repository} timed out after {after:?} and was stopped; check that the server is up"
    )]
    Timeout {
        /// The repository.
        repository: String,
        /// `ls-remote`, `fetch` or `archive`.
        action: &'static str,
        /// The limit.
        after: Duration,
    },
    /// The fetch grew past the size limit.
    #[error(
        "fetching commit {commit} of {repository} took more than {limit} bytes and was stopped; make the repository (or its history at that commit) smaller, or raise the limit"
    )]
    TooLarge {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The commit's tree could not be unpacked safely.
    #[error("cannot unpack commit {commit} of {repository}: {error}")]
    Unpack {
        /// The repository.
        repository: String,
        /// The commit.
        commit: String,
        /// What the archive checks found.
        #[source]
        error: ArchiveError,
    },
    /// git could not be run at all.
    #[error(
        "cannot run git: {cause}; the provisioner's image needs the git CLI on its PATH (tested with git 2.39)"
    )]
    Spawn {
        /// Why.
        cause: String,
    },
    /// The work directory (or the CA bundle) could not be written.
    #[error(
        "cannot prepare a git work directory: {cause}; check that the temporary directory is writable"
    )]
    Workspace {
        /// Why.
        cause: String,
    },
    /// The extra roots are not usable.
    #[error("cannot set up TLS for git: {cause}")]
    Client {
        /// Why.
        cause: String,
    },
}

impl GitError {
    /// Whether retrying the same Bundle cannot help.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Unpack { error, .. } => error.is_terminal(),
            Self::InvalidRef { .. }
            | Self::PlainGitRefused { .. }
            | Self::Ambiguous { .. }
            | Self::Internal { .. }
            | Self::TooLarge { .. } => true,
            _ => false,
        }
    }

    /// A short, stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::InvalidRef { .. } => "invalid_ref",
            Self::PlainGitRefused { .. } => "plain_git_refused",
            Self::UnknownRef { .. } => "unknown_ref",
            Self::Ambiguous { .. } => "ambiguous_ref",
            Self::Git { .. } => "git",
            Self::NoSuchPath { .. } => "no_such_path",
            Self::Timeout { .. } => "timeout",
            Self::TooLarge { .. } => "too_large",
            Self::Unpack { error, .. } => error.metric_label(),
            Self::Spawn { .. } => "spawn",
            Self::Workspace { .. } => "workspace",
            Self::Client { .. } => "client",
            Self::Internal { .. } => "internal_address",
        }
    }
}
