//! Reading the package API group's world, for the package provisioner,
//! the webhooks and `kubectl instance`: a package repository over HTTPS
//! (through the runtime's source, with its limits), and which packages
//! depend on which (read from the cluster). The types themselves are
//! `pakket-packages-api`, which depends on neither.
//!
//! - [`repository`]: `index.yaml`, `versions.yaml`, `package.yaml` read
//!   over HTTPS.
//! - [`dependents`]: which packages depend on which, and why a dependency
//!   may not be deleted yet.

pub mod dependents;
pub mod repository;
