//! Bundle properties: the typed ones Pakket reads and the rest, kept raw.
//!
//! Shapes (from operator-registry's `alpha/property`):
//!
//! | type | value |
//! |------|-------|
//! | `olm.package` | `{packageName, version}` |
//! | `olm.package.required` | `{packageName, versionRange}` |
//! | `olm.gvk`, `olm.gvk.required` | `{group, version, kind}` |
//! | `olm.label`, `olm.label.required` | `{label}` (a bare string is accepted too) |
//! | `olm.constraint` | a formula, see [`Constraint`] |
//! | `olm.deprecated` | anything (OLM writes `{}`) |
//! | `olm.csv.metadata` | the CSV's descriptive fields |
//! | `olm.bundle.object` | `{data}` (base64 manifest) or `{ref}` |
//!
//! Everything else (`olm.maxOpenShiftVersion`, vendor types) is kept as
//! [`Property::Other`] with its raw JSON value.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::constraint::Constraint;
use super::diagnostic::DiagnosticCode;
use super::model::{CsvMetadata, Gvk, InstallMode, PackageRequirement};
use crate::{Range, Version};

/// `olm.package`: the bundle's package and version.
pub const TYPE_PACKAGE: &str = "olm.package";
/// `olm.package.required`: a required package and version range.
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
/// `olm.gvk`: a provided API.
pub const TYPE_GVK: &str = "olm.gvk";
/// `olm.gvk.required`: a required API.
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
/// `olm.label`: a label other bundles can require.
pub const TYPE_LABEL: &str = "olm.label";
/// `olm.label.required`: some bundle must carry this `olm.label`.
pub const TYPE_LABEL_REQUIRED: &str = "olm.label.required";
/// `olm.constraint`: some bundle must satisfy this formula.
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
/// `olm.deprecated`: OLM v0's mark of a deprecated bundle.
pub const TYPE_DEPRECATED: &str = "olm.deprecated";
/// `olm.csv.metadata`: the CSV's descriptive fields.
pub const TYPE_CSV_METADATA: &str = "olm.csv.metadata";
/// `olm.bundle.object`: one manifest of the bundle, inline.
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";

/// One property of a bundle.
#[derive(Clone, Debug)]
pub enum Property {
    /// `olm.package`.
    Package {
        /// The package name.
        package: String,
        /// The bundle's version.
        version: Version,
    },
    /// `olm.package.required`.
    PackageRequired(PackageRequirement),
    /// `olm.gvk`.
    Gvk(Gvk),
    /// `olm.gvk.required`.
    GvkRequired(Gvk),
    /// `olm.label`.
    Label(String),
    /// `olm.label.required`.
    LabelRequired(String),
    /// `olm.constraint`: the formula, and the value as written (CEL rules
    /// of other bundles see it).
    Constraint {
        /// The formula.
        constraint: Arc<Constraint>,
        /// The value, as JSON.
        value: Box<RawValue>,
    },
    /// `olm.deprecated`.
    Deprecated,
    /// `olm.csv.metadata` (shared with [`super::Bundle::csv_metadata`]).
    CsvMetadata(Arc<CsvMetadata>),
    /// `olm.bundle.object`: only the size of its JSON value is kept. The
    /// manifests come from the bundle image when it is unpacked, and these
    /// payloads (base64 CRDs and CSVs) would otherwise dominate memory.
    BundleObject {
        /// Length of the property's JSON value in bytes.
        size: usize,
    },
    /// Any other type, with its value as raw JSON text.
    Other {
        /// The property type.
        kind: String,
        /// The value, as JSON.
        value: Box<RawValue>,
    },
}

