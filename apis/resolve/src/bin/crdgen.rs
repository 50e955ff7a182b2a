//! Writes the resolve group's CRDs into `crds/` from the Rust types.
//!
//! `resolve-crdgen [DIR]` writes one file per CRD into DIR (default `crds`,
//! run from the workspace root); `resolve-crdgen --stdout` prints them as
//! one stream.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pakket_api::crd::generate(
        pakket_resolve_api::crd::all(),
        pakket_resolve_api::crd::to_yaml,
    )
}
