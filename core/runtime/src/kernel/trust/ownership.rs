//! Which existing objects an Instance may write, adopt and delete, decided
//! from records on the live object that no status writer can forge: the
//! Instance's UID in [`INSTANCE_UID_LABEL`] together with the runtime's own
//! field manager in managedFields ([`pakket_api::ownership::owner_of`]).
//!
//! - An object that exists and is not this Instance's is never overwritten:
//!   applying reports a conflict naming the object and its owner (another
//!   Instance, or "not managed by Pakket").
//! - Adoption is explicit: someone who may write the object annotates it
//!   with [`ADOPT_ANNOTATION`] naming the Instance; that write is the proof
//!   of rights over the object. The annotation is removed once adopted.
//! - Prune and uninstall judge the object first and delete it only if it is
//!   this Instance's, with a delete precondition on the object's UID and
//!   resourceVersion, so an object swapped in (or changed) meanwhile is
//!   not deleted. They judge it by its records as the drift watch last saw
//!   them when it has (no read), else by a read; a precondition the watch's
//!   copy no longer meets fails, and the object is read and judged again.
//!
//! Writing those records on an object needs write access to that object,
//! so someone who could update an object but not delete it could label it
//! for deletion by an Instance he owns; SECURITY.md says so.

use kube::ResourceExt;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use pakket_api::ObjectRef;
use pakket_api::ownership::{
    ADOPT_ANNOTATION, INSTANCE_LABEL, INSTANCE_UID_LABEL, Owner, owner_of,
};
use serde_json::json;

use crate::apply::{ApplyError, Kinds};
use pakket_api::ownership::BUNDLE_LABEL;

/// The Instance on whose behalf objects are written: its name (for labels
/// and adoption offers) and its UID (the ownership record).
#[derive(Clone, Copy, Debug)]
pub struct Claimant<'a> {
    /// The Instance's name.
    pub name: &'a str,
    /// The Instance's UID.
    pub uid: &'a str,
}

/// Where an object stands for a claimant, before applying it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// It does not exist: applying creates it.
    Absent,
    /// It is this Instance's, at this resourceVersion.
    Ours(String),
    /// Someone who may write it offered it to this Instance, at this resourceVersion.
    Offered(String),
    /// It belongs to someone else: whom, and what to do.
    Conflict(Conflict),
}

/// An object that is someone else's: another Instance's, or no Pakket
/// Instance's at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The Instance it belongs to; `None`: Pakket does not manage it.
    pub owner: Option<String>,
    /// Whose it is and what to do, in words.
    pub text: String,
}

impl Conflict {
    /// What tools read of it.
    pub fn cause_kind(&self) -> pakket_api::CauseKind {
        match self.owner {
            Some(_) => pakket_api::CauseKind::ObjectOfAnotherInstance,
            None => pakket_api::CauseKind::ObjectNotManaged,
        }
    }
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The owners' managers of an object, from its managedFields.
fn managers(object: &DynamicObject) -> Vec<&str> {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.as_deref())
        .collect()
}

/// Who `object` belongs to, for this claimant.
pub fn standing_of(
    reference: &ObjectRef,
    object: &DynamicObject,
    claimant: Claimant<'_>,
) -> Standing {
    let version = object.resource_version().unwrap_or_default();
    let owner = owner_of(
        object.metadata.labels.as_ref(),
        object.metadata.annotations.as_ref(),
        managers(object),
    );
    match owner {
        Owner::Instance(uid) if uid == claimant.uid => Standing::Ours(version),
        Owner::Instance(uid) => {
            let name = object
                .labels()
                .get(INSTANCE_LABEL)
                .cloned()
                .unwrap_or_else(|| "(unnamed)".into());
            Standing::Conflict(Conflict {
                text: format!(
                    "{reference} belongs to Instance {name} (uid {uid}); an object can have one owner: \
                     remove it from one of the two Bundles, or delete Instance {name} with \
                     deletionPolicy: Orphan and adopt it"
                ),
                owner: Some(name),
            })
        }
        Owner::OfferedTo(instance) if instance == claimant.name => Standing::Offered(version),
        Owner::OfferedTo(_) | Owner::Unmanaged => Standing::Conflict(Conflict {
            owner: None,
            text: format!(
                "{reference} exists and is not managed by Pakket; Pakket never takes over an object \
             silently: to hand it to Instance {instance}, someone who may write it runs \
             `kubectl annotate {kind} {namespace}{name} {ADOPT_ANNOTATION}={instance}`",
                instance = claimant.name,
                kind = reference.kind.to_lowercase(),
                namespace = reference
                    .namespace
                    .as_ref()
                    .map(|namespace| format!("-n {namespace} "))
                    .unwrap_or_default(),
                name = reference.name,
            ),
        }),
    }
}

