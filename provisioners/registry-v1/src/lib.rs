//! The registry-v1 provisioner: OLM `registry+v1` operator bundles (a
//! ClusterServiceVersion, CRDs and other manifests) installed as plain
//! objects on the shared runtime.
//!
//! [`bundle`] reads the bundle, [`config`] places it (install namespace,
//! watched namespaces) from the Instance's `spec.config`, and [`render`]
//! turns it into objects. The runtime does the rest: approval, apply,
//! pivot, health, uninstall.

pub mod bundle;
pub mod config;
pub mod csv;
pub mod install_rbac;
pub mod render;

use pakket_runtime::approval::{self, Approval, ApprovalRequest};
use pakket_runtime::{ObjectsError, ObjectsRequest, Provisioner};
use serde_json::Value;

/// The provisioner id ProvisionerClasses name.
pub const ID: &str = "pakket.dev/registry-v1";

/// The registry-v1 provisioner.
#[derive(Clone, Debug)]
pub struct RegistryV1 {
    id: String,
}

impl RegistryV1 {
    /// A provisioner answering to `id` (usually [`ID`]).
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

impl Provisioner for RegistryV1 {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, request: &ObjectsRequest<'_>) -> Result<Vec<Value>, ObjectsError> {
        let bundle = bundle::read(request.content, request.max_object_size)
            .map_err(|problems| ObjectsError::Content(problems.join("; ")))?;
        let placement =
            config::placement(request.config(), &bundle).map_err(|error| ObjectsError::Config {
                field: error.field,
                problem: error.problem,
            })?;
        render::render(&bundle, &placement, request.cluster)
            .map_err(|problems| ObjectsError::Content(problems.join("; ")))
    }

    /// `UserPermission` (every object and every RBAC rule the bundle
    /// grants), or a person for any other policy.
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "UserPermission" => approval::user_permission(request).await,
            _ => request.wait_for_a_person(),
        }
    }
}
