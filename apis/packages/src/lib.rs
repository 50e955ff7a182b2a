//! The package API group (`packages.pakket.dev/v1alpha1`) for anyone who
//! reads or writes it without running the package provisioner: the
//! webhooks, `kubectl instance`, and third-party tools.
//!
//! - [`types`] (also at the crate root): `PackageRepository`,
//!   `ClusterPackage`, `Package`, `PackageInfo`.
//! - [`manifest`]: a Glasskube package repository's files (`index.yaml`,
//!   `versions.yaml`, `package.yaml`).
//! - [`conditions`]: the condition types and reasons the group's objects
//!   carry, typed.
//! - `testing` (cargo feature `testing`): fixture builders for tests
//!   without a cluster.
//!
//! Types only: reading a repository over HTTPS and asking a cluster which
//! packages depend on which is `pakket-packages-client`.

pub mod conditions;
pub mod crd;
pub mod manifest;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;

pub use types::*;
