//! `helm.chart` documents: one version of a Helm chart in a catalog,
//! resolved like a bundle.
//!
//! ```yaml
//! schema: helm.chart
//! name: podinfo                 # the chart: its package
//! version: 6.7.1
//! chart: helm+https://stefanprodan.github.io/podinfo/#podinfo@6.7.1   # or oci://REGISTRY/PATH:VERSION
//! digest: sha256:…              # optional; pins an oci:// chart
//! kubeVersion: ">=1.23.0-0"     # optional, as in Chart.yaml
//! dependencies:                 # optional, as in Chart.yaml
//! - name: redis
//!   version: ">=17.0.0 <18.0.0"
//! ```
//!
//! Each is read into what the rest of the catalog is made of, so the
//! engine resolves charts with the rules it has (one version per package,
//! ranges, never a downgrade, explanations): the chart's versions become a
//! package of that name (unless an `olm.package` document names it), one
//! channel `helm` in which every version upgrades every lower one (Helm has
//! no upgrade graph: any higher version is an upgrade), and a bundle
//! `NAME.vVERSION` per version whose image is the chart's ref, with an
//! `olm.package.required` per dependency and a `helm.chart` property
//! (`kubeVersion`, `digest`) that says it is a chart.
//!
//! Ranges are Helm's (Masterminds/semver, [`Range::parse_glasskube`]), and
//! are written back in the engine's own syntax. A document whose version,
//! dependency range or `kubeVersion` does not parse is left out with a
//! diagnostic naming the field.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::diagnostic::{Diagnostic, DiagnosticCode, Origin, object};
use super::document::{BundleDoc, ChannelDoc, Document, EntryDoc, PackageDoc};
use super::property::RawProperty;
use crate::{Range, Version};

/// `helm.chart`.
pub const SCHEMA_HELM_CHART: &str = "helm.chart";
/// The property a chart's bundle carries.
pub const TYPE_HELM_CHART: &str = "helm.chart";
/// The one channel of a chart's package.
pub const HELM_CHANNEL: &str = "helm";

/// One chart version, as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HelmChartDoc {
    pub name: String,
    pub version: String,
    pub chart: String,
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub kube_version: Option<String>,
    #[serde(default)]
    pub dependencies: Option<Vec<DependencyDoc>>,
}

/// One dependency, as `Chart.yaml` writes it.
#[derive(Debug, Deserialize)]
pub(crate) struct DependencyDoc {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
}

/// One version, read.
struct Read {
    origin: Origin,
    doc: HelmChartDoc,
    version: Version,
    properties: Vec<RawProperty>,
}

