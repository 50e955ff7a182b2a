//! One reconcile of an Instance that should be installed, as observe,
//! plan, act:
//!
//! - [`observe`]: every read once, each step writing the condition it
//!   owns: [`class`] (the class and its parameters) → [`bundle`] (a Bundle
//!   object or the embedded spec) → [`unpack`] (content into the store by
//!   digest, and its pin), or under an automatic rollback [`rollback`]
//!   (the earlier revision's content from the store) → [`render`] (the
//!   provisioner's objects, judged by the trust kernel) → [`approval`]
//!   (policy or person, for exactly this request) and what this process
//!   last wrote;
//! - [`plan`]: one pure function names the next action (wait for approval,
//!   write: install, pivot, roll back, repair, re-render, resync; warn
//!   only; in sync), a row of its table test each;
//! - [`act`]: the write (dry run of the whole set, the phases with their
//!   probes, rollback of a write that fails part-way, prune of what the
//!   earlier revision alone had, and the one place a failure becomes
//!   status);
//! - [`health`]: the objects, drift, and the revision's rollout, after
//!   which a revision that does not roll out may give way to the one
//!   before it ([`outcome::roll_back_if_due`]).
//!
//! [`installed`] is what the running Instance has, read by approval and
//! act alike. A step that cannot go on says why in the report and ends
//! the reconcile with when to look again ([`Flow::Stop`]); [`outcome`]
//! writes the revision record and the report, once at the end (and,
//! while a long apply runs, how far it came).

// A step is short enough to read at once: a new behaviour is a new plan
// arm and its own function, not a longer one (the crate denies
// `clippy::too_many_lines`; the threshold is in clippy.toml).

mod act;
mod approval;
mod bundle;
mod class;
mod health;
mod installed;
mod observe;
mod outcome;
mod plan;
mod render;
mod rollback;
mod unpack;

use std::time::Duration;

use kube::api::Api;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Bundle, Instance, ProvisionerClass, Reason};

use super::context::Context;
use super::report::Report;
use super::revision;
use super::{DEFAULT_MAX_OBJECT_SIZE, RESYNC_UNHEALTHY, reapply_after};
use crate::provisioner::Provisioner;
use outcome::finish;

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
/// How long an apply runs before it writes how far it has come (then
/// once per stage of it, see `act::apply`).
const PROGRESS_AFTER: Duration = Duration::from_secs(2);
/// How soon a failed apply is tried again.
const AFTER_INSTALL_FAILURE: Duration = Duration::from_secs(10);

/// What a step leaves: the next step's input, or the end of this reconcile
/// and when to look again (the step wrote why in the report).
enum Flow<T> {
    Next(T),
    Stop(Action),
}

/// What the apply left for the health step.
struct Applied {
    /// The objects' health as the apply found it, when it ran.
    fresh_health: Option<Vec<crate::apply::HealthProblem>>,
    /// CRDs kept for their objects: look again soon.
    kept_for_objects: bool,
    /// Drift Warn on installed content: nothing was written.
    warn_only: bool,
}

