//! The package provisioner (`pakket.dev/package`): Glasskube packages from
//! an HTTP package repository, each installed as one Instance on the
//! shared runtime.
//!
//! Its API group's types, the repository's files and the client that reads
//! them are in `pakket-packages-api`, which tools use without this crate;
//! here is what only the provisioner does:
//!
//! - [`credentials`]: a repository's credentials, from Secrets offered to it.
//! - [`info_controller`], [`package_controller`],
//!   [`repository_controller`]: the controllers; [`provisioner`]: the
//!   runtime's provisioner for a package's Instance.
//! - [`dependencies`]: installing what a package depends on.

// A function reads at once: over the threshold in clippy.toml, split it
// into named steps (or say why not in an `allow` beside it).
#![deny(clippy::too_many_lines)]

pub mod charts;
pub mod components;
pub mod conditions;
pub mod credentials;
pub mod dependencies;
pub use pakket_helm::template as helm;
pub mod info_controller;
pub mod made_here;
pub mod names;
pub mod package_controller;
pub mod process;
pub mod provisioner;
pub mod repository_controller;
/// Values read from Secrets (the runtime's, shared with pakket-helm).
pub use pakket_runtime::secret_values;
pub mod transformations;
pub mod values;

/// The provisioner's id.
pub const ID: &str = "pakket.dev/package";
