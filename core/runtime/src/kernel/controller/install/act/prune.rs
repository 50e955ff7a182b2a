//! After the whole set is written: CRDs get their in-use readers, what
//! only the earlier revision had is deleted (never a CRD whose objects
//! still exist), and the result is recorded: the objects listed, the
//! active Bundle and its marks, `Installed`, and the pivot and adoption
//! Events.

use std::time::Instant;

use kube::ResourceExt;
use kube::api::Api;
use kube::core::SelectorExt;
use kube::runtime::events::{Event, EventType};
use pakket_api::condition::ConditionStatus;
use pakket_api::ownership::ACTIVE_FOR_LABEL;
use pakket_api::{Bundle, Instance, ObjectRef, Reason};

use super::super::super::bundle_status;
use super::super::super::context::Context;
use super::super::super::report::Report;
use super::super::Flow;
use super::{Applied, Proposal, failure};
use crate::apply;
use crate::drift::Fingerprint;
use crate::ownership::Claimant;

/// What the write left for the prune.
pub(super) struct Pruned<'a> {
    pub previous: &'a [ObjectRef],
    pub applied: apply::Applied,
    pub adoptions: apply::Adoptions,
    pub began: Instant,
    pub fingerprint: Fingerprint,
    pub content_changed: bool,
}

