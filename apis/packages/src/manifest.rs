//! The repository's files as Glasskube writes them: `index.yaml`,
//! `<package>/versions.yaml` and `<package>/<version>/package.yaml`.
//!
//! Only what installing needs is typed; everything else a package file
//! says (descriptions, icons, references, entrypoints) is kept as written
//! in the PackageInfo's status and ignored here, so a newer repository
//! with fields this version does not know still installs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `index.yaml`: the packages a repository offers.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    /// One entry per package.
    #[serde(default)]
    pub packages: Vec<IndexEntry>,
}

/// One package of the index.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    /// Its name (the directory).
    pub name: String,
    /// The version the repository recommends.
    #[serde(default)]
    pub latest_version: Option<String>,
}

/// `<package>/versions.yaml`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    /// The version the repository recommends (not always the highest:
    /// pre-releases may be listed above it).
    #[serde(default)]
    pub latest_version: Option<String>,
    /// Every version published.
    #[serde(default)]
    pub versions: Vec<VersionEntry>,
}

/// One published version.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct VersionEntry {
    /// `v1.2.3+1`: the upstream version and Glasskube's revision.
    pub version: String,
}

/// `<package>/<version>/package.yaml`, as far as installing goes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifest {
    /// The package's name.
    pub name: String,
    /// `Cluster` (default) or `Namespaced`.
    #[serde(default)]
    pub scope: Option<String>,
    /// Where namespaced objects without a namespace go.
    #[serde(default)]
    pub default_namespace: Option<String>,
    /// Plain manifest files, applied in order.
    #[serde(default)]
    pub manifests: Vec<ManifestFile>,
    /// A Helm chart, rendered with the manifests.
    #[serde(default)]
    pub helm: Option<HelmChart>,
    /// Kustomize (Glasskube's schema has it; no package here uses it).
    #[serde(default)]
    pub kustomize: Option<Value>,
    /// What users may set, and where each value goes.
    #[serde(default)]
    pub value_definitions: BTreeMap<String, ValueDefinition>,
    /// Other packages this one needs installed beside it.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// Packages installed as parts of this one.
    #[serde(default)]
    pub components: Vec<Component>,
    /// Values read from the package object itself, patched into targets.
    #[serde(default)]
    pub transformations: Vec<Transformation>,
}

/// One `transformations[]` entry: a value read (by JSONPath) from the
/// package object, patched into targets as a value definition's value is.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Transformation {
    /// Where the value is read.
    pub source: TransformationSource,
    /// Where it goes.
    #[serde(default)]
    pub targets: Vec<ValueTarget>,
}

/// `source`: the package object itself, or another object.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TransformationSource {
    /// Another object (no package of the repository reads one).
    #[serde(default)]
    pub resource: Option<TargetResource>,
    /// A JSONPath in kubectl's braces: `{ $.metadata.name }`.
    pub path: String,
}

/// `helm`: a chart of a Helm chart repository and its values.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HelmChart {
    /// The chart repository (the folder of its `index.yaml`).
    pub repository_url: String,
    /// The chart's name in that repository.
    pub chart_name: String,
    /// Its version, as Flux reads it: `v` and build metadata (`+1`) are
    /// ignored, and a semver range takes the highest version it allows.
    pub chart_version: String,
    /// The values given to the chart (before the package's value
    /// definitions patch them).
    #[serde(default)]
    pub values: Option<Value>,
    /// Several releases of the chart (Glasskube's schema has it; no
    /// package of the repository uses it).
    #[serde(default)]
    pub releases: Option<Value>,
}

/// One `manifests[]` entry.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ManifestFile {
    /// Absolute, or relative to the package.yaml's URL.
    pub url: String,
    /// This file's namespace for objects without one.
    #[serde(default)]
    pub default_namespace: Option<String>,
}

/// One `components[]` entry: a namespaced package installed as part of
/// this one.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// The package.
    pub name: String,
    /// Its Package is `<parent>-<installedName or name>`.
    #[serde(default)]
    pub installed_name: Option<String>,
    /// The versions that will do, if it matters.
    #[serde(default)]
    pub version: Option<String>,
    /// Its values, as a package's `spec.values`.
    #[serde(default)]
    pub values: BTreeMap<String, Value>,
}

/// One `dependencies[]` entry.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Dependency {
    /// The package needed.
    pub name: String,
    /// The versions that will do (`1.x.x`, `>=1.2.0`), if it matters.
    #[serde(default)]
    pub version: Option<String>,
}

/// One `valueDefinitions` entry.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValueDefinition {
    /// `boolean`, `text`, `number` or `options`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Used when no value is given (Glasskube's CLI fills it in; here the
    /// provisioner does).
    #[serde(default)]
    pub default_value: Option<String>,
    /// The allowed values of an `options` definition.
    #[serde(default)]
    pub options: Vec<String>,
    /// Limits on the value.
    #[serde(default)]
    pub constraints: Constraints,
    /// Where the value goes.
    #[serde(default)]
    pub targets: Vec<ValueTarget>,
}

