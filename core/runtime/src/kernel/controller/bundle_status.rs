//! What the runtime records about Bundles: their unpack status (on the
//! Bundle object, or for an embedded Bundle in its Instance's status), and
//! the label that marks one an Instance pivoted away from.

use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::readiness;
use pakket_api::{
    Bundle, BundleProperty, BundleStatus, EmbeddedBundleStatus, ObjectRef, PinnedSource, RbacGrant,
    Reason, UnpackPhase,
};
use serde_json::json;

use super::report::{PendingBundleStatus, Report};
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

impl<'a> UnpackOutcome<'a> {
    /// A failed unpack or render: no objects, `message` saying why.
    pub fn failed(unpacked: Option<&'a Unpacked>, message: &'a str) -> Self {
        Self {
            phase: UnpackPhase::Failed,
            unpacked,
            objects: &[],
            grants: Vec::new(),
            properties: Vec::new(),
            reason: Reason::UnpackFailed,
            message,
        }
    }
}

impl<'a> UnpackOutcome<'a> {
    /// Content unpacked and pinned from which no objects were rendered:
    /// the unpack succeeded (the Bundle says so, and lists nothing), and
    /// `message` says why the render failed (the content, or the
    /// Instance's config, needs fixing; the Instance's `Installed` says
    /// `RenderFailed`).
    pub fn not_rendered(unpacked: &'a Unpacked, message: &'a str) -> Self {
        Self {
            phase: UnpackPhase::Done,
            unpacked: Some(unpacked),
            objects: &[],
            grants: Vec::new(),
            properties: Vec::new(),
            reason: Reason::UnpackSucceeded,
            message,
        }
    }
}

/// Where a Bundle's status is kept.
#[derive(Clone, Copy)]
pub enum Home<'a> {
    /// On the Bundle object (a Bundle made on its own).
    Object(&'a Api<Bundle>),
    /// In `status.embeddedBundle` of the Instance that embeds it: no
    /// object is made for embedded content, which saves the apiserver a
    /// create and a status write per Instance.
    Embedded,
}

/// Records how the unpack went in the report, unless the status already
/// says exactly this (every reconcile of every Instance using the Bundle
/// comes here; most have nothing new to say). An embedded Bundle's status
/// goes into the Instance's own status; a Bundle object's is written by
/// the report's one writer at the end of the reconcile ([`write_pending`]).
pub fn record(home: Home<'_>, bundle: &Bundle, outcome: UnpackOutcome<'_>, report: &mut Report) {
    let current = bundle.status.clone().unwrap_or_default();
    let mut status = updated(&current, bundle, outcome);
    match home {
        Home::Embedded => {
            // kstatus and `kubectl wait` read an object's own conditions,
            // never a block inside another's: here Ready, Reconciling and
            // Stalled would only add bytes to every write of the Instance
            // (and to its managed fields) that the apiserver decodes,
            // validates and stores each time. The Instance's own say it.
            status
                .conditions
                .retain(|c| !readiness::is_readiness(&c.type_));
            report.status.embedded_bundle = Some(EmbeddedBundleStatus {
                name: bundle.name_any(),
                status,
            });
        }
        Home::Object(_) if status == current => report.bundle_status = None,
        Home::Object(_) => {
            report.bundle_status = Some(PendingBundleStatus {
                name: bundle.name_any(),
                status,
            });
        }
    }
}

/// Writes a Bundle object's status the reconcile recorded.
pub async fn write_pending(
    bundles: &Api<Bundle>,
    pending: PendingBundleStatus,
) -> Result<(), kube::Error> {
    let patch = json!({
        "apiVersion": "core.pakket.dev/v1alpha1",
        "kind": "Bundle",
        "status": pending.status,
    });
    bundles
        .patch_status(
            &pending.name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    Ok(())
}

/// `current` with the unpack's outcome in it.
fn updated(current: &BundleStatus, bundle: &Bundle, outcome: UnpackOutcome<'_>) -> BundleStatus {
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
    let standing = readiness::of_bundle(&status);
    readiness::write(
        &mut status.conditions,
        bundle.metadata.generation,
        &standing,
        Timestamp::now(),
    );
    status
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
