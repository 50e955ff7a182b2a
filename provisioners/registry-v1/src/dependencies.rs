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
//! any means counts as provided. `olm.constraint` formulas (`all`, `any`,
//! `not` over packages, APIs and labels) are evaluated over the same set.
//! Installing what is missing is the resolveset provisioner's work; here
//! the bundle waits, with nothing applied.

use pakket_api::BundleProperty;
use pakket_engine::catalog::Gvk;
use pakket_engine::resolve::{self, Candidate, CatalogInfo, Request, ResolveError, Universe};
use pakket_engine::{Range, Version};
use pakket_runtime::{ClusterFacts, InstalledContent};
use serde_json::{Value, json};

use crate::bundle::Bundle;

/// One need, in `olm.constraint`'s terms.
#[derive(Clone, Debug, PartialEq)]
pub enum Constraint {
    /// A bundle of `package` whose version is in `range` (as written in `text`).
    Package {
        /// The package.
        package: String,
        /// Versions accepted.
        range: Range,
        /// The range as written, for messages.
        text: String,
    },
    /// A provider of this API.
    Gvk(Gvk),
    /// A bundle with this `olm.label`.
    Label(String),
    /// Every one of these.
    All(Vec<Constraint>),
    /// At least one of these.
    Any(Vec<Constraint>),
    /// None of these.
    Not(Vec<Constraint>),
}

/// A bundle's needs, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Needs {
    /// Packages with version ranges (for the engine).
    pub packages: Vec<(String, Range, String)>,
    /// APIs (for the engine, unless the cluster serves them).
    pub gvks: Vec<Gvk>,
    /// Everything else, each with its `failureMessage` if it has one.
    pub constraints: Vec<(Option<String>, Constraint)>,
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
            "olm.label" => {
                label(&value).map(|l| needs.constraints.push((None, Constraint::Label(l))))
            }
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

/// An `olm.constraint` property's value: its failure message and formula.
fn constraint_property(value: &Value) -> Result<(Option<String>, Constraint), String> {
    let message = value
        .get("failureMessage")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok((message, constraint(value, "value")?))
}

/// One `olm.constraint` formula at `at`.
fn constraint(value: &Value, at: &str) -> Result<Constraint, String> {
    let compound = |key: &str| -> Result<Option<Vec<Constraint>>, String> {
        let Some(inner) = value.get(key) else {
            return Ok(None);
        };
        let list = inner
            .get("constraints")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{at}.{key}.constraints is not a list"))?;
        list.iter()
            .enumerate()
            .map(|(index, item)| constraint(item, &format!("{at}.{key}.constraints[{index}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    if let Some(all) = compound("all")? {
        return Ok(Constraint::All(all));
    }
    if let Some(any) = compound("any")? {
        return Ok(Constraint::Any(any));
    }
    if let Some(not) = compound("not")? {
        return Ok(Constraint::Not(not));
    }
    if let Some(inner) = value.get("package") {
        let (package, range, text) =
            package(inner, "versionRange").map_err(|problem| format!("{at}.package: {problem}"))?;
        return Ok(Constraint::Package {
            package,
            range,
            text,
        });
    }
    if let Some(inner) = value.get("gvk") {
        return gvk(inner)
            .map(Constraint::Gvk)
            .map_err(|problem| format!("{at}.gvk: {problem}"));
    }
    if let Some(inner) = value.get("label") {
        return label(inner)
            .map(Constraint::Label)
            .map_err(|problem| format!("{at}.label: {problem}"));
    }
    if value.get("cel").is_some() {
        return Err(format!(
            "{at}.cel: CEL constraints are not evaluated by this provisioner; nothing is installed \
             (use package, gvk, label, all, any or not)"
        ));
    }
    Err(format!(
        "{at} has none of package, gvk, label, all, any, not"
    ))
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
    for (message, constraint) in &needs.constraints {
        if !holds(constraint, &providers, &serves) {
            let what = describe(constraint);
            unmet.push(match message {
                Some(message) => format!("olm.constraint {what} is not met: {message}"),
                None => format!("olm.constraint {what} is not met by anything installed"),
            });
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

fn holds(constraint: &Constraint, providers: &[Provider], serves: &dyn Fn(&Gvk) -> bool) -> bool {
    match constraint {
        Constraint::Package { package, range, .. } => providers.iter().any(|provider| {
            provider
                .package
                .as_ref()
                .is_some_and(|(name, version)| name == package && range.contains(version))
        }),
        Constraint::Gvk(gvk) => {
            let key = resolve::gvk_key(gvk);
            serves(gvk) || providers.iter().any(|p| p.gvks.contains(&key))
        }
        Constraint::Label(label) => providers.iter().any(|p| p.labels.contains(label)),
        Constraint::All(all) => all.iter().all(|c| holds(c, providers, serves)),
        Constraint::Any(any) => any.iter().any(|c| holds(c, providers, serves)),
        Constraint::Not(not) => !not.iter().any(|c| holds(c, providers, serves)),
    }
}

/// A constraint in words, for messages.
fn describe(constraint: &Constraint) -> String {
    let list = |items: &[Constraint]| items.iter().map(describe).collect::<Vec<_>>().join(", ");
    match constraint {
        Constraint::Package { package, text, .. } if text.is_empty() => {
            format!("package {package}")
        }
        Constraint::Package { package, text, .. } => format!("package {package} {text}"),
        Constraint::Gvk(gvk) => format!("API {}", resolve::gvk_key(gvk)),
        Constraint::Label(label) => format!("label {label}"),
        Constraint::All(items) => format!("all of ({})", list(items)),
        Constraint::Any(items) => format!("any of ({})", list(items)),
        Constraint::Not(items) => format!("none of ({})", list(items)),
    }
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
    for item in &bundle.properties {
        let Some(kind) = item.get("type").and_then(Value::as_str) else {
            continue;
        };
        // What the bundle requires stays with it; what it offers is shared.
        if matches!(kind, "olm.package" | "olm.gvk" | "olm.label") {
            properties.push(BundleProperty {
                type_: kind.to_owned(),
                value: item.get("value").cloned().unwrap_or(Value::Null),
            });
        }
    }
    properties
}