impl Property {
    /// The property's type (`olm.gvk`).
    pub fn kind(&self) -> &str {
        match self {
            Self::Package { .. } => TYPE_PACKAGE,
            Self::PackageRequired(_) => TYPE_PACKAGE_REQUIRED,
            Self::Gvk(_) => TYPE_GVK,
            Self::GvkRequired(_) => TYPE_GVK_REQUIRED,
            Self::Label(_) => TYPE_LABEL,
            Self::LabelRequired(_) => TYPE_LABEL_REQUIRED,
            Self::Constraint { .. } => TYPE_CONSTRAINT,
            Self::Deprecated => TYPE_DEPRECATED,
            Self::CsvMetadata(_) => TYPE_CSV_METADATA,
            Self::BundleObject { .. } => TYPE_BUNDLE_OBJECT,
            Self::Other { kind, .. } => kind,
        }
    }
}

impl Property {
    /// The value as a catalog would write it, for CEL rules (OLM binds each
    /// property as `{type, value}`). Typed properties are written back from
    /// what was kept: `olm.csv.metadata` with only the fields Pakket keeps,
    /// and `olm.bundle.object` as `{}` (its manifests are not kept).
    pub fn value_json(&self) -> serde_json::Value {
        use serde_json::json;
        let raw = |value: &RawValue| serde_json::from_str(value.get()).unwrap_or_default();
        match self {
            Self::Package { package, version } => {
                json!({"packageName": package, "version": version.as_written()})
            }
            Self::PackageRequired(requirement) => json!({
                "packageName": requirement.package,
                "versionRange": requirement.range.as_written(),
            }),
            Self::Gvk(gvk) | Self::GvkRequired(gvk) => {
                json!({"group": gvk.group, "version": gvk.version, "kind": gvk.kind})
            }
            Self::Label(label) | Self::LabelRequired(label) => json!({ "label": label }),
            Self::CsvMetadata(metadata) => {
                let modes: Vec<_> = metadata
                    .install_modes
                    .iter()
                    .map(|mode| json!({"type": mode.mode, "supported": mode.supported}))
                    .collect();
                let mut value = json!({
                    "keywords": metadata.keywords,
                    "installModes": modes,
                    "annotations": metadata.annotations,
                    "labels": metadata.labels,
                });
                for (key, text) in [
                    ("displayName", &metadata.display_name),
                    ("description", &metadata.description),
                    ("maturity", &metadata.maturity),
                    ("minKubeVersion", &metadata.min_kube_version),
                ] {
                    if let Some(text) = text {
                        value[key] = json!(text);
                    }
                }
                if let Some(provider) = &metadata.provider {
                    value["provider"] = json!({ "name": provider });
                }
                value
            }
            Self::BundleObject { .. } | Self::Deprecated => json!({}),
            Self::Constraint { value, .. } | Self::Other { value, .. } => raw(value),
        }
    }
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Self::Package {
                    package: a,
                    version: v,
                },
                Self::Package {
                    package: b,
                    version: w,
                },
            ) => a == b && v.as_written() == w.as_written(),
            (Self::PackageRequired(a), Self::PackageRequired(b)) => a == b,
            (Self::Gvk(a), Self::Gvk(b)) | (Self::GvkRequired(a), Self::GvkRequired(b)) => a == b,
            (Self::Label(a), Self::Label(b)) | (Self::LabelRequired(a), Self::LabelRequired(b)) => {
                a == b
            }
            (Self::Constraint { value: a, .. }, Self::Constraint { value: b, .. }) => {
                a.get() == b.get()
            }
            (Self::Deprecated, Self::Deprecated) => true,
            (Self::CsvMetadata(a), Self::CsvMetadata(b)) => a == b,
            (Self::BundleObject { size: a }, Self::BundleObject { size: b }) => a == b,
            (Self::Other { kind: a, value: v }, Self::Other { kind: b, value: w }) => {
                a == b && v.get() == w.get()
            }
            _ => false,
        }
    }
}

/// A property as written: a type and a JSON value.
#[derive(Debug, Deserialize)]
pub(crate) struct RawProperty {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: Box<RawValue>,
}

/// Why a property could not be read.
#[derive(Debug, PartialEq)]
pub(crate) struct PropertyError {
    pub code: DiagnosticCode,
    /// Path inside the property (`value.version`).
    pub field: String,
    pub message: String,
    /// What to keep instead when the bundle itself stays (a warning).
    pub fallback: Option<Box<Property>>,
}

