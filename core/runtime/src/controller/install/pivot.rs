//! The apply step: the whole set checked by a server-side dry run, then
//! applied (a write that still fails part-way is rolled back to the running
//! revision), then what the earlier revision alone had is pruned, a pivot
//! told in an Event and the Bundles marked. Under drift Warn, installed
//! content is not written again until new content or a new generation.

use kube::ResourceExt;
use kube::api::Api;
use kube::core::SelectorExt;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::ownership::ACTIVE_FOR_LABEL;
use pakket_api::{Bundle, Instance, Reason};

use super::super::bundle_status;
use super::super::context::Context;
use super::super::pivot_guard;
use super::super::report::Report;
use super::super::revision;
use super::approval::running_revision;
use super::*;
use crate::apply;
use crate::content::UnpackOptions;
use crate::drift::Fingerprint;
use crate::ownership::Claimant;
use crate::provisioner::ObjectsRequest;
use crate::provisioner::Provisioner;

/// What is to be applied, and under which settings.
pub(super) struct Proposal<'a> {
    pub bundle: &'a Bundle,
    pub home: bundle_status::Home<'a>,
    pub objects: &'a [serde_json::Value],
    pub provides: Vec<String>,
    pub request: &'a ObjectsRequest<'a>,
    pub options: &'a UnpackOptions,
    pub ignored: &'a crate::drift_mode::Ignored,
    pub revision: revision::Content<'a>,
    pub rollout: revision::Settings,
    pub probes: &'a crate::apply::probes::ProgressionProbes,
}

/// What the apply left for the health step.
pub(super) struct Applied {
    /// The objects' health as the apply found it, when it ran.
    pub fresh_health: Option<Vec<apply::HealthProblem>>,
    /// CRDs kept for their objects: look again soon.
    pub kept_for_objects: bool,
    /// Drift Warn on installed content: nothing was written.
    pub warn_only: bool,
}

