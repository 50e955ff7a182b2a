//! One reconcile of an Instance that should be installed, as its steps,
//! each a module of its own that writes the condition it owns:
//! [`class`] (the class and its parameters) → [`bundle`] (a Bundle object
//! or the embedded spec) → [`unpack`] (content into the store by digest,
//! and its pin) → [`render`] (the provisioner's objects, judged by the
//! trust kernel) → [`approval`] (policy or person, for exactly this
//! content) → [`pivot`] (dry run of the whole set, apply, rollback of a
//! write that fails part-way, prune of what the earlier revision alone
//! had) → [`health`] (the objects, drift, and the revision's rollout).
//! A step that cannot go on says why in the report and ends the reconcile
//! with when to look again ([`Flow::Stop`]).

mod act;
mod approval;
mod bundle;
mod class;
mod health;
mod installed;
mod plan;
mod policy;
mod render;
mod rollback;
mod unpack;

use std::time::Duration;

use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{ApprovedContent, Bundle, Instance, ProvisionerClass, Reason};

use super::context::Context;
use super::decision;
use super::report::{Report, StatusWrite};
use super::revision;
use super::{DEFAULT_MAX_OBJECT_SIZE, RESYNC_UNHEALTHY, reapply_after};
use crate::provisioner::Provisioner;

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

/// What a step leaves: the next step's input, or the end of this reconcile
/// and when to look again (the step wrote why in the report).
enum Flow<T> {
    Next(T),
    Stop(Action),
}

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
    let mut report = Report::new(instance);
    decision::tell(instance, &mut report);
    // Each step goes on, or ends the reconcile with the report as it is.
    macro_rules! next {
        ($step:expr) => {
            match $step {
                Flow::Next(value) => value,
                Flow::Stop(action) => return finish(report, context, action).await,
            }
        };
    }
    let mut settings = next!(class::settings(instance, class, &mut report));
    let class = settings.class;
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    let requester = instance;
    // Under an automatic rollback the earlier revision's content, from the
    // store, stands in for the spec's; else the spec's Bundle.
    let rollback = rollback_in_force(instance, &bundles, context, &mut report).await;
    let (instance, bundle, home, unpacked) = match rollback {
        Some(target) => (
            std::borrow::Cow::Owned(target.instance),
            target.bundle,
            target.home,
            target.unpacked,
        ),
        None => {
            let (bundle, home) =
                next!(bundle::find(instance, &bundles, context, &mut report).await?);
            let unpacked = next!(
                unpack::unpack(
                    instance,
                    &bundle,
                    home,
                    &settings.unpack,
                    context,
                    &mut report
                )
                .await?
            );
            (std::borrow::Cow::Borrowed(instance), bundle, home, unpacked)
        }
    };
    let rolling_back = revision::rollback_target(&report.status, generation(requester)).cloned();
    let instance = instance.as_ref();
    // Kept from the store's collection until the status written below
    // pins it (and the watch caches have seen that).
    let _held = context.in_flight.hold(&unpacked.digest);
    next!(unpack::pin_holds(
        instance,
        &bundle,
        &unpacked,
        context,
        &mut report
    ));
    // The class's probes and the content author's.
    let class_probes = std::mem::take(&mut settings.probes);
    let probes = next!(render::content_probes(
        &bundle,
        &unpacked,
        class_probes,
        &settings.unpack,
        &mut report
    ));
    let rendered = next!(
        render::render(
            instance,
            requester,
            class,
            &bundle,
            home,
            &unpacked,
            &settings.unpack,
            context,
            &mut report
        )
        .await?
    );
    let request = render::request(
        instance,
        class,
        &unpacked,
        &settings.unpack,
        &rendered.cluster,
    );
    let renders_again_at = context.provisioner.renders_again_at(&request);
    let content = ApprovedContent {
        bundle: instance.spec.bundle.name.clone(),
        digest: unpacked.digest.as_str().to_owned(),
        approved_by: String::new(),
        rendered: Some(crate::trust::rerender::rendered_digest(&rendered.objects)),
        generation: None,
        judged: None,
    };
    let proposed = approval::Proposed {
        objects: &rendered.objects,
        request: &request,
    };
    let approval = match &rolling_back {
        // The earlier revision's approval covers exactly its objects.
        Some(earlier) => plan::Approval::Rollback {
            to: earlier.number,
            render_unchanged: rollback::render_unchanged(
                earlier,
                content.rendered.as_deref().unwrap_or_default(),
            ),
        },
        None => approval::step(requester, class, proposed, &content, context, &mut report).await,
    };
    let fingerprint = crate::drift::Fingerprint {
        generation: instance.metadata.generation,
        bundle: instance.spec.bundle.name.clone(),
        digest: content.digest.clone(),
        rendered: content.rendered.clone(),
    };
    let observed = plan::Observed {
        bundle: instance.spec.bundle.name.clone(),
        active_bundle: report.status.active_bundle.clone(),
        installed_here: report.installed(&instance.spec.bundle.name) && report.observed_current(),
        drift: settings.drift,
        staleness: context.drift.staleness(
            &instance.name_any(),
            &fingerprint,
            reapply_after(context.resync),
        ),
        failed_before: report.failed_before() || context.apply_failed_before(instance),
        approval,
    };
    let planned = plan::plan(&observed);
    let write = match &planned {
        plan::Plan::RollbackNotPossible { why } => {
            rollback::not_possible(&mut report, why);
            return finish(report, context, Action::requeue(AFTER_CONFLICT)).await;
        }
        plan::Plan::AwaitApproval { message, retry } => {
            report.set(
                Reason::InstallPending,
                ConditionStatus::False,
                message.clone(),
            );
            let action = retry.map_or_else(Action::await_change, Action::requeue);
            return finish(report, context, action).await;
        }
        plan::Plan::WarnOnly | plan::Plan::InSync => None,
        plan::Plan::Write(write) => Some(write),
    };
    let approved_by = match &rolling_back {
        Some(earlier) => rollback::approved_by(earlier),
        // The revision this content is: what was applied, under whose
        // approval.
        None => report
            .status
            .approval
            .as_ref()
            .map(|approval| approval.approved_by.clone())
            .unwrap_or_default(),
    };
    let revision_content = revision::Content {
        bundle: &instance.spec.bundle.name,
        bundle_spec: instance.spec.bundle.spec.as_ref(),
        digest: &content.digest,
        rendered: content.rendered.as_deref(),
        approved_by: &approved_by,
    };
    let proposal = act::Proposal {
        bundle: &bundle,
        home,
        objects: &rendered.objects,
        provides: rendered.provides,
        request: &request,
        options: &settings.unpack,
        ignored: &settings.ignored,
        revision: revision_content,
        rollout: settings.rollout,
        probes: &probes,
    };
    let applied = match &write {
        Some(write) => {
            next!(act::write(instance, proposal, write, fingerprint, context, &mut report).await?)
        }
        None => act::Applied {
            fresh_health: None,
            kept_for_objects: false,
            warn_only: planned == plan::Plan::WarnOnly,
        },
    };
    if let Some(earlier) = &rolling_back {
        rollback::report_rolled_back(requester, &mut report, earlier);
    }
    let next = health::step(
        instance,
        applied,
        revision_content,
        settings.rollout,
        &probes,
        context,
        &mut report,
    )
    .await;
    // A revision that does not roll out gives way to the one before it,
    // when the class asks for that: the next reconcile applies it.
    if let Some(decided) =
        revision::decide_rollback(&report.status, settings.rollout, generation(requester))
    {
        tracing::warn!(instance = %requester.name_any(), why = %decided.message, "rolling back");
        if let Some(newest) = report.status.revisions.last_mut() {
            newest.message = decided.message.chars().take(1024).collect();
        }
        report.after_write.push(kube::runtime::events::Event {
            type_: kube::runtime::events::EventType::Warning,
            reason: pakket_api::Reason::RolledBack.as_str().into(),
            note: Some(decided.message.chars().take(1000).collect()),
            action: "Rollback".into(),
            secondary: None,
        });
        report.status.automatic_rollback = Some(decided);
        return finish(report, context, Action::requeue(AFTER_CONFLICT)).await;
    }
    finish(
        report,
        context,
        Action::requeue(sooner_for_render(next, renders_again_at)),
    )
    .await
}

