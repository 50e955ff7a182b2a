//! What the runtime writes on Bundles: their unpack status, and the label
//! that marks one an Instance pivoted away from.

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{
    Bundle, BundleProperty, BundleStatus, ObjectRef, PinnedSource, RbacGrant, Reason, UnpackPhase,
};
use serde_json::json;

use crate::apply::FIELD_MANAGER;
use crate::content::Unpacked;

/// Label on a Bundle an Instance pivoted away from, naming its successor.
pub const REPLACED_BY_LABEL: &str = "core.pakket.dev/replaced-by";

/// How an unpack went, for the Bundle's status.
pub struct UnpackOutcome<'a> {
    /// Done or Failed.
    pub phase: UnpackPhase,
    /// The content, when it was fetched.
    pub unpacked: Option<&'a Unpacked>,
    /// The objects the content holds.
    pub objects: &'a [ObjectRef],
    /// The RBAC they would grant, for approvers.
    pub grants: Vec<RbacGrant>,
    /// What the content provides and requires, as its provisioner reads it.
    pub properties: Vec<BundleProperty>,
    /// The `Unpacked` condition's reason.
    pub reason: Reason,
    /// And its message.
    pub message: &'a str,
}

/// Writes the Bundle's status, unless it already says exactly this (every
/// reconcile of every Instance using the Bundle comes here; most have
/// nothing new to say).
pub async fn write(
    bundles: &Api<Bundle>,
    bundle: &Bundle,
    outcome: UnpackOutcome<'_>,
) -> Result<(), kube::Error> {
    let current = bundle.status.clone().unwrap_or_default();
    let mut status = current.clone();
    status.unpacked = outcome.phase;
    if let Some(unpacked) = outcome.unpacked {
        status.source = Some(PinnedSource {
            reference: unpacked.reference.clone(),
            digest: Some(unpacked.digest.as_str().to_owned()),
            commit: unpacked.commit.clone(),
        });
    }
    status.set_objects(outcome.objects);
    status.grants = outcome.grants;
    status.properties = outcome.properties;
    status.observed_generation = bundle.metadata.generation;
    let condition_status = if outcome.phase == UnpackPhase::Done {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    };
    condition::set(
        &mut status.conditions,
        condition::new(
            outcome.reason,
            condition_status,
            outcome.message,
            bundle.metadata.generation,
            Timestamp::now(),
        ),
    );
    if status == current {
        return Ok(());
    }
    let patch = json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Bundle",
        "status": BundleStatus { ..status },
    });
    bundles
        .patch_status(
            &bundle.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// Labels a Bundle an Instance pivoted away from, so `kubectl get bundles
/// -l core.pakket.dev/replaced-by` shows the history.
pub async fn mark_replaced(bundles: &Api<Bundle>, old: &str, new: &str) -> Result<(), kube::Error> {
    let label = json!({ "metadata": { "labels": { REPLACED_BY_LABEL: new } } });
    match bundles
        .patch(old, &PatchParams::default(), &Patch::Merge(&label))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}
