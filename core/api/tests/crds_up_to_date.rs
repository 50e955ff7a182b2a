//! The committed `crds/*.yaml` are exactly what the Rust types generate.

use std::path::Path;

#[test]
fn committed_crd_yaml_matches_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let mut expected_files = Vec::new();
    for crd in pakket_api::crd::all() {
        let file = pakket_api::crd::file_name(&crd);
        let generated = pakket_api::crd::to_yaml(&crd).unwrap();
        let committed = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|error| {
            panic!("crds/{file} is missing ({error}); run `cargo run -p pakket-api --bin crdgen`")
        });
        assert!(
            committed == generated,
            "crds/{file} differs from the types; run `cargo run -p pakket-api --bin crdgen` and commit the result"
        );
        expected_files.push(file);
    }
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        // Other crates (provisioners/resolveset) generate their own groups' files here.
        .filter(|name| {
            name.starts_with(&format!("{}_", pakket_api::GROUP)) && name.ends_with(".yaml")
        })
        .collect();
    present.sort();
    expected_files.sort();
    assert_eq!(
        present, expected_files,
        "crds/ holds files no type generates"
    );
}