/// Reads where one object stands for `claimant`.
pub async fn standing(
    kinds: &mut Kinds,
    reference: &ObjectRef,
    claimant: Claimant<'_>,
) -> Result<Standing, ApplyError> {
    let api = kinds.api(reference).await?;
    let found = api
        .get_opt(&reference.name)
        .await
        .map_err(|error| ApplyError::Refused {
            object: reference.to_string(),
            message: crate::apply::api_message(&error),
        })?;
    Ok(match found {
        None => Standing::Absent,
        Some(object) => standing_of(reference, &object, claimant),
    })
}

/// What became of one delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Deleted (or released, under Orphan).
    Done,
    /// Already gone (or its kind is).
    Gone,
    /// Left alone: not this Instance's. The text says whose it is.
    NotOurs(String),
}

/// Deletes one object if, and only if, it is `uid`'s Instance's, with
/// preconditions on the object read, so a swapped-in object survives.
pub async fn delete_owned(
    kinds: &mut Kinds,
    reference: &ObjectRef,
    claimant: Claimant<'_>,
) -> Result<Removal, ApplyError> {
    remove_owned(kinds, reference, claimant, Action::Delete).await
}

/// Lets go of one object an orphaned Instance leaves behind, if it is that
/// Instance's: removes the ownership labels (and any adoption offer), so
/// nothing takes it for installed content again.
pub async fn release_owned(
    kinds: &mut Kinds,
    reference: &ObjectRef,
    claimant: Claimant<'_>,
) -> Result<Removal, ApplyError> {
    remove_owned(kinds, reference, claimant, Action::Release).await
}

/// How often a removal reads the object it judges: a write between the
/// read and the delete fails the precondition, and the second read
/// decides again (after a first try by the drift watch's copy, if any).
const READS: usize = 2;

#[derive(Clone, Copy)]
enum Action {
    Delete,
    Release,
}

/// The object as the drift watch last saw it (its records and version,
/// see `Kinds::as_seen`), if it saw it as `claimant`'s: a removal judges it
/// by that without a read, and a write since then fails the precondition,
/// as a write between a read and the delete does. Whatever else the watch
/// says (not ours, not seen) is read first: a watch behind must not make
/// an uninstall leave one of the Instance's objects behind.
fn seen_as_ours(
    kinds: &Kinds,
    reference: &ObjectRef,
    claimant: Claimant<'_>,
) -> Option<DynamicObject> {
    let seen = DynamicObject {
        types: None,
        metadata: kinds.as_seen(reference)?,
        data: serde_json::Value::Null,
    };
    matches!(standing_of(reference, &seen, claimant), Standing::Ours(_)).then_some(seen)
}

