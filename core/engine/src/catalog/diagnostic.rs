//! What can go wrong while loading a catalog: hard errors ([`CatalogError`])
//! and per-object findings ([`Diagnostic`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where an object was written: a file and the line its document starts on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// The file (or the name given to [`crate::catalog::Catalog::from_str`]).
    pub file: Arc<Path>,
    /// The 1-based line the document starts on; 0 when unknown.
    pub line: u32,
}

impl Origin {
    /// An origin in `file` at `line` (1-based; 0 when unknown).
    pub fn new(file: impl AsRef<Path>, line: u32) -> Self {
        Self {
            file: Arc::from(file.as_ref()),
            line,
        }
    }
}

impl Default for Origin {
    /// No file, unknown line: for objects built by hand.
    fn default() -> Self {
        Self::new("", 0)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}", self.file.display(), self.line)
        }
    }
}

/// A problem that stops a catalog from loading at all.
///
/// Only problems that leave nothing trustworthy to read are hard errors: an
/// unreadable path, bytes that are not UTF-8, and JSON or YAML that does not
/// parse (after a syntax error a stream cannot be resynchronised reliably, so
/// every later document of that file is in doubt). Everything else is a
/// [`Diagnostic`].
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The path, or a file or directory under it, could not be read.
    #[error("cannot read catalog {name:?} at {}: {source}; check the path and its permissions", path.display())]
    Read {
        /// The catalog's name.
        name: String,
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not UTF-8 text.
    #[error("{}:{line}: catalog file is not UTF-8 text (invalid byte at offset {offset}); re-encode it as UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the first invalid byte.
        line: u32,
        /// The byte offset of the first invalid byte.
        offset: usize,
    },
    /// A file is not well-formed JSON or YAML.
    #[error("{}:{line}:{column}: invalid {format}: {message}; fix the syntax (every later document in this file was not read)", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The format it was read as.
        format: super::Format,
        /// The 1-based line of the error.
        line: u32,
        /// The 1-based column of the error (0 when unknown).
        column: u32,
        /// What the parser found wrong.
        message: String,
    },
}

impl CatalogError {
    /// A condition reason for this error, CamelCase as Kubernetes writes them.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Read { .. } => "CatalogUnreadable",
            Self::NotUtf8 { .. } | Self::Syntax { .. } => "CatalogInvalid",
        }
    }

    /// A short label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Read { .. } => "read",
            Self::NotUtf8 { .. } => "not_utf8",
            Self::Syntax { .. } => "syntax",
        }
    }
}

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The object was loaded, but something about it is suspicious or would
    /// fail strict validation (`opm validate`).
    Warning,
    /// The object (or the one field named) was left out of the catalog.
    Error,
}

/// What kind of problem a [`Diagnostic`] reports. The list is exhaustive;
/// [`DiagnosticCode::ALL`] names every code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiagnosticCode {
    /// A document is not an object, has no `schema`, or has a field of the
    /// wrong type. The document is left out.
    InvalidDocument,
    /// A package, channel or bundle has an empty name. Left out.
    EmptyName,
    /// A second `olm.package` document with the same name. Left out.
    DuplicatePackage,
    /// A second channel with the same package and name. Left out.
    DuplicateChannel,
    /// A second bundle with the same name. Left out.
    DuplicateBundle,
    /// A second `olm.deprecations` document for a package. Left out.
    DuplicateDeprecations,
    /// A channel, bundle or deprecation names a package that has no
    /// `olm.package` document. Left out.
    UnknownPackage,
    /// A bundle has no `olm.package` property. Left out.
    MissingPackageProperty,
    /// A bundle has more than one `olm.package` property. Left out.
    MultiplePackageProperties,
    /// A bundle's `package` field and its `olm.package` property disagree. Left out.
    PackageMismatch,
    /// A bundle's version is not semver. Left out.
    InvalidVersion,
    /// A known property does not have its documented shape. The bundle is left out.
    InvalidProperty,
    /// An `olm.package.required` version range does not parse. The bundle is
    /// left out: ignoring a requirement would install it without its dependency.
    InvalidVersionRange,
    /// An `olm.constraint` cannot be read or evaluated (unknown kind, CEL
    /// that does not parse). The bundle is left out, as with an unreadable range.
    InvalidConstraint,
    /// A channel entry's `skipRange` does not parse. The entry is kept without
    /// it: that only removes upgrade edges, never adds one.
    InvalidSkipRange,
    /// An `olm.csv.metadata` property could not be read. The bundle is kept
    /// without CSV metadata (it is informational only).
    InvalidCsvMetadata,
    /// A channel lists the same bundle twice. The first entry is used.
    DuplicateEntry,
    /// A channel has no entries. Kept.
    EmptyChannel,
    /// A channel entry names a bundle the catalog does not have. Kept.
    EntryWithoutBundle,
    /// A bundle is listed in no channel of its package. Kept.
    BundleNotInChannel,
    /// A package's `defaultChannel` names a channel it does not have. Kept.
    UnknownDefaultChannel,
    /// A deprecation entry is malformed or names a channel or bundle that
    /// does not exist. The entry is left out.
    InvalidDeprecation,
    /// A channel entry replaces a bundle that is not in the channel. Kept
    /// (pruned catalogs do this on purpose).
    DanglingReplaces,
    /// Channel entries replace each other in a cycle. Kept.
    ReplacesCycle,
    /// A channel has more than one head (entry nothing replaces or skips). Kept.
    MultipleHeads,
    /// Every entry of a channel is replaced or skipped by another. Kept.
    NoHead,
}

