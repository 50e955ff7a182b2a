//! What an Instance runs now, as the steps that compare with it read it:
//! the objects it installed (for the prune and for what a change deletes),
//! those objects as they are on the cluster, and the running revision's
//! objects rendered again from the store. Reads only; no step of its own.

use kube::ResourceExt;
use pakket_api::Instance;

use super::super::context::Context;
use crate::apply;
use crate::provisioner::{ObjectsRequest, Provisioner};
use crate::store::Digest;

/// What the Instance installed before this apply, for the prune after it:
/// its status's list when that is whole, else every object of the kinds
/// it counts that carries the Instance's UID label (see [`apply::labelled`]).
pub(super) async fn previous_objects(
    kinds: &mut apply::Kinds,
    status: &pakket_api::InstanceStatus,
    uid: &str,
) -> Result<Vec<pakket_api::ObjectRef>, apply::ApplyError> {
    if status.lists_every_object() {
        return Ok(status.objects.clone());
    }
    let of = apply::kinds_of(&status.objects, &status.object_kinds);
    apply::labelled(kinds, &of, uid).await
}

/// What `instance` runs now, read back from the cluster: the objects it
/// installed ([`previous_objects`]) as they are.
pub(super) async fn live_running<P>(
    instance: &Instance,
    context: &Context<P>,
) -> Result<Vec<serde_json::Value>, apply::ApplyError> {
    let mut kinds = context.kinds.clone();
    let status = instance.status.clone().unwrap_or_default();
    let uid = instance.uid().unwrap_or_default();
    let refs = previous_objects(&mut kinds, &status, &uid).await?;
    live_objects(&mut kinds, &refs).await
}

/// The objects `refs` as they are on the cluster now (those that exist).
async fn live_objects(
    kinds: &mut apply::Kinds,
    refs: &[pakket_api::ObjectRef],
) -> Result<Vec<serde_json::Value>, apply::ApplyError> {
    let mut live = Vec::with_capacity(refs.len());
    for reference in refs {
        let api = kinds.api(reference).await?;
        let found =
            api.get_opt(&reference.name)
                .await
                .map_err(|error| apply::ApplyError::Refused {
                    object: reference.to_string(),
                    message: apply::api_message(&error),
                })?;
        if let Some(object) = found
            && let Ok(value) = serde_json::to_value(object)
        {
            live.push(value);
        }
    }
    Ok(live)
}

/// The Bundle `instance` runs now and its objects, rendered again from the
/// store the way they were installed; `None` when nothing is approved for
/// the active Bundle or its content is no longer stored.
pub(super) fn running_revision<P: Provisioner>(
    instance: &Instance,
    request: &ObjectsRequest<'_>,
    context: &Context<P>,
) -> Option<(String, Vec<serde_json::Value>)> {
    let status = instance.status.as_ref()?;
    let approved = status.approval.as_ref()?;
    if status.active_bundle.as_deref() != Some(approved.bundle.as_str()) {
        return None;
    }
    let dir = context.store.get(&Digest::parse(&approved.digest).ok()?)?;
    let running = ObjectsRequest {
        content: &dir,
        ..*request
    };
    let objects = context.provisioner.objects(&running).ok()?;
    Some((approved.bundle.clone(), objects))
}
