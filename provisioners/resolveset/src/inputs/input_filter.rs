//! The constraints of an Input that look at a bundle itself rather than
//! naming it: `cel` (an expression over the bundle's properties, as OLM's
//! `olm.constraint` rules are written) and `minKubeVersion` (usually from
//! the InputClass: the Kubernetes version to plan for, so a bundle whose
//! CSV asks for a newer one is not chosen).
//!
//! They narrow the Input's own request before it is resolved: a package
//! request keeps only the versions whose bundles pass (its range becomes
//! `=a || =b …`), a request for a bundle by name passes or not. The
//! dependencies the engine picks for it are not narrowed by them.
//!
//! `minKubeVersion` takes a version (`1.34`, `>= 1.34`) or `next`: the
//! minor after the apiserver's (what `dry-run-next` plans for). Without
//! one, the apiserver's own version is the target, so nothing that cannot
//! run on the cluster is chosen. A chart's `kubeVersion` (a range, from a
//! `helm.chart` document) is checked against the same target.

use pakket_engine::catalog::{CatalogSet, CelRule};
use pakket_engine::resolve::Request;
use pakket_engine::{Range, Version};
use serde_json::{Value, json};

use crate::inputs::input::InputConstraint;

/// The Kubernetes version an Input plans for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KubeTarget {
    /// The apiserver's version.
    #[default]
    Cluster,
    /// The minor after the apiserver's.
    Next,
    /// This version.
    Version(Version),
}

/// What narrows an Input's bundles.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// `cel` rules, every one must hold.
    pub rules: Vec<CelRule>,
    /// The Kubernetes version to plan for.
    pub kube: KubeTarget,
}

/// Reads the `cel` and `minKubeVersion` constraints among `constraints`
/// (the Input's, then its class's, with their field paths); the error is
/// `field: problem`.
pub fn filters_of(constraints: &[(String, &InputConstraint)]) -> Result<Filters, String> {
    let mut filters = Filters::default();
    for (at, constraint) in constraints {
        match constraint.type_.as_str() {
            "cel" => {
                let rule = constraint.value.as_str().ok_or_else(|| {
                    format!("{at}.value: a cel constraint's value is the expression, as a string")
                })?;
                filters.rules.push(
                    CelRule::compile(rule).map_err(|problem| format!("{at}.value: {problem}"))?,
                );
            }
            "minKubeVersion" => {
                let text = constraint.value.as_str().unwrap_or_default().trim();
                filters.kube = match text {
                    "next" => KubeTarget::Next,
                    _ => {
                        let version = text.trim_start_matches(">=").trim().trim_start_matches('v');
                        KubeTarget::Version(padded(version).ok_or_else(|| {
                            format!(
                                "{at}.value: {text:?} is not a Kubernetes version; write one (1.34, >= 1.34) or next"
                            )
                        })?)
                    }
                };
            }
            _ => {}
        }
    }
    Ok(filters)
}

/// `1.34` as `1.34.0`.
fn padded(text: &str) -> Option<Version> {
    let parts = text.split('.').count();
    let full = match parts {
        1 => format!("{text}.0.0"),
        2 => format!("{text}.0"),
        _ => text.to_owned(),
    };
    Version::parse(&full).ok()
}

impl KubeTarget {
    /// The version planned for, given the apiserver's (major, minor).
    pub fn version(&self, cluster: Option<(u32, u32)>) -> Option<Version> {
        match self {
            Self::Version(version) => Some(version.clone()),
            Self::Cluster => cluster.and_then(|(major, minor)| padded(&format!("{major}.{minor}"))),
            Self::Next => {
                cluster.and_then(|(major, minor)| padded(&format!("{major}.{}", minor + 1)))
            }
        }
    }
}

/// The bundle's properties as CEL rules see them (`[{type, value}]`).
fn properties(bundle: &pakket_engine::catalog::Bundle) -> Vec<Value> {
    bundle
        .properties
        .iter()
        .map(|property| json!({"type": property.kind(), "value": property.value_json()}))
        .collect()
}

/// The Kubernetes version a bundle's CSV asks for, if it says.
fn min_kube_version(properties: &[Value]) -> Option<Version> {
    properties
        .iter()
        .filter(|property| property["type"] == "olm.csv.metadata")
        .find_map(|property| property["value"]["minKubeVersion"].as_str())
        .and_then(|text| padded(text.trim().trim_start_matches('v')))
}

/// The Kubernetes versions a chart's `kubeVersion` allows, if it says
/// (the engine wrote it in its own range syntax).
fn chart_kube_version(properties: &[Value]) -> Option<Range> {
    properties
        .iter()
        .filter(|property| property["type"] == pakket_engine::catalog::TYPE_HELM_CHART)
        .find_map(|property| property["value"]["kubeVersion"].as_str())
        .and_then(|text| Range::parse(text).ok())
}

