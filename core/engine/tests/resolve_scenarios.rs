//! The resolution rules, one scenario each: requests, dependencies, the
//! invariants, the installed-set rules, OLM's preference order, and both
//! update-deadlock examples and the AND-caveat of OLM's dependency
//! resolution guide (seed 004). Universes are built by hand so each
//! scenario shows exactly the catalog it needs.

use pakket_engine::Version;
use pakket_engine::resolve::{
    Candidate, CatalogInfo, ChannelPosition, Installed, Request, Resolution, ResolveError,
    SelectionReason, Universe, resolve,
};

/// A small catalog-set builder: `bundle("etcd", "0.9.4").channel("alpha", 0)...`.
struct World {
    universe: Universe,
}

struct BundleSpec<'w> {
    world: &'w mut World,
    candidate: Candidate,
}

impl World {
    fn new(catalogs: &[(&str, i32)]) -> Self {
        let catalogs = catalogs
            .iter()
            .map(|(name, priority)| CatalogInfo {
                name: (*name).to_owned(),
                priority: *priority,
            })
            .collect();
        Self {
            universe: Universe::new(catalogs),
        }
    }

    fn one_catalog() -> Self {
        Self::new(&[("community", 0)])
    }

    fn bundle(&mut self, package: &str, version: &str) -> BundleSpec<'_> {
        let candidate = Candidate {
            name: format!("{package}.v{version}"),
            package: package.to_owned(),
            version: Version::parse(version).unwrap(),
            catalog: 0,
            channels: vec![ChannelPosition {
                channel: "stable".into(),
                depth: 0,
            }],
            provides: Vec::new(),
            requires_packages: Vec::new(),
            requires_gvks: Vec::new(),
            labels: Vec::new(),
        };
        self.universe.set_default_channel(package, 0, "stable");
        BundleSpec {
            world: self,
            candidate,
        }
    }

    fn default_channel(&mut self, package: &str, catalog: usize, channel: &str) -> &mut Self {
        self.universe.set_default_channel(package, catalog, channel);
        self
    }

    /// `to` may replace an installed `from` (names as `package.vX`).
    fn upgrade(&mut self, from: &str, to: &str) -> &mut Self {
        let from = self.universe.bundles_named(from)[0];
        let to = self.universe.bundles_named(to)[0];
        self.universe.add_upgrade_edge(from, to);
        self
    }

    fn resolve(&self, requests: &[&str], installed: &[&str]) -> Result<Resolution, ResolveError> {
        let requests: Vec<Request> = requests
            .iter()
            .map(|text| Request::parse_cli(text).unwrap())
            .collect();
        let installed: Vec<Installed> = installed
            .iter()
            .map(|bundle| Installed::Bundle {
                bundle: (*bundle).into(),
            })
            .collect();
        resolve(&self.universe, &requests, &installed)
    }

    fn resolve_requests(&self, requests: Vec<Request>) -> Result<Resolution, ResolveError> {
        resolve(&self.universe, &requests, &[])
    }
}

impl BundleSpec<'_> {
    fn catalog(mut self, catalog: usize) -> Self {
        self.candidate.catalog = catalog;
        self.world
            .universe
            .set_default_channel(&self.candidate.package, catalog, "stable");
        self
    }

    fn channels(mut self, channels: &[(&str, u32)]) -> Self {
        self.candidate.channels = channels
            .iter()
            .map(|(channel, depth)| ChannelPosition {
                channel: (*channel).to_owned(),
                depth: *depth,
            })
            .collect();
        self
    }

    fn depth(mut self, depth: u32) -> Self {
        self.candidate.channels[0].depth = depth;
        self
    }

    fn requires(mut self, package: &str, range: &str) -> Self {
        self.candidate.requires_packages.push((
            package.to_owned(),
            pakket_engine::Range::parse(range).unwrap(),
        ));
        self
    }

    fn requires_api(mut self, gvk: &str) -> Self {
        self.candidate.requires_gvks.push(gvk.to_owned());
        self
    }

    fn provides(mut self, gvk: &str) -> Self {
        self.candidate.provides.push(gvk.to_owned());
        self
    }

    fn label(mut self, label: &str) -> Self {
        self.candidate.labels.push(label.to_owned());
        self
    }

    fn add(self) {
        self.world.universe.add_bundle(self.candidate);
    }
}

/// `package=version@catalog` for every selection, sorted by package.
fn picked(result: &Result<Resolution, ResolveError>) -> Vec<String> {
    match result {
        Ok(resolution) => resolution
            .resolved
            .iter()
            .map(|selection| {
                format!(
                    "{}={}@{}",
                    selection.package, selection.version, selection.catalog
                )
            })
            .collect(),
        Err(error) => panic!("expected a resolution, got:\n{error}"),
    }
}

