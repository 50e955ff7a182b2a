//! The catalog loader on real catalogs, unchanged.
//!
//! Data (see /work/shared/data/README.md, kept unedited):
//! - `fbc/community-operators-prod-derived/catalog.json`: DERIVED by the data
//!   curators from every bundle of redhat-openshift-ecosystem/community-operators-prod
//!   at 699495f2ff526f9679a0d9d54688f09c683eff2c: 333 packages, 654 channels,
//!   7018 bundle documents. Its messiness is kept on purpose: 200 dangling
//!   replaces, 65 channels with several heads.
//! - `fbc/community-operators-prod-v4.20/`: verbatim `catalogs/v4.20/<pkg>/catalog.yaml`
//!   of the same repository and commit: the 25 packages maintained natively
//!   as FBC (the README's "37 of 38" is a leftover: 25 folders are present).
//!
//! Set `PAKKET_DATA` to read the data from elsewhere.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use pakket_engine::Version;
use pakket_engine::catalog::{Catalog, CatalogSet, DiagnosticCode, Gvk, Severity};

fn data(relative: &str) -> PathBuf {
    let root = std::env::var_os("PAKKET_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    let path = root.join(relative);
    assert!(
        path.exists(),
        "test data {} is missing; set PAKKET_DATA to the shared data folder",
        path.display()
    );
    path
}

/// Loaded once for every test of this file.
fn derived() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = data("fbc/community-operators-prod-derived/catalog.json");
        Catalog::load(&path, "community", 0).expect("the derived catalog loads")
    })
}

fn v420() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let path = data("fbc/community-operators-prod-v4.20");
        Catalog::load(&path, "v4.20", 10).expect("the v4.20 folder loads")
    })
}

fn counts(catalog: &Catalog) -> BTreeMap<DiagnosticCode, usize> {
    let mut counts = BTreeMap::new();
    for diagnostic in &catalog.diagnostics {
        *counts.entry(diagnostic.code).or_default() += 1;
    }
    counts
}

fn channel_count(catalog: &Catalog) -> usize {
    catalog.packages.values().map(|p| p.channels.len()).sum()
}

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

#[test]
fn the_derived_catalog_loads_with_the_counts_of_the_data_readme() {
    let catalog = derived();
    assert_eq!(catalog.packages.len(), 333);
    assert_eq!(channel_count(catalog), 654);
    // 7018 bundle documents; two reuse a name already taken
    // (kubernaut-operator.v1.5.2 is also written for 1.5.4, slurm-operator.v0.4.0
    // twice), so 7016 bundles load and two DuplicateBundle errors explain the rest.
    let codes = counts(catalog);
    assert_eq!(
        catalog.bundles.len() + codes[&DiagnosticCode::DuplicateBundle],
        7018
    );
    assert_eq!(catalog.bundles.len(), 7016);
    assert!(catalog.others.is_empty() && catalog.deprecations.is_empty());
}

#[test]
fn the_derived_catalog_messiness_is_reported_not_fatal() {
    let codes = counts(derived());
    assert_eq!(codes.get(&DiagnosticCode::DanglingReplaces), Some(&200));
    assert_eq!(codes.get(&DiagnosticCode::MultipleHeads), Some(&65));
    assert_eq!(codes.get(&DiagnosticCode::DuplicateEntry), Some(&2));
    assert_eq!(codes.get(&DiagnosticCode::ReplacesCycle), None);
    assert_eq!(codes.get(&DiagnosticCode::NoHead), None);
    // 31 skipRanges write their bound with a leading "v" (`<v1.13.0`), which
    // blang/semver rejects; OLM (operator-controller's successor check) then
    // ignores the range, and so does Pakket: the entries stay, without it.
    let skip_ranges: Vec<_> = derived()
        .diagnostics
        .iter()
        .filter(|d| d.code == DiagnosticCode::InvalidSkipRange)
        .collect();
    assert_eq!(skip_ranges.len(), 31);
    for diagnostic in &skip_ranges {
        assert!(
            diagnostic.message.contains("starts with \"v\""),
            "{diagnostic}"
        );
    }
    // Nothing else is left out: every version, version range and property reads.
    let left_out: Vec<_> = derived()
        .diagnostics
        .iter()
        .filter(|d| d.severity() == Severity::Error)
        .filter(|d| {
            !matches!(
                d.code,
                DiagnosticCode::DuplicateBundle | DiagnosticCode::InvalidSkipRange
            )
        })
        .map(ToString::to_string)
        .collect();
    let first = &left_out[..left_out.len().min(5)];
    assert!(
        left_out.is_empty(),
        "{} left out, first: {first:#?}",
        left_out.len()
    );
    let percona = derived()
        .channel("percona-postgresql-operator", "stable")
        .unwrap();
    let entry = percona.entry("percona-postgresql-operator.v1.4.0").unwrap();
    assert!(entry.skip_range.is_none());
}