/// Whether `bundle` passes `filters` for Kubernetes `kube`.
fn passes(
    bundle: &pakket_engine::catalog::Bundle,
    filters: &Filters,
    kube: Option<&Version>,
) -> Result<bool, String> {
    let properties = properties(bundle);
    if let (Some(kube), Some(needed)) = (kube, min_kube_version(&properties))
        && needed > *kube
    {
        return Ok(false);
    }
    if let (Some(kube), Some(range)) = (kube, chart_kube_version(&properties))
        && !range.contains(kube)
    {
        return Ok(false);
    }
    for rule in &filters.rules {
        if !rule.evaluate(&properties)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `request` narrowed by `filters` to the bundles of `set` that pass them,
/// for a cluster at (major, minor) `cluster`; the error says why nothing
/// is left, or why the request cannot be narrowed.
pub fn narrow(
    set: &CatalogSet,
    request: Request,
    filters: &Filters,
    cluster: Option<(u32, u32)>,
) -> Result<Request, String> {
    let kube = filters.kube.version(cluster);
    let why = |what: &str| {
        let mut parts: Vec<String> = filters
            .rules
            .iter()
            .map(|rule| format!("cel {:?}", rule.rule()))
            .collect();
        if let Some(kube) = &kube {
            parts.push(format!("runs on Kubernetes {kube}"));
        }
        format!("no bundle of {what} meets {}", parts.join(" and "))
    };
    match request {
        Request::Package {
            package,
            channel,
            range,
            catalog,
        } => {
            let mut versions: Vec<Version> = Vec::new();
            let mut left_out = false;
            for r in set.bundles_of_package(&package) {
                let bundle = set.bundle(r);
                let in_catalog = catalog
                    .as_ref()
                    .is_none_or(|name| set.catalogs()[r.catalog as usize].name == *name);
                let in_range = range
                    .as_ref()
                    .is_none_or(|range| range.contains(&bundle.version));
                if !in_catalog || !in_range {
                    continue;
                }
                let passed = passes(bundle, filters, kube.as_ref())
                    .map_err(|problem| format!("{} ({}): {problem}", bundle.name, package))?;
                if !passed {
                    left_out = true;
                } else if !versions.contains(&bundle.version) {
                    versions.push(bundle.version.clone());
                }
            }
            if versions.is_empty() && left_out {
                return Err(why(&format!("package {package}")));
            }
            if !left_out {
                // Nothing left out (or nothing there: the engine says so):
                // the request as written, and its explanations with it.
                return Ok(Request::Package {
                    package,
                    channel,
                    range,
                    catalog,
                });
            }
            let written: Vec<String> = versions
                .iter()
                .map(|version| format!("={}", version.as_written()))
                .collect();
            let narrowed = Range::parse(&written.join(" || "))
                .map_err(|problem| format!("narrowing {package}: {problem}"))?;
            Ok(Request::Package {
                package,
                channel,
                range: Some(narrowed),
                catalog,
            })
        }
        Request::BundleName(name) => {
            let mut found = false;
            for catalog in set.catalogs() {
                for bundle in catalog.bundles.iter().filter(|b| b.name == name) {
                    found = true;
                    if passes(bundle, filters, kube.as_ref())? {
                        return Ok(Request::BundleName(name));
                    }
                }
            }
            if found {
                Err(why(&format!("the name {name}")))
            } else {
                // Not there at all: the engine says so in its own words.
                Ok(Request::BundleName(name))
            }
        }
        request @ (Request::Gvk(_) | Request::Label(_)) if filters.rules.is_empty() => {
            // An API or label with no rule: the Kubernetes version is not
            // checked for it (the engine picks among providers).
            Ok(request)
        }
        _ => Err(
            "cel narrows an Input that names a package or a bundle (olm.catalog, olm.packageVersion or olm.name), not one that asks for an API or a label"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pakket_engine::catalog::{Catalog, Format};

    /// `app` 1.0.0 (runs on Kubernetes 1.20+) and 2.0.0 (1.36+, tier gold).
    const CATALOG: &str = r#"
{"schema":"olm.package","name":"app","defaultChannel":"stable"}
{"schema":"olm.channel","package":"app","name":"stable","entries":[{"name":"app.v1.0.0"},{"name":"app.v2.0.0","replaces":"app.v1.0.0"}]}
{"schema":"olm.bundle","name":"app.v1.0.0","package":"app","image":"r/app:1","properties":[{"type":"olm.package","value":{"packageName":"app","version":"1.0.0"}},{"type":"olm.csv.metadata","value":{"minKubeVersion":"1.20.0"}}]}
{"schema":"olm.bundle","name":"app.v2.0.0","package":"app","image":"r/app:2","properties":[{"type":"olm.package","value":{"packageName":"app","version":"2.0.0"}},{"type":"olm.csv.metadata","value":{"minKubeVersion":"1.36.0"}},{"type":"example.com/tier","value":"gold"}]}
"#;

    fn set() -> CatalogSet {
        CatalogSet::new(vec![
            Catalog::from_str(CATALOG, "c.json", Format::Json, "c", 0).unwrap(),
        ])
    }

    fn constraint(type_: &str, value: Value) -> InputConstraint {
        InputConstraint {
            type_: type_.into(),
            value,
        }
    }

    fn filters(list: &[InputConstraint]) -> Result<Filters, String> {
        let fields: Vec<(String, &InputConstraint)> = list
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("spec.constraints[{i}]"), c))
            .collect();
        filters_of(&fields)
    }

    fn range_of(request: &Request) -> String {
        match request {
            Request::Package { range, .. } => range
                .as_ref()
                .map(|r| r.as_written().to_owned())
                .unwrap_or_default(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_chart_whose_kube_version_excludes_the_cluster_is_left_out() {
        // Charts in the shapes ingress-nginx and metrics-server declare.
        let charts = r#"
{"schema":"helm.chart","name":"web","version":"4.10.0","chart":"helm+https://charts.example/#web@4.10.0","kubeVersion":">=1.21.0-0"}
{"schema":"helm.chart","name":"web","version":"4.11.0","chart":"helm+https://charts.example/#web@4.11.0","kubeVersion":">=1.36.0-0"}
{"schema":"helm.chart","name":"web","version":"4.12.0","chart":"helm+https://charts.example/#web@4.12.0","kubeVersion":"~1.34.0"}
"#;
        let set = CatalogSet::new(vec![
            Catalog::from_str(charts, "c.json", Format::Json, "c", 0).unwrap(),
        ]);
        let on_1_35 = narrow(
            &set,
            Request::package("web"),
            &Filters::default(),
            Some((1, 35)),
        )
        .unwrap();
        assert_eq!(range_of(&on_1_35), "=4.10.0");
        let next = filters(&[constraint("minKubeVersion", json!("next"))]).unwrap();
        let on_1_36 = narrow(&set, Request::package("web"), &next, Some((1, 35))).unwrap();
        assert_eq!(range_of(&on_1_36), "=4.11.0 || =4.10.0");
    }

    #[test]
    fn a_bundle_needing_a_newer_kubernetes_than_the_cluster_is_left_out() {
        let on_1_35 = narrow(
            &set(),
            Request::package("app"),
            &Filters::default(),
            Some((1, 35)),
        )
        .unwrap();
        assert_eq!(range_of(&on_1_35), "=1.0.0");
        // The next minor runs both: the request stays as written.
        let next = filters(&[constraint("minKubeVersion", json!("next"))]).unwrap();
        let on_1_36 = narrow(&set(), Request::package("app"), &next, Some((1, 35))).unwrap();
        assert_eq!(range_of(&on_1_36), "");
        // Older than every bundle needs: said so.
        let old = filters(&[constraint("minKubeVersion", json!(">= 1.19"))]).unwrap();
        let error = narrow(&set(), Request::package("app"), &old, Some((1, 35))).unwrap_err();
        assert!(error.contains("runs on Kubernetes 1.19.0"), "{error}");
        // No cluster version known, no class version: nothing left out.
        let unknown = narrow(&set(), Request::package("app"), &Filters::default(), None).unwrap();
        assert_eq!(range_of(&unknown), "");
    }

    #[test]
    fn cel_rules_narrow_to_the_bundles_whose_properties_pass() {
        let gold = filters(&[constraint(
            "cel",
            json!(r#"properties.exists(p, p.type == "example.com/tier" && p.value == "gold")"#),
        )])
        .unwrap();
        let narrowed = narrow(&set(), Request::package("app"), &gold, None).unwrap();
        assert_eq!(range_of(&narrowed), "=2.0.0");
        // With the cluster at 1.35 nothing passes both: said so, naming both.
        let error = narrow(&set(), Request::package("app"), &gold, Some((1, 35))).unwrap_err();
        assert!(error.contains("cel") && error.contains("1.35.0"), "{error}");
        // By name.
        let by_name = narrow(
            &set(),
            Request::BundleName("app.v1.0.0".into()),
            &gold,
            None,
        );
        assert!(by_name.is_err());
        // An API request takes no cel.
        assert!(narrow(&set(), Request::Gvk("g/v1/K".into()), &gold, None).is_err());
    }

    #[test]
    fn bad_rules_and_versions_name_the_field() {
        let bad = filters(&[constraint("cel", json!("properties.exists(p,"))]).unwrap_err();
        assert!(
            bad.starts_with("spec.constraints[0].value: the CEL rule does not parse"),
            "{bad}"
        );
        let not_text = filters(&[constraint("cel", json!(3))]).unwrap_err();
        assert!(not_text.contains("as a string"), "{not_text}");
        let version = filters(&[constraint("minKubeVersion", json!("soon"))]).unwrap_err();
        assert!(version.contains("not a Kubernetes version"), "{version}");
    }
}