impl PropertyError {
    fn new(code: DiagnosticCode, field: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            field: field.to_owned(),
            message: message.into(),
            fallback: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageValue {
    package_name: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageRequiredValue {
    package_name: String,
    version_range: String,
}

#[derive(Deserialize)]
struct GvkValue {
    #[serde(default)]
    group: String,
    version: String,
    kind: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LabelValue {
    Object { label: String },
    Bare(String),
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct CsvMetadataValue {
    display_name: Option<String>,
    description: Option<String>,
    keywords: Option<Vec<String>>,
    maturity: Option<String>,
    min_kube_version: Option<String>,
    provider: Option<ProviderValue>,
    install_modes: Option<Vec<InstallModeValue>>,
    annotations: Option<BTreeMap<String, serde_json::Value>>,
    labels: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ProviderValue {
    name: Option<String>,
}

#[derive(Deserialize)]
struct InstallModeValue {
    #[serde(rename = "type")]
    mode: String,
    #[serde(default)]
    supported: bool,
}

/// Decodes one raw property. Unknown types become [`Property::Other`]; a known
/// type whose value has the wrong shape is an error.
pub(crate) fn decode(raw: RawProperty) -> Result<Property, PropertyError> {
    let json = raw.value.get();
    match raw.kind.as_str() {
        TYPE_PACKAGE => {
            let value: PackageValue = parse(json)?;
            if value.package_name.is_empty() {
                return Err(PropertyError::new(
                    DiagnosticCode::InvalidProperty,
                    "value.packageName",
                    "olm.package has an empty packageName",
                ));
            }
            let version = Version::parse(&value.version).map_err(|error| {
                PropertyError::new(
                    DiagnosticCode::InvalidVersion,
                    "value.version",
                    error.to_string(),
                )
            })?;
            Ok(Property::Package {
                package: value.package_name,
                version,
            })
        }
        TYPE_PACKAGE_REQUIRED => {
            let value: PackageRequiredValue = parse(json)?;
            if value.package_name.is_empty() {
                return Err(PropertyError::new(
                    DiagnosticCode::InvalidProperty,
                    "value.packageName",
                    "olm.package.required has an empty packageName",
                ));
            }
            let range = Range::parse(&value.version_range).map_err(|error| {
                PropertyError::new(
                    DiagnosticCode::InvalidVersionRange,
                    "value.versionRange",
                    format!("requirement on {:?}: {error}", value.package_name),
                )
            })?;
            Ok(Property::PackageRequired(PackageRequirement {
                package: value.package_name,
                range,
            }))
        }
        TYPE_GVK => Ok(Property::Gvk(gvk(json)?)),
        TYPE_GVK_REQUIRED => Ok(Property::GvkRequired(gvk(json)?)),
        TYPE_LABEL => match parse_any::<LabelValue>(json)? {
            LabelValue::Object { label } | LabelValue::Bare(label) => Ok(Property::Label(label)),
        },
        TYPE_LABEL_REQUIRED => match parse_any::<LabelValue>(json)? {
            LabelValue::Object { label } | LabelValue::Bare(label) if !label.is_empty() => {
                Ok(Property::LabelRequired(label))
            }
            _ => Err(PropertyError::new(
                DiagnosticCode::InvalidProperty,
                "value.label",
                "olm.label.required has an empty label",
            )),
        },
        TYPE_CONSTRAINT => match Constraint::parse(json) {
            Ok(constraint) => Ok(Property::Constraint {
                constraint: Arc::new(constraint),
                value: raw.value,
            }),
            Err(error) => Err(PropertyError::new(
                DiagnosticCode::InvalidConstraint,
                &error.field,
                format!("olm.constraint: {}", error.message),
            )),
        },
        TYPE_DEPRECATED => Ok(Property::Deprecated),
        TYPE_CSV_METADATA => match parse::<CsvMetadataValue>(json) {
            Ok(value) => Ok(Property::CsvMetadata(Arc::new(csv_metadata(value)))),
            // Informational only: keep the bundle and the value, raw.
            Err(error) => Err(PropertyError {
                code: DiagnosticCode::InvalidCsvMetadata,
                fallback: Some(Box::new(Property::Other {
                    kind: raw.kind,
                    value: raw.value,
                })),
                ..error
            }),
        },
        TYPE_BUNDLE_OBJECT => Ok(Property::BundleObject { size: json.len() }),
        _ => Ok(Property::Other {
            kind: raw.kind,
            value: raw.value,
        }),
    }
}

fn gvk(json: &str) -> Result<Gvk, PropertyError> {
    let value: GvkValue = parse(json)?;
    for (field, text) in [
        ("value.version", &value.version),
        ("value.kind", &value.kind),
    ] {
        if text.is_empty() {
            return Err(PropertyError::new(
                DiagnosticCode::InvalidProperty,
                field,
                "an API needs a non-empty version and kind",
            ));
        }
    }
    Ok(Gvk {
        group: value.group,
        version: value.version,
        kind: value.kind,
    })
}

fn csv_metadata(value: CsvMetadataValue) -> CsvMetadata {
    CsvMetadata {
        display_name: value.display_name,
        description: value.description,
        keywords: value.keywords.unwrap_or_default(),
        maturity: value.maturity,
        min_kube_version: value.min_kube_version,
        provider: value.provider.and_then(|provider| provider.name),
        install_modes: value
            .install_modes
            .unwrap_or_default()
            .into_iter()
            .map(|mode| InstallMode {
                mode: mode.mode,
                supported: mode.supported,
            })
            .collect(),
        annotations: text_map(value.annotations),
        labels: text_map(value.labels),
    }
}

/// Annotation and label values as text: YAML authors sometimes leave `true`
/// or `1` unquoted, which Kubernetes would reject but is harmless here.
fn text_map(map: Option<BTreeMap<String, serde_json::Value>>) -> BTreeMap<String, String> {
    map.unwrap_or_default()
        .into_iter()
        .filter_map(|(key, value)| match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(text) => Some((key, text)),
            other => Some((key, other.to_string())),
        })
        .collect()
}

/// Parses a property value that must be an object, naming the failing field
/// (`value.version`). The check matters: serde would read an array into a
/// struct field by field.
fn parse<'a, T: Deserialize<'a>>(json: &'a str) -> Result<T, PropertyError> {
    if !json.starts_with('{') {
        return Err(PropertyError::new(
            DiagnosticCode::InvalidProperty,
            "value",
            "the value must be an object",
        ));
    }
    parse_any(json)
}

/// Parses a property value of any JSON type.
fn parse_any<'a, T: Deserialize<'a>>(json: &'a str) -> Result<T, PropertyError> {
    // Tracking the path costs on every value; only a failure needs it, so
    // decode again with it then.
    if let Ok(value) = serde_json::from_str(json) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let field = if path == "." {
            "value".to_owned()
        } else {
            format!("value.{path}")
        };
        PropertyError {
            code: DiagnosticCode::InvalidProperty,
            field,
            message: strip_position(&error.into_inner().to_string()),
            fallback: None,
        }
    })
}

/// Drops a trailing position (" at line 3 column 10" from serde_json,
/// " at line 3, column 10" from serde-saphyr): errors and diagnostics carry
/// the position in their own fields.
pub(crate) fn strip_position(message: &str) -> String {
    if let Some(index) = message.rfind(" at line ") {
        let tail = &message[index + " at line ".len()..];
        let is_position = tail
            .split([' ', ','])
            .filter(|word| !word.is_empty())
            .enumerate()
            .all(|(i, word)| match i {
                0 | 2 => word.bytes().all(|b| b.is_ascii_digit()),
                1 => word == "column",
                _ => false,
            });
        if is_position {
            return message[..index].to_owned();
        }
    }
    message.to_owned()
}

#[cfg(test)]
#[path = "property_tests.rs"]
mod tests;
