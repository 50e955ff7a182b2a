//! What approving would do: the objects the pending content holds, each
//! with what applying it would do to the cluster as it is now (read with
//! the caller's own credentials), and the RBAC the content grants. An
//! object-level diff: which objects are created, updated, adopted or in
//! conflict; a field-level diff needs the content itself, which only the
//! provisioner holds.

use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use pakket_api::ownership::{INSTANCE_LABEL, Owner, owner_of};
use pakket_api::{Bundle, Instance, ObjectRef, RbacGrant};
use serde::Serialize;

/// The content an Instance waits to install.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingContent {
    /// The Bundle.
    pub bundle: String,
    /// Its pinned digest: what an approval covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Each object, with what applying it would do: all of them, or the
    /// first ones the Bundle's status lists.
    pub objects: Vec<PendingObject>,
    /// How many objects the content holds in all.
    pub count: u64,
    /// Objects per kind, when `objects` is not all of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<pakket_api::KindCount>,
    /// The RBAC the content would grant.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<RbacGrant>,
}

/// One object of the pending content.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingObject {
    /// The object.
    pub object: ObjectRef,
    /// `create`, `update`, `adopt (offered to this Instance)`, `conflict: …`
    /// or `cannot read: …`.
    pub action: String,
}

/// The pending content of `instance` from its Bundle's status, when that
/// Bundle is not the one installed (or nothing is installed yet).
pub async fn gather(
    client: &kube::Client,
    instance: &Instance,
    bundle: &Bundle,
) -> Option<PendingContent> {
    let status = instance.status.clone().unwrap_or_default();
    let installed = status.active_bundle.as_deref() == Some(bundle.name_any().as_str())
        && instance
            .condition(pakket_api::ConditionType::Installed)
            .is_some_and(|c| c.status == "True");
    let unpacked = bundle.status.clone()?;
    if installed || unpacked.objects.is_empty() {
        return None;
    }
    let uid = instance.uid().unwrap_or_default();
    let name = instance.name_any();
    let mut objects = Vec::with_capacity(unpacked.objects.len());
    for object in &unpacked.objects {
        let action = action_for(client, object, &name, &uid).await;
        objects.push(PendingObject {
            object: object.clone(),
            action,
        });
    }
    Some(PendingContent {
        bundle: bundle.name_any(),
        count: unpacked.object_count.unwrap_or(objects.len() as u64),
        kinds: unpacked.object_kinds,
        digest: unpacked.source.and_then(|source| source.digest),
        objects,
        grants: unpacked.grants,
    })
}

async fn action_for(
    client: &kube::Client,
    object: &ObjectRef,
    instance: &str,
    uid: &str,
) -> String {
    let (group, version) = object
        .api_version
        .split_once('/')
        .unwrap_or(("", object.api_version.as_str()));
    let gvk = GroupVersionKind::gvk(group, version, &object.kind);
    let (resource, capabilities) = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        // A kind the cluster does not serve yet (its CRD comes with the content).
        Err(_) => return "create (its kind is not served yet)".to_owned(),
    };
    let api: Api<DynamicObject> = match (&capabilities.scope, &object.namespace) {
        (kube::discovery::Scope::Namespaced, Some(namespace)) => {
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
        (kube::discovery::Scope::Namespaced, None) => {
            Api::namespaced_with(client.clone(), "default", &resource)
        }
        (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    let found = match api.get_opt(&object.name).await {
        Ok(found) => found,
        Err(kube::Error::Api(status)) if status.code == 403 => {
            return "cannot read it with your rights".to_owned();
        }
        Err(error) => return format!("cannot read it: {error}"),
    };
    let Some(found) = found else {
        return "create".to_owned();
    };
    let managers = found
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.as_deref());
    match owner_of(
        found.metadata.labels.as_ref(),
        found.metadata.annotations.as_ref(),
        managers,
    ) {
        Owner::Instance(owner) if owner == uid => "update".to_owned(),
        Owner::Instance(owner) => format!(
            "conflict: owned by Instance {} (uid {owner})",
            found
                .labels()
                .get(INSTANCE_LABEL)
                .map_or("(unnamed)", String::as_str)
        ),
        Owner::OfferedTo(offered) if offered == instance => {
            "adopt (offered to this Instance)".to_owned()
        }
        Owner::OfferedTo(_) | Owner::Unmanaged => "conflict: not managed by Pakket".to_owned(),
    }
}
