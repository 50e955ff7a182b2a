//! An Instance being deleted: its objects go with it, unless its
//! `deletionPolicy` is `Orphan`, which leaves them running and unlabelled
//! (no longer anyone's, as far as Pakket is concerned).
//!
//! Candidates come from the Instance's status, the Bundles it had active and
//! a listing by the Instance's UID label over their kinds; statuses can be
//! written by status writers and labels by object writers, so each object
//! is removed only if its own records say it is this Instance's
//! ([`crate::ownership`]): a forged entry or label deletes nothing that
//! its writer could not delete.

use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::events::{Event, EventType};
use pakket_api::ownership::ACTIVE_FOR_LABEL;
use pakket_api::{Bundle, DeletionPolicy, Instance, ObjectRef};

use super::context::Context;
use super::crd_finalizing;
use crate::apply;
use crate::ownership::{self, Claimant, Removal};

/// Where an uninstall got to, when nothing failed.
pub enum Progress {
    /// Everything is gone (or left, under `Orphan`): the finalizer may go.
    Finished,
    /// CRDs it deleted are still being finalized by the API server: the
    /// Instance stays, and the uninstall looks again.
    WaitingForCrds,
}

/// Deletes (or, under `Orphan`, leaves) everything `instance` installed.
/// Objects go newest-first, the reverse of the order they were applied in,
/// so a CRD outlives the custom resources of its kind. A CRD it deleted
/// holds the Instance until the API server has finished deleting it
/// ([`crd_finalizing`]).
pub async fn uninstall<P>(
    instance: &Instance,
    context: &Context<P>,
) -> Result<Progress, kube::Error> {
    let name = instance.name_any();
    let uid = instance.uid().unwrap_or_default();
    let claimant = Claimant {
        name: &name,
        uid: &uid,
    };
    // Found before the drift tracker forgets the Instance: what it last
    // wrote tells whether the watches have seen all of it yet.
    let owned = candidates(instance, &uid, context).await?;
    context.drift.forget_instance(&name);
    // The uninstall's own deletions (and, under Orphan, label removals,
    // which leave the watches' selector): unmarked, each came back as drift
    // of an Instance already forgotten, and stayed in memory for good.
    context.drift.pruning(&owned);
    let orphan = instance.spec.deletion_policy == DeletionPolicy::Orphan;
    let removed = remove_all(&owned, orphan, claimant, context).await;
    if let Some(first) = removed.failed.first() {
        // The finalizer stays until every object is gone or provably not
        // this Instance's: dropping it now would leave objects behind,
        // labelled with an Instance that no longer exists, and nothing
        // would ever try again.
        let note = format!(
            "could not remove {} of the installed objects yet (first: {first}); the Instance stays \
             until they are gone, retrying every few seconds",
            removed.failed.len(),
        );
        tell(
            context,
            instance,
            EventType::Warning,
            "UninstallIncomplete",
            &note,
        );
        return Err(kube::Error::Service(note.into()));
    }
    let finalizing = crd_finalizing::still_finalizing(&context.client, &removed.crds).await;
    if !finalizing.is_empty() {
        let listed: Vec<String> = finalizing.iter().map(ToString::to_string).collect();
        let note = format!(
            "deleted {} installed objects; the Instance stays until the API server has \
             finished deleting {} of its CRDs and their custom resources: {}",
            removed.done,
            finalizing.len(),
            listed.join("; ")
        );
        tracing::info!(instance = %name, crds = %listed.join("; "), "waiting for deleted CRDs to go");
        tell(
            context,
            instance,
            EventType::Normal,
            "UninstallWaiting",
            &note,
        );
        return Ok(Progress::WaitingForCrds);
    }
    tell_done(instance, orphan, &removed, context);
    Ok(Progress::Finished)
}

/// Everything that may be the Instance's, in the order to remove it (the
/// reverse of this: custom resources before their CRDs, everything before
/// its Namespace). Candidates only: each object's own records decide.
async fn candidates<P>(
    instance: &Instance,
    uid: &str,
    context: &Context<P>,
) -> Result<Vec<ObjectRef>, kube::Error> {
    let mut owned = instance
        .status
        .as_ref()
        .map(|status| status.objects.clone())
        .unwrap_or_default();
    // An apply cut short (an error, a killed provisioner) never reached the
    // status: what the current Bundle holds is looked at too.
    let bundle_status = current_bundle(instance, context)
        .await
        .and_then(|bundle| bundle.status)
        .unwrap_or_default();
    owned.extend(bundle_status.objects.iter().cloned());
    // Whatever the lists say, every object of their kinds (and of the kinds
    // of every Bundle this Instance had active) that carries the Instance's
    // UID label is found too: a status that lists only the first objects
    // (a big Bundle), a pivot cut short, an apply killed before its status
    // was written. Labels only find candidates; records decide.
    let instance_status = instance.status.clone().unwrap_or_default();
    let earlier: Vec<_> = context
        .bundles
        .state()
        .into_iter()
        .filter(|bundle| bundle.labels().get(ACTIVE_FOR_LABEL).map(String::as_str) == Some(uid))
        .filter_map(|bundle| bundle.status.clone())
        .collect();
    let of = apply::kinds_of(
        instance_status
            .objects
            .iter()
            .chain(&bundle_status.objects)
            .chain(earlier.iter().flat_map(|status| &status.objects)),
        instance_status
            .object_kinds
            .iter()
            .chain(&bundle_status.object_kinds)
            .chain(earlier.iter().flat_map(|status| &status.object_kinds)),
    );
    // From the drift watches where they have seen every object of a kind;
    // listed by label for the rest.
    let name = instance.name_any();
    let (seen, to_list) = context.drift.labelled_with(&name, &of);
    owned.extend(seen);
    match apply::labelled(&mut context.kinds.clone(), &to_list, uid).await {
        Ok(found) => owned.extend(found),
        Err(error) => {
            // Nothing is deleted from a partial picture: the finalizer
            // stays and the uninstall runs again.
            tracing::warn!(instance = %name, %error, "listing the Instance's objects by label");
            return Err(kube::Error::Service(error.to_string().into()));
        }
    }
    owned.sort();
    owned.dedup();
    owned.sort_by_key(|object| apply::rank(&object.api_version, &object.kind));
    Ok(owned)
}

