//! Approval policies beyond `AllowAll`: what a provisioner decides when a
//! class's `approval` parameter names a policy the runtime does not apply
//! itself, and `UserPermission`, which a provisioner can adopt in one line.
//!
//! `UserPermission` approves an Instance when the user who created it may
//! create and patch every object it installs, asked of the apiserver with a
//! SubjectAccessReview per object and verb. So an Instance never installs
//! more than its creator could have installed by hand: a bundle cannot
//! grant itself (or its creator) anything. The creator is read from the
//! record the admission webhook writes and nobody can forge
//! ([`pakket_api::CREATED_BY_ANNOTATION`]); without one, a person approves.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use pakket_api::{CreatorRecord, Instance, ProvisionerClass};
use serde_json::Value;

use crate::apply::{self, Kinds};

/// How long a `UserPermission` Instance waits before its creator's rights
/// are asked again (a grant does not start a reconcile by itself).
pub const USER_PERMISSION_RETRY: Duration = Duration::from_secs(10);

/// A provisioner's answer to an approval request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Install: the message says why (it becomes the `Approved` condition's).
    Approved(String),
    /// Wait for a person (`kubectl instance approve`) or for `retry`.
    Pending {
        /// Why it waits, and what would change that.
        message: String,
        /// When to ask again without any change to the Instance.
        retry: Option<Duration>,
    },
}

/// What an approval decision may look at.
pub struct ApprovalRequest<'a> {
    /// The cluster.
    pub client: &'a Client,
    /// The Instance to approve.
    pub instance: &'a Instance,
    /// Its class.
    pub class: &'a ProvisionerClass,
    /// The class's `approval` parameter.
    pub policy: &'a str,
    /// The objects the Instance would install.
    pub objects: &'a [Value],
    /// Kinds, for what the objects are (resources, scopes).
    pub kinds: Kinds,
}

impl ApprovalRequest<'_> {
    /// The default for a policy the provisioner does not know: wait for a person.
    pub fn wait_for_a_person(&self) -> Approval {
        Approval::Pending {
            message: format!(
                "waiting for approval (ProvisionerClass {} has approval: {}); run `kubectl instance approve {}`",
                self.class.name_any(),
                self.policy,
                self.instance.name_any()
            ),
            retry: None,
        }
    }
}

/// The verbs a server-side apply needs: create for a new object, patch for
/// an existing one.
const APPLY_VERBS: [&str; 2] = ["create", "patch"];

/// `UserPermission`: approved when the Instance's creator may create and
/// patch every object in it; otherwise waits, naming the first missing right.
pub async fn user_permission(request: &ApprovalRequest<'_>) -> Approval {
    let name = request.instance.name_any();
    let pending = |message: String| Approval::Pending {
        message: format!(
            "{message}; an admin can grant it, or run `kubectl instance approve {name}`"
        ),
        retry: Some(USER_PERMISSION_RETRY),
    };
    let creator = match CreatorRecord::of(request.instance.metadata.annotations.as_ref()) {
        Some(Ok(creator)) => creator,
        Some(Err(error)) => {
            return pending(format!(
                "approval: UserPermission cannot read the creator record ({error})"
            ));
        }
        None => {
            return pending(
                "approval: UserPermission needs the creator record the admission webhooks write, and this Instance has none".into(),
            );
        }
    };
    let reviews: Api<SubjectAccessReview> = Api::all(request.client.clone());
    let mut kinds = request.kinds.clone();
    for object in request.objects {
        let reference = apply::reference_of(object);
        let (resource, namespaced) = match kinds.resource(&reference).await {
            Ok(found) => found,
            Err(error) => return pending(format!("cannot check {reference}: {error}")),
        };
        for verb in APPLY_VERBS {
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    user: Some(creator.username.clone()),
                    uid: creator.uid.clone(),
                    groups: Some(creator.groups.clone()),
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(resource.group.clone()),
                        version: Some(resource.version.clone()),
                        resource: Some(resource.plural.clone()),
                        namespace: if namespaced {
                            reference.namespace.clone()
                        } else {
                            None
                        },
                        name: Some(reference.name.clone()),
                        verb: Some(verb.into()),
                        ..ResourceAttributes::default()
                    }),
                    ..SubjectAccessReviewSpec::default()
                },
                ..SubjectAccessReview::default()
            };
            let answer = match reviews.create(&PostParams::default(), &review).await {
                Ok(answer) => answer,
                Err(error) => {
                    return pending(format!(
                        "cannot ask whether {} may {verb} {reference}: {error}",
                        creator.username
                    ));
                }
            };
            if !answer.status.is_some_and(|status| status.allowed) {
                let group = if resource.group.is_empty() {
                    String::new()
                } else {
                    format!(".{}", resource.group)
                };
                return pending(format!(
                    "approval: UserPermission: the creator {} may not {verb} {reference} (verb {verb:?} on {}{group})",
                    creator.username, resource.plural
                ));
            }
        }
    }
    Approval::Approved(format!(
        "approval: UserPermission: the creator {} may create and patch all {} objects",
        creator.username,
        request.objects.len()
    ))
}
