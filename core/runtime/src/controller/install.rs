//! One reconcile of an Instance that should be installed: class → Bundle →
//! unpack → approval → apply and pivot → health, each step writing the
//! condition it owns.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::Api;
use kube::core::SelectorExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef as StoreKey;
use pakket_api::condition::ConditionStatus;
use pakket_api::ownership::ACTIVE_FOR_LABEL;
use pakket_api::{
    ApprovalState, ApprovedContent, Bundle, Instance, ProvisionerClass, Reason, UnpackPhase,
};

use super::bundle_status::{self, UnpackOutcome};
use super::context::Context;
use super::decision;
use super::pivot_guard;
use super::report::{Report, StatusWrite};
use super::revision;
use super::{DEFAULT_MAX_OBJECT_SIZE, RESYNC, RESYNC_UNHEALTHY};
use crate::apply;
use crate::approval::{Approval, ApprovalRequest};
use crate::class_parameters;
use crate::content::{self, UnpackOptions, Unpacked};
use crate::drift::Fingerprint;
use crate::ownership::Claimant;
use crate::provisioner::{ObjectsError, Provisioner};
use crate::store::Digest;
use crate::trust::{
    self,
    rerender::{self, Render},
};

/// How soon a reconcile whose status write lost a race runs again.
const AFTER_CONFLICT: Duration = Duration::from_millis(500);
/// How soon a missing class or Bundle is looked for again (their watches
/// usually bring the Instance back sooner).
const WAITING_FOR_OBJECT: Duration = Duration::from_secs(30);
/// How soon objects still converging are looked at again.
const RESYNC_SETTLING: Duration = Duration::from_secs(3);
/// How soon a pivot that kept CRDs for their objects looks again whether
/// they are gone.
const RESYNC_KEPT: Duration = Duration::from_secs(10);
/// How soon missing dependencies are looked for again.
const WAITING_FOR_DEPENDENCIES: Duration = Duration::from_secs(15);
/// How often a long apply writes how far it has come.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
/// How soon a failed apply is tried again.
const AFTER_INSTALL_FAILURE: Duration = Duration::from_secs(10);

/// Writes the report and returns `action`, or an early retry if the write
/// lost a race with another change to the Instance.
async fn finish<P>(
    report: Report,
    context: &Context<P>,
    action: Action,
) -> Result<Action, kube::Error> {
    let instances: Api<Instance> = Api::all(context.client.clone());
    Ok(match report.write(&instances, &context.events).await? {
        StatusWrite::Conflict => Action::requeue(AFTER_CONFLICT),
        StatusWrite::Stored | StatusWrite::Unchanged => action,
    })
}