/// The Bundle the Instance names: the one it embeds, else the Bundle
/// object (from the cache, or read when a provisioner just started).
async fn current_bundle<P>(instance: &Instance, context: &Context<P>) -> Option<Bundle> {
    if let Some(embedded) = instance.embedded_bundle() {
        // Embedded content's record is in the Instance's own status.
        return Some(embedded);
    }
    let name = &instance.spec.bundle.name;
    let key = kube::runtime::reflector::ObjectRef::new(name);
    match context.bundles.get(&key) {
        Some(bundle) => Some((*bundle).clone()),
        None => Api::<Bundle>::all(context.client.clone())
            .get_opt(name)
            .await
            .ok()
            .flatten(),
    }
}

/// What removing the candidates did.
#[derive(Default)]
struct Removed {
    /// Deleted (or released, under `Orphan`).
    done: usize,
    /// Left alone, each with why: not this Instance's.
    not_ours: Vec<String>,
    /// Could not be removed yet, each with why.
    failed: Vec<String>,
    /// The CRDs deleted, which the API server may still be finalizing.
    crds: Vec<String>,
}

/// Removes (or releases) each candidate its records say is this
/// Instance's, newest first.
async fn remove_all<P>(
    owned: &[ObjectRef],
    orphan: bool,
    claimant: Claimant<'_>,
    context: &Context<P>,
) -> Removed {
    let mut kinds = context.kinds.clone();
    let mut removed = Removed::default();
    for reference in owned.iter().rev() {
        let result = if orphan {
            ownership::release_owned(&mut kinds, reference, claimant).await
        } else {
            ownership::delete_owned(&mut kinds, reference, claimant).await
        };
        match result {
            Ok(Removal::Done) => {
                removed.done += 1;
                if !orphan && is_crd(reference) {
                    removed.crds.push(reference.name.clone());
                }
            }
            Ok(Removal::Gone) => {}
            Ok(Removal::NotOurs(why)) => {
                tracing::warn!(instance = %claimant.name, %why, "left an object that is not this Instance's");
                removed.not_ours.push(why);
            }
            Err(error) => {
                tracing::warn!(instance = %claimant.name, %error, "removing an installed object");
                removed.failed.push(error.to_string());
            }
        }
    }
    removed
}

/// Says the uninstall is done: `Uninstalled` (or `Orphaned`), a Warning
/// when objects were left because they are not this Instance's.
fn tell_done<P>(instance: &Instance, orphan: bool, removed: &Removed, context: &Context<P>) {
    let done = removed.done;
    let (reason, mut note) = if orphan {
        (
            "Orphaned",
            format!(
                "deletionPolicy: Orphan; left {done} installed objects in place, without Pakket's labels"
            ),
        )
    } else {
        ("Uninstalled", format!("deleted {done} installed objects"))
    };
    if let Some(first) = removed.not_ours.first() {
        note.push_str(&format!(
            "; left {} listed objects alone because they are not this Instance's (first: {first})",
            removed.not_ours.len(),
        ));
    }
    let kind = if removed.not_ours.is_empty() {
        EventType::Normal
    } else {
        EventType::Warning
    };
    tell(context, instance, kind, reason, &note);
}

/// Publishes an Event about the uninstall (its note cut to what the API
/// server keeps).
fn tell<P>(context: &Context<P>, instance: &Instance, kind: EventType, reason: &str, note: &str) {
    let event = Event {
        type_: kind,
        reason: reason.into(),
        note: Some(note.chars().take(1000).collect()),
        action: "Delete".into(),
        secondary: None,
    };
    context.events.publish(instance, event);
}

/// Whether `reference` names a CustomResourceDefinition.
fn is_crd(reference: &pakket_api::ObjectRef) -> bool {
    reference.kind == "CustomResourceDefinition"
        && reference.api_version.starts_with("apiextensions.k8s.io/")
}
