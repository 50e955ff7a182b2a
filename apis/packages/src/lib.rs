//! The package API group (`packages.pakket.dev/v1alpha1`) for anyone who
//! reads or writes it without running the package provisioner: the
//! webhooks, `kubectl instance`, and third-party tools.
//!
//! - [`types`] (also at the crate root): `PackageRepository`,
//!   `ClusterPackage`, `Package`, `PackageInfo`.
//! - [`manifest`]: a Glasskube package repository's files (`index.yaml`,
//!   `versions.yaml`, `package.yaml`).
//! - [`repository`]: reading them over HTTPS, with the runtime's limits.
//! - [`dependents`]: which packages depend on which, and why a dependency
//!   may not be deleted yet.

pub mod crd;
pub mod dependents;
pub mod manifest;
pub mod repository;
pub mod types;

pub use types::*;
