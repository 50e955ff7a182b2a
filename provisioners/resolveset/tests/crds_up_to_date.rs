//! The committed `crds/resolve.pakket.dev_*.yaml` and
//! `crds/operators.pakket.dev_*.yaml` are exactly what the Rust types
//! generate, each group by its own API crate. (core/api and apis/packages
//! check their files beside them.)

#[test]
fn committed_crd_yaml_matches_the_types() {
    pakket_testkit::crds::assert_committed(
        pakket_resolve_api::catalog::GROUP,
        pakket_resolve_api::crd::all(),
        pakket_resolve_api::crd::to_yaml,
        "cargo run -p pakket-resolve-api --bin resolve-crdgen",
    );
    pakket_testkit::crds::assert_committed(
        "operators.pakket.dev",
        pakket_operators_api::crd::all(),
        pakket_operators_api::crd::to_yaml,
        "cargo run -p pakket-operators-api --bin operators-crdgen",
    );
}