fn explanation(result: Result<Resolution, ResolveError>) -> String {
    match result {
        Err(ResolveError::Unsatisfiable(explanation)) => explanation.to_string(),
        Err(other) => panic!("expected an explanation, got bad input: {other}"),
        Ok(resolution) => panic!("expected no solution, got {resolution:?}"),
    }
}

// --- requests ---------------------------------------------------------------

#[test]
fn a_package_request_takes_the_default_channel_head() {
    let mut world = World::one_catalog();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    assert_eq!(
        picked(&world.resolve(&["etcd"], &[])),
        ["etcd=0.9.4@community"]
    );
}

#[test]
fn a_channel_request_takes_that_channels_head() {
    let mut world = World::one_catalog();
    world
        .bundle("etcd", "0.9.4")
        .channels(&[("stable", 0)])
        .add();
    world
        .bundle("etcd", "0.9.2")
        .channels(&[("stable", 1), ("clusterwide", 0)])
        .add();
    assert_eq!(
        picked(&world.resolve(&["etcd@clusterwide"], &[])),
        ["etcd=0.9.2@community"]
    );
}

#[test]
fn a_range_request_walks_down_from_the_head() {
    let mut world = World::one_catalog();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    world.bundle("etcd", "0.9.0").depth(2).add();
    assert_eq!(
        picked(&world.resolve(&["etcd=<0.9.4"], &[])),
        ["etcd=0.9.2@community"]
    );
}

#[test]
fn deppy_constraints_name_label_and_gvk_select_bundles() {
    let mut world = World::one_catalog();
    world.bundle("prometheus", "1.0.0").label("LTS").add();
    world.bundle("prometheus", "2.0.0").add();
    world
        .bundle("etcd", "0.9.4")
        .provides("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    let result = world.resolve_requests(vec![
        Request::Label("LTS".into()),
        Request::Gvk("etcd.database.coreos.com/v1beta2/EtcdCluster".into()),
    ]);
    assert_eq!(
        picked(&result),
        ["etcd=0.9.4@community", "prometheus=1.0.0@community"]
    );
    let result = world.resolve_requests(vec![Request::BundleName("etcd.v0.9.2".into())]);
    assert_eq!(picked(&result), ["etcd=0.9.2@community"]);
}

// --- dependencies and invariants --------------------------------------------

#[test]
fn package_dependencies_take_the_highest_version_in_range() {
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires("prometheus", ">0.27.0 <0.40.0")
        .add();
    world.bundle("prometheus", "0.45.0").add();
    world.bundle("prometheus", "0.32.0").depth(1).add();
    world.bundle("prometheus", "0.27.0").depth(2).add();
    let result = world.resolve(&["app"], &[]);
    assert_eq!(
        picked(&result),
        ["app=1.0.0@community", "prometheus=0.32.0@community"]
    );
    let prometheus = &result.unwrap().resolved[1];
    assert_eq!(
        prometheus.reason,
        SelectionReason::Dependency {
            of: "app.v1.0.0".into(),
            needs: "package prometheus >0.27.0 <0.40.0".into()
        }
    );
}

