//! Test support: every integration test gets a [`Scope`] on one real control
//! plane shared by the whole test binary (or by the whole run, when
//! `dev/test.sh` started one and exported `PAKKET_TEST_KUBECONFIG`).
//!
//! A scope owns a fresh namespace and a label; cluster-scoped objects a test
//! creates carry that label and names from [`Scope::name`], so tests run in
//! parallel without seeing each other, and [`Scope::cleanup`] removes them.

mod capture;
pub mod charts;
pub mod crds;
mod data;
mod events;
pub mod https;
pub mod leftovers;
pub mod load;
pub mod probes;
pub mod rbac;
pub mod report;
mod scope;
mod shared;
pub mod shipped;
mod wait;

pub use capture::capture;
pub use crds::{apply_crds, install_crds, wait_for_crds_gone};
pub use data::{bundle_crd_names, data, data_root, derived_package, files, memory};
pub use events::{cluster_object_events, instance_events};
pub use scope::Scope;
pub use shared::{TestCluster, cluster};
pub use wait::{
    assert_readable_messages, bundle_status, condition_is, eventually, message_of, pinned_digest,
    pinned_digest_for, reason_is, wait_for_instance,
};

/// The label every object made by a test carries, valued with its scope id.
pub const SCOPE_LABEL: &str = "test.pakket.dev/scope";
