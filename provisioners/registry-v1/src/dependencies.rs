//! What a registry+v1 bundle needs from other bundles, checked against what
//! the cluster has installed, and what it offers them in turn.
//!
//! Needs come from `metadata/dependencies.yaml` (`olm.package`, `olm.gvk`,
//! `olm.label`, `olm.constraint`), `metadata/properties.yaml`
//! (`olm.package.required`, `olm.gvk.required`, `olm.constraint`) and the
//! CSV's `spec.customresourcedefinitions.required`. Package and API needs
//! go to the dependency engine, over a universe of what other Instances
//! installed (each Bundle's recorded properties), so an unmet one is
//! explained as `pakket resolve` explains it; an API the cluster serves by
//! any means counts as provided. `olm.constraint` formulas (`package`,
//! `gvk`, `all`, `any`, `not`, `cel`) are read and evaluated by the engine,
//! as OLM does: one installed bundle must satisfy the whole formula (an API
//! the cluster serves counts for `gvk`). A formula that cannot be read is
//! an error naming its field, never skipped.
//! Installing what is missing is the resolveset provisioner's work; here
//! the bundle waits, with nothing applied.

use pakket_api::BundleProperty;
use pakket_engine::catalog::{Constraint, Gvk, Subject};
use pakket_engine::resolve::{self, Candidate, CatalogInfo, Request, ResolveError, Universe};
use pakket_engine::{Range, Version};
use pakket_runtime::{ClusterFacts, InstalledContent};
use serde_json::{Value, json};

use crate::bundle::Bundle;

/// A need beyond a package or an API.
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// A bundle carrying this `olm.label` (`olm.label` in dependencies.yaml).
    Label(String),
    /// An `olm.constraint`, as the engine reads it.
    Constraint(Constraint),
}

/// A bundle's needs, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Needs {
    /// Packages with version ranges (for the engine).
    pub packages: Vec<(String, Range, String)>,
    /// APIs (for the engine, unless the cluster serves them).
    pub gvks: Vec<Gvk>,
    /// Labels and `olm.constraint` formulas.
    pub constraints: Vec<Need>,
}

