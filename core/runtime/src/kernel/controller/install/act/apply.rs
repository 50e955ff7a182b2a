//! The write of the whole set: checked by a server-side dry run, then
//! written phase by phase, each gate's probes passing before the phases
//! after it are written (a write that fails part-way is rolled back to
//! the running revision). A set held at a gate stops here and says so.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kube::api::Api;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Instance, ObjectRef, Reason};

use super::super::super::context::Context;
use super::super::super::report::Report;
use super::super::super::revision;
use super::super::installed::running_revision;
use super::super::plan::{Why, Write};
use super::super::{AFTER_INSTALL_FAILURE, PROGRESS_AFTER, outcome};
use super::{Proposal, failure};
use crate::apply::{self, ApplyStage};
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
    // After `began`: a change someone makes from now on is drift of this write.
    let unchanged = unchanged(write, name, proposal.objects, context);
    // Created without reading first, unless an earlier try failed: a
    // conflict would then create and remove objects again on every retry
    // (and a reconcile that read the Instance before the failure was
    // written would do it at once, while the failure is already visible).
    let first_install = previous.is_empty() && !write.read_first;
    let gates = apply::phase::gates(proposal.objects, proposal.probes);
    begin(name, began, proposal, context, report);
    let mut passed = 0;
    loop {
        let gate = gates.get(passed);
        let settings = apply::Settings {
            crd_upgrade_safety: proposal.options.crd_upgrade_safety,
            first_install: first_install && passed == 0,
            content_changed: write.content_changed(),
            through: gate.map(|gate| gate.after),
            unchanged: &unchanged,
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
fn begin<P>(
    name: &str,
    began: Instant,
    proposal: &Proposal<'_>,
    context: &Context<P>,
    report: &mut Report,
) {
    context.drift.ignore(name, proposal.ignored);
    context.drift.writing(name, began);
    report.status.progression = None;
}

/// What a write leaves as it is: under a repair, the objects nobody
/// changed that the drift watches vouch for as last written (only what
/// someone changed is judged, dry-run and written again); nothing else.
fn unchanged<P>(
    write: &Write,
    name: &str,
    objects: &[serde_json::Value],
    context: &Context<P>,
) -> BTreeSet<ObjectRef> {
    if write.why != Why::Repair {
        return BTreeSet::new();
    }
    let candidates: Vec<ObjectRef> = objects.iter().map(apply::reference_of).collect();
    context.drift.untouched(name, &candidates)
}

/// One write of the set, through one gate's phase (or whole).
struct One<'a> {
    settings: apply::Settings<'a>,
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
        let describe = || {
            (
                progress.stage(),
                progress.describe(proposal.objects.len(), bundle),
            )
        };
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

/// How often a running apply's stage is looked at (in memory: no request).
const PROGRESS_LOOK: Duration = Duration::from_millis(250);

/// Whether a running apply, `elapsed` into it, writes its progress now: once
/// it ran [`PROGRESS_AFTER`] (an apply that ends sooner writes nothing
/// extra), and then once per stage, when the `current` stage is not the
/// one `written` last (`None`: none written yet). Time alone never writes:
/// on a slow apiserver each Instance used to write its status every 2 s
/// while it applied, adding to the load that made it slow.
fn progress_due(elapsed: Duration, written: Option<ApplyStage>, current: ApplyStage) -> bool {
    elapsed >= PROGRESS_AFTER && written != Some(current)
}

/// Runs `work` (an apply), writing `describe()`'s words into the
/// `Installed` condition when [`progress_due`] says: at most once per stage
/// of the apply (checking for conflicts, applying), none in its first
/// [`PROGRESS_AFTER`].
async fn with_progress<P, T>(
    work: impl std::future::Future<Output = T>,
    describe: impl Fn() -> (ApplyStage, String),
    report: &mut Report,
    context: &Context<P>,
) -> T {
    let instances: Api<Instance> = Api::all(context.client.clone());
    let started = tokio::time::Instant::now();
    let mut ticker = tokio::time::interval_at(started + PROGRESS_AFTER, PROGRESS_LOOK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut written: Option<ApplyStage> = None;
    let mut reporting = true;
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            done = &mut work => return done,
            _ = ticker.tick(), if reporting => {
                let (stage, words) = describe();
                if progress_due(started.elapsed(), written, stage) {
                    written = Some(stage);
                    reporting = report.write_progress(&instances, words).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ApplyStage, PROGRESS_AFTER, progress_due};

    #[test]
    fn progress_is_written_once_per_stage_and_never_for_time_alone() {
        let (checking, applying) = (ApplyStage::Checking, ApplyStage::Applying);
        let secs = Duration::from_secs;
        let rows = [
            (
                "a fresh apply: nothing yet",
                Duration::ZERO,
                None,
                checking,
                false,
            ),
            (
                "still within the first 2 s, applying already",
                PROGRESS_AFTER - Duration::from_millis(1),
                None,
                applying,
                false,
            ),
            (
                "past 2 s, checking: written",
                PROGRESS_AFTER,
                None,
                checking,
                true,
            ),
            (
                "past 2 s, applying when first looked at: written",
                secs(3),
                None,
                applying,
                true,
            ),
            (
                "still checking a minute later: not again",
                secs(60),
                Some(checking),
                checking,
                false,
            ),
            (
                "from checking to applying: written",
                secs(61),
                Some(checking),
                applying,
                true,
            ),
            (
                "applying for long: not again",
                secs(600),
                Some(applying),
                applying,
                false,
            ),
        ];
        for (row, elapsed, written, current, expected) in rows {
            assert_eq!(progress_due(elapsed, written, current), expected, "{row}");
        }
    }

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