/// Applies `proposal` (when it needs applying) and prunes what the earlier
/// revision alone had.
pub(super) async fn apply_and_prune<P: Provisioner>(
    instance: &Instance,
    proposal: Proposal<'_>,
    write: &super::plan::Write,
    fingerprint: Fingerprint,
    context: &Context<P>,
    report: &mut Report,
) -> Result<Flow<Applied>, kube::Error> {
    let Proposal {
        bundle,
        home,
        objects,
        provides,
        request,
        options,
        ignored,
        revision: revision_content,
        rollout: rollout_settings,
        probes,
    } = proposal;
    let name = instance.name_any();
    let bundle_name = &instance.spec.bundle.name;
    // Apply the new set, then delete what the old set had and this one lacks.
    let installed_here = !write.content_changed();
    let mut kept_for_objects = false;
    let fresh_health = {
        let mut kinds = context.kinds.clone();
        let uid = instance.uid().unwrap_or_default();
        let previous = match previous_objects(&mut kinds, &report.status, &uid).await {
            Ok(previous) => previous,
            Err(error) => {
                report.set(
                    Reason::InstallFailed,
                    ConditionStatus::False,
                    format!("finding what the Instance installed before: {error}"),
                );
                return Ok(Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE)));
            }
        };
        // A pivot does not take the CRDs the new content drops from their
        // users. (Once on this Bundle, the drop was accepted: CRDs kept for
        // their objects are the prune's to delete later.)
        let pivoting = write.pivot_from.is_some();
        let guard = if pivoting {
            pivot_guard::judge(&context.client, instance, bundle_name, &previous, objects).await
        } else {
            Ok(pivot_guard::Verdict::Clear)
        };
        match guard {
            Ok(pivot_guard::Verdict::Clear) => {}
            Ok(pivot_guard::Verdict::Overridden(words)) => {
                publish_pivot_in_use(context, instance, &words);
            }
            Ok(pivot_guard::Verdict::Refused(message)) => {
                report.set(Reason::InstallFailed, ConditionStatus::False, message);
                return Ok(Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE)));
            }
            Err(error) => {
                report.set(
                    Reason::InstallFailed,
                    ConditionStatus::False,
                    format!(
                        "checking whether the CRDs Bundle {bundle_name} drops are in use: {}; nothing was applied, trying again",
                        apply::api_message(&error)
                    ),
                );
                return Ok(Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE)));
            }
        }
        let claimant = Claimant {
            name: &name,
            uid: &uid,
        };
        // What a write that fails part-way returns to: the running
        // revision, rendered again from the store.
        let running = if previous.is_empty() {
            None
        } else {
            running_revision(instance, request, context)
        };
        let restore = running
            .as_ref()
            .map(|(bundle, objects)| apply::Restore { bundle, objects });
        let began = std::time::Instant::now();
        // Created without reading first, unless an earlier try failed: a
        // conflict would then create and remove objects again on every
        // retry (and a reconcile that read the Instance before the failure
        // was written would do it at once, while the failure is already
        // visible).
        let first_install = previous.is_empty() && !write.read_first;
        // Phase by phase: up to each gate, whose probes must pass before
        // the phases after it are written (none for most sets).
        let gates = apply::phase::gates(objects, probes);
        // Fields someone else owns are written back as the apply reads
        // them, and changes to them alone are no drift.
        context.drift.ignore(&name, ignored);
        context.drift.writing(&name);
        // Set again below while a phase waits; a set written whole, or an
        // apply that failed, is held at no phase.
        report.status.progression = None;
        let mut passed = 0;
        let (applied, adoptions) = loop {
            let gate = gates.get(passed);
            let progress = apply::Progress::default();
            let applying = apply::apply_all(
                &mut kinds,
                objects,
                claimant,
                bundle_name,
                &progress,
                apply::Settings {
                    crd_upgrade_safety: options.crd_upgrade_safety,
                    first_install: first_install && passed == 0,
                    content_changed: !installed_here,
                    through: gate.map(|gate| gate.after),
                },
                ignored,
                restore,
            );
            let describe = || progress.describe(objects.len(), bundle_name);
            let (applied, adoptions) = match with_progress(applying, describe, report, context)
                .await
            {
                Ok(applied) => {
                    context.apply_ended(instance, false);
                    applied
                }
                Err(error) => {
                    context.apply_ended(instance, true);
                    // Objects this Instance had that someone took over
                    // are not its to keep healthy any more: say so.
                    if let Some(message) = taken_over(&error, &previous) {
                        report.set(Reason::ObjectsUnhealthy, ConditionStatus::False, message);
                    }
                    // Never healthy while two revisions run side by side.
                    let left = error.left_at_new_revision();
                    if !left.is_empty() {
                        let names: Vec<String> = left.iter().map(ToString::to_string).collect();
                        report.set(
                                Reason::MixedRevisions,
                                ConditionStatus::False,
                                format!(
                                    "{} objects are at Bundle {bundle_name} while the rest run the previous revision: {}",
                                    left.len(),
                                    names.join(", ")
                                ),
                            );
                    }
                    // What was running stays (rolled back if a write failed
                    // part-way); status still lists the old set.
                    let message = match &error {
                        apply::ApplyError::PartlyApplied { .. }
                        | apply::ApplyError::DryRunRefused { .. } => error.to_string(),
                        _ => format!("{error}; the previous objects were left in place"),
                    };
                    let number = revision::failed(
                        &mut report.status,
                        revision_content,
                        rollout_settings,
                        &message,
                        jiff::Timestamp::now(),
                    );
                    let retrying = revision::retrying(
                        &report.status,
                        number,
                        &format!("could not be applied ({error})"),
                        left.len(),
                    );
                    report.set(Reason::Retrying, ConditionStatus::True, retrying);
                    report.set(Reason::InstallFailed, ConditionStatus::False, message);
                    return Ok(Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE)));
                }
            };
            let Some(gate) = gate else {
                break (applied, adoptions);
            };
            let waiting = apply::phase::waiting(&mut kinds, &gate.probed, probes).await;
            if !waiting.is_empty() {
                let held = Held {
                    previous: &previous,
                    applied: &applied,
                    gate,
                    waiting,
                    total: objects.len(),
                };
                let recheck = held.report(report, revision_content, rollout_settings, bundle_name);
                return Ok(Flow::Stop(Action::requeue(recheck)));
            }
            passed += 1;
        };
        readers_for_crds(instance, &applied.objects, context).await;
        let keep: std::collections::BTreeSet<_> = applied.objects.iter().collect();
        context
            .drift
            .pruning(previous.iter().filter(|object| !keep.contains(object)));
        let removed = match apply::prune(&mut kinds, &previous, &applied.objects, claimant).await {
            Ok(removed) => removed,
            Err(error) => {
                // The new objects are written; what the earlier revision
                // alone had is not all gone: Progressing says so, not the
                // earlier revision's success.
                let number = revision::applied(
                    &mut report.status,
                    revision_content,
                    rollout_settings,
                    jiff::Timestamp::now(),
                );
                let retrying = revision::retrying(
                    &report.status,
                    number,
                    &format!(
                        "applied, but deleting what the revision before it alone had failed ({error})"
                    ),
                    applied.objects.len(),
                );
                report.set(Reason::Retrying, ConditionStatus::True, retrying);
                report.set(
                    Reason::InstallFailed,
                    ConditionStatus::False,
                    format!("pivot: {error}"),
                );
                return Ok(Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE)));
            }
        };
        let pivot = report
            .status
            .active_bundle
            .as_ref()
            .filter(|old| *old != bundle_name)
            .cloned();
        // A CRD kept for its custom resources stays listed: still this
        // Instance's, deleted by a later pass or with the Instance.
        let mut listed = applied.objects.clone();
        listed.extend(removed.kept_in_use.iter().map(|(kept, _)| kept.clone()));
        report.status.set_objects(&listed);
        report.status.provides = provides;
        report.status.active_bundle = Some(bundle_name.clone());
        let mut message = format!(
            "applied {} objects of Bundle {bundle_name}",
            applied.objects.len()
        );
        if !adoptions.adopted.is_empty() {
            let names: Vec<String> = adoptions.adopted.iter().map(ToString::to_string).collect();
            let adopted = format!(
                "adopted {} offered to it: {}",
                names.len(),
                names.join(", ")
            );
            message.push_str(&format!("; {adopted}"));
            // An Event of its own: told even if this status write is lost
            // to a conflict (the retry finds the objects its own already).
            publish_adopted(context, instance, &adopted);
        }
        if let Some(old) = &pivot {
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
        if let Some(old) = &pivot {
            // The Installed condition reads the same before and after a
            // pivot, so no status-change Event would tell of it.
            publish_pivot(context, instance, old, bundle_name, removed.done);
        }
        if pivot.is_some() || !installed_here {
            if let bundle_status::Home::Object(bundles) = home {
                mark_active(bundles, bundle, &uid).await?;
            }
            mark_earlier_bundles(instance, context, bundle_name, pivot.as_deref()).await?;
        }
        report.set(Reason::InstallSucceeded, ConditionStatus::True, message);
        if removed.kept_in_use.is_empty() {
            context.drift.applied(&name, fingerprint, began);
        } else {
            // Not done: the next pass (soon) looks again whether the kept
            // CRDs' objects are gone, and deletes the CRDs then.
            kept_for_objects = true;
        }
        // What the class's probes hold among the whole set, once written:
        // not rolled out until they pass.
        let mut unhealthy = applied.unhealthy;
        unhealthy.extend(apply::phase::probe_problems(&mut kinds, &applied.objects, probes).await);
        Some(unhealthy)
    };

    Ok(Flow::Next(Applied {
        fresh_health,
        kept_for_objects,
        warn_only: false,
    }))
}