/// Reads every need `bundle` declares; every problem, naming file and field.
pub fn needs(bundle: &Bundle) -> Result<Needs, Vec<String>> {
    let mut needs = Needs::default();
    let mut problems = Vec::new();
    for (index, item) in bundle.dependencies.iter().enumerate() {
        let at = format!("metadata/dependencies.yaml: dependencies[{index}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let value = item.get("value").cloned().unwrap_or(Value::Null);
        let read = match kind {
            "olm.package" => {
                package(&value, "version").map(|(p, r, t)| needs.packages.push((p, r, t)))
            }
            "olm.gvk" => gvk(&value).map(|g| needs.gvks.push(g)),
            "olm.label" => label(&value).map(|l| needs.constraints.push(Need::Label(l))),
            "olm.constraint" => constraint_property(&value).map(|c| needs.constraints.push(c)),
            other => Err(format!(
                "type {other:?} is not a dependency type (olm.package, olm.gvk, olm.label, olm.constraint)"
            )),
        };
        if let Err(problem) = read {
            problems.push(format!("{at}: {problem}"));
        }
    }
    for (index, item) in bundle.properties.iter().enumerate() {
        let at = format!("metadata/properties.yaml: properties[{index}]");
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let value = item.get("value").cloned().unwrap_or(Value::Null);
        let read = match kind {
            "olm.package.required" => {
                package(&value, "versionRange").map(|(p, r, t)| needs.packages.push((p, r, t)))
            }
            "olm.gvk.required" => gvk(&value).map(|g| needs.gvks.push(g)),
            "olm.constraint" => constraint_property(&value).map(|c| needs.constraints.push(c)),
            _ => Ok(()),
        };
        if let Err(problem) = read {
            problems.push(format!("{at}: {problem}"));
        }
    }
    let required = bundle
        .csv_document
        .pointer("/spec/customresourcedefinitions/required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, crd) in required.iter().enumerate() {
        let text = |field: &str| crd.get(field).and_then(Value::as_str).unwrap_or_default();
        match text("name").split_once('.') {
            Some((_, group)) if !text("version").is_empty() && !text("kind").is_empty() => {
                needs.gvks.push(Gvk::new(group, text("version"), text("kind")));
            }
            _ => problems.push(format!(
                "ClusterServiceVersion {}: spec.customresourcedefinitions.required[{index}] needs name (plural.group), version and kind",
                bundle.csv.metadata.name
            )),
        }
    }
    if problems.is_empty() {
        Ok(needs)
    } else {
        problems.sort();
        Err(problems)
    }
}

fn package(value: &Value, range_field: &str) -> Result<(String, Range, String), String> {
    let name = value
        .get("packageName")
        .or_else(|| value.get("name"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or("value.packageName is missing")?;
    let text = value
        .get(range_field)
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    let range = if text.is_empty() {
        Range::any()
    } else {
        Range::parse(&text).map_err(|error| format!("value.{range_field} {text:?}: {error}"))?
    };
    Ok((name.to_owned(), range, text))
}

fn gvk(value: &Value) -> Result<Gvk, String> {
    let text = |field: &str| value.get(field).and_then(Value::as_str);
    match (text("group"), text("version"), text("kind")) {
        (Some(group), Some(version), Some(kind)) if !version.is_empty() && !kind.is_empty() => {
            Ok(Gvk::new(group, version, kind))
        }
        _ => Err("value needs group, version and kind".into()),
    }
}

fn label(value: &Value) -> Result<String, String> {
    value
        .get("label")
        .and_then(Value::as_str)
        .or_else(|| value.as_str())
        .map(str::to_owned)
        .ok_or_else(|| "value.label is missing".into())
}

/// An `olm.constraint` property's value, read by the engine (as strictly
/// as OLM reads it; the error names the field).
fn constraint_property(value: &Value) -> Result<Need, String> {
    Constraint::parse(&value.to_string())
        .map(Need::Constraint)
        .map_err(|error| error.to_string())
}

/// One installed bundle, as its recorded properties describe it.
struct Provider<'a> {
    content: &'a InstalledContent,
    package: Option<(String, Version)>,
    gvks: Vec<String>,
    labels: Vec<String>,
}

impl<'a> Provider<'a> {
    fn of(content: &'a InstalledContent) -> Self {
        let mut provider = Self {
            content,
            package: None,
            gvks: Vec::new(),
            labels: Vec::new(),
        };
        for property in &content.properties {
            let value = &property.value;
            match property.type_.as_str() {
                "olm.package" => {
                    let name = value.get("packageName").and_then(Value::as_str);
                    let version = value
                        .get("version")
                        .and_then(Value::as_str)
                        .and_then(|text| Version::parse(text).ok());
                    if let (Some(name), Some(version)) = (name, version) {
                        provider.package = Some((name.to_owned(), version));
                    }
                }
                "olm.gvk" => {
                    if let Ok(gvk) = gvk(value) {
                        provider.gvks.push(resolve::gvk_key(&gvk));
                    }
                }
                "olm.label" => {
                    if let Ok(label) = label(value) {
                        provider.labels.push(label);
                    }
                }
                _ => {}
            }
        }
        provider
    }
}

/// Checks `needs` of `bundle` against what `cluster` has installed and
/// serves: `Err` with every unmet need explained, in one line.
pub fn check(bundle: &Bundle, needs: &Needs, cluster: &ClusterFacts) -> Result<(), String> {
    let providers: Vec<Provider> = cluster.installed.iter().map(Provider::of).collect();
    let serves = |gvk: &Gvk| {
        let api_version = if gvk.group.is_empty() {
            gvk.version.clone()
        } else {
            format!("{}/{}", gvk.group, gvk.version)
        };
        cluster.serves(&api_version, &gvk.kind)
    };
    let mut unmet = Vec::new();
    if let Err(explanation) = engine_check(bundle, needs, &providers, &serves) {
        unmet.push(explanation);
    }
    let cluster_apis = ClusterApis(&serves);
    for need in &needs.constraints {
        match need {
            Need::Label(label) => {
                if !providers.iter().any(|p| p.labels.contains(label)) {
                    unmet.push(format!("olm.label {label} is carried by nothing installed"));
                }
            }
            Need::Constraint(constraint) => {
                let mut failures = Vec::new();
                let met = providers
                    .iter()
                    .any(|provider| constraint.formula.holds(provider, &mut failures))
                    || constraint.formula.holds(&cluster_apis, &mut failures);
                if !met {
                    let mut why = match &constraint.failure_message {
                        Some(message) => {
                            format!("olm.constraint {constraint} is not met: {message}")
                        }
                        None => {
                            format!("olm.constraint {constraint} is not met by anything installed")
                        }
                    };
                    if let Some(failure) = failures.first() {
                        why.push_str(&format!(" (its CEL rule failed: {failure})"));
                    }
                    unmet.push(why);
                }
            }
        }
    }
    if unmet.is_empty() {
        Ok(())
    } else {
        Err(unmet.join("; "))
    }
}

/// Package and API needs through the engine: this bundle requested, every
/// installed bundle (of other packages) a candidate.
fn engine_check(
    bundle: &Bundle,
    needs: &Needs,
    providers: &[Provider],
    serves: &dyn Fn(&Gvk) -> bool,
) -> Result<(), String> {
    let gvks: Vec<String> = needs
        .gvks
        .iter()
        .filter(|gvk| !serves(gvk))
        .map(resolve::gvk_key)
        .collect();
    if needs.packages.is_empty() && gvks.is_empty() {
        return Ok(());
    }
    let mut universe = Universe::new(vec![CatalogInfo {
        name: "installed".into(),
        priority: 0,
    }]);
    universe.describe_source("installed Instance");
    for provider in providers {
        let Some((package, version)) = &provider.package else {
            continue;
        };
        if *package == bundle.package {
            continue;
        }
        universe.add_bundle(Candidate {
            name: format!(
                "{} (Instance {})",
                provider.content.bundle, provider.content.instance
            ),
            package: package.clone(),
            version: version.clone(),
            catalog: 0,
            channels: Vec::new(),
            provides: provider.gvks.clone(),
            requires_packages: Vec::new(),
            requires_gvks: Vec::new(),
            labels: provider.labels.clone(),
        });
    }
    let name = bundle.csv.metadata.name.clone();
    let version = bundle
        .csv_document
        .pointer("/spec/version")
        .and_then(Value::as_str)
        .and_then(|text| Version::parse(text).ok())
        .unwrap_or_else(|| Version::new(0, 0, 0));
    universe.add_bundle(Candidate {
        name: name.clone(),
        package: bundle.package.clone(),
        version,
        catalog: 0,
        channels: Vec::new(),
        provides: Vec::new(),
        requires_packages: needs
            .packages
            .iter()
            .map(|(package, range, _)| (package.clone(), range.clone()))
            .collect(),
        requires_gvks: gvks,
        labels: Vec::new(),
    });
    match resolve::resolve(&universe, &[Request::BundleName(name)], &[]) {
        Ok(_) => Ok(()),
        // One line: a condition message carries no line breaks.
        Err(ResolveError::Unsatisfiable(explanation)) => Err(explanation
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ")),
        Err(ResolveError::BadInput(message)) => Err(message),
    }
}

/// An installed bundle as the engine's formulas see it.
impl Subject for Provider<'_> {
    fn package(&self) -> &str {
        self.package.as_ref().map_or("", |(name, _)| name)
    }

    fn version(&self) -> &Version {
        self.package
            .as_ref()
            .map_or(no_version(), |(_, version)| version)
    }

    fn provides(&self, gvk: &Gvk) -> bool {
        self.gvks.contains(&resolve::gvk_key(gvk))
    }

    fn properties(&self) -> Vec<Value> {
        self.content
            .properties
            .iter()
            .map(|property| json!({ "type": property.type_, "value": property.value }))
            .collect()
    }
}

/// The cluster itself, for formulas: it provides every API it serves (by
/// whatever means), and is no package.
struct ClusterApis<'a>(&'a dyn Fn(&Gvk) -> bool);

impl Subject for ClusterApis<'_> {
    fn package(&self) -> &str {
        ""
    }

    fn version(&self) -> &Version {
        no_version()
    }

    fn provides(&self, gvk: &Gvk) -> bool {
        (self.0)(gvk)
    }

    fn properties(&self) -> Vec<Value> {
        Vec::new()
    }
}