async fn remove_owned(
    kinds: &mut Kinds,
    reference: &ObjectRef,
    claimant: Claimant<'_>,
    action: Action,
) -> Result<Removal, ApplyError> {
    let api = match kinds.api(reference).await {
        Ok(api) => api,
        // Its kind is gone (CRD removed): so is the object.
        Err(ApplyError::UnknownKind { .. }) => return Ok(Removal::Gone),
        Err(error) => return Err(error),
    };
    let refused = |error: kube::Error| ApplyError::Refused {
        object: reference.to_string(),
        message: crate::apply::api_message(&error),
    };
    // The watch's copy first, if any; each later try reads the object and
    // decides again.
    let mut as_seen = seen_as_ours(kinds, reference, claimant);
    let tries = READS + usize::from(as_seen.is_some());
    for _ in 0..tries {
        let found = match as_seen.take() {
            Some(seen) => Some(seen),
            None => api.get_opt(&reference.name).await.map_err(refused)?,
        };
        let Some(object) = found else {
            return Ok(Removal::Gone);
        };
        match standing_of(reference, &object, claimant) {
            Standing::Ours(version) => {
                let result = match action {
                    Action::Delete => {
                        let params = DeleteParams {
                            preconditions: Some(Preconditions {
                                uid: object.uid(),
                                resource_version: Some(version),
                            }),
                            ..DeleteParams::background()
                        };
                        api.delete(&reference.name, &params).await.map(|_| ())
                    }
                    Action::Release => {
                        let unlabel = json!({
                            "metadata": {
                                "resourceVersion": version,
                                "labels": {
                                    INSTANCE_LABEL: null,
                                    INSTANCE_UID_LABEL: null,
                                    BUNDLE_LABEL: null,
                                },
                                "annotations": { ADOPT_ANNOTATION: null },
                            }
                        });
                        api.patch(
                            &reference.name,
                            &PatchParams::default(),
                            &Patch::Merge(&unlabel),
                        )
                        .await
                        .map(|_| ())
                    }
                };
                match result {
                    Ok(()) => return Ok(Removal::Done),
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        return Ok(Removal::Gone);
                    }
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    Err(error) => return Err(refused(error)),
                }
            }
            Standing::Conflict(why) => return Ok(Removal::NotOurs(why.text)),
            Standing::Offered(_) => {
                return Ok(Removal::NotOurs(format!(
                    "{reference} was offered to Instance {} but never adopted",
                    claimant.name
                )));
            }
            Standing::Absent => return Ok(Removal::Gone),
        }
    }
    Err(ApplyError::Refused {
        object: reference.to_string(),
        message: "it kept changing while being removed; retrying later".into(),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use kube::api::ObjectMeta;
    use kube::core::{ApiResource, GroupVersionKind};
    use pakket_api::ownership::FIELD_MANAGER;

    use super::*;

    fn object(
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
        manager: &str,
    ) -> DynamicObject {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let mut object = DynamicObject::new("x", &resource);
        let map = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        object.metadata = ObjectMeta {
            name: Some("x".into()),
            resource_version: Some("7".into()),
            labels: map(labels),
            annotations: map(annotations),
            managed_fields: Some(vec![ManagedFieldsEntry {
                manager: Some(manager.into()),
                ..ManagedFieldsEntry::default()
            }]),
            ..ObjectMeta::default()
        };
        object
    }

    fn reference() -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "x".into(),
            namespace: Some("ns".into()),
        }
    }

    const ME: Claimant<'static> = Claimant {
        name: "hello",
        uid: "u-hello",
    };

    #[test]
    fn only_an_object_with_this_instances_uid_and_pakkets_manager_is_ours() {
        let ours = object(&[(INSTANCE_UID_LABEL, "u-hello")], &[], FIELD_MANAGER);
        assert_eq!(
            standing_of(&reference(), &ours, ME),
            Standing::Ours("7".into())
        );
        // The same label written by hand (no Pakket apply) proves nothing.
        let forged = object(&[(INSTANCE_UID_LABEL, "u-hello")], &[], "kubectl-edit");
        assert!(
            matches!(standing_of(&reference(), &forged, ME), Standing::Conflict(why) if why.owner.is_none() && why.text.contains("not managed by Pakket"))
        );
    }

    #[test]
    fn another_instances_object_is_a_conflict_that_names_it() {
        let theirs = object(
            &[(INSTANCE_UID_LABEL, "u-other"), (INSTANCE_LABEL, "other")],
            &[],
            FIELD_MANAGER,
        );
        let Standing::Conflict(why) = standing_of(&reference(), &theirs, ME) else {
            panic!("a conflict");
        };
        assert!(
            why.text
                .starts_with("ConfigMap/ns/x belongs to Instance other (uid u-other)"),
            "{why}"
        );
        // The owner is named for tools, as the label on the object says.
        assert_eq!(why.owner.as_deref(), Some("other"));
    }

    #[test]
    fn an_offer_counts_only_for_the_instance_it_names() {
        let offered = object(&[], &[(ADOPT_ANNOTATION, "hello")], "kubectl");
        assert_eq!(
            standing_of(&reference(), &offered, ME),
            Standing::Offered("7".into())
        );
        let elsewhere = object(&[], &[(ADOPT_ANNOTATION, "other")], "kubectl");
        let Standing::Conflict(why) = standing_of(&reference(), &elsewhere, ME) else {
            panic!("a conflict");
        };
        assert!(
            why.text
                .contains("kubectl annotate configmap -n ns x core.pakket.dev/adopt-into=hello"),
            "{why}"
        );
        assert_eq!(why.owner, None, "an offer to another is no Instance's yet");
    }
}
