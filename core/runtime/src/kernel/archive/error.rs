//! [`ArchiveError`]: why an archive was refused or could not be extracted.

use std::io;
use std::path::PathBuf;

use super::path::PathProblem;

/// Why extraction failed. Every variant names the entry it stopped at
/// (`path`); before the first entry that is `(start of archive)`, after the
/// last one `(end of archive)`.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// An entry path (or a hard link's target) is unsafe or unreadable.
    #[error(
        "archive entry {path:?} {problem}; entry paths must be relative UTF-8 paths that stay inside the bundle: rebuild the archive from the bundle's directory"
    )]
    UnsafePath {
        /// The entry path as written (lossy if not UTF-8).
        path: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
    /// A symbolic link: refused whatever its target (see the module docs).
    #[error(
        "archive entry {path:?} is a symbolic link to {target:?}; bundles may hold only files and directories: replace the link with a copy of its target"
    )]
    Symlink {
        /// The entry path.
        path: String,
        /// Where the link points.
        target: String,
    },
    /// A hard link that does not name a regular file earlier in the archive.
    #[error(
        "archive entry {path:?} is a hard link to {target:?}, which {problem}; a hard link may only name a regular file earlier in the archive"
    )]
    HardLink {
        /// The entry path.
        path: String,
        /// The link's target as written.
        target: String,
        /// What is wrong with the target.
        problem: String,
    },
    /// A device, fifo, sparse file or unknown entry type.
    #[error(
        "archive entry {path:?} is a {kind}; bundles may hold only files and directories: remove it from the archive"
    )]
    Special {
        /// The entry path.
        path: String,
        /// The kind of entry.
        kind: String,
    },
    /// The same path appears twice (as two files, or a file and a directory).
    #[error(
        "archive entry {path:?} appears more than once; each path may appear once: rebuild the archive without duplicates"
    )]
    Duplicate {
        /// The entry path.
        path: String,
    },
    /// An entry lies under a path that is a file.
    #[error("archive entry {path:?} lies under {parent:?}, which is a file; rename one of them")]
    NotADirectory {
        /// The entry path.
        path: String,
        /// The parent that is a file.
        parent: String,
    },
    /// One file is larger than [`super::Limits::max_file_size`].
    #[error(
        "archive entry {path:?} is {size} bytes, over the limit of {limit} bytes per file (the class's maxObjectSize); shrink the file or raise the limit"
    )]
    FileTooLarge {
        /// The entry path.
        path: String,
        /// Its size (as declared, or as read when it was read).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// More than [`super::Limits::max_files`] entries.
    #[error(
        "archive has more than {limit} entries (stopped at {path:?}); split the bundle or raise the limit"
    )]
    TooManyEntries {
        /// The first entry over the limit.
        path: String,
        /// The limit.
        limit: u64,
    },
    /// The decompressed stream (or the files written) passed
    /// [`super::Limits::max_total_size`].
    #[error(
        "archive expands to more than {limit} bytes (stopped at {path:?}); shrink the bundle or raise the limit"
    )]
    TooLarge {
        /// The entry being read when the limit was reached.
        path: String,
        /// The limit.
        limit: u64,
    },
    /// The bytes are not a well-formed tar (or gzip) stream.
    #[error(
        "archive is not a valid tar or tar.gz stream at entry {path:?}: {source}; check that the source is a tar or gzipped tar file"
    )]
    Corrupt {
        /// The entry being read.
        path: String,
        /// What the decoder found.
        #[source]
        source: io::Error,
    },
    /// The reader handed to extraction failed (a network error, say).
    #[error("cannot read the archive at entry {path:?}: {source}; retry the fetch")]
    Read {
        /// The entry being read.
        path: String,
        /// The reader's error.
        #[source]
        source: io::Error,
    },
    /// Writing an entry to disk failed.
    #[error(
        "cannot write archive entry {path:?}: {source}; check that the content volume is writable and has space"
    )]
    Write {
        /// The entry path.
        path: String,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// The destination already exists.
    #[error(
        "cannot extract into {}: it already exists; extract into a new path (or remove it first)", path.display()
    )]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
    /// The destination (or its temporary sibling) could not be prepared or
    /// renamed into place.
    #[error(
        "cannot extract into {}: {source}; check that its parent directory exists and is writable", path.display()
    )]
    Destination {
        /// The destination.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
}

impl ArchiveError {
    /// The condition reason a failed unpack reports.
    pub fn reason(&self) -> &'static str {
        "UnpackFailed"
    }

    /// Whether retrying cannot help: the archive itself is refused. Bundle
    /// specs are immutable, so the same refs give the same bytes.
    pub fn is_terminal(&self) -> bool {
        !matches!(
            self,
            Self::Read { .. } | Self::Write { .. } | Self::Destination { .. }
        )
    }

    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::UnsafePath { .. } => "unsafe_path",
            Self::Symlink { .. } => "symlink",
            Self::HardLink { .. } => "hard_link",
            Self::Special { .. } => "special_file",
            Self::Duplicate { .. } => "duplicate",
            Self::NotADirectory { .. } => "not_a_directory",
            Self::FileTooLarge { .. } => "file_too_large",
            Self::TooManyEntries { .. } => "too_many_entries",
            Self::TooLarge { .. } => "too_large",
            Self::Corrupt { .. } => "corrupt",
            Self::Read { .. } => "read",
            Self::Write { .. } => "write",
            Self::DestinationExists { .. } => "destination_exists",
            Self::Destination { .. } => "destination",
        }
    }

    /// The entry the error names, or the destination for destination errors.
    pub fn path(&self) -> String {
        match self {
            Self::UnsafePath { path, .. }
            | Self::Symlink { path, .. }
            | Self::HardLink { path, .. }
            | Self::Special { path, .. }
            | Self::Duplicate { path }
            | Self::NotADirectory { path, .. }
            | Self::FileTooLarge { path, .. }
            | Self::TooManyEntries { path, .. }
            | Self::TooLarge { path, .. }
            | Self::Corrupt { path, .. }
            | Self::Read { path, .. }
            | Self::Write { path, .. } => path.clone(),
            Self::DestinationExists { path } | Self::Destination { path, .. } => {
                path.display().to_string()
            }
        }
    }
}
