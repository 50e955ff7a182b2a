//! What `GET /v1/catalogs`, `GET /v1/packages`, `GET /v1/packages/{name}`
//! and `POST /v1/query` answer, computed from one served snapshot.

use std::collections::BTreeMap;

use pakket_engine::catalog::{Bundle, CatalogSet};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::constraint::CheckedConstraint;
use crate::catalogs::serving::Served;

/// `GET /v1/catalogs`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CatalogList {
    /// Every served catalog, highest priority first.
    pub catalogs: Vec<CatalogSummary>,
}

/// One served catalog.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct CatalogSummary {
    /// The Catalog's name.
    pub name: String,
    /// Its priority (higher wins).
    pub priority: i32,
    /// The digest of the content served.
    pub digest: String,
    /// Packages in it.
    pub packages: u64,
    /// Channels in it.
    pub channels: u64,
    /// Bundles in it.
    pub bundles: u64,
}

/// `GET /v1/packages`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PackageList {
    /// Every package of every catalog, by name, then catalog priority.
    pub packages: Vec<PackageSummary>,
}

/// A package in one catalog.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageSummary {
    /// The package's name.
    pub name: String,
    /// The catalog it is in.
    pub catalog: String,
    /// The channel used when a request names none.
    pub default_channel: Option<String>,
    /// Its channels, by name, with their heads.
    pub channels: Vec<ChannelSummary>,
}

/// A channel and its heads (entries nothing replaces or skips).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ChannelSummary {
    /// The channel's name.
    pub name: String,
    /// Its heads; one in a well-formed channel.
    pub heads: Vec<String>,
}

/// `GET /v1/packages/{name}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PackageDetail {
    /// The package's name.
    pub name: String,
    /// The package in each catalog that has it, highest priority first.
    pub catalogs: Vec<PackageInCatalog>,
}

/// A package as one catalog has it: channels, versions, update graph.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageInCatalog {
    /// The catalog.
    pub catalog: String,
    /// The channel used when a request names none.
    pub default_channel: Option<String>,
    /// Its channels, with heads and entries (heads first, then by distance).
    pub channels: Vec<ChannelDetail>,
    /// Its bundles, newest first.
    pub versions: Vec<VersionEntry>,
    /// The update graph: `to` may replace an installed `from`.
    pub edges: Vec<Edge>,
}

/// A channel with its entries in preference order.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelDetail {
    /// The channel's name.
    pub name: String,
    /// Its heads.
    pub heads: Vec<String>,
    /// Its entries' bundle names, heads first.
    pub entries: Vec<String>,
    /// Each entry's `skipRange` as written, by entry name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skip_ranges: BTreeMap<String, String>,
    /// What is wrong with the channel's graph (several heads, dangling
    /// `replaces`, cycles), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One bundle of a package.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct VersionEntry {
    /// The bundle's name.
    pub bundle: String,
    /// Its version.
    pub version: String,
    /// The channels that list it.
    pub channels: Vec<String>,
    /// Why it is deprecated, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}

/// One upgrade edge of a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Edge {
    /// The channel the edge is in.
    pub channel: String,
    /// The installed bundle.
    pub from: String,
    /// The bundle that may replace it.
    pub to: String,
    /// `replaces`, `skips` or `skipRange`.
    pub via: String,
}

/// `POST /v1/query`: the bundles that meet the constraint.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct QueryResult {
    /// Matching bundles, in preference order (catalog priority, then newest).
    pub bundles: Vec<BundleSummary>,
}

/// A bundle as a query lists it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct BundleSummary {
    /// The catalog it is in.
    pub catalog: String,
    /// Its package.
    pub package: String,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its image.
    pub image: String,
    /// The channels that list it.
    pub channels: Vec<String>,
    /// Why it is deprecated, if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
}

/// Every served catalog.
pub fn catalogs(served: &Served) -> CatalogList {
    CatalogList {
        catalogs: served
            .set
            .catalogs()
            .iter()
            .map(|catalog| {
                let counts = crate::catalogs::serving::counts(catalog);
                CatalogSummary {
                    name: catalog.name.clone(),
                    priority: catalog.priority,
                    digest: served.digest(&catalog.name).unwrap_or_default().to_owned(),
                    packages: counts.packages,
                    channels: counts.channels,
                    bundles: counts.bundles,
                }
            })
            .collect(),
    }
}

/// Every package of every catalog.
pub fn packages(served: &Served) -> PackageList {
    let set = &served.set;
    let mut packages = Vec::new();
    for name in set.package_names() {
        for (index, package) in set.package(name) {
            let catalog = set.catalog(index).expect("the set's own index");
            packages.push(PackageSummary {
                name: package.name.clone(),
                catalog: catalog.name.clone(),
                default_channel: package.default_channel.clone(),
                channels: package
                    .channels
                    .keys()
                    .map(|channel| ChannelSummary {
                        name: channel.clone(),
                        heads: heads(set, index, name, channel),
                    })
                    .collect(),
            });
        }
    }
    PackageList { packages }
}

