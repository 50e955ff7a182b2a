//! The committed `crds/helm.pakket.dev_*.yaml` is exactly what the Rust
//! types of `pakket-helm-api` generate.

#[test]
fn committed_crd_yaml_matches_the_types() {
    pakket_testkit::crds::assert_committed(
        pakket_helm_api::GROUP,
        pakket_helm_api::crd::all(),
        pakket_helm_api::crd::to_yaml,
        "cargo run -p pakket-helm-api --bin helm-crdgen",
    );
}
