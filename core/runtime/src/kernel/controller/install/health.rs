//! The health step: whether the installed objects work (from the apply's
//! answers when it just ran, else read afresh), what drifted under drift
//! Warn, and the newest revision's rollout: `Progressing`, the serving
//! revision, and a rollout past its deadline said in `Healthy`.

use std::time::Duration;

use pakket_api::condition::ConditionStatus;
use pakket_api::{Cause, CauseKind, Instance, Reason};

use super::super::context::Context;
use super::super::report::Report;
use super::super::revision;
use super::*;
use super::{Applied, outcome};
use crate::apply;

/// The installed objects' problems, read afresh (the built-in checks and
/// the probes). An object whose health is its existence, which the drift
/// watches see as `instance`'s, is not read ([`apply::to_read`]): an
/// Instance at rest of ConfigMaps and the like costs no request here.
async fn read_problems<P>(
    instance: &str,
    installed: &[pakket_api::ObjectRef],
    probes: &apply::probes::ProgressionProbes,
    context: &Context<P>,
) -> Vec<apply::HealthProblem> {
    let mut kinds = context.kinds.clone();
    let mut problems = apply::unhealthy_of(&mut kinds, instance, installed).await;
    problems.extend(apply::phase::probe_problems(&mut kinds, installed, probes).await);
    problems
}

/// The problems' words, joined.
fn texts(problems: &[apply::HealthProblem]) -> String {
    problems
        .iter()
        .map(|problem| problem.text.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// How the revision's objects stand, for its rollout: failing (past its
/// deadline or not), settling, or healthy.
fn revision_health(
    failing: &[apply::HealthProblem],
    settling: &[apply::HealthProblem],
) -> revision::Health {
    if !failing.is_empty() {
        let mut all = failing.to_vec();
        all.extend(settling.iter().cloned());
        if failing.iter().any(|problem| problem.past_deadline) {
            revision::Health::PastDeadline(texts(&all))
        } else {
            revision::Health::Failing(texts(&all))
        }
    } else if !settling.is_empty() {
        revision::Health::Settling(texts(settling))
    } else {
        revision::Health::Healthy
    }
}

/// Writes `Healthy`, `Drifted` and `Progressing`; returns when to look
/// again.
pub(super) async fn step<P>(
    instance: &Instance,
    applied: Applied,
    revision_content: revision::Content<'_>,
    rollout_settings: revision::Settings,
    probes: &apply::probes::ProgressionProbes,
    context: &Context<P>,
    report: &mut Report,
) -> Duration {
    let name = kube::ResourceExt::name_any(instance);
    let bundle_name = &instance.spec.bundle.name;
    let Applied {
        fresh_health,
        kept_for_objects,
        warn_only,
    } = applied;

    report_drift(report, &context.drift.drifted(&name), warn_only);

    // Health: from the apply's answers when it just ran, else read afresh.
    let installed = report.status.objects.clone();
    let count = report.status.object_count.unwrap_or(installed.len() as u64);
    let every_one = fresh_health.is_some() || report.status.lists_every_object();
    let problems = match fresh_health {
        Some(problems) => problems,
        None => read_problems(&name, &installed, probes, context).await,
    };
    let (settling, failing): (Vec<_>, Vec<_>) =
        problems.into_iter().partition(|problem| problem.settling);
    // The revision these objects are, and how its rollout stands.
    let progress = if report.installed(bundle_name) {
        let health = revision_health(&failing, &settling);
        let now = jiff::Timestamp::now();
        outcome::applied(report, revision_content, rollout_settings, now);
        outcome::rollout(report, &health, rollout_settings, now)
    } else {
        None
    };
    let past_deadline = progress
        .as_ref()
        .is_some_and(|progress| report.tell_progress(progress));
    let next = if past_deadline {
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
        super::super::at_rest(&name, context.resync)
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
        let objects = all.iter().map(apply::HealthProblem::cause_object);
        let because = Cause::new(CauseKind::ObjectsUnhealthy).with_objects(objects);
        report.set_because(
            Reason::ObjectsUnhealthy,
            ConditionStatus::False,
            texts(&all),
            because,
        );
        RESYNC_UNHEALTHY
    };
    if kept_for_objects {
        next.min(RESYNC_KEPT)
    } else {
        next
    }
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