/// The documents `charts` stand for; `packages` names the packages that
/// have their own `olm.package` document. Problems go to `diagnostics`.
pub(crate) fn expand(
    charts: Vec<(Origin, HelmChartDoc)>,
    packages: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(Origin, Document)> {
    let mut by_chart: BTreeMap<String, Vec<Read>> = BTreeMap::new();
    for (origin, doc) in charts {
        match read(&doc) {
            Ok((version, properties)) => by_chart.entry(doc.name.clone()).or_default().push(Read {
                origin,
                doc,
                version,
                properties,
            }),
            Err((field, message)) => diagnostics.push(
                Diagnostic::new(
                    DiagnosticCode::InvalidDocument,
                    origin,
                    object(SCHEMA_HELM_CHART, &format!("{}@{}", doc.name, doc.version)),
                    format!("{message}; this chart version is left out"),
                )
                .with_field(field),
            ),
        }
    }
    let mut documents = Vec::new();
    for (name, mut versions) in by_chart {
        versions.sort_by(|a, b| a.version.cmp(&b.version));
        let first = versions[0].origin.clone();
        if !packages(&name) {
            documents.push((
                first.clone(),
                Document::Package(PackageDoc {
                    name: name.clone(),
                    default_channel: Some(HELM_CHANNEL.into()),
                    description: None,
                }),
            ));
        }
        let mut entries = Vec::new();
        let mut previous: Option<String> = None;
        for read in versions {
            let bundle = bundle_name(&name, &read.doc.version);
            entries.push(EntryDoc {
                name: bundle.clone(),
                replaces: previous.replace(bundle.clone()),
                skips: None,
                skip_range: Some(format!("<{}", read.version)),
            });
            documents.push((
                read.origin,
                Document::Bundle(BundleDoc {
                    name: bundle,
                    package: name.clone(),
                    image: Some(image(&read.doc)),
                    properties: Some(read.properties),
                }),
            ));
        }
        documents.push((
            first,
            Document::Channel(ChannelDoc {
                package: name,
                name: HELM_CHANNEL.into(),
                entries: Some(entries),
            }),
        ));
    }
    documents
}

/// The bundle of chart `name` at `version`.
pub fn bundle_name(name: &str, version: &str) -> String {
    format!("{name}.v{version}")
}

/// The ref installed: the chart's, an `oci://` one pinned to the digest
/// when the document gives one.
fn image(doc: &HelmChartDoc) -> String {
    match &doc.digest {
        Some(digest) if doc.chart.starts_with("oci://") && !doc.chart.contains('@') => {
            format!("{}@{digest}", doc.chart)
        }
        _ => doc.chart.clone(),
    }
}

/// The version and properties of `doc`, or the field that is wrong and why.
fn read(doc: &HelmChartDoc) -> Result<(Version, Vec<RawProperty>), (String, String)> {
    if doc.name.is_empty() {
        return Err(("name".into(), "the chart has an empty name".into()));
    }
    if !(doc.chart.starts_with("helm+https://") || doc.chart.starts_with("oci://")) {
        return Err((
            "chart".into(),
            format!(
                "{:?} is not helm+https://REPOSITORY/#CHART@VERSION or oci://REGISTRY/PATH:VERSION",
                doc.chart
            ),
        ));
    }
    let version = Version::parse(&doc.version)
        .map_err(|error| ("version".to_owned(), format!("{:?}: {error}", doc.version)))?;
    let mut properties = vec![property(
        "olm.package",
        &json!({"packageName": doc.name, "version": doc.version}),
    )];
    for (i, dependency) in doc.dependencies.iter().flatten().enumerate() {
        let written = dependency.version.as_deref().unwrap_or("*");
        let range = Range::parse_glasskube(written).map_err(|error| {
            (
                format!("dependencies[{i}].version"),
                format!("{written:?} on chart {:?}: {error}", dependency.name),
            )
        })?;
        properties.push(property(
            "olm.package.required",
            &json!({"packageName": dependency.name, "versionRange": range.to_string()}),
        ));
    }
    let kube_version = doc
        .kube_version
        .as_deref()
        .map(|written| {
            Range::parse_glasskube(written)
                .map(|range| range.to_string())
                .map_err(|error| ("kubeVersion".to_owned(), format!("{written:?}: {error}")))
        })
        .transpose()?;
    properties.push(property(
        TYPE_HELM_CHART,
        &json!({"kubeVersion": kube_version, "digest": doc.digest}),
    ));
    Ok((version, properties))
}

fn property(kind: &str, value: &serde_json::Value) -> RawProperty {
    RawProperty {
        kind: kind.to_owned(),
        value: RawValue::from_string(value.to_string()).expect("a JSON value is valid JSON"),
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::{Catalog, Format, UpdateGraph};

    /// Charts in podinfo's and redis's shapes: podinfo's later versions
    /// need redis through a Helm range.
    const CATALOG: &str = r#"
schema: helm.chart
name: podinfo
version: 6.7.1
chart: "helm+https://charts.example/#podinfo@6.7.1"
kubeVersion: ">=1.23.0-0"
dependencies:
- name: redis
  version: "~17.3"
---
schema: helm.chart
name: podinfo
version: 6.5.0
chart: "helm+https://charts.example/#podinfo@6.5.0"
---
schema: helm.chart
name: redis
version: 17.3.4
chart: oci://registry.example/charts/redis:17.3.4
digest: sha256:1111111111111111111111111111111111111111111111111111111111111111
---
schema: helm.chart
name: redis
version: seventeen
chart: oci://registry.example/charts/redis:seventeen
---
schema: helm.chart
name: broken
version: 1.0.0
chart: "helm+https://charts.example/#broken@1.0.0"
dependencies:
- name: redis
  version: ">=> 1"
"#;

    #[test]
    fn chart_versions_become_a_package_whose_every_version_upgrades_the_lower_ones() {
        let catalog = Catalog::from_str(CATALOG, "charts.yaml", Format::Yaml, "charts", 0).unwrap();
        let podinfo = &catalog.packages["podinfo"];
        assert_eq!(podinfo.default_channel.as_deref(), Some("helm"));
        let newest = catalog
            .bundles
            .iter()
            .find(|b| b.name == "podinfo.v6.7.1")
            .unwrap();
        assert_eq!(newest.image, "helm+https://charts.example/#podinfo@6.7.1");
        assert_eq!(newest.channels, ["helm"]);
        // `~17.3` as Helm reads it, in the engine's syntax.
        let redis = &newest.required_packages[0];
        assert_eq!(redis.package, "redis");
        assert!(redis.range.contains(&"17.3.9".parse().unwrap()));
        assert!(!redis.range.contains(&"17.4.0".parse().unwrap()));
        assert!(newest.properties.iter().any(|p| p.kind() == "helm.chart"));
        // An oci:// chart is pinned to the digest the catalog gives.
        let pinned = catalog
            .bundles
            .iter()
            .find(|b| b.package == "redis")
            .unwrap();
        assert_eq!(
            pinned.image,
            "oci://registry.example/charts/redis:17.3.4@sha256:1111111111111111111111111111111111111111111111111111111111111111"
        );
        // 6.5.0 upgrades to 6.7.1; nothing goes down.
        let channel = &podinfo.channels["helm"];
        let versions: std::collections::HashMap<&str, &crate::Version> = catalog
            .bundles
            .iter()
            .map(|b| (b.name.as_str(), &b.version))
            .collect();
        let graph = UpdateGraph::new(channel, |name| versions.get(name).copied());
        let from_old: Vec<&str> = graph
            .upgrades_from("podinfo.v6.5.0", &"6.5.0".parse().unwrap())
            .into_iter()
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(graph.heads().len(), 1);
        assert_eq!(from_old, ["podinfo.v6.7.1"]);
        // What does not parse is left out, naming the field.
        let fields: Vec<(&str, Option<&str>)> = catalog
            .diagnostics
            .iter()
            .map(|d| (d.object.as_str(), d.field.as_deref()))
            .collect();
        assert!(
            fields.contains(&("helm.chart \"redis@seventeen\"", Some("version")))
                && fields.contains(&(
                    "helm.chart \"broken@1.0.0\"",
                    Some("dependencies[0].version")
                )),
            "{fields:?}"
        );
        assert!(!catalog.packages.contains_key("broken"));
    }
}
