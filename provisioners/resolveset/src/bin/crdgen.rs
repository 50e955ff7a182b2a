//! Writes the Catalog CRD into `crds/` from the Rust types.
//!
//! `resolveset-crdgen [DIR]` writes one file per CRD into DIR (default `crds`, run from
//! the workspace root); `resolveset-crdgen --stdout` prints them as one stream.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1);
    if arg.as_deref() == Some("--stdout") {
        for crd in pakket_resolveset::crd::all() {
            print!("---\n{}", pakket_resolveset::crd::to_yaml(&crd)?);
        }
        return Ok(());
    }
    let dir = PathBuf::from(arg.unwrap_or_else(|| "crds".to_owned()));
    std::fs::create_dir_all(&dir)?;
    for crd in pakket_resolveset::crd::all() {
        let path = dir.join(pakket_resolveset::crd::file_name(&crd));
        std::fs::write(&path, pakket_resolveset::crd::to_yaml(&crd)?)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
