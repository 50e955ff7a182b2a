//! Fixtures captured from a real run: deploy/argocd's `testdata/` objects
//! are written by the tests that drive Pakket's kinds into each state.

/// With `PAKKET_CAPTURE_DIR` set, writes `kind` `name` (in `namespace`, if
/// any) as kubectl reads it to `DIR/<file>.yaml`; without it, nothing.
pub fn capture(file: &str, kind: &str, name: &str, namespace: Option<&str>) {
    let Some(dir) = std::env::var_os("PAKKET_CAPTURE_DIR") else {
        return;
    };
    let mut kubectl = crate::cluster().kubectl();
    kubectl.args(["get", kind, name, "-o", "yaml"]);
    if let Some(namespace) = namespace {
        kubectl.args(["-n", namespace]);
    }
    let object = kubectl.output().expect("running kubectl");
    let path = std::path::Path::new(&dir).join(format!("{file}.yaml"));
    std::fs::write(&path, object.stdout)
        .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
}
