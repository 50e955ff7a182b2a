//! Writes the package CRDs into `crds/` from the Rust types.
//!
//! `package-crdgen [DIR]` writes one file per CRD into DIR (default `crds`,
//! run from the workspace root); `package-crdgen --stdout` prints them as
//! one stream.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pakket_api::crd::generate(
        pakket_packages_api::crd::all(),
        pakket_packages_api::crd::to_yaml,
    )
}
