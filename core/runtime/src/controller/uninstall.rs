//! An Instance being deleted: its objects go with it, unless its
//! `deletionPolicy` is `Orphan`, which leaves them running and unlabelled
//! (no longer anyone's, as far as Pakket is concerned).

use kube::Resource;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use pakket_api::{DeletionPolicy, Instance};

use super::context::Context;
use crate::apply;

/// Deletes (or, under `Orphan`, leaves) everything `instance` installed.
/// Objects go newest-first, the reverse of the order they were applied in,
/// so a CRD outlives the custom resources of its kind.
pub async fn uninstall<P>(
    instance: &Instance,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let name = instance.name_any();
    context.drift.forget_instance(&name);
    let owned = instance
        .status
        .as_ref()
        .map(|status| status.objects.clone())
        .unwrap_or_default();
    let (reason, note) = match instance.spec.deletion_policy {
        DeletionPolicy::Orphan => {
            let mut kinds = context.kinds.clone();
            for reference in &owned {
                if let Err(error) = apply::release(&mut kinds, reference).await {
                    tracing::warn!(%error, "releasing an orphaned object");
                }
            }
            (
                "Orphaned",
                format!(
                    "deletionPolicy: Orphan; left {} installed objects in place, without Pakket's labels",
                    owned.len()
                ),
            )
        }
        DeletionPolicy::Delete => {
            let mut kinds = context.kinds.clone();
            let mut deleted = 0;
            for reference in owned.iter().rev() {
                match apply::delete(&mut kinds, reference).await {
                    Ok(gone) => deleted += usize::from(gone),
                    Err(error) => tracing::warn!(%error, "deleting an installed object"),
                }
            }
            (
                "Uninstalled",
                format!("deleted {deleted} of {} installed objects", owned.len()),
            )
        }
    };
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: "Delete".into(),
        secondary: None,
    };
    let reference = instance.object_ref(&());
    if let Err(error) = context.recorder.publish(&event, &reference).await {
        tracing::debug!(%error, "publishing an Event");
    }
    Ok(Action::await_change())
}
