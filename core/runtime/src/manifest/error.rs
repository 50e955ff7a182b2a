//! [`ManifestError`]: why content did not turn into objects.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// A place in the content: a file (relative to the content root) and a
/// 1-based line (0 when unknown).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The file, relative to the content root.
    pub file: PathBuf,
    /// The 1-based line; 0 when unknown.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}", self.file.display(), self.line)
        }
    }
}

/// Why a directory of manifests could not be read into objects.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}; check that the content was unpacked completely", path.display())]
    Read {
        /// The path (relative to the content root).
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// A symbolic link that leaves the content, or that names a directory.
    #[error("{}: {problem}; replace the link with the file itself", path.display())]
    Link {
        /// The link (relative to the content root).
        path: PathBuf,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A file is not UTF-8 text.
    #[error("{at}: the file is not UTF-8 text; re-encode it as UTF-8")]
    NotUtf8 {
        /// The file and the line of the first bad byte.
        at: Location,
    },
    /// A file is not well-formed YAML or JSON.
    #[error("{at}:{column}: invalid {format}: {message}; fix the syntax")]
    Syntax {
        /// The file and line of the error.
        at: Location,
        /// The 1-based column; 0 when unknown.
        column: usize,
        /// `YAML` or `JSON`.
        format: &'static str,
        /// What the parser found.
        message: String,
    },
    /// A document is not a mapping (a list, a string, a number).
    #[error(
        "{at}: the document is {found}, not an object; each document must be one Kubernetes object"
    )]
    NotAnObject {
        /// Where the document starts.
        at: Location,
        /// What it is instead.
        found: &'static str,
    },
    /// A `kind: List` (or `...List`) document: lists are not expanded.
    #[error("{at}: the document is a {kind} of objects; write each item as its own document")]
    List {
        /// Where the document starts.
        at: Location,
        /// The list's kind.
        kind: String,
    },
    /// A required field is missing, empty, or not a string.
    #[error(
        "{at}: the object has no {field}; every object needs a non-empty string apiVersion, kind and metadata.name: add it"
    )]
    MissingField {
        /// Where the document starts.
        at: Location,
        /// The field, as a path (`metadata.name`).
        field: &'static str,
    },
    /// `metadata.namespace` is present but not a string.
    #[error("{at}: metadata.namespace must be a string; fix or remove it")]
    InvalidNamespace {
        /// Where the document starts.
        at: Location,
    },
    /// One object is larger than the per-object limit.
    #[error(
        "{at}: the object is {size} bytes as JSON, over the limit of {limit} bytes (the class's maxObjectSize); shrink it or raise the limit"
    )]
    TooLarge {
        /// Where the document starts.
        at: Location,
        /// Its size, encoded as compact JSON (what the API server stores).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file named by a provisioner lies outside the content (`..`, an
    /// absolute path, or a link leading out).
    #[error("{}: the path leaves the content; name a file inside it", path.display())]
    OutsideContent {
        /// The path, as named.
        path: PathBuf,
    },
    /// A file is larger than the limit it is read with.
    #[error(
        "{}: the file is {size} bytes, over the limit of {limit} bytes (the class's maxObjectSize); shrink it or raise the limit",
        path.display()
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file read as one document holds several.
    #[error("{at}: the file holds {count} documents; it is read as one, so keep one")]
    NotOneDocument {
        /// The file (and the second document's line).
        at: Location,
        /// How many it holds.
        count: usize,
    },
    /// Two documents define the same object.
    #[error("{object} is defined twice, at {first} and at {second}; remove one of them")]
    Duplicate {
        /// The object, as [`super::ObjectKey`] displays it.
        object: String,
        /// The first definition.
        first: Location,
        /// The second definition.
        second: Location,
    },
}

impl ManifestError {
    /// The condition reason a failed unpack reports.
    pub fn reason(&self) -> &'static str {
        "UnpackFailed"
    }

    /// Whether retrying cannot help: everything but a read error is a
    /// problem of the (immutable) content itself.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Read { .. })
    }

    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Read { .. } => "read",
            Self::Link { .. } => "link",
            Self::NotUtf8 { .. } => "not_utf8",
            Self::Syntax { .. } => "syntax",
            Self::NotAnObject { .. } => "not_an_object",
            Self::List { .. } => "list",
            Self::MissingField { .. } => "missing_field",
            Self::InvalidNamespace { .. } => "invalid_namespace",
            Self::TooLarge { .. } => "too_large",
            Self::Duplicate { .. } => "duplicate",
            Self::OutsideContent { .. } => "outside_content",
            Self::FileTooLarge { .. } => "file_too_large",
            Self::NotOneDocument { .. } => "not_one_document",
        }
    }
}
