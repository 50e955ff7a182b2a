//! Property tests: on random catalogs, random requests and random installed
//! sets, every resolution the engine returns satisfies every request and
//! every dependency, holds one bundle per package and one provider per GVK,
//! moves installed bundles only along their update graph and never down.
//! Failures must be explained (never a panic).

use std::collections::{BTreeMap, BTreeSet};

use pakket_engine::resolve::{
    Candidate, CatalogInfo, ChannelPosition, Installed, Request, ResolveError, Universe, resolve,
};
use pakket_engine::{Range, Version};
use proptest::prelude::*;

const PACKAGES: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];
const GVKS: [&str; 3] = ["example.com/v1/A", "example.com/v1/B", "example.com/v1/C"];
const RANGES: [&str; 5] = [
    ">=1.0.0",
    "<2.0.0",
    ">=1.1.0 <3.0.0",
    "=1.0.0",
    ">1.0.0 !2.0.0",
];

/// One generated bundle: (package, minor version, provides, requires package, requires gvk).
type BundleSeed = (
    usize,
    u64,
    Option<usize>,
    Option<(usize, usize)>,
    Option<usize>,
);

fn bundle_seed() -> impl Strategy<Value = BundleSeed> {
    (
        0..PACKAGES.len(),
        0u64..4,
        proptest::option::of(0..GVKS.len()),
        proptest::option::of((0..PACKAGES.len(), 0..RANGES.len())),
        proptest::option::of(0..GVKS.len()),
    )
}

/// A universe of generated bundles in one catalog: each package's bundles
/// form a replaces chain in channel `stable`, newest first.
fn universe(seeds: &[BundleSeed]) -> Universe {
    let mut by_package: BTreeMap<usize, BTreeMap<u64, &BundleSeed>> = BTreeMap::new();
    for seed in seeds {
        by_package.entry(seed.0).or_default().insert(seed.1, seed);
    }
    let mut universe = Universe::new(vec![CatalogInfo {
        name: "generated".into(),
        priority: 0,
    }]);
    for (package, versions) in &by_package {
        let name = PACKAGES[*package];
        universe.set_default_channel(name, 0, "stable");
        let mut previous = None;
        for (depth, (minor, seed)) in versions.iter().rev().enumerate() {
            let (_, _, provides, requires, requires_gvk) = **seed;
            let index = universe.add_bundle(Candidate {
                name: format!("{name}.v1.{minor}.0"),
                package: name.into(),
                version: Version::new(1, *minor, 0),
                catalog: 0,
                channels: vec![ChannelPosition {
                    channel: "stable".into(),
                    depth: depth as u32,
                }],
                provides: provides.map(|g| GVKS[g].to_owned()).into_iter().collect(),
                requires_packages: requires
                    .filter(|(p, _)| p != package)
                    .map(|(p, r)| (PACKAGES[p].to_owned(), Range::parse(RANGES[r]).unwrap()))
                    .into_iter()
                    .collect(),
                requires_gvks: requires_gvk
                    .map(|g| GVKS[g].to_owned())
                    .into_iter()
                    .collect(),
                labels: Vec::new(),
            });
            // Newer bundles come first, so `previous` is the newer one: it replaces this one.
            if let Some(newer) = previous {
                universe.add_upgrade_edge(index, newer);
            }
            previous = Some(index);
        }
    }
    universe
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_result_keeps_every_rule(
        seeds in proptest::collection::vec(bundle_seed(), 1..14),
        requested in proptest::collection::btree_set(0..PACKAGES.len(), 1..3),
        installed_seed in proptest::collection::btree_set(0..PACKAGES.len(), 0..3),
    ) {
        let universe = universe(&seeds);
        let requests: Vec<Request> = requested.iter().map(|p| Request::package(PACKAGES[*p])).collect();
        // Install, for some packages, their oldest bundle (so moving up is possible).
        let installed: Vec<(String, usize)> = installed_seed
            .iter()
            .filter_map(|p| universe.package(PACKAGES[*p]).map(|info| (PACKAGES[*p].to_owned(), info.bundles.clone())))
            .filter_map(|(package, bundles)| bundles.iter().copied().min_by_key(|b| universe.bundles[*b].version.clone()).map(|b| (package, b)))
            .collect();
        let installed_list: Vec<Installed> =
            installed.iter().map(|(_, b)| Installed::Bundle { bundle: universe.bundles[*b].name.clone() }).collect();

        match resolve(&universe, &requests, &installed_list) {
            Ok(resolution) => {
                let chosen: Vec<&Candidate> = resolution
                    .resolved
                    .iter()
                    .map(|s| universe.bundles.iter().find(|b| b.name == s.bundle).expect("a chosen bundle exists"))
                    .collect();
                // One bundle per package.
                let packages: BTreeSet<&str> = chosen.iter().map(|b| b.package.as_str()).collect();
                prop_assert_eq!(packages.len(), chosen.len());
                // One provider per GVK.
                for gvk in GVKS {
                    let providers = chosen.iter().filter(|b| b.provides.iter().any(|p| p == gvk)).count();
                    prop_assert!(providers <= 1, "{gvk} has {providers} providers");
                }
                // Every request and every dependency is met inside the result.
                for package in requested.iter().map(|p| PACKAGES[*p]) {
                    prop_assert!(packages.contains(package), "request {package} unmet");
                }
                for bundle in &chosen {
                    for (package, range) in &bundle.requires_packages {
                        prop_assert!(
                            chosen.iter().any(|b| &b.package == package && range.contains(&b.version)),
                            "{} needs {package} {range}", bundle.name
                        );
                    }
                    for gvk in &bundle.requires_gvks {
                        prop_assert!(chosen.iter().any(|b| b.provides.contains(gvk)), "{} needs {gvk}", bundle.name);
                    }
                }
                // Installed packages stay, and move only along their graph, never down.
                for (package, bundle) in &installed {
                    let now = chosen.iter().find(|b| &b.package == package);
                    prop_assert!(now.is_some(), "installed {package} was dropped");
                    let now = now.unwrap();
                    let before = &universe.bundles[*bundle];
                    prop_assert!(now.version >= before.version, "{package} went down");
                    if now.name != before.name {
                        let allowed: Vec<&str> = universe.upgrades_from(*bundle).iter().map(|b| universe.bundles[*b].name.as_str()).collect();
                        prop_assert!(allowed.contains(&now.name.as_str()), "{package} left its graph");
                    }
                }
            }
            Err(ResolveError::Unsatisfiable(explanation)) => {
                prop_assert!(!explanation.needs.is_empty(), "an explanation names at least one need");
                prop_assert!(!explanation.to_string().is_empty());
            }
            Err(ResolveError::BadInput(message)) => prop_assert!(false, "generated input is valid: {message}"),
        }
    }

    #[test]
    fn resolution_is_deterministic(seeds in proptest::collection::vec(bundle_seed(), 1..14), requested in 0..PACKAGES.len()) {
        let universe = universe(&seeds);
        let requests = [Request::package(PACKAGES[requested])];
        let first = format!("{:?}", resolve(&universe, &requests, &[]).map(|r| r.resolved).map_err(|e| e.to_string()));
        let second = format!("{:?}", resolve(&universe, &requests, &[]).map(|r| r.resolved).map_err(|e| e.to_string()));
        prop_assert_eq!(first, second);
    }
}