/// Through the set's name index: the catalog's own graph scans every bundle,
/// once per channel of every package.
fn heads(set: &CatalogSet, catalog: u32, package: &str, channel: &str) -> Vec<String> {
    set.graph(catalog, package, channel)
        .map(|graph| graph.heads().iter().map(|e| e.name.clone()).collect())
        .unwrap_or_default()
}

/// One package in every catalog that has it; `None` if none has.
pub fn package(served: &Served, name: &str) -> Option<PackageDetail> {
    let set = &served.set;
    let catalogs: Vec<PackageInCatalog> = set
        .package(name)
        .into_iter()
        .map(|(index, package)| {
            let catalog = set.catalog(index).expect("the set's own index");
            let mut versions: Vec<&Bundle> = catalog.bundles_of(name).collect();
            versions.sort_by(|a, b| b.version.cmp(&a.version).then(a.name.cmp(&b.name)));
            let mut channels = Vec::new();
            let mut edges = Vec::new();
            for channel in package.channels.values() {
                // The set's graph finds versions through its name index; the
                // catalog's own scans every bundle once per channel.
                let Some(graph) = set.graph(index, name, &channel.name) else {
                    continue;
                };
                channels.push(ChannelDetail {
                    name: channel.name.clone(),
                    heads: graph.heads().iter().map(|e| e.name.clone()).collect(),
                    entries: graph.ordered().iter().map(|e| e.name.clone()).collect(),
                    skip_ranges: channel
                        .entries
                        .iter()
                        .filter_map(|e| Some((e.name.clone(), e.skip_range.as_ref()?.to_string())))
                        .collect(),
                    problems: graph.check().into_iter().map(|d| d.message).collect(),
                });
                for entry in &channel.entries {
                    let edge = |from: &str, via: &str| Edge {
                        channel: channel.name.clone(),
                        from: from.to_owned(),
                        to: entry.name.clone(),
                        via: via.to_owned(),
                    };
                    edges.extend(entry.replaces.iter().map(|from| edge(from, "replaces")));
                    edges.extend(entry.skips.iter().map(|from| edge(from, "skips")));
                    if let Some(range) = &entry.skip_range {
                        edges.extend(
                            versions
                                .iter()
                                .filter(|b| b.name != entry.name && range.contains(&b.version))
                                .map(|b| edge(&b.name, "skipRange")),
                        );
                    }
                }
            }
            PackageInCatalog {
                catalog: catalog.name.clone(),
                default_channel: package.default_channel.clone(),
                channels,
                versions: versions
                    .iter()
                    .map(|bundle| VersionEntry {
                        bundle: bundle.name.clone(),
                        version: bundle.version.to_string(),
                        channels: bundle.channels.clone(),
                        deprecated: catalog.bundle_deprecation(bundle),
                    })
                    .collect(),
                edges,
            }
        })
        .collect();
    (!catalogs.is_empty()).then(|| PackageDetail {
        name: name.to_owned(),
        catalogs,
    })
}

/// The bundles of every catalog that meet `constraint`, in preference order.
pub fn query(served: &Served, constraint: &CheckedConstraint) -> QueryResult {
    let set: &CatalogSet = &served.set;
    // Packages and APIs are indexed; the rest is one pass over the bundles.
    let refs = match constraint {
        CheckedConstraint::Package { package, .. } => set.bundles_of_package(package),
        _ => {
            let mut refs: Vec<_> = set
                .catalogs()
                .iter()
                .enumerate()
                .flat_map(|(c, catalog)| {
                    (0..catalog.bundles.len()).map(move |b| pakket_engine::catalog::BundleRef {
                        catalog: c as u32,
                        bundle: b as u32,
                    })
                })
                .filter(|&r| constraint.matches(set.bundle(r)))
                .collect();
            refs.sort_by(|&a, &b| {
                let (x, y) = (set.bundle(a), set.bundle(b));
                a.catalog
                    .cmp(&b.catalog)
                    .then_with(|| y.version.cmp(&x.version))
                    .then_with(|| x.name.cmp(&y.name))
            });
            refs
        }
    };
    QueryResult {
        bundles: refs
            .into_iter()
            .filter(|&r| constraint.matches(set.bundle(r)))
            .map(|r| {
                let (catalog, bundle) = (set.catalog_of(r), set.bundle(r));
                BundleSummary {
                    catalog: catalog.name.clone(),
                    package: bundle.package.clone(),
                    name: bundle.name.clone(),
                    version: bundle.version.to_string(),
                    image: bundle.image.clone(),
                    channels: bundle.channels.clone(),
                    deprecated: catalog.bundle_deprecation(bundle),
                }
            })
            .collect(),
    }
}
