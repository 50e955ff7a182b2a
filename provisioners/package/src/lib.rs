//! The package provisioner (`pakket.dev/package`): Glasskube packages from
//! an HTTP package repository, each installed as one Instance on the
//! shared runtime.
//!
//! - [`api`]: `PackageRepository`, `ClusterPackage`, `Package`,
//!   `PackageInfo` (`packages.pakket.dev/v1alpha1`).
//! - [`manifest`]: the repository's files.
//! - [`repository`]: reading them over HTTPS with the repository's
//!   credentials.

pub mod api;
pub mod charts;
pub mod components;
pub mod conditions;
pub mod crd;
pub mod dependencies;
pub mod helm;
pub mod info_controller;
pub mod made_here;
pub mod manifest;
pub mod names;
pub mod package_controller;
pub mod process;
pub mod provisioner;
pub mod repository;
pub mod repository_controller;
pub mod secret_values;
pub mod transformations;
pub mod values;

/// The provisioner's id.
pub const ID: &str = "pakket.dev/package";