/// The version of what has none (it matches no package constraint anyway:
/// its package name is empty).
fn no_version() -> &'static Version {
    static ZERO: std::sync::OnceLock<Version> = std::sync::OnceLock::new();
    ZERO.get_or_init(|| Version::parse("0.0.0").expect("a valid version"))
}

/// What `bundle` offers other bundles: its package and version, the APIs
/// its CRDs define (every served version), its labels and the rest of
/// `metadata/properties.yaml`, as File-Based Catalog properties; and, for
/// people, the CSV's display name and provider as `olm.csv.metadata`:
///
/// ```
/// # use pakket_registry_v1::{bundle::Bundle, dependencies::provided};
/// # use serde_json::json;
/// let csv = json!({
///     "metadata": { "name": "etcdoperator.v0.9.4" },
///     "spec": { "version": "0.9.4", "displayName": "etcd", "provider": { "name": "CNCF" },
///               "install": { "strategy": "deployment" } },
/// });
/// let bundle = Bundle {
///     package: "etcd".into(),
///     csv: serde_json::from_value(csv.clone()).unwrap(),
///     csv_document: csv,
///     manifests: Vec::new(),
///     dependencies: Vec::new(),
///     properties: Vec::new(),
/// };
/// let properties = provided(&bundle);
/// assert_eq!(properties[0].value, json!({ "packageName": "etcd", "version": "0.9.4" }));
/// assert_eq!(properties[1].type_, "olm.csv.metadata");
/// assert_eq!(properties[1].value, json!({ "displayName": "etcd", "provider": { "name": "CNCF" } }));
/// ```
pub fn provided(bundle: &Bundle) -> Vec<BundleProperty> {
    let mut properties = Vec::new();
    if let Some(version) = bundle
        .csv_document
        .pointer("/spec/version")
        .and_then(Value::as_str)
    {
        properties.push(BundleProperty {
            type_: "olm.package".into(),
            value: json!({ "packageName": bundle.package, "version": version }),
        });
    }
    // The operator's name and maker in words, for `kubectl instance
    // describe`: a small `olm.csv.metadata` (OLM's holds the whole CSV
    // header; this lives in a status, so only two short fields).
    let words = |pointer: &str| {
        bundle
            .csv_document
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(|text| text.chars().take(200).collect::<String>())
    };
    let mut metadata = serde_json::Map::new();
    if let Some(display_name) = words("/spec/displayName") {
        metadata.insert("displayName".into(), json!(display_name));
    }
    if let Some(provider) = words("/spec/provider/name") {
        metadata.insert("provider".into(), json!({ "name": provider }));
    }
    if !metadata.is_empty() {
        properties.push(BundleProperty {
            type_: "olm.csv.metadata".into(),
            value: Value::Object(metadata),
        });
    }
    for crd in bundle.manifests.iter().filter(|object| {
        object.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
    }) {
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = crd
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for version in versions {
            if let Some(name) = version.get("name").and_then(Value::as_str) {
                properties.push(BundleProperty {
                    type_: "olm.gvk".into(),
                    value: json!({ "group": group, "version": name, "kind": kind }),
                });
            }
        }
    }
    // Everything else it declares, as written; what it requires is
    // shared below, read as the dependency checks read it.
    for property in crate::declared::declared(bundle) {
        if !properties.contains(&property) {
            properties.push(property);
        }
    }
    // What it requires (dependencies.yaml, properties.yaml, the CSV's
    // required CRDs), for the API inventory: who needs whom (`kubectl
    // instance deps`, the in-use check on deletes). Installing reads the
    // bundle's own files, never these.
    if let Ok(needs) = needs(bundle) {
        for (package, _, range) in &needs.packages {
            properties.push(BundleProperty {
                type_: "olm.package.required".into(),
                value: json!({ "packageName": package, "versionRange": range }),
            });
        }
        for gvk in &needs.gvks {
            properties.push(BundleProperty {
                type_: "olm.gvk.required".into(),
                value: json!({ "group": gvk.group, "version": gvk.version, "kind": gvk.kind }),
            });
        }
    }
    properties
}
