//! Large catalogs load to what small ones would: the universe's upgrade
//! edges, channel positions and deprecations are those each channel's own
//! graph gives, entry by entry. Loading indexes names and sorts versions so
//! it stays linear in the catalog's size; these tests hold it to the plain
//! definitions, on generated catalogs and on the derived community catalog.
//! (How fast it is, is the `load` bench's business, not a test's.)

use std::collections::HashMap;
use std::path::PathBuf;

use pakket_engine::catalog::{Catalog, CatalogSet, Format};
use pakket_engine::resolve::Universe;

#[path = "../benches/support/synthetic.rs"]
mod synthetic;

use synthetic::Shape;

/// A bundle as the universe holds it: name, the bundles it may upgrade to,
/// and its (channel, depth) positions.
type Loaded = (String, Vec<String>, Vec<(String, u32)>);

/// Per bundle, what `Universe::from_catalogs` must give: from every channel
/// listing it, in package and channel name order, that graph's
/// `upgrades_from` in preference order, repeats dropped; and its (channel,
/// depth) in each of those channels. Each graph is asked entry by entry, as
/// the definition reads.
fn reference(catalog: &Catalog) -> Vec<Loaded> {
    let index: HashMap<&str, usize> = catalog
        .bundles
        .iter()
        .enumerate()
        .map(|(i, bundle)| (bundle.name.as_str(), i))
        .collect();
    let mut upgrades: Vec<Vec<String>> = vec![Vec::new(); catalog.bundles.len()];
    let mut positions: Vec<Vec<(String, u32)>> = vec![Vec::new(); catalog.bundles.len()];
    for package in catalog.packages.values() {
        for channel in package.channels.values() {
            let graph = catalog.graph(&package.name, &channel.name).unwrap();
            for entry in graph.ordered() {
                let Some(&from) = index.get(entry.name.as_str()) else {
                    continue;
                };
                let bundle = &catalog.bundles[from];
                for target in graph.upgrades_from(&bundle.name, &bundle.version) {
                    if index.contains_key(target.name.as_str())
                        && !upgrades[from].contains(&target.name)
                    {
                        upgrades[from].push(target.name.clone());
                    }
                }
                let depth = graph
                    .distance_from_head(&bundle.name)
                    .map_or(u32::MAX, |d| d as u32);
                positions[from].push((channel.name.clone(), depth));
            }
        }
    }
    catalog
        .bundles
        .iter()
        .zip(upgrades)
        .zip(positions)
        .map(|((bundle, upgrades), positions)| (bundle.name.clone(), upgrades, positions))
        .collect()
}

fn actual(universe: &Universe) -> Vec<Loaded> {
    (0..universe.bundles.len())
        .map(|bundle| {
            let candidate = &universe.bundles[bundle];
            let upgrades = universe
                .upgrades_from(bundle)
                .iter()
                .map(|&to| universe.bundles[to].name.clone())
                .collect();
            let mut positions: Vec<(String, u32)> = candidate
                .channels
                .iter()
                .map(|position| (position.channel.clone(), position.depth))
                .collect();
            positions.sort();
            (candidate.name.clone(), upgrades, positions)
        })
        .collect()
}

fn assert_same_as_reference(catalog: Catalog) {
    let mut expected = reference(&catalog);
    for (_, _, positions) in &mut expected {
        positions.sort();
    }
    let universe = Universe::from_catalogs(&CatalogSet::new(vec![catalog]));
    let found = actual(&universe);
    assert_eq!(found.len(), expected.len());
    for (found, expected) in found.iter().zip(&expected) {
        assert_eq!(found, expected);
    }
}

#[test]
fn a_generated_catalog_with_long_channels_loads_as_its_graphs_define() {
    let shape = Shape::deep(3_000);
    let text = synthetic::catalog(shape);
    let catalog = Catalog::from_str(&text, "synthetic.json", Format::Json, "synthetic", 0).unwrap();
    assert!(
        catalog.diagnostics.is_empty(),
        "{:#?}",
        &catalog.diagnostics[..1]
    );
    assert_eq!(catalog.bundles.len(), shape.bundles());
    assert_eq!(catalog.packages.len(), shape.packages);
    assert_same_as_reference(catalog);
}

#[test]
fn a_generated_catalog_with_many_packages_keeps_its_deprecations_and_heads() {
    let shape = Shape::wide(2_000);
    let text = synthetic::catalog(shape);
    let catalog = Catalog::from_str(&text, "synthetic.json", Format::Json, "synthetic", 0).unwrap();
    assert!(
        catalog.diagnostics.is_empty(),
        "{:#?}",
        &catalog.diagnostics[..1]
    );
    assert_eq!(catalog.deprecations.len(), shape.packages.div_ceil(10));
    let universe = Universe::from_catalogs(&CatalogSet::new(vec![catalog.clone()]));
    for p in 0..shape.packages {
        for j in 0..shape.bundles_per_package {
            let bundle = universe
                .bundle_in(0, &synthetic::bundle(p, j))
                .expect("every generated bundle loads");
            let deprecated = p % 10 == 0 && j < 2;
            assert_eq!(
                universe.deprecation(bundle).is_some(),
                deprecated,
                "{}",
                synthetic::bundle(p, j)
            );
        }
        let head = universe
            .bundle_in(0, &synthetic::bundle(p, shape.bundles_per_package - 1))
            .unwrap();
        assert!(
            universe.bundles[head]
                .channels
                .iter()
                .all(|position| position.depth == 0)
        );
    }
    assert_same_as_reference(catalog);
}

#[test]
fn the_derived_community_catalog_loads_as_its_graphs_define() {
    // Dangling replaces, channels with several heads, entries naming
    // bundles of other packages: the messy shapes must come out the same too.
    let root = std::env::var_os("PAKKET_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    let path = root.join("fbc/community-operators-prod-derived/catalog.json");
    assert!(
        path.exists(),
        "test data {} is missing; set PAKKET_DATA to the shared data folder",
        path.display()
    );
    assert_same_as_reference(Catalog::load(&path, "community", 0).unwrap());
}
