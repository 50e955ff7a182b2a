//! `kubectl instance` against a real kube-apiserver (the test kit's control
//! plane): the real binary, run as the kubeconfig users admin, alice, bob
//! and carol. No provisioner runs: each test writes the statuses a
//! provisioner would, as admin, on Instances of a class nobody serves.
//!
//! One test binary, so `cargo test` starts one control plane for all of them.

mod adopt_helm;
mod approval;
mod completion;
mod decide;
mod deps;
// pakket-helm run as `deploy/` runs it, shared by adopt_helm and readiness.
#[path = "../../../provisioners/helm/tests/support/mod.rs"]
mod helm_world;
mod history;
mod inspect;
mod kubectl_plugin;
mod listing;
mod operator;
mod operator_request;
mod operators;
mod packages;
mod policy_test;
mod readiness;
mod resolver_api;
mod support;
mod webhook_approval;
mod why;