#[test]
fn a_dangling_replaces_names_the_entry_and_the_missing_bundle() {
    let diagnostic = derived()
        .diagnostics
        .iter()
        .find(|d| {
            d.code == DiagnosticCode::DanglingReplaces && d.object.contains("threescale-2.11")
        })
        .expect("3scale's threescale-2.11 channel replaces a bundle outside it");
    assert!(
        diagnostic
            .message
            .contains("3scale-community-operator.v0.8.2"),
        "{diagnostic}"
    );
    assert!(
        diagnostic
            .message
            .contains("3scale-community-operator.v0.7.0"),
        "{diagnostic}"
    );
    assert!(diagnostic.origin.file.ends_with("catalog.json"));
    assert_eq!(diagnostic.origin.line, 7);
}

#[test]
fn etcd_has_its_three_channels_and_upgrade_chain() {
    let catalog = derived();
    let etcd = catalog.package("etcd").unwrap();
    assert_eq!(
        etcd.default_channel.as_deref(),
        Some("singlenamespace-alpha")
    );
    let names: Vec<_> = etcd.channels.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["alpha", "clusterwide-alpha", "singlenamespace-alpha"]
    );
    let graph = catalog.graph("etcd", "singlenamespace-alpha").unwrap();
    let heads: Vec<_> = graph.heads().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(heads, ["etcdoperator.v0.9.4"]);
    let ordered: Vec<_> = graph.ordered().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        ordered,
        [
            "etcdoperator.v0.9.4",
            "etcdoperator.v0.9.2",
            "etcdoperator.v0.9.0"
        ]
    );
    let upgrades = graph.upgrades_from("etcdoperator.v0.9.2", &v("0.9.2"));
    assert_eq!(upgrades.len(), 1);
    assert_eq!(upgrades[0].name, "etcdoperator.v0.9.4");
    // etcdoperator.v0.9.0 is in two channels.
    let bundle = catalog.bundle("etcdoperator.v0.9.0").unwrap();
    assert_eq!(
        bundle.channels,
        ["clusterwide-alpha", "singlenamespace-alpha"]
    );
    assert_eq!(bundle.provided_gvks.len(), 3, "{:?}", bundle.provided_gvks);
}

#[test]
fn kuadrant_requires_exact_versions() {
    let bundle = derived().bundle("kuadrant-operator.v0.11.0").unwrap();
    let authorino = bundle
        .required_packages
        .iter()
        .find(|r| r.package == "authorino-operator")
        .unwrap();
    assert_eq!(authorino.range.to_string(), "0.13.0");
    assert!(authorino.range.contains(&v("0.13.0")));
    assert!(!authorino.range.contains(&v("0.13.1")));
    assert!(!authorino.range.contains(&v("0.12.0")));
    assert_eq!(bundle.required_packages.len(), 3);
}

#[test]
fn eclipse_che_requires_devworkspace_operator_from_another_catalog() {
    let catalog = derived();
    let bundle = catalog.bundle("eclipse-che.v7.121.0").unwrap();
    let [requirement] = bundle.required_packages.as_slice() else {
        panic!("{:?}", bundle.required_packages);
    };
    assert_eq!(requirement.package, "devworkspace-operator");
    assert!(requirement.range.contains(&v("0.11.0")));
    assert!(!requirement.range.contains(&v("0.10.9")));
    // Required, but not in this catalog (it lives in a Red Hat catalog).
    assert!(catalog.package("devworkspace-operator").is_none());
}

