//! Writes the helm group's CRD into `crds/` from the Rust type.
//!
//! `helm-crdgen [DIR]` writes one file per CRD into DIR (default `crds`,
//! run from the workspace root); `helm-crdgen --stdout` prints them.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pakket_api::crd::generate(pakket_helm_api::crd::all(), pakket_helm_api::crd::to_yaml)
}
