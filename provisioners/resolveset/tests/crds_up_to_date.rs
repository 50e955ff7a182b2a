//! The committed `crds/resolve.pakket.dev_*.yaml` and
//! `crds/operators.pakket.dev_*.yaml` are exactly what the Rust types
//! generate, each group by its own API crate. (core/api and apis/packages
//! check their files beside them.)

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

type ToYaml = fn(&CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error>;

#[test]
fn committed_crd_yaml_matches_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds");
    let groups: [(&str, Vec<CustomResourceDefinition>, ToYaml, &str); 2] = [
        (
            pakket_resolve_api::catalog::GROUP,
            pakket_resolve_api::crd::all(),
            pakket_resolve_api::crd::to_yaml,
            "cargo run -p pakket-resolve-api --bin resolve-crdgen",
        ),
        (
            "operators.pakket.dev",
            pakket_operators_api::crd::all(),
            pakket_operators_api::crd::to_yaml,
            "cargo run -p pakket-operators-api --bin operators-crdgen",
        ),
    ];
    for (group, crds, to_yaml, command) in groups {
        let mut expected = Vec::new();
        for crd in crds {
            let file = pakket_api::crd::file_name(&crd);
            let generated = to_yaml(&crd).unwrap();
            let committed = std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|error| {
                panic!("crds/{file} is missing ({error}); run `{command}`")
            });
            assert!(
                committed == generated,
                "crds/{file} differs from the types; run `{command}` and commit the result"
            );
            expected.push(file);
        }
        let prefix = format!("{group}_");
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
}
