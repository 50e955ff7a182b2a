//! The committed `crds/packages.pakket.dev_*.yaml` are exactly what the
//! Rust types generate.

use std::path::Path;

#[test]
fn committed_crd_yaml_matches_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let mut expected = Vec::new();
    for crd in pakket_packages_api::crd::all() {
        let file = pakket_packages_api::crd::file_name(&crd);
        let generated = pakket_packages_api::crd::to_yaml(&crd).unwrap();
        let committed = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|error| {
            panic!("crds/{file} is missing ({error}); run `cargo run -p pakket-packages-api --bin package-crdgen`")
        });
        assert!(
            committed == generated,
            "crds/{file} differs from the types; run `cargo run -p pakket-packages-api --bin package-crdgen` and commit the result"
        );
        expected.push(file);
    }
    let prefix = format!("{}_", pakket_packages_api::GROUP);
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix) && name.ends_with(".yaml"))
        .collect();
    present.sort();
    expected.sort();
    assert_eq!(
        present, expected,
        "crds/ holds {prefix}* files no type generates"
    );
}
