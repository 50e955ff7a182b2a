//! A real Kubernetes control plane on loopback for tests and the demo: etcd,
//! kube-apiserver and kube-controller-manager, built from their published Go
//! modules (`build.sh`, pinned in `versions.env`), with generated certificates,
//! RBAC, an admin identity and non-admin test users. With `Options::nodes`
//! it also runs kube-scheduler and kwok with that many fake nodes
//! (`build-nodes.sh`), so Pods are scheduled and reported Running/Ready.
//!
//! `ControlPlane::start` brings one up in a directory of its own and returns
//! once `/readyz` answers, the controller manager works and every node is
//! Ready; `stop` takes it down. The `pakket-dev` binary wraps both for
//! shells and the demo.

mod binaries;
mod error;
mod kubeconfig;
mod launch;
mod nodes;
mod pki;
mod ports;
mod process;
pub mod real_node;
mod start;

pub use binaries::{Binaries, NodeBinaries, helm};
pub use error::{Error, Result};
pub use kubeconfig::{TEAMS, TEST_USERS_GROUP, TestUser, groups_of};
pub use nodes::{KWOK_ANNOTATION, NODE_TYPE_LABEL};
pub use ports::Ports;
pub use process::{Component, rss_kib};
pub use start::{ControlPlane, Options, State, client_for, config_for};

/// The kubeconfig context (and user) with `system:masters` rights.
pub const ADMIN_CONTEXT: &str = "admin";
/// The admin identity's user name.
pub const ADMIN_USER: &str = "pakket-admin";
/// The non-admin users every control plane knows; each has a kubeconfig
/// context of the same name. Tests that run side by side grant them rights
/// cluster-wide, so a test whose assertion depends on what a user lacks
/// picks one no concurrent test in its binary grants that right.
pub const TEST_USERS: &[&str] = &["alice", "bob", "carol", "dave", "erin", "mallory"];
/// The cluster's name in kubeconfig files.
pub const CLUSTER_NAME: &str = "pakket-dev";
/// The ClusterIP of the `kubernetes` Service, first address of the range.
pub const SERVICE_IP: &str = "10.96.0.1";
/// The Service ClusterIP range.
pub const SERVICE_RANGE: &str = "10.96.0.0/16";
