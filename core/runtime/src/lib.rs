//! The shared provisioner runtime. To write a provisioner, start with
//! [`guide`]; an author's surface is:
//!
//! - [`Provisioner`], [`ObjectsRequest`], [`ObjectsError`], [`ClusterFacts`]
//!   ([`provisioner`]): the trait an author implements, what it is asked
//!   and what it answers, and the plain provisioner.
//! - [`cli`]: the command line a provisioner binary runs with.
//! - [`manifest`]: Kubernetes manifests from unpacked content, with file and line in errors.
//! - [`class_parameters`]: a ProvisionerClass's parameters, read strictly.
//! - [`approval`]: approval policies a provisioner adds, and `UserPermission`.
//! - [`secret_values`]: values a controller read from Secrets on a requester's
//!   behalf, handed to the provisioner in the process, never written.
//!
//! Everything else (the Instance controller, apply, sources, the store,
//! the trust kernel) is [`kernel`]: what Pakket's own provisioners and
//! tools share, and what an author never needs to name.

// A function reads at once: over the threshold in clippy.toml, split it
// into named steps (or say why not in an `allow` beside it).
#![deny(clippy::too_many_lines)]

pub mod class_parameters;
pub mod cli;
pub mod guide;
pub mod kernel;
pub mod manifest;
pub mod provisioner;
pub mod secret_values;

// The kernel's modules, at the paths the runtime's own code names them by.
pub(crate) use kernel::trust::{ownership, rbac, rights};
pub(crate) use kernel::{
    apply, archive, content, controller, drift, drift_mode, inventory, leader, serve, source,
    store, trust,
};

/// Approval policies a provisioner adds, and `UserPermission`.
pub use kernel::trust::approval;

pub use provisioner::{
    ClusterFacts, InstalledContent, ObjectsError, ObjectsRequest, Plain, Provisioner,
};
