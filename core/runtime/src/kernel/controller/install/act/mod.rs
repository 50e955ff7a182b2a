//! The write a plan asks for ([`super::plan::Plan::Write`]): what the
//! Instance installed before is read, a pivot is guarded (the CRDs the new
//! content drops must not be in use), the whole set is checked by a
//! server-side dry run and written phase by phase ([`apply`]), what only
//! the earlier revision had is pruned and the result recorded ([`prune`]);
//! an error on the way is turned into the Instance's status in one place
//! ([`failure`]).

mod apply;
mod failure;
mod prune;

use kube::ResourceExt;
use pakket_api::{Bundle, Instance};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::pivot_guard;
use super::super::report::Report;
use super::super::revision;
use super::installed::previous_objects;
use super::plan::Write;
use super::{Applied, Flow};
use crate::apply as objects;
use crate::content::UnpackOptions;
use crate::drift::Fingerprint;
use crate::ownership::Claimant;
use crate::provisioner::{ObjectsRequest, Provisioner};

/// What is to be applied, and under which settings.
pub(super) struct Proposal<'a> {
    pub bundle: &'a Bundle,
    pub home: bundle_status::Home<'a>,
    pub objects: &'a [serde_json::Value],
    pub provides: &'a [String],
    pub request: &'a ObjectsRequest<'a>,
    pub options: &'a UnpackOptions,
    pub ignored: &'a crate::drift_mode::Ignored,
    pub revision: revision::Content<'a>,
    pub rollout: revision::Settings,
    pub probes: &'a objects::probes::ProgressionProbes,
}

/// Writes `proposal` as `write` says, and prunes what the earlier revision
/// alone had.
pub(super) async fn write<P: Provisioner>(
    instance: &Instance,
    proposal: Proposal<'_>,
    write: &Write,
    fingerprint: Fingerprint,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Applied>, kube::Error> {
    let name = instance.name_any();
    let uid = instance.uid().unwrap_or_default();
    let mut kinds = context.kinds.clone();
    let previous = match previous_objects(&mut kinds, &report.status, &uid).await {
        Ok(previous) => previous,
        Err(error) => {
            let message = format!("finding what the Instance installed before: {error}");
            return Ok(failure::not_applied(report, message));
        }
    };
    if let Some(stop) = guard(
        instance,
        write,
        &previous,
        proposal.objects,
        context,
        report,
    )
    .await
    {
        return Ok(stop);
    }
    let claimant = Claimant {
        name: &name,
        uid: &uid,
    };
    let written = apply::phases(
        instance, &proposal, write, &previous, claimant, &mut kinds, context, report,
    )
    .await;
    let (applied, adoptions, began) = match written {
        apply::Written::Whole {
            applied,
            adoptions,
            began,
        } => (applied, adoptions, began),
        apply::Written::Stopped(recheck) => {
            return Ok(Flow::Stop(kube::runtime::controller::Action::requeue(
                recheck,
            )));
        }
    };
    let pruned = prune::Pruned {
        previous: &previous,
        applied,
        adoptions,
        began,
        fingerprint,
        content_changed: write.content_changed(),
    };
    prune::prune(
        instance, &proposal, pruned, claimant, &mut kinds, context, report,
    )
    .await
}

/// A pivot does not take the CRDs the new content drops from their users.
/// (Once on this Bundle, the drop was accepted: CRDs kept for their objects
/// are the prune's to delete later.) `Some` when the write stops here.
async fn guard<P>(
    instance: &Instance,
    write: &Write,
    previous: &[pakket_api::ObjectRef],
    objects: &[serde_json::Value],
    context: &Context<P>,
    report: &mut Report,
) -> Option<Flow<Applied>> {
    // Only a write from another Bundle is guarded.
    write.pivot_from.as_ref()?;
    let bundle = &instance.spec.bundle.name;
    match pivot_guard::judge(&context.client, instance, bundle, previous, objects).await {
        Ok(pivot_guard::Verdict::Clear) => None,
        Ok(pivot_guard::Verdict::Overridden(words)) => {
            prune::publish_pivot_in_use(context, instance, &words);
            None
        }
        Ok(pivot_guard::Verdict::Refused(message)) => Some(failure::not_applied(report, message)),
        Err(error) => Some(failure::not_applied(
            report,
            format!(
                "checking whether the CRDs Bundle {bundle} drops are in use: {}; nothing was applied, trying again",
                objects::api_message(&error)
            ),
        )),
    }
}