/// Deletes what only the earlier revision had, and records the install.
pub(super) async fn prune<P>(
    instance: &Instance,
    proposal: &Proposal<'_>,
    written: Pruned<'_>,
    claimant: Claimant<'_>,
    kinds: &mut apply::Kinds,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Applied>, kube::Error> {
    let applied = &written.applied;
    readers_for_crds(instance, &applied.objects, context).await;
    let keep: std::collections::BTreeSet<_> = applied.objects.iter().collect();
    let previous = written.previous;
    context
        .drift
        .pruning(previous.iter().filter(|object| !keep.contains(object)));
    let removed = match apply::prune(kinds, previous, &applied.objects, claimant).await {
        Ok(removed) => removed,
        Err(error) => {
            let revision = (proposal.revision, proposal.rollout);
            let count = applied.objects.len();
            return Ok(failure::prune_failed(report, &error, count, revision));
        }
    };
    let pivot = report
        .status
        .active_bundle
        .as_ref()
        .filter(|old| **old != instance.spec.bundle.name)
        .cloned();
    record(
        instance,
        proposal,
        &written,
        &removed,
        pivot.as_deref(),
        context,
        report,
    )
    .await?;
    let kept_for_objects = !removed.kept_in_use.is_empty();
    if !kept_for_objects {
        let name = instance.name_any();
        context.drift.applied(
            &name,
            written.fingerprint,
            written.began,
            &written.applied.objects,
        );
    }
    // What the class's probes hold among the whole set, once written: not
    // rolled out until they pass.
    let Pruned { applied, .. } = written;
    let mut unhealthy = applied.unhealthy;
    let probes = proposal.probes;
    unhealthy.extend(apply::phase::probe_problems(kinds, &applied.objects, probes).await);
    Ok(Flow::Next(Applied {
        fresh_health: Some(unhealthy),
        // Not done: the next pass (soon) looks again whether the kept
        // CRDs' objects are gone, and deletes the CRDs then.
        kept_for_objects,
        warn_only: false,
    }))
}

/// Records the set as installed: the objects (a CRD kept for its custom
/// resources stays listed: still this Instance's, deleted by a later pass
/// or with the Instance), what it provides, the active Bundle and the
/// marks on the Bundles, `Installed`, and the Events no condition tells.
async fn record<P>(
    instance: &Instance,
    proposal: &Proposal<'_>,
    written: &Pruned<'_>,
    removed: &apply::Removed,
    pivot: Option<&str>,
    context: &Context<P>,
    report: &mut Report,
) -> Result<(), kube::Error> {
    let bundle_name = &instance.spec.bundle.name;
    let mut listed = written.applied.objects.clone();
    listed.extend(removed.kept_in_use.iter().map(|(kept, _)| kept.clone()));
    report.status.set_objects(&listed);
    report.status.provides = proposal.provides.to_vec();
    report.status.active_bundle = Some(bundle_name.clone());
    let message = installed_message(instance, written, removed, pivot, context);
    if let Some(old) = pivot {
        // The Installed condition reads the same before and after a
        // pivot, so no status-change Event would tell of it.
        publish_pivot(context, instance, old, bundle_name, removed.done);
    }
    if pivot.is_some() || written.content_changed {
        if let bundle_status::Home::Object(bundles) = proposal.home {
            let uid = instance.uid().unwrap_or_default();
            mark_active(bundles, proposal.bundle, &uid).await?;
        }
        mark_earlier_bundles(instance, context, bundle_name, pivot).await?;
    }
    report.set(Reason::InstallSucceeded, ConditionStatus::True, message);
    Ok(())
}

/// `Installed`'s words for a set written whole; the adoptions are told in
/// an Event of their own too (told even if this status write is lost to a
/// conflict: the retry finds the objects its own already).
fn installed_message<P>(
    instance: &Instance,
    written: &Pruned<'_>,
    removed: &apply::Removed,
    pivot: Option<&str>,
    context: &Context<P>,
) -> String {
    let bundle_name = &instance.spec.bundle.name;
    let adopted = &written.adoptions.adopted;
    let count = written.applied.objects.len();
    let mut message = format!("applied {count} objects of Bundle {bundle_name}");
    if !adopted.is_empty() {
        let names: Vec<String> = adopted.iter().map(ToString::to_string).collect();
        let adopted = format!(
            "adopted {} offered to it: {}",
            names.len(),
            names.join(", ")
        );
        message.push_str(&format!("; {adopted}"));
        publish_adopted(context, instance, &adopted);
    }
    if let Some(old) = pivot {
        message.push_str(&format!(
            "; pivoted from Bundle {old}, deleting {} objects it alone had",
            removed.done
        ));
    }
    for (kept, words) in &removed.kept_in_use {
        message.push_str(&format!(
            "; kept {} {}, which Bundle {bundle_name} no longer has: {words} and would be deleted with it; it goes once they are gone",
            kept.kind, kept.name
        ));
    }
    if !removed.not_ours.is_empty() {
        message.push_str(&format!(
            "; left {} listed objects alone because they are not this Instance's (first: {})",
            removed.not_ours.len(),
            removed.not_ours[0]
        ));
    }
    message
}

/// One Event for a pivot, published without holding up the reconcile.
fn publish_pivot<P>(
    context: &Context<P>,
    instance: &Instance,
    old: &str,
    new: &str,
    deleted: usize,
) {
    let event = Event {
        type_: EventType::Normal,
        reason: "Pivoted".into(),
        note: Some(format!(
            "pivoted from Bundle {old} to Bundle {new}, deleting {deleted} objects only {old} had"
        )),
        action: "Pivot".into(),
        secondary: None,
    };
    context.events.publish(instance, event);
}

/// One Event for objects adopted on their owners' offer (nothing is
/// adopted silently), published without holding up the reconcile.
fn publish_adopted<P>(context: &Context<P>, instance: &Instance, words: &str) {
    let event = Event {
        type_: EventType::Normal,
        reason: "Adopted".into(),
        note: Some(words.chars().take(1000).collect()),
        action: "Adopt".into(),
        secondary: None,
    };
    context.events.publish(instance, event);
}

/// A Warning Event: the Instance pivoted by override while the CRDs the
/// new content drops are in use.
pub(super) fn publish_pivot_in_use<P>(context: &Context<P>, instance: &Instance, words: &str) {
    let event = Event {
        type_: EventType::Warning,
        reason: "PivotedInUse".into(),
        note: Some(format!(
            "{words}; pivoting anyway, as {} asks (the CRDs stay while objects of them exist)",
            pakket_api::PIVOT_IN_USE_ANNOTATION
        )),
        action: "Pivot".into(),
        secondary: None,
    };
    context.events.publish(instance, event);
}

/// Labels the Bundle now installed as active for this Instance (by UID),
/// the record a later pivot goes by.
async fn mark_active(bundles: &Api<Bundle>, bundle: &Bundle, uid: &str) -> Result<(), kube::Error> {
    if bundle.labels().get(ACTIVE_FOR_LABEL).map(String::as_str) == Some(uid) {
        return Ok(());
    }
    let label = serde_json::json!({ "metadata": { "labels": { ACTIVE_FOR_LABEL: uid } } });
    match bundles
        .patch(
            &bundle.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&label),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Labels the Bundles this Instance has had active before (the one its
/// status names, and any its `spec.selector` finds), other than the one
/// now installed, as replaced by it. Only Bundles whose
/// [`ACTIVE_FOR_LABEL`] is this Instance's UID are touched: a selector that
/// matches everything, or a status someone rewrote, relabels nobody else's.
async fn mark_earlier_bundles<P>(
    instance: &Instance,
    context: &Context<P>,
    current: &str,
    previous: Option<&str>,
) -> Result<(), kube::Error> {
    if previous.is_none() && instance.spec.selector.is_none() {
        return Ok(());
    }
    let uid = instance.uid().unwrap_or_default();
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    // Listed, not read from the cache: this runs once per pivot, and a
    // Bundle created just before the Instance may not be cached yet.
    let mine = kube::api::ListParams::default().labels(&format!("{ACTIVE_FOR_LABEL}={uid}"));
    let selector = instance
        .spec
        .selector
        .clone()
        .and_then(|selector| kube::core::Selector::try_from(selector).ok());
    for bundle in bundles.list(&mine).await? {
        let name = bundle.name_any();
        let matches = Some(name.as_str()) == previous
            || selector
                .as_ref()
                .is_some_and(|selector| selector.matches(bundle.labels()));
        let already =
            bundle.labels().get(bundle_status::REPLACED_BY_LABEL) == Some(&current.to_owned());
        if name != current && matches && !already {
            bundle_status::mark_replaced(&bundles, &name, current).await?;
        }
    }
    Ok(())
}

/// Gives each CRD among `applied` its in-use reader role
/// ([`crate::trust::in_use_readers`]); what could not be done is a Warning
/// Event on the Instance (the in-use checks then fail closed for that CRD).
async fn readers_for_crds<P>(
    instance: &Instance,
    applied: &[pakket_api::ObjectRef],
    context: &Context<P>,
) {
    let crds: Vec<&str> = applied
        .iter()
        .filter(|object| {
            object.kind == "CustomResourceDefinition"
                && object.api_version.starts_with("apiextensions.k8s.io/")
        })
        .map(|object| object.name.as_str())
        .collect();
    if crds.is_empty() {
        return;
    }
    let problems = crate::trust::in_use_readers::ensure(&context.client, &crds).await;
    if problems.is_empty() {
        return;
    }
    tracing::warn!(instance = %instance.name_any(), problems = %problems.join("; "), "in-use reader roles");
    context.events.publish(
        instance,
        kube::runtime::events::Event {
            type_: kube::runtime::events::EventType::Warning,
            reason: "InUseReaderMissing".into(),
            note: Some(problems.join("; ").chars().take(1000).collect()),
            action: "Install".into(),
            secondary: None,
        },
    );
}