#[test]
fn gvk_dependencies_are_met_by_a_provider_from_any_package() {
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires_api("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    world
        .bundle("etcd", "0.9.4")
        .provides("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        ["app=1.0.0@community", "etcd=0.9.4@community"]
    );
}

#[test]
fn at_most_one_bundle_per_package_conflicting_ranges_are_explained() {
    let mut world = World::one_catalog();
    world.bundle("a", "1.0.0").requires("d", ">=2.0.0").add();
    world.bundle("b", "1.0.0").requires("d", "<2.0.0").add();
    world.bundle("d", "2.0.0").add();
    world.bundle("d", "1.0.0").depth(1).add();
    let text = explanation(world.resolve(&["a", "b"], &[]));
    insta::assert_snapshot!(text);
}

#[test]
fn at_most_one_provider_per_gvk() {
    let mut world = World::one_catalog();
    world
        .bundle("etcd", "0.9.4")
        .provides("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    world
        .bundle("etcd-fork", "1.0.0")
        .provides("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    let text = explanation(world.resolve(&["etcd", "etcd-fork"], &[]));
    insta::assert_snapshot!(text);
}

#[test]
fn a_missing_dependency_names_the_missing_package() {
    let mut world = World::one_catalog();
    world
        .bundle("eclipse-che", "7.121.0")
        .requires("devworkspace-operator", ">=0.11.0")
        .add();
    let text = explanation(world.resolve(&["eclipse-che"], &[]));
    insta::assert_snapshot!(text);
}

#[test]
fn and_caveat_package_and_gvk_dependencies_may_be_met_by_two_operators() {
    // Seed 004: "no AND between constraints": etcd >3.1.0 and the EtcdCluster
    // API may be satisfied by two different operators.
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires("etcd", ">3.1.0")
        .requires_api("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    world.bundle("etcd", "3.2.0").add();
    world
        .bundle("etcd-legacy", "0.9.4")
        .provides("etcd.database.coreos.com/v1beta2/EtcdCluster")
        .add();
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        [
            "app=1.0.0@community",
            "etcd=3.2.0@community",
            "etcd-legacy=0.9.4@community"
        ]
    );
}

// --- preferences --------------------------------------------------------------

#[test]
fn higher_catalog_priority_wins() {
    let mut world = World::new(&[("redhat", 10), ("community", 0)]);
    world.bundle("etcd", "0.9.2").catalog(0).add();
    world.bundle("etcd", "0.9.4").catalog(1).add();
    assert_eq!(
        picked(&world.resolve(&["etcd"], &[])),
        ["etcd=0.9.2@redhat"]
    );
}

#[test]
fn the_dependents_own_catalog_wins_over_priority() {
    let mut world = World::new(&[("redhat", 10), ("community", 0)]);
    world
        .bundle("app", "1.0.0")
        .catalog(1)
        .requires("etcd", ">=0.9.0")
        .add();
    world.bundle("etcd", "0.9.4").catalog(0).add();
    world.bundle("etcd", "0.9.2").catalog(1).add();
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        ["app=1.0.0@community", "etcd=0.9.2@community"]
    );
}

#[test]
fn the_default_channel_wins_then_channels_by_name() {
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires("etcd", ">=0.1.0")
        .add();
    world
        .bundle("etcd", "0.9.4")
        .channels(&[("alpha", 0)])
        .add();
    world
        .bundle("etcd", "0.9.2")
        .channels(&[("singlenamespace", 0)])
        .add();
    world
        .bundle("etcd", "0.9.3")
        .channels(&[("clusterwide", 0)])
        .add();
    world.default_channel("etcd", 0, "singlenamespace");
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        ["app=1.0.0@community", "etcd=0.9.2@community"]
    );
    world.default_channel("etcd", 0, "none-of-them");
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        ["app=1.0.0@community", "etcd=0.9.4@community"],
        "alpha < clusterwide"
    );
}

#[test]
fn an_api_provider_in_its_default_channel_wins_over_one_only_in_another_channel() {
    // OLM's sortBundles puts every default channel of a catalog before any
    // other channel, whatever the package: a-cache provides the API only in
    // its beta channel, b-cache in its default channel.
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires_api("example.com/v1/Cache")
        .add();
    world.bundle("a-cache", "2.0.0").add();
    world
        .bundle("a-cache", "2.1.0")
        .channels(&[("beta", 0)])
        .provides("example.com/v1/Cache")
        .add();
    world
        .bundle("b-cache", "1.0.0")
        .provides("example.com/v1/Cache")
        .add();
    assert_eq!(
        picked(&world.resolve(&["app"], &[])),
        ["app=1.0.0@community", "b-cache=1.0.0@community"]
    );
}

#[test]
fn the_head_wins_over_a_higher_version_lower_in_the_graph() {
    let mut world = World::one_catalog();
    world.bundle("odd", "1.0.0").add();
    world.bundle("odd", "2.0.0").depth(1).add();
    assert_eq!(
        picked(&world.resolve(&["odd"], &[])),
        ["odd=1.0.0@community"]
    );
}

// --- the installed set --------------------------------------------------------

#[test]
fn an_installed_bundle_is_kept_when_nothing_asks_to_move_it() {
    let mut world = World::one_catalog();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    world.bundle("app", "1.0.0").add();
    world.upgrade("etcd.v0.9.2", "etcd.v0.9.4");
    let result = world.resolve(&["app"], &["etcd.v0.9.2"]);
    assert_eq!(
        picked(&result),
        ["app=1.0.0@community", "etcd=0.9.2@community"]
    );
    assert_eq!(
        result.unwrap().resolved[1].reason,
        SelectionReason::Installed
    );
}

#[test]
fn a_requested_installed_bundle_moves_one_step_along_its_graph() {
    let mut world = World::one_catalog();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    world.bundle("etcd", "0.9.0").depth(2).add();
    world
        .upgrade("etcd.v0.9.0", "etcd.v0.9.2")
        .upgrade("etcd.v0.9.2", "etcd.v0.9.4");
    let result = world.resolve(&["etcd"], &["etcd.v0.9.0"]);
    assert_eq!(
        picked(&result),
        ["etcd=0.9.2@community"],
        "0.9.4 does not replace 0.9.0"
    );
}

