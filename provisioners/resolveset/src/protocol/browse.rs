//! The answers of `GET /v1/catalogs`, `GET /v1/packages`,
//! `GET /v1/packages/{name}` and `POST /v1/query`, computed from one served
//! snapshot (the types are the API crate's).

use pakket_engine::catalog::{Bundle, CatalogSet};
pub use pakket_resolve_api::protocol::browse::*;
use pakket_resolve_api::protocol::constraint::CheckedConstraint;

use crate::catalogs::serving::Served;

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
