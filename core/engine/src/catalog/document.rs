//! Decoding catalog files into FBC documents.
//!
//! A JSON file is a stream of JSON values, each one document, separated by
//! any whitespace (or none: `{..}{..}` is a stream of two). A YAML file is a
//! multi-document stream (`---`); empty documents are skipped.
//!
//! Every document is first read as a whole (that is where syntax errors are
//! found, and they are hard errors), then by its `schema` into a typed shape.
//! A document whose shape is wrong becomes a [`Diagnostic`] and is left out.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde_json::value::RawValue;

use super::diagnostic::{CatalogError, Diagnostic, DiagnosticCode, Origin};
use super::model::OtherDocument;
use super::property::{RawProperty, strip_position};

/// `olm.package`.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// `olm.channel`.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// `olm.bundle`.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// `olm.deprecations`.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// The encoding of a catalog file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// A stream of JSON documents (`.json`).
    Json,
    /// A multi-document YAML stream (`.yaml`, `.yml`).
    Yaml,
}

impl Format {
    /// The format a file's extension names, if any (case-insensitive).
    pub fn from_path(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "json" => Some(Self::Json),
            "yaml" | "yml" => Some(Self::Yaml),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Json => "JSON",
            Self::Yaml => "YAML",
        })
    }
}

/// A decoded document, typed by its schema.
#[derive(Debug)]
pub(crate) enum Document {
    Package(PackageDoc),
    Channel(ChannelDoc),
    Bundle(BundleDoc),
    Deprecations(DeprecationsDoc),
    HelmChart(super::helm_chart::HelmChartDoc),
    Other(OtherDocument),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PackageDoc {
    pub name: String,
    #[serde(default)]
    pub default_channel: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChannelDoc {
    pub package: String,
    pub name: String,
    #[serde(default)]
    pub entries: Option<Vec<EntryDoc>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EntryDoc {
    pub name: String,
    #[serde(default)]
    pub replaces: Option<String>,
    #[serde(default)]
    pub skips: Option<Vec<String>>,
    #[serde(default, rename = "skipRange")]
    pub skip_range: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BundleDoc {
    pub name: String,
    pub package: String,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub properties: Option<Vec<RawProperty>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeprecationsDoc {
    pub package: String,
    #[serde(default)]
    pub entries: Option<Vec<DeprecationEntryDoc>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeprecationEntryDoc {
    pub reference: ReferenceDoc,
    pub message: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ReferenceDoc {
    pub schema: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// Decodes every document of one file, in order. Syntax errors stop the
/// file; shape errors become diagnostics.
pub(crate) fn decode(
    text: &str,
    file: &Arc<Path>,
    format: Format,
    documents: &mut Vec<(Origin, Document)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), CatalogError> {
    match format {
        Format::Json => decode_json(text, file, documents, diagnostics),
        Format::Yaml => decode_yaml(text, file, documents, diagnostics),
    }
}

fn decode_json(
    text: &str,
    file: &Arc<Path>,
    documents: &mut Vec<(Origin, Document)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), CatalogError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = LineCounter::default();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    for item in stream {
        let raw = item.map_err(|error| CatalogError::Syntax {
            path: file.to_path_buf(),
            format: Format::Json,
            line: to_u32(error.line()),
            column: to_u32(error.column()),
            message: strip_position(&error.to_string()),
        })?;
        // A raw value borrows from `text`, so its address gives its offset.
        let offset = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        let origin = Origin {
            file: Arc::clone(file),
            line: lines.line_at(text, offset),
        };
        decode_one(Input::Json(raw.get()), origin, documents, diagnostics);
    }
    Ok(())
}

fn decode_yaml(
    text: &str,
    file: &Arc<Path>,
    documents: &mut Vec<(Origin, Document)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<(), CatalogError> {
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    // The default budget suits configuration files (1024 documents, 250k
    // nodes); a rendered catalog is far bigger. Counts grow with the input,
    // so tie them to its length; alias, anchor and depth caps stay, and they
    // are what stops a small file from expanding into a huge one.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = budget.max_documents.max(text.len() / 4);
    budget.max_nodes = budget.max_nodes.max(text.len());
    budget.max_events = budget.max_events.max(text.len().saturating_mul(2));
    options.budget = Some(budget);
    let values: Vec<serde_saphyr::Spanned<serde_json::Value>> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|error| {
            let location = error.location();
            CatalogError::Syntax {
                path: file.to_path_buf(),
                format: Format::Yaml,
                line: location.map_or(0, |l| to_u32(l.line())),
                column: location.map_or(0, |l| to_u32(l.column())),
                message: strip_position(&error.to_string()),
            }
        })?;
    for value in &values {
        let origin = Origin {
            file: Arc::clone(file),
            line: to_u32(value.referenced.line()),
        };
        decode_one(Input::Yaml(&value.value), origin, documents, diagnostics);
    }
    Ok(())
}

fn to_u32(number: impl TryInto<u32>) -> u32 {
    number.try_into().unwrap_or(u32::MAX)
}

/// Turns byte offsets into 1-based line numbers, for offsets that only grow.
#[derive(Default)]
struct LineCounter {
    offset: usize,
    newlines: usize,
}

impl LineCounter {
    fn line_at(&mut self, text: &str, offset: usize) -> u32 {
        let offset = offset.min(text.len());
        if offset >= self.offset {
            let skipped = &text.as_bytes()[self.offset..offset];
            self.newlines += skipped.iter().filter(|&&b| b == b'\n').count();
            self.offset = offset;
        }
        to_u32(self.newlines + 1)
    }
}

/// One document, as JSON text or as a YAML-decoded value.
#[derive(Clone, Copy)]
enum Input<'a> {
    Json(&'a str),
    Yaml(&'a serde_json::Value),
}

/// Why a document does not have its schema's shape.
struct FieldError {
    /// Path of the offending field (`entries[2].name`), `.` for the root.
    path: String,
    /// 1-based line inside the document, when the format tells.
    line: Option<u32>,
    message: String,
}

impl<'a> Input<'a> {
    fn is_object(self) -> bool {
        match self {
            Self::Json(text) => text.starts_with('{'),
            Self::Yaml(value) => value.is_object(),
        }
    }

    /// Decodes into `T`; on failure, decodes again tracking the path so the
    /// diagnostic can name the field (the fast path stays untracked).
    fn parse<T: Deserialize<'a>>(self) -> Result<T, FieldError> {
        match self {
            Self::Json(text) => serde_json::from_str(text).map_err(|first| {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
                    Err(error) => FieldError {
                        path: error.path().to_string(),
                        line: Some(to_u32(error.inner().line())),
                        message: strip_position(&error.inner().to_string()),
                    },
                    Ok(_) => FieldError {
                        path: ".".into(),
                        line: Some(to_u32(first.line())),
                        message: strip_position(&first.to_string()),
                    },
                }
            }),
            Self::Yaml(value) => T::deserialize(value).map_err(|first| {
                match serde_path_to_error::deserialize::<_, T>(value) {
                    Err(error) => FieldError {
                        path: error.path().to_string(),
                        line: None,
                        message: error.into_inner().to_string(),
                    },
                    Ok(_) => FieldError {
                        path: ".".into(),
                        line: None,
                        message: first.to_string(),
                    },
                }
            }),
        }
    }
}

/// The fields every document is named by, read leniently: a field of the
/// wrong type reads as absent.
#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow, default)]
    schema: Lenient<'a>,
    #[serde(borrow, default)]
    package: Lenient<'a>,
    #[serde(borrow, default)]
    name: Lenient<'a>,
}

#[derive(Default)]
struct Lenient<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor)
    }
}

struct LenientVisitor;

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Lenient<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Lenient(Some(Cow::Borrowed(text))))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Lenient(Some(Cow::Owned(text.to_owned()))))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Lenient(None))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lenient(None))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Lenient(None))
    }
}