#[test]
fn an_installed_bundle_never_downgrades() {
    let mut world = World::one_catalog();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    let text = explanation(world.resolve(&["etcd=<0.9.4"], &["etcd.v0.9.4"]));
    insta::assert_snapshot!(text);
}

#[test]
fn an_update_never_breaks_an_installed_dependent() {
    let mut world = World::one_catalog();
    world
        .bundle("app", "1.0.0")
        .requires("etcd", "<0.9.4")
        .add();
    world.bundle("etcd", "0.9.4").add();
    world.bundle("etcd", "0.9.2").depth(1).add();
    world.upgrade("etcd.v0.9.2", "etcd.v0.9.4");
    let text = explanation(world.resolve(&["etcd=0.9.4"], &["app.v1.0.0", "etcd.v0.9.2"]));
    insta::assert_snapshot!(text);
}

#[test]
fn deadlock_one_a_provider_that_drops_an_api_a_dependent_needs_does_not_update() {
    // Seed 004, first example: the provider of A requires B; the provider of
    // B updates to provide C and no longer B. OLM must not update it.
    let mut world = World::one_catalog();
    world
        .bundle("provider-a", "1.0.0")
        .provides("example.com/v1/A")
        .requires_api("example.com/v1/B")
        .add();
    world
        .bundle("provider-b", "2.0.0")
        .provides("example.com/v1/C")
        .add();
    world
        .bundle("provider-b", "1.0.0")
        .depth(1)
        .provides("example.com/v1/B")
        .add();
    world.upgrade("provider-b.v1.0.0", "provider-b.v2.0.0");
    let installed = ["provider-a.v1.0.0", "provider-b.v1.0.0"];
    let kept = world.resolve(&["provider-b"], &installed);
    assert_eq!(
        picked(&kept),
        ["provider-a=1.0.0@community", "provider-b=1.0.0@community"]
    );
    let text = explanation(world.resolve(&["provider-b=>=2.0.0"], &installed));
    insta::assert_snapshot!(text);
}

#[test]
fn deadlock_two_mutual_dependents_update_together() {
    // Seed 004, second example: A requires B and B requires A; the updates
    // provide A2/B2 and require each other's new API. Both must move at once.
    let mut world = World::one_catalog();
    world
        .bundle("provider-a", "2.0.0")
        .provides("example.com/v2/A")
        .requires_api("example.com/v2/B")
        .add();
    world
        .bundle("provider-a", "1.0.0")
        .depth(1)
        .provides("example.com/v1/A")
        .requires_api("example.com/v1/B")
        .add();
    world
        .bundle("provider-b", "2.0.0")
        .provides("example.com/v2/B")
        .requires_api("example.com/v2/A")
        .add();
    world
        .bundle("provider-b", "1.0.0")
        .depth(1)
        .provides("example.com/v1/B")
        .requires_api("example.com/v1/A")
        .add();
    world
        .upgrade("provider-a.v1.0.0", "provider-a.v2.0.0")
        .upgrade("provider-b.v1.0.0", "provider-b.v2.0.0");
    let installed = ["provider-a.v1.0.0", "provider-b.v1.0.0"];
    assert_eq!(
        picked(&world.resolve(&["provider-a=>=2.0.0"], &installed)),
        ["provider-a=2.0.0@community", "provider-b=2.0.0@community"]
    );
}

#[test]
fn resolution_is_deterministic_whatever_the_order_bundles_were_added() {
    let build = |reverse: bool| {
        let mut world = World::one_catalog();
        let mut specs = vec![
            ("etcd", "0.9.4", 0),
            ("etcd", "0.9.2", 1),
            ("etcd-fork", "1.0.0", 0),
        ];
        if reverse {
            specs.reverse();
        }
        world
            .bundle("app", "1.0.0")
            .requires_api("example.com/v1/E")
            .add();
        for (package, version, depth) in specs {
            world
                .bundle(package, version)
                .depth(depth)
                .provides("example.com/v1/E")
                .add();
        }
        picked(&world.resolve(&["app"], &[]))
    };
    assert_eq!(build(false), build(true));
    assert_eq!(
        build(false),
        ["app=1.0.0@community", "etcd=0.9.4@community"]
    );
}

#[test]
fn explanations_serialize_as_json_with_the_same_chain() {
    let mut world = World::one_catalog();
    world
        .bundle("eclipse-che", "7.121.0")
        .requires("devworkspace-operator", ">=0.11.0")
        .add();
    world
        .bundle("eclipse-che", "7.120.0")
        .depth(1)
        .requires("devworkspace-operator", ">=0.11.0")
        .add();
    let Err(ResolveError::Unsatisfiable(explanation)) = world.resolve(&["eclipse-che"], &[]) else {
        panic!("expected no solution");
    };
    insta::assert_json_snapshot!(explanation);
}
