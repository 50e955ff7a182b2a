//! The package API group (`packages.pakket.dev/v1alpha1`) for anyone who
//! reads or writes it without running the package provisioner: the
//! webhooks, `kubectl instance`, and third-party tools.
//!
//! - [`types`] (also at the crate root): `PackageRepository`,
//!   `ClusterPackage`, `Package`, `PackageInfo`.
//! - [`manifest`]: a Glasskube package repository's files (`index.yaml`,
//!   `versions.yaml`, `package.yaml`).
//!
//! Types only: reading a repository over HTTPS and asking a cluster which
//! packages depend on which is `pakket-packages-client`.

pub mod crd;
pub mod manifest;
pub mod types;

pub use types::*;
