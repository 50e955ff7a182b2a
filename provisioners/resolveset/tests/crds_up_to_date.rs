//! The committed `crds/resolve.pakket.dev_*.yaml` and
//! `crds/operators.pakket.dev_*.yaml` are exactly what the Rust
//! types generate. (core/api checks the `core.pakket.dev_*` files beside them.)

use std::path::Path;

#[test]
fn committed_crd_yaml_matches_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let mut expected = Vec::new();
    for crd in pakket_resolveset::crd::all() {
        let file = pakket_resolveset::crd::file_name(&crd);
        let generated = pakket_resolveset::crd::to_yaml(&crd).unwrap();
        let committed = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|error| {
            panic!("crds/{file} is missing ({error}); run `cargo run -p pakket-resolveset --bin resolveset-crdgen`")
        });
        assert!(
            committed == generated,
            "crds/{file} differs from the types; run `cargo run -p pakket-resolveset --bin resolveset-crdgen` and commit the result"
        );
        expected.push(file);
    }
    let prefixes = [
        format!("{}_", pakket_resolveset::catalogs::catalog::GROUP),
        "operators.pakket.dev_".to_owned(),
    ];
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| prefixes.iter().any(|p| name.starts_with(p)) && name.ends_with(".yaml"))
        .collect();
    present.sort();
    expected.sort();
    assert_eq!(
        present, expected,
        "crds/ holds {prefixes:?}* files no type generates"
    );
}
