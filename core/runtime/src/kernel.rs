//! What Pakket's own provisioners and tools share beyond an author's
//! surface: the kernel every provisioner runs on. An author needs none of
//! it (see [`crate::guide`]); the sibling crates (the provisioners in this
//! repository, the webhooks, the CLI) reach it here.
//!
//! - [`archive`]: safe extraction of untrusted bundle archives (tar, gzip).
//! - [`store`]: the on-disk content store, keyed by digest.
//! - [`source`]: fetching a Bundle's refs, pinned: OCI images (with pull
//!   secrets), `https://` tarballs (optionally pinned by sha256), git
//!   repositories over HTTPS (resolved to a commit).
//! - [`content`]: a Bundle's content into the store by digest: `file://` refs
//!   inside ConfigMaps, `docker://`/`oci://` images, `https://` tarballs,
//!   `git+https://` repositories.
//! - [`controller`]: the Instance controller (approval, apply, pivot, status).
//! - [`apply`]: server-side apply, prune and health.
//! - [`drift`] and [`drift_mode`]: watches on installed objects, so hand
//!   edits are put back (or, under Warn, named).
//! - [`inventory`]: what an Instance provides, and who uses it.
//! - [`leader`]: leader election on a Lease, so one replica reconciles at a time.
//! - [`serve`]: `/healthz`, `/readyz` and `/metrics` over plain HTTP.
//! - [`tls`] and [`tls_accept`]: a serving certificate from PEM files,
//!   reloaded when they change, and the accept loop that survives floods.
//! - [`trust`]: the trust kernel, one folder to audit: requester records and
//!   reads on their behalf, approval policies, the rights comparison, RBAC
//!   questions, ownership and adoption, Pakket's own kinds in content.

pub mod apply;
pub mod archive;
pub mod content;
pub mod controller;
pub mod drift;
pub mod drift_mode;
pub mod inventory;
pub mod leader;
pub mod serve;
pub mod source;
pub mod store;
pub mod tls;
pub mod tls_accept;
pub mod trust;
