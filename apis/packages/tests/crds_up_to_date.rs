//! The committed `crds/packages.pakket.dev_*.yaml` are exactly what the
//! Rust types generate.

#[test]
fn committed_crd_yaml_matches_the_types() {
    pakket_testkit::crds::assert_committed(
        pakket_packages_api::GROUP,
        pakket_packages_api::crd::all(),
        pakket_packages_api::crd::to_yaml,
        "cargo run -p pakket-packages-api --bin package-crdgen",
    );
}
