//! Building the resolver's [`Universe`] from loaded catalogs.

use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::universe::{Candidate, CatalogInfo, ChannelPosition, Universe};
use crate::catalog::{CatalogSet, DeprecationIndex, DeprecationReference, Gvk};

/// How a GVK is keyed in the universe: `group/version/Kind`.
pub fn gvk_key(gvk: &Gvk) -> String {
    // Built by hand: `format!` costs several times more, once per API of
    // every bundle of every catalog.
    let mut key = String::with_capacity(gvk.group.len() + gvk.version.len() + gvk.kind.len() + 2);
    for (i, part) in [&gvk.group, &gvk.version, &gvk.kind]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            key.push('/');
        }
        key.push_str(part);
    }
    key
}

impl Universe {
    /// Every bundle of every catalog in `set`, with channel positions from
    /// each channel's update graph and the upgrade edges of every channel,
    /// what each requires beyond packages and APIs (labels, constraints),
    /// deprecations, and the bundles each catalog left out while loading.
    pub fn from_catalogs(set: &CatalogSet) -> Self {
        let catalogs = set.catalogs();
        let mut universe = Universe::new(
            catalogs
                .iter()
                .map(|catalog| CatalogInfo {
                    name: catalog.name.clone(),
                    priority: catalog.priority,
                })
                .collect(),
        );
        // Only CEL rules read whole property lists; without one, copying
        // every bundle's properties would only cost memory.
        let cel = catalogs
            .iter()
            .flat_map(|catalog| &catalog.bundles)
            .flat_map(|bundle| &bundle.constraints)
            .any(|constraint| constraint.uses_cel());
        for (catalog_index, catalog) in catalogs.iter().enumerate() {
            let set_index = u32::try_from(catalog_index).expect("the set numbers catalogs in u32");
            // Each channel's graph is built once and used for both the
            // bundles' positions and the upgrade edges. The set's graphs find
            // versions through its name index: the catalog's own would scan
            // every bundle once per channel, quadratic in the catalog's size.
            let mut graphs = Vec::new();
            let mut positions: HashMap<&str, Vec<ChannelPosition>> = HashMap::new();
            for package in catalog.packages.values() {
                if let Some(default) = &package.default_channel {
                    universe.set_default_channel(&package.name, catalog_index, default);
                }
                for channel in package.channels.values() {
                    let Some(graph) = set.graph(set_index, &package.name, &channel.name) else {
                        continue;
                    };
                    for entry in graph.ordered() {
                        // Entries no head reaches sort after every reachable one.
                        let depth = graph
                            .distance_from_head(&entry.name)
                            .map_or(u32::MAX, |d| d as u32);
                        positions
                            .entry(entry.name.as_str())
                            .or_default()
                            .push(ChannelPosition {
                                channel: channel.name.clone(),
                                depth,
                            });
                    }
                    graphs.push(graph);
                }
            }
            let deprecations = DeprecationIndex::new(catalog);
            for bundle in &catalog.bundles {
                if universe.bundle_in(catalog_index, &bundle.name).is_some() {
                    continue; // the catalog reported the duplicate; the first one wins
                }
                let index = universe.add_bundle(Candidate {
                    name: bundle.name.clone(),
                    package: bundle.package.clone(),
                    version: bundle.version.clone(),
                    catalog: catalog_index,
                    channels: positions.remove(bundle.name.as_str()).unwrap_or_default(),
                    provides: bundle.provided_gvks.iter().map(gvk_key).collect(),
                    requires_packages: bundle
                        .required_packages
                        .iter()
                        .map(|requirement| (requirement.package.clone(), requirement.range.clone()))
                        .collect(),
                    requires_gvks: bundle.required_gvks.iter().map(gvk_key).collect(),
                    labels: bundle.labels.clone(),
                });
                for label in &bundle.required_labels {
                    universe.require_label(index, label.clone());
                }
                for constraint in &bundle.constraints {
                    universe.add_constraint(index, Arc::clone(constraint));
                }
                if let Some(reason) = deprecations.bundle_deprecation(bundle) {
                    universe.deprecate(index, reason);
                }
                if cel {
                    universe.set_properties(index, Arc::from(bundle.properties.as_slice()));
                }
            }
            for deprecation in &catalog.deprecations {
                for entry in &deprecation.entries {
                    if let DeprecationReference::Channel(channel) = &entry.reference {
                        universe.deprecate_channel(
                            &deprecation.package,
                            catalog_index,
                            channel,
                            entry.message.clone(),
                        );
                    }
                }
            }
            for left_out in &catalog.left_out {
                universe.record_left_out(
                    &left_out.package,
                    left_out.name.clone(),
                    catalog_index,
                    left_out.reason.clone(),
                );
            }
            // An installed bundle moves along any channel that lists it, and
            // to any bundle of the catalog a channel entry names.
            let version_of = |name: &str| {
                let bundle = set.find_bundle_in(set_index, name)?;
                Some(&set.bundle(bundle).version)
            };
            let mut seen = FxHashSet::default();
            for graph in &graphs {
                for (from, targets) in graph.every_upgrade(version_of) {
                    let Some(from) = universe.bundle_in(catalog_index, &from.name) else {
                        continue;
                    };
                    for target in targets {
                        if let Some(to) = universe.bundle_in(catalog_index, &target.name)
                            && seen.insert((from, to))
                        {
                            universe.push_upgrade_edge(from, to);
                        }
                    }
                }
            }
        }
        universe
    }
}
