//! The helm provisioner (`pakket.dev/helm`): a Bundle whose ref names a
//! Helm chart (`helm+https://REPOSITORY/#CHART@VERSION`, from a chart
//! repository's index and pinned to the digest it gives, or
//! `oci://REGISTRY/PATH:VERSION`), rendered by the pinned `helm template`
//! with the cluster's version and APIs (no network, no cluster access)
//! and installed as plain objects on the shared runtime: its trust,
//! approval, pivot, phases and revisions are the runtime's, not a second
//! lifecycle.
//!
//! - [`config`]: the Instance's `spec.config` (release name, namespace,
//!   values).
//! - [`cluster_functions`]: templates that would ask the cluster
//!   (`lookup`) or the network are refused by name, not rendered empty.
//! - [`template`]: `helm template`, shared with the package provisioner.
//! - [`provisioner`]: the runtime's provisioner.
//! - [`helmchart_controller`]: a namespace owner's `HelmChart` becomes an
//!   Instance sealed with her identity, confined to her namespace.
//! - [`values_from`]: a HelmChart's values from ConfigMaps and Secrets,
//!   read only if its author may read them.

// A function reads at once: over the threshold in clippy.toml, split it
// into named steps (or say why not in an `allow` beside it).
#![deny(clippy::too_many_lines)]

pub mod cluster_functions;
pub mod config;
pub mod helmchart_controller;
pub mod provisioner;
pub mod template;
pub mod values_from;

/// The provisioner's id.
pub const ID: &str = "pakket.dev/helm";