/// `next`, or sooner when the provisioner said its render changes by
/// itself before then (a second after, so the render is the new one).
fn sooner_for_render(
    next: std::time::Duration,
    renders_again_at: Option<std::time::SystemTime>,
) -> std::time::Duration {
    let Some(at) = renders_again_at else {
        return next;
    };
    let until = at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default()
        + std::time::Duration::from_secs(1);
    next.min(until)
}

/// The Instance's generation (its spec's version).
fn generation(instance: &Instance) -> i64 {
    instance.metadata.generation.unwrap_or_default()
}

/// The content of the automatic rollback in force for the Instance's
/// current generation, if one is and its content is still there. A
/// rollback decided for an earlier generation ended when the spec changed;
/// one whose content is gone is recorded as not possible.
async fn rollback_in_force<'a, P>(
    instance: &Instance,
    bundles: &'a Api<Bundle>,
    context: &Context<P>,
    report: &mut Report,
) -> Option<rollback::Target<'a>> {
    let generation = generation(instance);
    if report
        .status
        .automatic_rollback
        .as_ref()
        .is_some_and(|rollback| rollback.generation != generation)
    {
        report.status.automatic_rollback = None;
    }
    let earlier = revision::rollback_target(&report.status, generation)?.clone();
    match rollback::target(instance, &earlier, bundles, context).await {
        Ok(target) => Some(target),
        Err(why) => {
            rollback::not_possible(report, &why);
            None
        }
    }
}
