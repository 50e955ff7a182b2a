//! Reads on the requester's behalf. The admission webhook refuses a Bundle
//! that mounts a ConfigMap its requester may not `get`; this is the same
//! rule where the read happens, so it holds even for an Instance written
//! while the webhooks were not running: before the content of an
//! Instance's embedded Bundle is read, its requester (the sealed record)
//! must be allowed to read every ConfigMap it mounts. Without a record key
//! (a provisioner run without one) there is nothing to verify against, and
//! the admission check is all there is.

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::Client;
use kube::api::Api;
use pakket_api::{Bundle, Instance, RecordKey};

use crate::approval;
use crate::rbac::Access;

/// Why nothing is read on the requester's behalf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadRefused {
    /// No requester record the webhook sealed for this spec: there is no
    /// one to read for. The text says what is wrong with the record.
    Unsealed(String),
    /// The requester may not read a ConfigMap, or asking failed; the text
    /// says which.
    Denied(String),
}

impl ReadRefused {
    /// In words, for the `Unpacked` condition.
    pub fn message(&self) -> &str {
        match self {
            Self::Unsealed(message) | Self::Denied(message) => message,
        }
    }
}

/// Why the Instance's requester may not have the provisioner read the
/// Bundle's mounted ConfigMaps, or `None` when he may (or nothing needs
/// checking: no record `key` to verify against).
pub async fn refused_read(
    instance: &Instance,
    bundle: &Bundle,
    client: &Client,
    key: Option<&RecordKey>,
) -> Option<ReadRefused> {
    let key = key?;
    // A Bundle of its own was checked at admission against its author.
    instance.spec.bundle.spec.as_ref()?;
    if bundle.spec.volume_mounts.is_empty() {
        return None;
    }
    let requester = match pakket_api::requester(instance, Some(key)) {
        Ok((requester, _)) => requester,
        Err(error) => {
            return Some(ReadRefused::Unsealed(format!(
                "the content is read from ConfigMaps on the requester's behalf, and {error}; \
                 nothing was read"
            )));
        }
    };
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
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
                return Some(ReadRefused::Denied(format!(
                    "{} may not read ConfigMap {}/{}, so the provisioner does not read it for \
                     him; nothing was read (an admin can grant get on it)",
                    requester.username, source.namespace, source.name
                )));
            }
            Err(error) => return Some(ReadRefused::Denied(format!("{error}; nothing was read"))),
        }
    }
    None
}
