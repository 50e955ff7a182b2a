//! Reads on the requester's behalf. The admission webhook refuses a Bundle
//! that mounts a ConfigMap its requester may not `get`; this is the same
//! rule where the read happens, so it holds even for an Instance written
//! while the webhooks were not running: before the content of an
//! Instance's embedded Bundle is read, its requester (the sealed record)
//! must be allowed to read every ConfigMap it mounts. Without a record key
//! (a provisioner run without one) there is nothing to verify against, and
//! the admission check is all there is.

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::api::Api;
use pakket_api::{Bundle, Instance};

use crate::approval;
use crate::controller::Context;
use crate::rbac::Access;

/// Why the Instance's requester may not have the provisioner read the
/// Bundle's mounted ConfigMaps, or `None` when he may (or nothing needs
/// checking).
pub async fn refused_read<P>(
    instance: &Instance,
    bundle: &Bundle,
    context: &Context<P>,
) -> Option<String> {
    let key = context.record_key.as_ref()?;
    // A Bundle of its own was checked at admission against its author.
    instance.spec.bundle.spec.as_ref()?;
    if bundle.spec.volume_mounts.is_empty() {
        return None;
    }
    let requester = match pakket_api::requester(instance, Some(key)) {
        Ok((requester, _)) => requester,
        Err(error) => {
            return Some(format!(
                "the content is read from ConfigMaps on the requester's behalf, and {error}; \
                 nothing was read"
            ));
        }
    };
    let reviews: Api<SubjectAccessReview> = Api::all(context.client.clone());
    for mount in &bundle.spec.volume_mounts {
        let source = &mount.config_map;
        let access = Access::Resource {
            group: String::new(),
            resource: "configmaps".into(),
            subresource: String::new(),
            verb: "get".into(),
            namespace: Some(source.namespace.clone()),
            name: Some(source.name.clone()),
        };
        match approval::review(&reviews, &requester, &access).await {
            Ok(true) => {}
            Ok(false) => {
                return Some(format!(
                    "{} may not read ConfigMap {}/{}, so the provisioner does not read it for \
                     him; nothing was read (an admin can grant get on it)",
                    requester.username, source.namespace, source.name
                ));
            }
            Err(error) => return Some(format!("{error}; nothing was read")),
        }
    }
    None
}
