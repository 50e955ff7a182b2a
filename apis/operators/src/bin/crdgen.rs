//! Writes the operators group's CRDs into `crds/` from the Rust types.
//!
//! `operators-crdgen [DIR]` writes one file per CRD into DIR (default
//! `crds`, run from the workspace root); `operators-crdgen --stdout` prints
//! them as one stream.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pakket_api::crd::generate(
        pakket_operators_api::crd::all(),
        pakket_operators_api::crd::to_yaml,
    )
}