/// Brings `instance` to its desired state, as far as it can go now:
/// observe (every read once), plan (one pure decision), act (the one
/// action), then health, and the report written once.
pub async fn install<P: Provisioner>(
    instance: &Instance,
    class: Option<&ProvisionerClass>,
    context: &Context<P>,
) -> Result<Action, kube::Error> {
    let mut report = Report::new(instance);
    report.tell_decision(instance);
    // Each step goes on, or ends the reconcile with the report as it is.
    macro_rules! next {
        ($step:expr) => {
            match $step {
                Flow::Next(value) => value,
                Flow::Stop(action) => return finish(report, context, action).await,
            }
        };
    }
    let bundles: Api<Bundle> = Api::all(context.client.clone());
    // Dropped only once the report is written, whatever the step it ends at.
    let mut held = None;
    let read =
        next!(observe::content(instance, class, &bundles, &mut held, context, &mut report).await?);
    let requester = instance;
    let instance = read.instance.as_ref();
    let settings = &read.settings;
    let request = render::request(
        instance,
        settings.class,
        &read.unpacked,
        &settings.unpack,
        &read.rendered.cluster,
    );
    let renders_again_at = context.provisioner.renders_again_at(&request);
    let facts = observe::facts(requester, &read, &request, context, &mut report).await;
    let observe::Facts {
        content,
        fingerprint,
        observed,
    } = facts;
    let planned = plan::plan(&observed);
    if let Some(action) = wait(&planned, &mut report) {
        return finish(report, context, action).await;
    }
    let approved_by = approved_by(read.rolling_back.as_ref(), &report);
    let revision_content = revision::Content {
        bundle: &instance.spec.bundle.name,
        bundle_spec: instance.spec.bundle.spec.as_ref(),
        digest: &content.digest,
        rendered: content.rendered.as_deref(),
        approved_by: &approved_by,
    };
    let applied = match &planned {
        plan::Plan::Write(write) => {
            let proposal = proposal(&read, &request, revision_content);
            next!(act::write(instance, proposal, write, fingerprint, context, &mut report).await?)
        }
        _ => Applied {
            fresh_health: None,
            kept_for_objects: false,
            warn_only: planned == plan::Plan::WarnOnly,
        },
    };
    if let Some(earlier) = &read.rolling_back {
        rollback::report_rolled_back(requester, &mut report, earlier);
    }
    let (rollout, probes) = (settings.rollout, &read.probes);
    let next = health::step(
        instance,
        applied,
        revision_content,
        rollout,
        probes,
        context,
        &mut report,
    )
    .await;
    let next = after_health(requester, &mut report, rollout, next, renders_again_at);
    finish(report, context, Action::requeue(next)).await
}

/// When to look again after health: soon when the revision does not roll
/// out and gives way to the one before it (when the class asks for that:
/// the next reconcile applies it), else `next` or sooner for a render
/// that changes by itself.
fn after_health(
    requester: &Instance,
    report: &mut Report,
    rollout: revision::Settings,
    next: Duration,
    renders_again_at: Option<std::time::SystemTime>,
) -> Duration {
    if outcome::roll_back_if_due(requester, report, rollout) {
        AFTER_CONFLICT
    } else {
        sooner_for_render(next, renders_again_at)
    }
}

/// What a plan that writes nothing now leaves in the report, and when to
/// look again; `None` for a plan that goes on.
fn wait(planned: &plan::Plan, report: &mut Report) -> Option<Action> {
    match planned {
        plan::Plan::RollbackNotPossible { why } => {
            outcome::rollback_not_possible(report, why);
            Some(Action::requeue(AFTER_CONFLICT))
        }
        plan::Plan::AwaitApproval { message, retry } => {
            report.set(
                Reason::InstallPending,
                ConditionStatus::False,
                message.clone(),
            );
            Some(retry.map_or_else(Action::await_change, Action::requeue))
        }
        plan::Plan::WarnOnly | plan::Plan::InSync | plan::Plan::Write(_) => None,
    }
}

/// Who approved the content to run, as its revision records it: the
/// rollback's revision's approval, or the approval on record.
fn approved_by(rolling_back: Option<&pakket_api::Revision>, report: &Report) -> String {
    match rolling_back {
        Some(earlier) => rollback::approved_by(earlier),
        None => report
            .status
            .approval
            .as_ref()
            .map(|approval| approval.approved_by.clone())
            .unwrap_or_default(),
    }
}

/// What a write applies, and under which settings.
fn proposal<'a>(
    read: &'a observe::Content<'_>,
    request: &'a crate::provisioner::ObjectsRequest<'a>,
    revision: revision::Content<'a>,
) -> act::Proposal<'a> {
    act::Proposal {
        bundle: &read.bundle,
        home: read.home,
        objects: &read.rendered.objects,
        provides: &read.rendered.provides,
        request,
        options: &read.settings.unpack,
        ignored: &read.settings.ignored,
        revision,
        rollout: read.settings.rollout,
        probes: &read.probes,
    }
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
