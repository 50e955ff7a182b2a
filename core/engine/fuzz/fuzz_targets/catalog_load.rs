//! Feeds arbitrary bytes to the catalog loader as a JSON stream and as YAML,
//! then walks everything the loader kept: none of it may panic.
#![no_main]

use pakket_engine::Version;
use pakket_engine::catalog::{Catalog, CatalogSet, Format};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let catalogs: Vec<Catalog> = [Format::Json, Format::Yaml]
        .into_iter()
        .filter_map(|format| Catalog::from_str(text, "fuzz", format, "fuzz", 0).ok())
        .collect();
    for catalog in &catalogs {
        for diagnostic in &catalog.diagnostics {
            let _ = diagnostic.to_string();
        }
        for package in catalog.packages.values() {
            for channel in package.channels.values() {
                let Some(graph) = catalog.graph(&package.name, &channel.name) else {
                    continue;
                };
                let _ = (graph.heads(), graph.ordered(), graph.check());
                for entry in &channel.entries {
                    let _ = graph.distance_from_head(&entry.name);
                    let version = graph.version_of(&entry.name).cloned();
                    let version = version.unwrap_or_else(|| Version::new(0, 0, 0));
                    let _ = graph.upgrades_from(&entry.name, &version);
                }
            }
        }
    }
    let set = CatalogSet::new(catalogs);
    for name in set.package_names() {
        for r in set.bundles_of_package(name) {
            for gvk in &set.bundle(r).provided_gvks {
                let _ = set.providers_of(gvk);
            }
        }
    }
});