/// Brings `instance` to its desired state, as far as it can go now.
pub async fn install<P: Provisioner>(
    instance: &Instance,
    class: Option<&ProvisionerClass>,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let name = instance.name_any();
    let mut report = Report::new(instance);
    decision::tell(instance, &mut report);
    let Some(class) = class else {
        let message = format!(
            "ProvisionerClass {} does not exist; create it or fix spec.class",
            instance.spec.class
        );
        report.set(Reason::InstallPending, ConditionStatus::False, message);
        return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
    };

    // The Bundle: a Bundle object, or the spec the Instance embeds (whose
    // status the Instance's own status keeps).
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    let bundle_name = &instance.spec.bundle.name;
    let (bundle, home) = match find_bundle(instance, &bundles, context).await? {
        Lookup::Found(bundle) => (*bundle, bundle_status::Home::Object(&bundles)),
        Lookup::Embedded(bundle) => (*bundle, bundle_status::Home::Embedded),
        Lookup::Missing => {
            let message = format!(
                "Bundle {bundle_name} does not exist; create it or embed its spec in spec.bundle.spec"
            );
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
        Lookup::Refused(message) => {
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };

    // Unpack: content into the store by digest; the Bundle's status says how it went.
    let options = match UnpackOptions::from_parameters(
        class.spec.parameters.as_ref(),
        DEFAULT_MAX_OBJECT_SIZE,
    ) {
        Ok(options) => options,
        Err(error) => {
            // The class is wrong, not the Bundle: its watch brings the
            // Instance back once an admin fixes it.
            let message = format!(
                "ProvisionerClass {}: {error}; fix the class",
                class.name_any()
            );
            report.set(Reason::UnpackFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    let options = UnpackOptions {
        class: class.name_any(),
        ..options
    };
    let drift_mode = match crate::drift_mode::from_parameters(class.spec.parameters.as_ref()) {
        Ok(mode) => mode,
        Err(error) => {
            let message = format!(
                "ProvisionerClass {}: {error}; fix the class",
                class.name_any()
            );
            report.set(Reason::InstallFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    let rollout_settings = match revision::Settings::from_parameters(class.spec.parameters.as_ref())
    {
        Ok(settings) => settings,
        Err(error) => {
            let message = format!(
                "ProvisionerClass {}: {error}; fix the class",
                class.name_any()
            );
            report.set(Reason::InstallFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    let unpacked = match already_unpacked(&bundle, context) {
        Some(unpacked) => unpacked,
        None if let Some(why) =
            crate::trust::behalf::refused_read(instance, &bundle, context).await =>
        {
            report.set(
                Reason::UnpackFailed,
                ConditionStatus::False,
                format!("Bundle {bundle_name}: {why}"),
            );
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
        None => match async {
            // Bounded: each unpack holds a download and an extraction, or
            // the ConfigMaps it reads.
            let _permit = if content::from_config_maps(&bundle.spec) {
                let mounts = bundle.spec.volume_mounts.len() as u32;
                let permits = mounts.clamp(1, super::context::CONFIG_MAP_READS);
                context.config_map_reads.acquire_many(permits).await
            } else {
                context.unpacks.acquire().await
            };
            content::unpack(
                &context.client,
                &bundle.spec,
                &context.store,
                &context.images,
                &options,
            )
            .await
        }
        .await
        {
            Ok(unpacked) => unpacked,
            Err(error) => {
                let message = format!("Bundle {bundle_name}: {error}");
                let outcome = UnpackOutcome {
                    phase: UnpackPhase::Failed,
                    unpacked: None,
                    objects: &[],
                    grants: Vec::new(),
                    properties: Vec::new(),
                    reason: Reason::UnpackFailed,
                    message: &message,
                };
                bundle_status::write(home, &bundle, outcome, &mut report.status).await?;
                report.set(Reason::UnpackFailed, ConditionStatus::False, message);
                let delay = context.unpack_failed(instance);
                tracing::info!(instance = %name, %error, retry_in = ?delay, "unpack failed");
                return finish(report, context, Action::requeue(delay)).await;
            }
        },
    };
    // Kept from the store's collection until the status written below
    // pins it (and the watch caches have seen that).
    let _held = context.in_flight.hold(&unpacked.digest);
    // A Bundle's pin never moves: a source that now serves other content
    // is an error on the Bundle, not a new pin (and not new content under
    // an old approval).
    if let Some(message) = pin_moved(&bundle, &unpacked) {
        report.set(Reason::UnpackFailed, ConditionStatus::False, message);
        return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
    }
    context.unpack_succeeded(instance);
    let needs_facts = context.provisioner.needs_cluster_facts();
    let mut cluster = if needs_facts {
        context.cluster_facts_for(instance).await
    } else {
        crate::provisioner::ClusterFacts::default()
    };
    let render = |cluster: &crate::provisioner::ClusterFacts| {
        let request = crate::provisioner::ObjectsRequest {
            content: &unpacked.dir,
            max_object_size: options.limits.max_file_size,
            instance,
            cluster,
            class_parameters: class.spec.parameters.as_ref(),
        };
        // Pakket's own kinds in the content are the trust kernel's to
        // judge, before anything else sees the objects.
        context.provisioner.objects(&request).and_then(|objects| {
            crate::trust::children::judged_children(
                objects,
                context.provisioner.pakket_kinds(),
                instance,
                context.record_key.as_ref(),
                context.provisioner.id(),
            )
            .map_err(ObjectsError::Content)
        })
    };
    let mut rendered = render(&cluster);
    // A render that failed on cached facts (a kind whose CRD another
    // Instance installed a moment ago) is tried once more on fresh ones.
    if rendered.is_err() && needs_facts && context.rediscover_soon().await {
        cluster = context.cluster_facts_for(instance).await;
        rendered = render(&cluster);
    }
    let request = crate::provisioner::ObjectsRequest {
        content: &unpacked.dir,
        max_object_size: options.limits.max_file_size,
        instance,
        cluster: &cluster,
        class_parameters: class.spec.parameters.as_ref(),
    };
    let pinned = Pinned {
        home,
        bundle: &bundle,
        unpacked: &unpacked,
    };
    let objects = match rendered {
        Ok(objects) => {
            context.rendered(instance);
            objects
        }
        Err(ObjectsError::Config { field, problem }) => {
            // The content is fine (and pinned); this Instance's settings
            // are not, and the objects depend on them.
            pinned
                .without_objects(
                    "its objects depend on the Instance's spec.config",
                    Vec::new(),
                    &mut report,
                )
                .await?;
            let message = format!(
                "{field}: {problem}; nothing is applied until the Instance's spec.config is fixed"
            );
            report.set(Reason::InvalidConfig, ConditionStatus::False, message);
            return finish(report, context, Action::await_change()).await;
        }
        Err(ObjectsError::DependenciesMissing(explanation)) => {
            // The content is fine (and pinned); what it needs is not
            // installed. Another Instance installing it brings this one
            // back at the next look.
            pinned
                .without_objects(
                    "it needs what is not installed",
                    pinned.properties(context, &request),
                    &mut report,
                )
                .await?;
            report.set(
                Reason::DependenciesMissing,
                ConditionStatus::False,
                format!("{explanation}; nothing is applied until what it needs is installed"),
            );
            return finish(report, context, Action::requeue(WAITING_FOR_DEPENDENCIES)).await;
        }
        Err(ObjectsError::Content(error))
            if context.first_render_failure(instance, unpacked.digest.as_str()) =>
        {
            // Content in the store can be damaged (a disk, a crash, a
            // hand in the pod): before the content is blamed, what the
            // store held is dropped and fetched once more.
            let held = store_entry_state(&unpacked.dir);
            tracing::warn!(instance = %name, bundle = %bundle_name, %error, store = %held, "rendering the stored content failed; fetching it again before blaming the content");
            if let Err(error) = context.store.evict(&unpacked.digest) {
                tracing::warn!(%error, "dropping the stored content");
            }
            report.set(
                Reason::Unpacking,
                ConditionStatus::Unknown,
                format!(
                    "Bundle {bundle_name}: the stored content of {} could not be rendered ({error}); fetching it again once before the content is blamed",
                    unpacked.digest.as_str()
                ),
            );
            return finish(report, context, Action::requeue(AFTER_CONFLICT)).await;
        }
        Err(ObjectsError::Content(error)) => {
            // Fetched and unpacked fine: the content itself is what the
            // provisioner cannot turn into objects. Said as a render
            // failure, so nobody is sent to check a registry.
            let message = format!(
                "Bundle {bundle_name}: {error}; nothing is applied: the content was fetched and unpacked, but {} could not make objects of it, so the content needs fixing (new content is a new Bundle)",
                context.provisioner.id()
            );
            tracing::warn!(instance = %name, bundle = %bundle_name, %error, "rendering the content failed");
            let outcome = UnpackOutcome {
                phase: UnpackPhase::Failed,
                unpacked: Some(&unpacked),
                objects: &[],
                grants: Vec::new(),
                properties: Vec::new(),
                reason: Reason::UnpackFailed,
                message: &message,
            };
            bundle_status::write(home, &bundle, outcome, &mut report.status).await?;
            report.set(
                Reason::UnpackSucceeded,
                ConditionStatus::True,
                format!(
                    "content unpacked at {}; its objects could not be rendered (see Installed)",
                    unpacked.digest.as_str()
                ),
            );
            report.set(Reason::RenderFailed, ConditionStatus::False, message);
            return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
        }
    };
    if objects.len() as u64 > options.max_objects {
        let message = format!(
            "Bundle {bundle_name}: the content holds {} objects and ProvisionerClass {} allows at most {} \
             in one Bundle (its parameter maxObjects); nothing is applied. Split the content into \
             several Bundles, each installed by its own Instance, or raise maxObjects in the class",
            objects.len(),
            class.name_any(),
            options.max_objects
        );
        let outcome = UnpackOutcome {
            phase: UnpackPhase::Failed,
            unpacked: Some(&unpacked),
            objects: &[],
            grants: Vec::new(),
            properties: Vec::new(),
            reason: Reason::UnpackFailed,
            message: &message,
        };
        bundle_status::write(home, &bundle, outcome, &mut report.status).await?;
        report.set(Reason::UnpackFailed, ConditionStatus::False, message);
        return finish(report, context, Action::requeue(WAITING_FOR_OBJECT)).await;
    }
    let references: Vec<_> = objects.iter().map(apply::reference_of).collect();
    let message = format!(
        "unpacked {} objects from {}",
        objects.len(),
        unpacked.reference
    );
    let properties = pinned.properties(context, &request);
    let provides = crate::inventory::summary(&objects, &properties);
    let outcome = UnpackOutcome {
        phase: UnpackPhase::Done,
        unpacked: Some(&unpacked),
        objects: &references,
        grants: crate::rbac::grants(&objects),
        properties,
        reason: Reason::UnpackSucceeded,
        message: &message,
    };
    bundle_status::write(home, &bundle, outcome, &mut report.status).await?;
    report.set(
        Reason::UnpackSucceeded,
        ConditionStatus::True,
        format!("Bundle {bundle_name}: {message}"),
    );

    // Approval: the class's policy, or a user with the `approve` verb.
    let content = ApprovedContent {
        bundle: bundle_name.clone(),
        digest: unpacked.digest.as_str().to_owned(),
        approved_by: String::new(),
        rendered: Some(crate::trust::rerender::rendered_digest(&objects)),
    };
    if let Some((waiting, retry)) = approve(
        instance,
        class,
        Proposed {
            objects: &objects,
            request: &request,
        },
        &content,
        context,
        &mut report,
    )
    .await
    {
        report.set(Reason::InstallPending, ConditionStatus::False, waiting);
        let next = retry.map_or_else(Action::await_change, Action::requeue);
        return finish(report, context, next).await;
    }

    // The revision this content is: what was applied, under whose approval.
    let approved_by = report
        .status
        .approval
        .as_ref()
        .map(|approval| approval.approved_by.clone())
        .unwrap_or_default();
    let revision_content = revision::Content {
        bundle: bundle_name,
        bundle_spec: instance.spec.bundle.spec.as_ref(),
        digest: &content.digest,
        rendered: content.rendered.as_deref(),
        approved_by: &approved_by,
    };

    // Apply the new set, then delete what the old set had and this one lacks.
    let fingerprint = Fingerprint {
        generation: instance.metadata.generation,
        bundle: bundle_name.clone(),
        digest: unpacked.digest.as_str().to_owned(),
    };
    let installed_here = report.installed(bundle_name) && report.observed_current();
    // Under drift Warn, what is installed is not written again until new
    // content or a new generation asks for it.
    let warn_only = installed_here && drift_mode == crate::drift_mode::DriftMode::Warn;
    let mut kept_for_objects = false;
    let fresh_health = if !warn_only
        && (!installed_here || context.drift.needs_apply(&name, &fingerprint, RESYNC))
    {
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
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
            }
        };
        // A pivot does not take the CRDs the new content drops from their
        // users. (Once on this Bundle, the drop was accepted: CRDs kept for
        // their objects are the prune's to delete later.)
        let pivoting = report
            .status
            .active_bundle
            .as_ref()
            .is_some_and(|active| active != bundle_name);
        let guard = if pivoting {
            pivot_guard::judge(&context.client, instance, bundle_name, &previous, &objects).await
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
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
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
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
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
            running_revision(instance, &request, context)
        };
        let restore = running
            .as_ref()
            .map(|(bundle, objects)| apply::Restore { bundle, objects });
        let began = std::time::Instant::now();
        let progress = apply::Progress::default();
        let applying = apply::apply_all(
            &mut kinds,
            &objects,
            claimant,
            bundle_name,
            &progress,
            apply::Settings {
                crd_upgrade_safety: options.crd_upgrade_safety,
                // Created without reading first, unless an earlier try
                // failed: a conflict would then create and remove objects
                // again on every retry (and a reconcile that read the
                // Instance before the failure was written would do it at
                // once, while the failure is already visible).
                first_install: previous.is_empty()
                    && !report.failed_before()
                    && !context.apply_failed_before(instance),
                content_changed: !installed_here,
            },
            restore,
        );
        let describe = || progress.describe(objects.len(), bundle_name);
        let (applied, adoptions) = match with_progress(applying, describe, &mut report, context)
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
                let retrying = revision::retrying(&report.status, number, &error.to_string());
                report.set(Reason::Retrying, ConditionStatus::True, retrying);
                report.set(Reason::InstallFailed, ConditionStatus::False, message);
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
            }
        };
        readers_for_crds(instance, &applied.objects, context).await;
        let keep: std::collections::BTreeSet<_> = applied.objects.iter().collect();
        context
            .drift
            .pruning(previous.iter().filter(|object| !keep.contains(object)));
        let removed = match apply::prune(&mut kinds, &previous, &applied.objects, claimant).await {
            Ok(removed) => removed,
            Err(error) => {
                report.set(
                    Reason::InstallFailed,
                    ConditionStatus::False,
                    format!("pivot: {error}"),
                );
                return finish(report, context, Action::requeue(AFTER_INSTALL_FAILURE)).await;
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
                mark_active(bundles, &bundle, &uid).await?;
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
        Some(applied.unhealthy)
    } else {
        None
    };

    report_drift(&mut report, &context.drift.drifted(&name), warn_only);

    // Health: from the apply's answers when it just ran, else read afresh.
    let installed = report.status.objects.clone();
    let count = report.status.object_count.unwrap_or(installed.len() as u64);
    let every_one = fresh_health.is_some() || report.status.lists_every_object();
    let problems = match fresh_health {
        Some(problems) => problems,
        None => apply::unhealthy(&mut context.kinds.clone(), &installed).await,
    };
    let (settling, failing): (Vec<_>, Vec<_>) =
        problems.into_iter().partition(|problem| problem.settling);
    let texts = |problems: &[apply::HealthProblem]| {
        problems
            .iter()
            .map(|problem| problem.text.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    // The revision these objects are, and how its rollout stands.
    let progress = if report.installed(bundle_name) {
        let now = jiff::Timestamp::now();
        revision::applied(&mut report.status, revision_content, rollout_settings, now);
        let health = if !failing.is_empty() {
            let mut all = failing.clone();
            all.extend(settling.iter().cloned());
            if failing.iter().any(|problem| problem.past_deadline) {
                revision::Health::PastDeadline(texts(&all))
            } else {
                revision::Health::Failing(texts(&all))
            }
        } else if !settling.is_empty() {
            revision::Health::Settling(texts(&settling))
        } else {
            revision::Health::Healthy
        };
        revision::rollout(&mut report.status, &health, rollout_settings, now)
    } else {
        None
    };
    if let Some(progress) = &progress {
        let status = if progress.reason == Reason::RollingOut {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        report.set(progress.reason, status, progress.message.clone());
    }
    let next = if let Some(progress) = progress.filter(|progress| progress.past_deadline) {
        report.set(
            Reason::ProgressDeadlineExceeded,
            ConditionStatus::False,
            progress.message,
        );
        RESYNC_UNHEALTHY
    } else if failing.is_empty() && settling.is_empty() {
        let message = if every_one {
            format!("all {count} objects are healthy")
        } else {
            format!(
                "the {} objects listed in status (of {count}) are healthy; the others were healthy when last applied",
                installed.len()
            )
        };
        report.set(Reason::ObjectsHealthy, ConditionStatus::True, message);
        RESYNC
    } else if failing.is_empty() {
        // Converging is not failing: no Warning, and a closer look soon.
        report.set(
            Reason::ObjectsProgressing,
            ConditionStatus::Unknown,
            format!("waiting for {}", texts(&settling)),
        );
        RESYNC_SETTLING
    } else {
        let mut all = failing;
        all.extend(settling);
        report.set(
            Reason::ObjectsUnhealthy,
            ConditionStatus::False,
            texts(&all),
        );
        RESYNC_UNHEALTHY
    };
    let next = if kept_for_objects {
        next.min(RESYNC_KEPT)
    } else {
        next
    };
    finish(report, context, Action::requeue(next)).await
}

/// The `Drifted` condition: under drift Warn, the objects someone else
/// changed or deleted (left as they are); once they are written again, or
/// under Repair, that nothing is left changed. Absent for an Instance that
/// never drifted under Warn.
fn report_drift(report: &mut Report, drifted: &[(pakket_api::ObjectRef, bool)], warn_only: bool) {
    const NAMED: usize = 10;
    if warn_only && !drifted.is_empty() {
        let mut names: Vec<String> = drifted
            .iter()
            .take(NAMED)
            .map(|(object, deleted)| {
                format!("{object}{}", if *deleted { " (deleted)" } else { "" })
            })
            .collect();
        if drifted.len() > NAMED {
            names.push(format!("and {} more", drifted.len() - NAMED));
        }
        report.set(
            Reason::ObjectsDrifted,
            ConditionStatus::True,
            format!(
                "{} objects were changed by someone else since Pakket wrote them, and are left as they are (the class's drift mode is Warn): {}; new content or a new generation of the Instance writes them again, or set the class's drift mode to Repair",
                drifted.len(),
                names.join(", ")
            ),
        );
    } else if pakket_api::condition::find(
        &report.status.conditions,
        pakket_api::ConditionType::Drifted,
    )
    .is_some()
    {
        report.set(
            Reason::NotDrifted,
            ConditionStatus::False,
            if warn_only {
                "no installed object is changed from what Pakket wrote"
            } else {
                "the objects are as Pakket wrote them (changes by others are put back)"
            },
        );
    }
}

/// Content unpacked and pinned whose objects are not rendered (the
/// Instance's config is wrong, or what it needs is not installed).
struct Pinned<'a> {
    home: bundle_status::Home<'a>,
    bundle: &'a Bundle,
    unpacked: &'a Unpacked,
}

impl Pinned<'_> {
    /// What the content provides: as the Bundle recorded it for this very
    /// content, else as the provisioner reads it (which reads the content
    /// again, so not on every reconcile).
    fn properties<P: Provisioner>(
        &self,
        context: &Context<P>,
        request: &crate::provisioner::ObjectsRequest<'_>,
    ) -> Vec<pakket_api::BundleProperty> {
        // Empty is not reused: a config error records none, and a provisioner
        // that says nothing is asked cheaply.
        let recorded = self.bundle.status.as_ref().filter(|status| {
            !status.properties.is_empty()
                && status.unpacked == UnpackPhase::Done
                && status.observed_generation == self.bundle.metadata.generation
                && status.source.as_ref().and_then(|s| s.digest.as_deref())
                    == Some(self.unpacked.digest.as_str())
        });
        match recorded {
            Some(status) => status.properties.clone(),
            None => context.provisioner.properties(request),
        }
    }

    /// Records the pin on the Bundle (Done, no objects) and `Unpacked` on
    /// the Instance, both saying `why` nothing was rendered.
    async fn without_objects(
        &self,
        why: &str,
        properties: Vec<pakket_api::BundleProperty>,
        report: &mut Report,
    ) -> Result<(), kube::Error> {
        let message = format!("unpacked from {}; {why}", self.unpacked.reference);
        let outcome = UnpackOutcome {
            phase: UnpackPhase::Done,
            unpacked: Some(self.unpacked),
            objects: &[],
            grants: Vec::new(),
            properties,
            reason: Reason::UnpackSucceeded,
            message: &message,
        };
        bundle_status::write(self.home, self.bundle, outcome, &mut report.status).await?;
        report.set(
            Reason::UnpackSucceeded,
            ConditionStatus::True,
            format!("Bundle {}: {message}", self.bundle.name_any()),
        );
        Ok(())
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
async fn previous_objects(
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

/// What looking for the Instance's Bundle found.
enum Lookup {
    /// The Bundle object, and this Instance may install it.
    Found(Box<Bundle>),
    /// The Bundle the Instance embeds (no object: see
    /// [`Instance::embedded_bundle`]).
    Embedded(Box<Bundle>),
    /// No such Bundle, and no embedded spec.
    Missing,
    /// A Bundle this Instance may not install; the text says why.
    Refused(String),
}

/// The Instance's Bundle: the one it embeds, else the Bundle object it
/// names (from the watch cache, else from the apiserver).
///
/// Bundles are claimed so that one user's Instance never installs content
/// another user's Instance put there: embedded content exists only in its
/// Instance, and an embedded name that a Bundle object already has is
/// refused, so a name means one content to everyone who reads it. A Bundle
/// object nobody embeds (created on its own) may be named by any Instance
/// whose requester could `use` its class. A Bundle object an earlier
/// Pakket made from this Instance's embedded spec (its controller
/// ownerReference) is left to be deleted with the Instance.
async fn find_bundle<P>(
    instance: &Instance,
    bundles: &Api<Bundle>,
    context: &Context<P>,
) -> Result<Lookup, kube::Error> {
    let name = &instance.spec.bundle.name;
    let cached = context.bundles.get(&StoreKey::new(name));
    if let Some(embedded) = instance.embedded_bundle() {
        return Ok(match cached.filter(|object| !made_from(instance, object)) {
            Some(_) => Lookup::Refused(format!(
                "Bundle {name} already exists and was not created from this Instance's embedded spec; \
                 choose another spec.bundle.name, or drop spec.bundle.spec to install the existing Bundle"
            )),
            None => Lookup::Embedded(Box::new(embedded)),
        });
    }
    let found = match cached {
        Some(bundle) => Some((*bundle).clone()),
        None => bundles.get_opt(name).await?,
    };
    let Some(bundle) = found else {
        return Ok(Lookup::Missing);
    };
    Ok(match claim(instance, &bundle) {
        Ok(()) => Lookup::Found(Box::new(bundle)),
        Err(why) => Lookup::Refused(why),
    })
}

/// Whether `bundle` was made from `instance`'s embedded spec (by a Pakket
/// that still made objects for embedded Bundles).
fn made_from(instance: &Instance, bundle: &Bundle) -> bool {
    let uid = instance.uid().unwrap_or_default();
    bundle
        .owner_references()
        .iter()
        .any(|owner| owner.kind == "Instance" && owner.controller == Some(true) && owner.uid == uid)
}

/// Whether `instance` (which names a Bundle object) may install `bundle`
/// (see [`find_bundle`]).
fn claim(instance: &Instance, bundle: &Bundle) -> Result<(), String> {
    let name = bundle.name_any();
    let owner = bundle
        .owner_references()
        .iter()
        .find(|owner| owner.kind == "Instance" && owner.controller == Some(true));
    if let Some(owner) = owner
        && owner.uid != instance.uid().unwrap_or_default()
    {
        return Err(format!(
            "Bundle {name} belongs to Instance {} (it was created from that Instance's embedded spec), \
             so this Instance may not install it; name a Bundle of your own in spec.bundle.name",
            owner.name
        ));
    }
    Ok(())
}

/// Why the content just unpacked cannot be the Bundle's: its status pins
/// other content. `None` when there is no pin yet, or it matches.
fn pin_moved(bundle: &Bundle, unpacked: &Unpacked) -> Option<String> {
    let pinned = bundle.status.as_ref()?.source.as_ref()?;
    let digest = pinned.digest.as_deref()?;
    (digest != unpacked.digest.as_str()).then(|| {
        format!(
            "Bundle {}: the content of {} changed at its source: it was pinned at {digest} and \
             now is {}; a Bundle's content never changes, so nothing new is installed: create a \
             new Bundle (and approve it) for the new content",
            bundle.name_any(),
            unpacked.reference,
            unpacked.digest.as_str()
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

/// What the store holds at `dir`, in words for a log line: a render that
/// failed on missing files says whether the entry was there at all.
fn store_entry_state(dir: &std::path::Path) -> String {
    match std::fs::read_dir(dir) {
        Ok(entries) => format!("{} holds {} entries", dir.display(), entries.count()),
        Err(error) => format!("{} cannot be listed ({error})", dir.display()),
    }
}

/// The Bundle's content, if its status pins a digest the store holds: then
/// nothing is fetched at all. A Bundle is immutable, so what it unpacked to
/// once is what it unpacks to; this also keeps a moved tag from changing an
/// installed Bundle's content.
fn already_unpacked<P>(bundle: &Bundle, context: &Context<P>) -> Option<Unpacked> {
    let status = bundle.status.as_ref()?;
    if status.unpacked != UnpackPhase::Done
        || status.observed_generation != bundle.metadata.generation
    {
        return None;
    }
    let source = status.source.as_ref()?;
    let digest = Digest::parse(source.digest.as_deref()?).ok()?;
    let dir = context.store.get(&digest)?;
    Some(Unpacked {
        reference: source.reference.clone(),
        digest,
        dir,
        commit: source.commit.clone(),
    })
}

/// Decides approval of exactly `content` (this Bundle at this digest).
/// `None` when it may be installed; otherwise why it waits and when to ask
/// again (the `Approved` condition and `status.approval` are set
/// accordingly).
///
/// What decides is [`ApprovalState`], the one definition the admission
/// webhook guards: a person's approval holds for the content it names and
/// for no other; a denial stands until someone with `approve` changes it.
/// `AllowAll` approves any content; other policies are the provisioner's
/// ([`Provisioner::approve`]), and what a policy approved holds for that
/// content while the class keeps that policy.
/// What an approval decides on: the objects the new content would install,
/// and how they were made (to render the running content the same way,
/// see [`running_objects`], only when a policy asks for it).
#[derive(Clone, Copy)]
struct Proposed<'a> {
    objects: &'a [serde_json::Value],
    request: &'a crate::provisioner::ObjectsRequest<'a>,
}

/// The objects of the content `instance` runs now, rendered again from
/// the store the way they were installed, for policies that compare new
/// content with it (`Android`). `None` for a first install, when the class
/// asks for no such policy, or when the content is no longer stored (the
/// policy then asks a person, as for a first install). What runs is the
/// content last approved, when it is the active Bundle's: that record is
/// the runtime's own (the webhook lets no requester write it).
fn running_objects<P: Provisioner>(
    instance: &Instance,
    request: &crate::provisioner::ObjectsRequest<'_>,
    context: &Context<P>,
) -> Option<Vec<serde_json::Value>> {
    let compares = matches!(
        class_parameters::string(request.class_parameters, "approval"),
        Ok(Some("Android"))
    );
    if !compares {
        return None;
    }
    running_revision(instance, request, context).map(|(_, objects)| objects)
}

/// The Bundle `instance` runs now and its objects, rendered again from the
/// store the way they were installed (see [`running_objects`]); `None`
/// when nothing is approved for the active Bundle or its content is no
/// longer stored.
fn running_revision<P: Provisioner>(
    instance: &Instance,
    request: &crate::provisioner::ObjectsRequest<'_>,
    context: &Context<P>,
) -> Option<(String, Vec<serde_json::Value>)> {
    let status = instance.status.as_ref()?;
    let approved = status.approval.as_ref()?;
    if status.active_bundle.as_deref() != Some(approved.bundle.as_str()) {
        return None;
    }
    let dir = context.store.get(&Digest::parse(&approved.digest).ok()?)?;
    let running = crate::provisioner::ObjectsRequest {
        content: &dir,
        ..*request
    };
    let objects = context.provisioner.objects(&running).ok()?;
    Some((approved.bundle.clone(), objects))
}

async fn approve<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Option<(String, Option<Duration>)> {
    let name = instance.name_any();
    let class_name = class.name_any();
    let state = ApprovalState::of(instance);
    let waiting = "nothing is applied before approval".to_owned();
    // A person's decision comes first, whatever the class says.
    if state.is_denied() {
        let message = report
            .approval()
            .map(|c| c.message.clone())
            .unwrap_or_default();
        return Some((
            format!(
                "approval was denied ({message}); nothing is applied. An approver can run `kubectl instance approve {name}`"
            ),
            None,
        ));
    }
    // The approved content, rendered to other objects than were approved.
    match rerender::compare(state.content.as_ref(), content) {
        Render::Changed => {
            if let Some(waiting) =
                rerendered(instance, class, proposed, &state, content, context, report).await
            {
                return Some(waiting);
            }
        }
        Render::Unrecorded if state.by_person() || state.by_policy() => {
            // Approved before the render was recorded (by a person, with
            // `kubectl instance approve`): what installs under it now is
            // what it covers from here on.
            if let Some(approval) = report.status.approval.as_mut() {
                approval.rendered = content.rendered.clone();
            }
        }
        Render::Unrecorded | Render::Same | Render::OtherContent => {}
    }
    if state.by_person() && state.covers(&content.bundle, &content.digest) {
        return None;
    }
    // An `approval` that is not a string must not fall back to AllowAll:
    // a class meant to be gated would install everything.
    let policy = match class_parameters::string(class.spec.parameters.as_ref(), "approval") {
        Ok(policy) => policy.unwrap_or("AllowAll"),
        Err(error) => {
            set_pending(
                report,
                format!(
                    "ProvisionerClass {class_name}: {error}; fix the class, or run `kubectl instance approve {name}`"
                ),
            );
            return Some((waiting, None));
        }
    };
    let by_policy = format!("policy {policy}");
    // A policy's approval holds for the content it approved, while the
    // class keeps that policy.
    if state.by_policy()
        && state.covers(&content.bundle, &content.digest)
        && state
            .content
            .as_ref()
            .is_some_and(|approved| approved.approved_by == by_policy)
    {
        return None;
    }
    // With a record key (every deployment has one), a policy approves only
    // content someone asked for through Pakket's webhooks: a record the
    // webhook sealed for this very spec. Without it (webhooks removed, or
    // bypassed while absent), only a person approves.
    if let Some(key) = &context.record_key
        && let Err(error) = pakket_api::requester(instance, Some(key))
    {
        set_pending(
            report,
            format!(
                "ProvisionerClass {class_name} (approval: {policy}) approves only Instances whose requester Pakket's admission webhook recorded, and {error}; a person must approve: run `kubectl instance approve {name}`"
            ),
        );
        return Some((waiting, None));
    }
    let approved = |report: &mut Report, message: String| {
        report.set(Reason::ApprovedByPolicy, ConditionStatus::True, message);
        report.status.approval = Some(ApprovedContent {
            approved_by: by_policy.clone(),
            ..content.clone()
        });
    };
    if policy == "AllowAll" {
        approved(
            report,
            format!("ProvisionerClass {class_name} approves every Instance (approval: AllowAll)"),
        );
        return None;
    }
    // Rendered here, past the early answers: an approval that already
    // holds costs no second render on every reconcile. For the approved
    // content itself (rendered otherwise now, see `rerendered`), what runs
    // is read back from the cluster: the old content rendered again by
    // this provisioner would be the new render.
    let same_content = state.content.as_ref().is_some_and(|approved| {
        approved.bundle == content.bundle && approved.digest == content.digest
    });
    let running = if same_content && policy == "Android" {
        live_running(instance, context).await.ok()
    } else {
        running_objects(instance, proposed.request, context)
    };
    let request = ApprovalRequest {
        client: &context.client,
        instance,
        class,
        policy,
        objects: proposed.objects,
        running: running.as_deref(),
        kinds: context.kinds.clone(),
        record_key: context.record_key.as_ref(),
    };
    let (message, retry) = match context.provisioner.approve(&request).await {
        Approval::Approved(message) => {
            approved(report, message);
            return None;
        }
        Approval::Pending { message, retry } => (message, retry),
    };
    // An earlier approval of other content: say why it is asked again
    // (the record stays until a new approval replaces it, so every later
    // pass says the same).
    let message = match &state.content {
        Some(earlier) if earlier.bundle != content.bundle || earlier.digest != content.digest => {
            format!(
                "{message}; the last approval covered Bundle {} at {}, but the content to install is Bundle {} at {}",
                earlier.bundle, earlier.digest, content.bundle, content.digest
            )
        }
        _ => message,
    };
    set_pending(report, message);
    Some((waiting, retry))
}

/// Sets `ApprovalPending`, keeping the condition as it is when it already
/// says the same (so its lastTransitionTime and Event are not renewed).
/// The approved content renders to other objects now (an upgraded
/// provisioner, a changed class parameter). Under `AllowAll`, or when the
/// new objects ask for no right beyond what runs on the cluster (read back,
/// not rendered again: a new render of the old content is the new render),
/// the approval carries over to the new render and an Event says so
/// (`None`). Otherwise it waits for a person, naming the new rights; a
/// person's `kubectl instance approve` then covers the new render.
async fn rerendered<P: Provisioner>(
    instance: &Instance,
    class: &ProvisionerClass,
    proposed: Proposed<'_>,
    state: &ApprovalState,
    content: &ApprovedContent,
    context: &Context<P>,
    report: &mut Report,
) -> Option<(String, Option<Duration>)> {
    use kube::runtime::events::{Event, EventType};
    let name = instance.name_any();
    let approved_by = state
        .content
        .as_ref()
        .map(|approved| approved.approved_by.clone())
        .unwrap_or_default();
    let allows_all = matches!(
        class_parameters::string(class.spec.parameters.as_ref(), "approval"),
        Ok(None | Some("AllowAll"))
    );
    let beyond = if allows_all {
        Ok(Vec::new())
    } else {
        match live_running(instance, context).await {
            Ok(live) => trust::approval::rights_beyond(&context.client, proposed.objects, &live)
                .await
                .map_err(|error| apply::api_message(&error)),
            Err(error) => Err(error.to_string()),
        }
    };
    match beyond {
        Ok(rights) if rights.is_empty() => {
            report.status.approval = Some(ApprovedContent {
                approved_by,
                ..content.clone()
            });
            context.events.publish(
                instance,
                Event {
                    type_: EventType::Normal,
                    reason: "Rerendered".into(),
                    note: Some(format!(
                        "Bundle {} at {} renders to other objects than were approved ({}); they ask for no right beyond what runs, so the approval carries over",
                        content.bundle,
                        content.digest,
                        content.rendered.as_deref().unwrap_or_default()
                    )),
                    action: "Approve".into(),
                    secondary: None,
                },
            );
            None
        }
        Ok(rights) => {
            let shown: Vec<&str> = rights.iter().take(8).map(String::as_str).collect();
            let message = format!(
                "Bundle {} at {} was approved ({approved_by}), but it renders to other objects now (a new provisioner version?), and they ask for {} right(s) the running objects do not hold: {}{}; a person decides: review with `kubectl instance describe {name}`, then run `kubectl instance approve {name}`",
                content.bundle,
                content.digest,
                rights.len(),
                shown.join("; "),
                if rights.len() > shown.len() {
                    "; ..."
                } else {
                    ""
                }
            );
            context.events.publish(
                instance,
                Event {
                    type_: EventType::Warning,
                    reason: "RerenderedWithNewRights".into(),
                    note: Some(message.chars().take(1000).collect()),
                    action: "Approve".into(),
                    secondary: None,
                },
            );
            set_pending(report, message);
            // What waits for a person is this render: a person's approval
            // of the content from now on covers it (and the class's policy,
            // asked again, compares it with what runs).
            if let Some(approval) = report.status.approval.as_mut() {
                approval.rendered = content.rendered.clone();
            }
            Some(("nothing is applied before approval".to_owned(), None))
        }
        Err(error) => {
            set_pending(
                report,
                format!(
                    "Bundle {} at {} renders to other objects than were approved, and what runs could not be read to compare them ({error}); trying again, or a person approves: `kubectl instance approve {name}`",
                    content.bundle, content.digest
                ),
            );
            Some((
                "nothing is applied before approval".to_owned(),
                Some(AFTER_INSTALL_FAILURE),
            ))
        }
    }
}

/// What `instance` runs now, read back from the cluster: the objects it
/// installed ([`previous_objects`]) as they are.
async fn live_running<P>(
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

fn set_pending(report: &mut Report, message: String) {
    let same = report
        .approval()
        .is_some_and(|c| c.reason == Reason::ApprovalPending.as_str() && c.message == message);
    if !same {
        report.set(Reason::ApprovalPending, ConditionStatus::False, message);
    }
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