/// How diagnostics name a document: `olm.channel "etcd/alpha"`.
pub(crate) fn describe(schema: &str, package: Option<&str>, name: Option<&str>) -> String {
    let label = match (schema, package, name) {
        (SCHEMA_CHANNEL, Some(package), Some(name)) => format!("{package}/{name}"),
        (SCHEMA_DEPRECATIONS, Some(package), _) => package.to_owned(),
        (_, _, Some(name)) => name.to_owned(),
        (_, Some(package), None) => package.to_owned(),
        (_, None, None) => return format!("{schema} document"),
    };
    format!("{schema} {label:?}")
}

fn decode_one(
    input: Input<'_>,
    origin: Origin,
    documents: &mut Vec<(Origin, Document)>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let invalid = |object: String, message: &str| {
        Diagnostic::new(
            DiagnosticCode::InvalidDocument,
            origin.clone(),
            object,
            message,
        )
    };
    if !input.is_object() {
        diagnostics.push(invalid(
            "document".into(),
            "a catalog document must be an object",
        ));
        return;
    }
    let header: Header<'_> = match input.parse() {
        Ok(header) => header,
        Err(error) => {
            diagnostics.push(invalid("document".into(), &error.message));
            return;
        }
    };
    let (package, name) = (header.package.0.as_deref(), header.name.0.as_deref());
    let Some(schema) = header.schema.0.as_deref() else {
        let object = describe("document", package, name);
        diagnostics.push(invalid(object, "the document has no string `schema` field"));
        return;
    };
    let decoded = match schema {
        SCHEMA_PACKAGE => input.parse().map(Document::Package),
        SCHEMA_CHANNEL => input.parse().map(Document::Channel),
        SCHEMA_BUNDLE => input.parse().map(Document::Bundle),
        SCHEMA_DEPRECATIONS => input.parse().map(Document::Deprecations),
        super::helm_chart::SCHEMA_HELM_CHART => input.parse().map(Document::HelmChart),
        _ => Ok(Document::Other(OtherDocument {
            schema: schema.to_owned(),
            package: package.map(str::to_owned),
            name: name.map(str::to_owned),
            origin: origin.clone(),
        })),
    };
    match decoded {
        Ok(document) => documents.push((origin, document)),
        Err(error) => {
            let line = error
                .line
                .map_or(0, |line| origin.line.saturating_add(line - 1));
            let mut diagnostic =
                invalid(describe(schema, package, name), &error.message).at_line(line);
            if error.path != "." {
                diagnostic = diagnostic.with_field(error.path);
            }
            diagnostics.push(diagnostic);
        }
    }
}

#[cfg(test)]
#[path = "document_tests.rs"]
mod tests;
