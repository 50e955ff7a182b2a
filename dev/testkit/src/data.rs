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