/// How soon a set held at a gate is looked at again: soon at first, then
/// a quarter of the time it has been held, up to a minute, so that many
/// Instances held for long (a cluster with no room for their Pods) do not
/// write their sets again every few seconds.
fn held_recheck(held_for: std::time::Duration) -> std::time::Duration {
    (held_for / 4).clamp(HELD_RECHECK_FIRST, HELD_RECHECK_MOST)
}
/// How many of the probes holding a phase status lists (the condition's
/// message names them all).
const HELD_BY_LISTED: usize = 20;
const HELD_RECHECK_FIRST: std::time::Duration = std::time::Duration::from_secs(5);
const HELD_RECHECK_MOST: std::time::Duration = std::time::Duration::from_secs(60);

/// An apply held at a gate: the phases before it are written, the probes
/// of `gate` do not pass yet.
struct Held<'a> {
    previous: &'a [pakket_api::ObjectRef],
    applied: &'a apply::Applied,
    gate: &'a apply::phase::Gate,
    waiting: Vec<String>,
    total: usize,
}

impl Held<'_> {
    /// Status while held: every object written so far is listed (an
    /// uninstall now removes them too, and the prune that ends the pivot
    /// later finds them the new revision's); nothing of the earlier
    /// revision is pruned yet; the revision is rolling out, waiting for
    /// the gate (or blocked once past its progress deadline); `Installed`
    /// names the phase reached and the probes that hold the next.
    /// Returns when to look again.
    fn report(
        self,
        report: &mut Report,
        content: revision::Content<'_>,
        settings: revision::Settings,
        bundle: &str,
    ) -> std::time::Duration {
        let mut listed = self.previous.to_vec();
        for object in &self.applied.objects {
            if !listed.contains(object) {
                listed.push(object.clone());
            }
        }
        report.status.set_objects(&listed);
        report.status.progression = Some(pakket_api::PhaseProgression {
            reached: self.gate.after.name().to_owned(),
            next: self.gate.next.name().to_owned(),
            held_by: self.waiting.iter().take(HELD_BY_LISTED).cloned().collect(),
        });
        let waiting = format!(
            "phase {} to start: {}",
            self.gate.next.name(),
            self.waiting.join("; ")
        );
        report.set(
            Reason::Installing,
            ConditionStatus::False,
            format!(
                "applied {} of {} objects of Bundle {bundle}, through phase {}; waiting for {waiting}",
                self.applied.objects.len(),
                self.total,
                self.gate.after.name()
            ),
        );
        let now = jiff::Timestamp::now();
        revision::applied(&mut report.status, content, settings, now);
        let held_for = report
            .status
            .revisions
            .last()
            .and_then(|newest| now.duration_since(newest.applied.0).try_into().ok())
            .unwrap_or_default();
        let recheck = held_recheck(held_for);
        let health = revision::Health::Settling(waiting.clone());
        let Some(progress) = revision::rollout(&mut report.status, &health, settings, now) else {
            return recheck;
        };
        if !super::health::tell_progress(report, &progress) {
            report.set(
                Reason::ObjectsProgressing,
                ConditionStatus::Unknown,
                format!("waiting for {waiting}"),
            );
        }
        recheck
    }
}