/// `constraints`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Constraints {
    /// A value must be given.
    #[serde(default)]
    pub required: bool,
    /// Smallest number.
    #[serde(default)]
    pub min: Option<i64>,
    /// Largest number.
    #[serde(default)]
    pub max: Option<i64>,
    /// Fewest bytes.
    #[serde(default)]
    pub min_length: Option<usize>,
    /// Most bytes.
    #[serde(default)]
    pub max_length: Option<usize>,
    /// A regular expression the value must contain a match of.
    #[serde(default)]
    pub pattern: Option<String>,
}

/// One place a value goes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ValueTarget {
    /// An object of the manifests.
    #[serde(default)]
    pub resource: Option<TargetResource>,
    /// A Helm chart's values.
    #[serde(default)]
    pub chart_name: Option<String>,
    /// The JSON patch operation, without its value.
    pub patch: PartialPatch,
    /// A Go template (`.` is the value) whose output is read as JSON.
    #[serde(default)]
    pub value_template: Option<String>,
}

/// The object a target names. `apiGroup` is `group/version` (`apps/v1`,
/// `v1`), as Glasskube compares it with the object's `apiVersion`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TargetResource {
    /// `group/version`.
    #[serde(default)]
    pub api_group: Option<String>,
    /// The kind.
    pub kind: String,
    /// The name.
    pub name: String,
    /// The namespace, if it matters.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `{op, path}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct PartialPatch {
    /// `add`, `replace`, `remove`…
    pub op: String,
    /// A JSON pointer.
    pub path: String,
}

/// Reads a YAML (or JSON) document of the repository as `T`, and as the
/// JSON it stands for; the error says what is wrong, naming the field.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<(T, Value), String> {
    let value: Value = serde_saphyr::from_str(text).map_err(|error| error.to_string())?;
    let typed = serde_json::from_value(value.clone()).map_err(|error| error.to_string())?;
    Ok((typed, value))
}

impl PackageManifest {
    /// Whether the package is installed into a Package's namespace.
    pub fn is_namespaced(&self) -> bool {
        self.scope.as_deref() == Some("Namespaced")
    }

    /// What this version cannot install yet, in words; `None`: all of it.
    pub fn unsupported(&self) -> Option<String> {
        let mut missing = Vec::new();
        if self
            .helm
            .as_ref()
            .is_some_and(|helm| helm.releases.is_some())
        {
            missing.push("several releases of a chart (helm.releases)");
        }
        if self.kustomize.is_some() {
            missing.push("kustomize");
        }
        if self
            .transformations
            .iter()
            .any(|transformation| transformation.source.resource.is_some())
        {
            missing
                .push("transformations reading another object (transformations[].source.resource)");
        }
        (!missing.is_empty()).then(|| missing.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `package.yaml` and `versions.yaml` of the real Glasskube
    /// repository (../shared/data/glasskube-packages, glasskube/packages
    /// at 3352e05d) reads; the counts say what the repository uses.
    #[test]
    fn every_file_of_the_real_repository_reads() {
        let root = pakket_testkit::data("glasskube-packages/packages");
        let index: (Index, Value) =
            parse(&std::fs::read_to_string(root.join("index.yaml")).unwrap()).unwrap();
        // The index lists every package directory.
        assert_eq!(index.0.packages.len(), 32);
        let mut names: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|entry| {
                let entry = entry.unwrap();
                entry
                    .file_type()
                    .unwrap()
                    .is_dir()
                    .then(|| entry.file_name().to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        assert_eq!(names.len(), index.0.packages.len());
        let (mut packages, mut helm, mut plain, mut with_values, mut with_dependencies) =
            (0, 0, 0, 0, 0);
        for name in &names {
            let dir = root.join(name);
            let (versions, _): (Versions, Value) =
                parse(&std::fs::read_to_string(dir.join("versions.yaml")).unwrap())
                    .unwrap_or_else(|e| panic!("{name}/versions.yaml: {e}"));
            assert!(!versions.versions.is_empty(), "{name}");
            for version in &versions.versions {
                let path = dir.join(&version.version).join("package.yaml");
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let (manifest, _): (PackageManifest, Value) =
                    parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(&manifest.name, name, "{}", path.display());
                packages += 1;
                if manifest.helm.is_some() {
                    helm += 1;
                } else if !manifest.manifests.is_empty() {
                    plain += 1;
                }
                with_values += usize::from(!manifest.value_definitions.is_empty());
                with_dependencies += usize::from(!manifest.dependencies.is_empty());
                for definition in manifest.value_definitions.values() {
                    assert!(
                        ["boolean", "text", "number", "options"]
                            .contains(&definition.type_.as_str()),
                        "{}: {}",
                        path.display(),
                        definition.type_
                    );
                }
            }
        }
        println!(
            "{packages} package versions: {helm} Helm, {plain} plain manifests; {with_values} with values, {with_dependencies} with dependencies"
        );
        assert_eq!((packages, helm, plain), (495, 337, 158));
    }

    #[test]
    fn a_bad_file_names_what_is_wrong() {
        let error = parse::<PackageManifest>("name: x\nmanifests: 3\n").unwrap_err();
        assert!(
            error.contains("manifests") || error.contains("sequence"),
            "{error}"
        );
    }
}
