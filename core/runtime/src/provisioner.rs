//! What a provisioner author writes: an id, how unpacked content becomes
//! Kubernetes objects, and (optionally) the approval policies it adds. The
//! runtime does the rest (watching, unpacking, approval, apply, pivot,
//! status).

use std::future::Future;
use std::path::Path;

use serde_json::Value;

use crate::approval::{Approval, ApprovalRequest};

/// A provisioner: the runtime acts only on Instances whose ProvisionerClass
/// names this provisioner's id.
pub trait Provisioner: Send + Sync + 'static {
    /// The unique id, e.g. `pakket.dev/plain`.
    fn id(&self) -> &str;

    /// The objects the unpacked content at `content` stands for.
    /// `max_object_size` is the class's `maxObjectSize` in bytes.
    fn objects(&self, content: &Path, max_object_size: u64) -> Result<Vec<Value>, String>;

    /// Decides approval under a class whose `approval` parameter is not
    /// `AllowAll` (which the runtime applies itself), unless a person has
    /// approved or denied already. The default waits for a person;
    /// [`crate::approval::user_permission`] is one line away.
    fn approve(&self, request: &ApprovalRequest<'_>) -> impl Future<Output = Approval> + Send {
        let decision = request.wait_for_a_person();
        async move { decision }
    }
}

/// The simplest provisioner: the content is a directory of plain manifests.
#[derive(Clone, Debug)]
pub struct Plain {
    id: String,
}

impl Plain {
    /// A plain-manifests provisioner answering to `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}

impl Provisioner for Plain {
    fn id(&self) -> &str {
        &self.id
    }

    fn objects(&self, content: &Path, max_object_size: u64) -> Result<Vec<Value>, String> {
        crate::manifest::load_objects(content, max_object_size).map_err(|error| error.to_string())
    }

    /// `UserPermission`, or a person for any other policy.
    async fn approve(&self, request: &ApprovalRequest<'_>) -> Approval {
        match request.policy {
            "UserPermission" => crate::approval::user_permission(request).await,
            _ => request.wait_for_a_person(),
        }
    }
}
