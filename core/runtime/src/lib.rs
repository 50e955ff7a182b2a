//! The shared provisioner runtime. To write a provisioner, start with
//! [`guide`]; the modules it is built of:
//!
//! - [`archive`]: safe extraction of untrusted bundle archives (tar, gzip).
//! - [`store`]: the on-disk content store, keyed by digest.
//! - [`manifest`]: Kubernetes manifests from unpacked content, with file and line in errors.
//! - [`source`]: fetching a Bundle's refs, pinned: OCI images (with pull
//!   secrets), `https://` tarballs (optionally pinned by sha256), git
//!   repositories over HTTPS (resolved to a commit).
//! - [`class_parameters`]: a ProvisionerClass's parameters, read strictly.
//! - [`content`]: a Bundle's content into the store by digest: `file://` refs
//!   inside ConfigMaps, `docker://`/`oci://` images, `https://` tarballs,
//!   `git+https://` repositories.
//! - [`provisioner`]: the trait an author implements, and the plain provisioner.
//! - [`approval`]: approval policies a provisioner adds, and `UserPermission`.
//! - [`controller`]: the Instance controller (approval, apply, pivot, status).
//! - [`apply`]: server-side apply, prune and health.
//! - [`ownership`]: which existing objects an Instance may write, adopt and delete.
//! - [`rbac`]: what RBAC objects in a bundle grant, and the access checks behind them.
//! - [`drift`]: watches on installed objects, so hand edits are put back.
//! - [`leader`]: leader election on a Lease, so one replica reconciles at a time.
//! - [`serve`]: `/healthz`, `/readyz` and `/metrics` over plain HTTP.
//! - [`tls`]: a serving certificate from PEM files, reloaded when they change.
//! - [`trust`]: the trust kernel, one folder to audit: requester records and
//!   reads on their behalf, approval policies, the rights comparison, RBAC
//!   questions, ownership and adoption, Pakket's own kinds in content.

// A function reads at once: over the threshold in clippy.toml, split it
// into named steps (or say why not in an `allow` beside it).
#![deny(clippy::too_many_lines)]

pub mod apply;
pub mod archive;
pub mod class_parameters;
pub mod cli;
pub mod content;
pub mod controller;
pub mod drift;
pub mod drift_mode;
pub mod guide;
pub mod inventory;
pub mod leader;
pub mod manifest;
pub mod provisioner;
pub mod serve;
pub mod source;
pub mod store;
pub mod tls;
pub mod tls_accept;
pub mod trust;

// The trust kernel's modules, at the paths provisioners know them by.
pub use trust::{approval, ownership, rbac, rights};

pub use provisioner::{
    ClusterFacts, InstalledContent, ObjectsError, ObjectsRequest, Plain, Provisioner,
};