impl DiagnosticCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [DiagnosticCode] = &[
        Self::InvalidDocument,
        Self::EmptyName,
        Self::DuplicatePackage,
        Self::DuplicateChannel,
        Self::DuplicateBundle,
        Self::DuplicateDeprecations,
        Self::UnknownPackage,
        Self::MissingPackageProperty,
        Self::MultiplePackageProperties,
        Self::PackageMismatch,
        Self::InvalidVersion,
        Self::InvalidProperty,
        Self::InvalidVersionRange,
        Self::InvalidConstraint,
        Self::InvalidSkipRange,
        Self::InvalidCsvMetadata,
        Self::DuplicateEntry,
        Self::EmptyChannel,
        Self::EntryWithoutBundle,
        Self::BundleNotInChannel,
        Self::UnknownDefaultChannel,
        Self::InvalidDeprecation,
        Self::DanglingReplaces,
        Self::ReplacesCycle,
        Self::MultipleHeads,
        Self::NoHead,
    ];

    /// The code as CamelCase text, stable for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidDocument => "InvalidDocument",
            Self::EmptyName => "EmptyName",
            Self::DuplicatePackage => "DuplicatePackage",
            Self::DuplicateChannel => "DuplicateChannel",
            Self::DuplicateBundle => "DuplicateBundle",
            Self::DuplicateDeprecations => "DuplicateDeprecations",
            Self::UnknownPackage => "UnknownPackage",
            Self::MissingPackageProperty => "MissingPackageProperty",
            Self::MultiplePackageProperties => "MultiplePackageProperties",
            Self::PackageMismatch => "PackageMismatch",
            Self::InvalidVersion => "InvalidVersion",
            Self::InvalidProperty => "InvalidProperty",
            Self::InvalidVersionRange => "InvalidVersionRange",
            Self::InvalidConstraint => "InvalidConstraint",
            Self::InvalidSkipRange => "InvalidSkipRange",
            Self::InvalidCsvMetadata => "InvalidCsvMetadata",
            Self::DuplicateEntry => "DuplicateEntry",
            Self::EmptyChannel => "EmptyChannel",
            Self::EntryWithoutBundle => "EntryWithoutBundle",
            Self::BundleNotInChannel => "BundleNotInChannel",
            Self::UnknownDefaultChannel => "UnknownDefaultChannel",
            Self::InvalidDeprecation => "InvalidDeprecation",
            Self::DanglingReplaces => "DanglingReplaces",
            Self::ReplacesCycle => "ReplacesCycle",
            Self::MultipleHeads => "MultipleHeads",
            Self::NoHead => "NoHead",
        }
    }

    /// Whether the object was left out ([`Severity::Error`]) or kept.
    pub fn severity(self) -> Severity {
        match self {
            Self::InvalidDocument
            | Self::EmptyName
            | Self::DuplicatePackage
            | Self::DuplicateChannel
            | Self::DuplicateBundle
            | Self::DuplicateDeprecations
            | Self::UnknownPackage
            | Self::MissingPackageProperty
            | Self::MultiplePackageProperties
            | Self::PackageMismatch
            | Self::InvalidVersion
            | Self::InvalidProperty
            | Self::InvalidVersionRange
            | Self::InvalidConstraint
            | Self::InvalidSkipRange
            | Self::InvalidDeprecation => Severity::Error,
            Self::InvalidCsvMetadata
            | Self::DuplicateEntry
            | Self::EmptyChannel
            | Self::EntryWithoutBundle
            | Self::BundleNotInChannel
            | Self::UnknownDefaultChannel
            | Self::DanglingReplaces
            | Self::ReplacesCycle
            | Self::MultipleHeads
            | Self::NoHead => Severity::Warning,
        }
    }

    /// The default advice for this code: what the catalog author should do.
    pub fn hint(self) -> &'static str {
        match self {
            Self::InvalidDocument => {
                "write each document as an object with a string `schema` and the fields its schema documents"
            }
            Self::EmptyName => "give the object a non-empty name",
            Self::DuplicatePackage => "keep one olm.package document per package",
            Self::DuplicateChannel => "merge the entries into one olm.channel document",
            Self::DuplicateBundle => {
                "give every bundle a unique name (usually <package>.v<version>)"
            }
            Self::DuplicateDeprecations => "keep one olm.deprecations document per package",
            Self::UnknownPackage => "add an olm.package document for the package or fix the name",
            Self::MissingPackageProperty => {
                "add an olm.package property {packageName, version} to the bundle"
            }
            Self::MultiplePackageProperties => "keep exactly one olm.package property",
            Self::PackageMismatch => {
                "make the bundle's `package` match its olm.package property's packageName"
            }
            Self::InvalidVersion => "write the version as semver MAJOR.MINOR.PATCH, e.g. 1.2.3",
            Self::InvalidProperty => "write the property value in the shape its type documents",
            Self::InvalidVersionRange => {
                "write the range in blang/semver syntax, e.g. >=1.2.0 <2.0.0"
            }
            Self::InvalidConstraint => {
                "write the constraint as one of package, gvk, all, any, not or cel, as OLM documents"
            }
            Self::InvalidSkipRange => "write skipRange in blang/semver syntax, e.g. >=1.2.0 <1.3.0",
            Self::InvalidCsvMetadata => "write olm.csv.metadata as opm renders it from the CSV",
            Self::DuplicateEntry => "list each bundle once per channel",
            Self::EmptyChannel => "add at least one entry or remove the channel",
            Self::EntryWithoutBundle => "add the olm.bundle document or remove the entry",
            Self::BundleNotInChannel => "add the bundle to a channel or remove it",
            Self::UnknownDefaultChannel => "name one of the package's channels as defaultChannel",
            Self::InvalidDeprecation => {
                "reference olm.package, or an existing olm.channel or olm.bundle by name"
            }
            Self::DanglingReplaces => {
                "nothing to do if the replaced bundle was pruned on purpose; else add it to the channel"
            }
            Self::ReplacesCycle => {
                "break the cycle: an entry must never (indirectly) replace itself"
            }
            Self::MultipleHeads => {
                "make every entry but the newest replaced or skipped by another entry"
            }
            Self::NoHead => "make sure the newest entry is not replaced or skipped by another",
        }
    }
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A problem found in an otherwise well-formed catalog: the object it names
/// was left out (or kept, for a [`Severity::Warning`]), everything else loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of problem.
    pub code: DiagnosticCode,
    /// The file and line of the document the problem is in.
    pub origin: Origin,
    /// The object, as `schema "name"` (e.g. `olm.bundle "etcd.v0.9.4"`).
    pub object: String,
    /// The field, as a path inside the document (e.g. `entries[2].skipRange`).
    pub field: Option<String>,
    /// What is wrong, in lowercase prose.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl Diagnostic {
    /// A diagnostic with the code's default hint and no field.
    pub fn new(
        code: DiagnosticCode,
        origin: Origin,
        object: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code,
            origin,
            object: object.into(),
            field: None,
            message: message.into(),
            hint: code.hint().to_owned(),
        }
    }

    /// The same diagnostic naming `field`.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The same diagnostic at a more precise line (ignored when 0).
    pub fn at_line(mut self, line: u32) -> Self {
        if line != 0 {
            self.origin.line = line;
        }
        self
    }

    /// Whether the object was left out or kept.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity() {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{}: {level} [{}] {}",
            self.origin, self.code, self.object
        )?;
        if let Some(field) = &self.field {
            write!(f, " field {field}")?;
        }
        write!(f, ": {}; {}", self.message, self.hint)
    }
}