#[test]
fn alloydb_omni_requires_cert_manager_and_three_of_its_apis() {
    let set = CatalogSet::new(vec![derived().clone()]);
    let r = set
        .find_bundle("community", "alloydb-omni-operator.v1.3.0")
        .unwrap();
    let bundle = set.bundle(r);
    assert_eq!(bundle.required_packages[0].package, "cert-manager");
    assert!(bundle.required_packages[0].range.contains(&v("1.12.2")));
    assert!(!bundle.required_packages[0].range.contains(&v("1.12.1")));
    let kinds: Vec<_> = bundle
        .required_gvks
        .iter()
        .map(|g| g.kind.as_str())
        .collect();
    assert_eq!(kinds, ["ClusterIssuer", "Issuer", "Certificate"]);
    let issuer = Gvk::new("cert-manager.io", "v1", "Issuer");
    assert_eq!(bundle.required_gvks[1], issuer);
    let providers = set.providers_of(&issuer);
    assert!(!providers.is_empty());
    assert!(
        providers
            .iter()
            .all(|&p| set.bundle(p).package == "cert-manager")
    );
    // Newest provider first.
    let versions: Vec<_> = providers
        .iter()
        .map(|&p| set.bundle(p).version.clone())
        .collect();
    assert!(versions.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn bpfman_requires_an_api_nobody_in_the_catalog_provides() {
    let set = CatalogSet::new(vec![derived().clone()]);
    let r = set
        .find_bundle("community", "bpfman-operator.v0.5.6")
        .unwrap();
    let [gvk] = set.bundle(r).required_gvks.as_slice() else {
        panic!("{:?}", set.bundle(r).required_gvks);
    };
    assert_eq!(
        gvk.to_string(),
        "security-profiles-operator.x-k8s.io/v1alpha2, Kind=SelinuxProfile"
    );
    assert!(set.providers_of(gvk).is_empty());
}

#[test]
fn the_v4_20_folder_loads_every_package_folder() {
    let catalog = v420();
    assert_eq!(catalog.packages.len(), 25);
    assert_eq!(channel_count(catalog), 40);
    assert_eq!(catalog.bundles.len(), 363);
    // Only dangling replaces (hive-operator prunes old bundles).
    let codes = counts(catalog);
    assert_eq!(
        codes.keys().copied().collect::<Vec<_>>(),
        [DiagnosticCode::DanglingReplaces]
    );
    let clusterpulse = catalog.bundle("clusterpulse.v0.1.1").unwrap();
    let metadata = clusterpulse.csv_metadata.as_ref().unwrap();
    assert!(metadata.annotations.contains_key("alm-examples"));
    assert_eq!(clusterpulse.provided_gvks.len(), 4);
    assert!(
        clusterpulse
            .origin
            .file
            .ends_with("clusterpulse/catalog.yaml")
    );
    let graph = catalog.graph("clusterpulse", "fast-v1").unwrap();
    let heads: Vec<_> = graph.heads().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(heads, ["clusterpulse.v1.0.2"]);
    let topology = catalog
        .bundle("rabbitmq-messaging-topology-operator.v1.15.0")
        .unwrap();
    assert_eq!(
        topology.required_packages[0].package,
        "rabbitmq-cluster-operator"
    );
    assert!(topology.required_packages[0].range.contains(&v("2.0.1")));
    assert!(!topology.required_packages[0].range.contains(&v("2.0.0")));
    assert_eq!(
        topology.required_gvks[0],
        Gvk::new("rabbitmq.com", "v1beta1", "RabbitmqCluster")
    );
}

#[test]
fn both_catalogs_together_prefer_the_higher_priority() {
    let set = CatalogSet::new(vec![derived().clone(), v420().clone()]);
    let names: Vec<_> = set.catalogs().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["v4.20", "community"]);
    assert_eq!(set.package_names().len(), 333);
    let refs = set.bundles_of_package("clusterpulse");
    assert_eq!(set.catalog_of(refs[0]).name, "v4.20");
    let first_community = refs.iter().position(|&r| r.catalog == 1).unwrap();
    assert!(refs[..first_community].iter().all(|r| r.catalog == 0));
    assert_eq!(set.package("clusterpulse").len(), 2);
}

/// Figures for the record, printed, never asserted:
/// `cargo test --release --test catalog_real_data load_figures -- --nocapture`.
#[test]
fn load_figures() {
    let path = data("fbc/community-operators-prod-derived/catalog.json");
    let started = Instant::now();
    let catalog = Catalog::load(&path, "community", 0).unwrap();
    let load = started.elapsed();
    let started = Instant::now();
    let set = CatalogSet::new(vec![catalog]);
    let index = started.elapsed();
    let peak = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .map(|line| line.trim_start_matches("VmHWM:").trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    println!(
        "catalog.json: load {:.1} ms, CatalogSet {:.1} ms, {} bundles, process peak RSS {peak} \
         (includes other tests unless run alone)",
        load.as_secs_f64() * 1e3,
        index.as_secs_f64() * 1e3,
        set.catalogs()[0].bundles.len(),
    );
}
