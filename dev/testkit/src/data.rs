//! The shared test data (real catalogs, bundles, a package repository), read
//! unedited: `$PAKKET_DATA`, else `shared/data` beside the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The shared data folder.
pub fn data_root() -> PathBuf {
    std::env::var_os("PAKKET_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    )
}

/// A file or folder of the shared data; panics, saying how to point at
/// the data, when it is missing.
pub fn data(path: &str) -> PathBuf {
    let path = data_root().join(path);
    assert!(
        path.exists(),
        "test data {} is missing; set PAKKET_DATA to the shared data folder",
        path.display()
    );
    path
}

/// Every file under `dir`, by path relative to it.
pub fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The derived community catalog (`fbc/community-operators-prod-derived/
/// catalog.json`, DERIVED from community-operators-prod, see the data's
/// README): the documents of `package` (its `olm.package`, and the
/// channels and bundles whose `package` it is), one JSON line each, read
/// unedited and selected by those fields.
pub fn derived_package(package: &str) -> String {
    let text =
        std::fs::read_to_string(data("fbc/community-operators-prod-derived/catalog.json")).unwrap();
    text.lines()
        .filter(|line| {
            let document: serde_json::Value = serde_json::from_str(line).unwrap();
            document["package"] == package
                || (document["schema"] == "olm.package" && document["name"] == package)
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `VmRSS` and `VmHWM` of this process, in MiB, for benches to print.
pub fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    format!(
        "VmRSS {:6.1} MiB, VmHWM {:6.1} MiB",
        field("VmRSS:"),
        field("VmHWM:")
    )
}

/// The names of the CustomResourceDefinitions in the registry+v1 bundle at
/// `dir` (its `manifests/`), as a test that installs the bundle waits for
/// them to be gone.
pub fn bundle_crd_names(dir: &Path) -> Vec<String> {
    let manifests = dir.join("manifests");
    let entries = std::fs::read_dir(&manifests)
        .unwrap_or_else(|error| panic!("reading {}: {error}", manifests.display()));
    let mut names = Vec::new();
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
        let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        names.extend(
            documents
                .iter()
                .filter(|document| document["kind"] == "CustomResourceDefinition")
                .filter_map(|document| document["metadata"]["name"].as_str())
                .map(str::to_owned),
        );
    }
    names.sort();
    names
}
