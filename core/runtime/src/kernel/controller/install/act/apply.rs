//! The write of the whole set: checked by a server-side dry run, then
//! written phase by phase, each gate's probes passing before the phases
//! after it are written (a write that fails part-way is rolled back to
//! the running revision). A set held at a gate stops here and says so.

use std::time::{Duration, Instant};

use kube::api::Api;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Instance, ObjectRef, Reason};

use super::super::super::context::Context;
use super::super::super::report::Report;
use super::super::super::revision;
use super::super::installed::running_revision;
use super::super::plan::Write;
use super::super::{AFTER_INSTALL_FAILURE, PROGRESS_EVERY, outcome};
use super::{Proposal, failure};
use crate::apply;
use crate::ownership::Claimant;
use crate::provisioner::Provisioner;

/// How a write of the set ended.
pub(super) enum Written {
    /// Every phase is written.
    Whole {
        applied: apply::Applied,
        adoptions: apply::Adoptions,
        /// When the write began (the drift tracker's mark).
        began: Instant,
    },
    /// Held at a gate, or failed (the report says which): look again then.
    Stopped(Duration),
}

/// Writes `proposal`'s set phase by phase: up to each gate, whose probes
/// must pass before the phases after it are written (none for most sets).
#[allow(clippy::too_many_arguments)] // the write's inputs, each read once
pub(super) async fn phases<P: Provisioner>(
    instance: &Instance,
    proposal: &Proposal<'_>,
    write: &Write,
    previous: &[ObjectRef],
    claimant: Claimant<'_>,
    kinds: &mut apply::Kinds,
    context: &Context<P>,
    report: &mut Report,
) -> Written {
    let name = &claimant.name;
    let bundle = instance.spec.bundle.name.as_str();
    // What a write that fails part-way returns to: the running revision,
    // rendered again from the store.
    let running = if previous.is_empty() {
        None
    } else {
        running_revision(instance, proposal.request, context)
    };
    let restore = running
        .as_ref()
        .map(|(bundle, objects)| apply::Restore { bundle, objects });
    let began = Instant::now();
    // Created without reading first, unless an earlier try failed: a
    // conflict would then create and remove objects again on every retry
    // (and a reconcile that read the Instance before the failure was
    // written would do it at once, while the failure is already visible).
    let first_install = previous.is_empty() && !write.read_first;
    let gates = apply::phase::gates(proposal.objects, proposal.probes);
    begin(name, proposal, context, report);
    let mut passed = 0;
    loop {
        let gate = gates.get(passed);
        let settings = apply::Settings {
            crd_upgrade_safety: proposal.options.crd_upgrade_safety,
            first_install: first_install && passed == 0,
            content_changed: write.content_changed(),
            through: gate.map(|gate| gate.after),
        };
        let one = One {
            settings,
            claimant,
            restore,
        };
        let (applied, adoptions) = match one.write(instance, proposal, kinds, context, report).await
        {
            Ok(written) => written,
            Err(error) => {
                let revision = (proposal.revision, proposal.rollout);
                failure::write_failed(report, &error, previous, revision, bundle);
                return Written::Stopped(AFTER_INSTALL_FAILURE);
            }
        };
        let Some(gate) = gate else {
            return Written::Whole {
                applied,
                adoptions,
                began,
            };
        };
        let waiting = apply::phase::waiting(kinds, &gate.probed, proposal.probes).await;
        if !waiting.is_empty() {
            let held = Held {
                previous,
                applied: &applied,
                gate,
                waiting,
                total: proposal.objects.len(),
            };
            let recheck = held.report(report, proposal.revision, proposal.rollout, bundle);
            return Written::Stopped(recheck);
        }
        passed += 1;
    }
}

/// Marks the write's start: fields someone else owns are written back as
/// the apply reads them, and changes to them alone are no drift; the
/// phase held at is set again while a phase waits (a set written whole,
/// or an apply that failed, is held at no phase).
fn begin<P>(name: &str, proposal: &Proposal<'_>, context: &Context<P>, report: &mut Report) {
    context.drift.ignore(name, proposal.ignored);
    context.drift.writing(name);
    report.status.progression = None;
}

/// One write of the set, through one gate's phase (or whole).
struct One<'a> {
    settings: apply::Settings,
    claimant: Claimant<'a>,
    restore: Option<apply::Restore<'a>>,
}

impl One<'_> {
    /// Writes, telling how far it has come while it runs; remembers in
    /// this process whether it failed.
    async fn write<P>(
        self,
        instance: &Instance,
        proposal: &Proposal<'_>,
        kinds: &mut apply::Kinds,
        context: &Context<P>,
        report: &mut Report,
    ) -> Result<(apply::Applied, apply::Adoptions), apply::ApplyError> {
        let bundle = instance.spec.bundle.name.as_str();
        let progress = apply::Progress::default();
        let applying = apply::apply_all(
            kinds,
            proposal.objects,
            self.claimant,
            bundle,
            &progress,
            self.settings,
            proposal.ignored,
            self.restore,
            proposal.probes.phases(),
        );
        let describe = || progress.describe(proposal.objects.len(), bundle);
        let written = with_progress(applying, describe, report, context).await;
        context.apply_ended(instance, written.is_err());
        written
    }
}

/// How soon a set held at a gate is looked at again: soon at first, then
/// a quarter of the time it has been held, up to a minute, so that many
/// Instances held for long (a cluster with no room for their Pods) do not
/// write their sets again every few seconds.
fn held_recheck(held_for: Duration) -> Duration {
    (held_for / 4).clamp(HELD_RECHECK_FIRST, HELD_RECHECK_MOST)
}
/// How many of the probes holding a phase status lists (the condition's
/// message names them all).
const HELD_BY_LISTED: usize = 20;
const HELD_RECHECK_FIRST: Duration = Duration::from_secs(5);
const HELD_RECHECK_MOST: Duration = Duration::from_secs(60);

/// An apply held at a gate: the phases before it are written, the probes
/// of `gate` do not pass yet.
struct Held<'a> {
    previous: &'a [ObjectRef],
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
    ) -> Duration {
        let mut listed = self.previous.to_vec();
        for object in &self.applied.objects {
            if !listed.contains(object) {
                listed.push(object.clone());
            }
        }
        report.status.set_objects(&listed);
        report.status.progression = Some(pakket_api::PhaseProgression {
            reached: self.gate.reached.clone(),
            next: self.gate.waits.clone(),
            held_by: self.waiting.iter().take(HELD_BY_LISTED).cloned().collect(),
        });
        let waiting = format!(
            "phase {} to start: {}",
            self.gate.waits,
            self.waiting.join("; ")
        );
        report.set(
            Reason::Installing,
            ConditionStatus::False,
            format!(
                "applied {} of {} objects of Bundle {bundle}, through phase {}; waiting for {waiting}",
                self.applied.objects.len(),
                self.total,
                self.gate.reached
            ),
        );
        let now = jiff::Timestamp::now();
        outcome::applied(report, content, settings, now);
        let held_for = report
            .status
            .revisions
            .last()
            .and_then(|newest| now.duration_since(newest.applied.0).try_into().ok())
            .unwrap_or_default();
        let recheck = held_recheck(held_for);
        let health = revision::Health::Settling(waiting.clone());
        let Some(progress) = outcome::rollout(report, &health, settings, now) else {
            return recheck;
        };
        if !report.tell_progress(&progress) {
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
