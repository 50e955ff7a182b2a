//! Reading a registry+v1 bundle: `metadata/annotations.yaml` (the media
//! type and package), `manifests/` (exactly one ClusterServiceVersion, the
//! CRDs and other objects), and what it declares about other bundles:
//! `metadata/dependencies.yaml` and `metadata/properties.yaml` (both
//! optional). Errors name the file and the field.

use std::path::Path;

use pakket_runtime::manifest;
use serde_json::Value;

use crate::csv::Csv;

/// The annotation that names the bundle format.
pub const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// The annotation that names the package.
pub const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
/// The format this provisioner reads.
pub const REGISTRY_V1: &str = "registry+v1";
/// The CSV's kind and group.
const CSV_KIND: &str = "ClusterServiceVersion";
const CSV_API_VERSION: &str = "operators.coreos.com/v1alpha1";

/// A registry+v1 bundle, read.
#[derive(Debug)]
pub struct Bundle {
    /// The package (`etcd`).
    pub package: String,
    /// The ClusterServiceVersion.
    pub csv: Csv,
    /// Every other object under `manifests/`, as written.
    pub manifests: Vec<Value>,
    /// The CSV as written, for the fields only some readers need
    /// (`spec.version`, `spec.customresourcedefinitions`).
    pub csv_document: Value,
    /// `metadata/dependencies.yaml`'s `dependencies`, as written.
    pub dependencies: Vec<Value>,
    /// `metadata/properties.yaml`'s `properties`, as written.
    pub properties: Vec<Value>,
}

/// Reads the bundle unpacked at `root`; every problem found, sorted.
pub fn read(root: &Path, max_object_size: u64) -> Result<Bundle, Vec<String>> {
    let mut problems = Vec::new();
    let package = match read_annotations(root, max_object_size) {
        Ok(package) => Some(package),
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let objects = match manifest::load_objects(&root.join("manifests"), max_object_size) {
        Ok(objects) => objects,
        Err(error) => {
            problems.push(format!("manifests/: {error}"));
            Vec::new()
        }
    };
    let (csvs, manifests): (Vec<Value>, Vec<Value>) = objects
        .into_iter()
        .partition(|object| object.get("kind").and_then(Value::as_str) == Some(CSV_KIND));
    let dependencies = listed(
        root,
        "metadata/dependencies.yaml",
        "dependencies",
        max_object_size,
    )
    .unwrap_or_else(|problem| {
        problems.push(problem);
        Vec::new()
    });
    let properties = listed(
        root,
        "metadata/properties.yaml",
        "properties",
        max_object_size,
    )
    .unwrap_or_else(|problem| {
        problems.push(problem);
        Vec::new()
    });
    let csv = match csvs.as_slice() {
        [one] => match parse_csv(one) {
            Ok(csv) => Some((csv, one.clone())),
            Err(problem) => {
                problems.push(problem);
                None
            }
        },
        [] if problems.is_empty() => {
            problems.push(format!(
                "manifests/: no {CSV_KIND}; a registry+v1 bundle has exactly one"
            ));
            None
        }
        [] => None,
        many => {
            problems.push(format!(
                "manifests/: {} ClusterServiceVersions; a registry+v1 bundle has exactly one",
                many.len()
            ));
            None
        }
    };
    match (package, csv) {
        (Some(package), Some((csv, csv_document))) if problems.is_empty() => Ok(Bundle {
            package,
            csv,
            manifests,
            csv_document,
            dependencies,
            properties,
        }),
        _ => {
            problems.sort();
            Err(problems)
        }
    }
}

/// The list under `key` in the optional metadata file `file`: empty when
/// the file is absent, a problem naming the file when it is not a list.
fn listed(root: &Path, file: &str, key: &str, max_size: u64) -> Result<Vec<Value>, String> {
    let document = match manifest::read_document(root, Path::new(file), max_size) {
        Ok(Some(document)) => document,
        Ok(None) => return Ok(Vec::new()),
        Err(error) => return Err(error.to_string()),
    };
    match document.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(format!("{file}: {key} is not a list; write {key}: [...]")),
    }
}

/// The package named by `metadata/annotations.yaml`, once its media type
/// is checked.
fn read_annotations(root: &Path, max_size: u64) -> Result<String, String> {
    const FILE: &str = "metadata/annotations.yaml";
    let document = manifest::read_document(root, Path::new(FILE), max_size)
        .map_err(|error| error.to_string())?
        .ok_or_else(|| format!("{FILE}: is missing; a registry+v1 bundle has one"))?;
    let annotations = document
        .get("annotations")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{FILE}: has no annotations mapping"))?;
    let field = |key: &str| annotations.get(key).and_then(Value::as_str);
    match field(MEDIATYPE) {
        Some(REGISTRY_V1) => {}
        Some(other) => {
            return Err(format!(
                "{FILE}: annotations.\"{MEDIATYPE}\" is {other:?}; this provisioner reads {REGISTRY_V1} bundles only"
            ));
        }
        None => {
            return Err(format!(
                "{FILE}: annotations.\"{MEDIATYPE}\" is missing; a registry+v1 bundle sets it to {REGISTRY_V1}"
            ));
        }
    }
    field(PACKAGE)
        .filter(|package| !package.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("{FILE}: annotations.\"{PACKAGE}\" is missing"))
}

fn parse_csv(object: &Value) -> Result<Csv, String> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    if api_version != Some(CSV_API_VERSION) {
        return Err(format!(
            "ClusterServiceVersion {name}: apiVersion is {api_version:?}, not {CSV_API_VERSION}"
        ));
    }
    let csv: Csv = serde_json::from_value(object.clone()).map_err(|error| {
        format!("ClusterServiceVersion {name}: {error}; fix the field it names")
    })?;
    if csv.spec.install.strategy != "deployment" {
        return Err(format!(
            "ClusterServiceVersion {name}: spec.install.strategy is {:?}; registry+v1 bundles install with \"deployment\"",
            csv.spec.install.strategy
        ));
    }
    Ok(csv)
}