/// Runs `work` (an apply), writing `describe()` into the `Installed`
/// condition every [`PROGRESS_EVERY`] while it runs: an apply that ends
/// sooner writes nothing extra, a long one shows how far it has come at a
/// bounded rate.
async fn with_progress<P, T>(
    work: impl std::future::Future<Output = T>,
    describe: impl Fn() -> String,
    report: &mut Report,
    context: &Context<P>,
) -> T {
    let instances: Api<Instance> = Api::all(context.client.clone());
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reporting = true;
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            done = &mut work => return done,
            _ = ticker.tick(), if reporting => {
                reporting = report.write_progress(&instances, describe()).await;
            }
        }
    }
}

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

/// What an apply that found conflicts means for health: objects the
/// Instance installed before that are now someone else's (their records
/// changed: another Instance's UID, or no Pakket field manager).
fn taken_over(error: &apply::ApplyError, previous: &[pakket_api::ObjectRef]) -> Option<String> {
    let apply::ApplyError::Conflicts(conflicts) = error else {
        return None;
    };
    let had: std::collections::BTreeSet<_> = previous.iter().collect();
    let lost: Vec<&str> = conflicts
        .iter()
        .filter(|(object, _)| had.contains(object))
        .map(|(_, why)| why.as_str())
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "{} objects this Instance installed are no longer its own: {}",
            lost.len(),
            lost.join("; ")
        )
    })
}

/// One Event for a pivot, published without holding up the reconcile.
fn publish_pivot<P>(
    context: &Context<P>,
    instance: &Instance,
    old: &str,
    new: &str,
    deleted: usize,
) {
    use kube::runtime::events::{Event, EventType};
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
    use kube::runtime::events::{Event, EventType};
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
fn publish_pivot_in_use<P>(context: &Context<P>, instance: &Instance, words: &str) {
    use kube::runtime::events::{Event, EventType};
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_long_hold_is_looked_at_less_often_up_to_a_minute() {
        assert_eq!(super::held_recheck(Duration::ZERO), Duration::from_secs(5));
        assert_eq!(
            super::held_recheck(Duration::from_secs(80)),
            Duration::from_secs(20)
        );
        assert_eq!(
            super::held_recheck(Duration::from_secs(3600)),
            Duration::from_secs(60)
        );
    }
}