/// `schema "name"`, the way diagnostics name an object.
pub(crate) fn object(schema: &str, name: &str) -> String {
    format!("{schema} {name:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_code_is_listed_once_with_a_distinct_name_and_a_hint() {
        // `as_str`, `severity` and `hint` match without wildcards, so a new
        // variant fails to compile until it has all three; this keeps ALL in step.
        let names: HashSet<_> = DiagnosticCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), DiagnosticCode::ALL.len());
        assert_eq!(
            DiagnosticCode::ALL.len(),
            DiagnosticCode::NoHead as usize + 1
        );
        for (position, code) in DiagnosticCode::ALL.iter().enumerate() {
            assert_eq!(
                *code as usize, position,
                "{code} is out of declaration order"
            );
            assert!(!code.hint().is_empty());
        }
    }

    #[test]
    fn display_names_file_line_object_field_and_advice() {
        let diagnostic = Diagnostic::new(
            DiagnosticCode::InvalidSkipRange,
            Origin::new("catalog.json", 12),
            object("olm.channel", "etcd/alpha"),
            "invalid version range",
        )
        .with_field("entries[1].skipRange");
        let text = diagnostic.to_string();
        assert!(
            text.starts_with(
                "catalog.json:12: error [InvalidSkipRange] olm.channel \"etcd/alpha\""
            ),
            "{text}"
        );
        assert!(text.contains("entries[1].skipRange"), "{text}");
        assert!(text.contains("blang/semver"), "{text}");
    }
}
