//! Writes `crds/core.pakket.dev_*.yaml` from the Rust types.
//!
//! `crdgen [DIR]` writes one file per CRD into DIR (default `crds`);
//! `crdgen --stdout` prints them as one multi-document stream.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pakket_api::crd::generate(pakket_api::crd::all(), pakket_api::crd::to_yaml)
}
