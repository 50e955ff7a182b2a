//! An Instance's revisions and its `Progressing` condition, kept in its
//! status: each install of other content is a numbered revision (what was
//! applied, under whose approval, when, how its rollout went); the newest
//! one that rolled out completely is the serving one. A rollout still
//! settling past the progress deadline is `Blocked`, and said so in
//! `Healthy` too.
//!
//! Pure functions over the status being built, so each rule is tested
//! here; the reconcile calls them at its apply and health steps.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use pakket_api::{
    AutomaticRollback, BundleSpec, InstanceStatus, REVISION_HISTORY_LIMIT, Reason, Revision,
    RevisionOutcome, RollbackState,
};
use serde_json::{Map, Value};

use crate::class_parameters::{self, ParameterError};

/// How long a revision may roll out before it is `Blocked`, unless the
/// class says otherwise (the Deployment controller's own default).
pub const PROGRESS_DEADLINE: Duration = Duration::from_secs(600);

/// Where a deadline from the class comes from, in messages.
const CLASS_DEADLINE: &str = "the class's progressDeadline";

/// Where an Instance's own deadline comes from, in messages.
pub const INSTANCE_DEADLINE: &str = "spec.progressDeadline";

/// The most revisions a class may ask to keep: the status is one object.
const HISTORY_LIMIT_MAX: u64 = 100;

/// The class's rollout parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `revisionHistoryLimit`: how many revisions the status keeps.
    pub history_limit: usize,
    /// `progressDeadline`: how long a revision may roll out.
    pub progress_deadline: Duration,
    /// Where that deadline was set, for messages.
    pub deadline_source: &'static str,
    /// `rollbackOnFailure`: a revision that does not roll out gives way to
    /// the one that served before it (see [`decide_rollback`]).
    pub rollback_on_failure: bool,
}

impl Settings {
    /// Reads `revisionHistoryLimit` and `progressDeadline`.
    pub fn from_parameters(
        parameters: Option<&Map<String, Value>>,
    ) -> Result<Self, ParameterError> {
        let limit = class_parameters::count(
            parameters,
            "revisionHistoryLimit",
            REVISION_HISTORY_LIMIT as u64,
        )?;
        if limit > HISTORY_LIMIT_MAX {
            return Err(ParameterError {
                name: "revisionHistoryLimit".into(),
                problem: format!(
                    "{limit} is more than {HISTORY_LIMIT_MAX}; keep at most {HISTORY_LIMIT_MAX} revisions"
                ),
            });
        }
        Ok(Self {
            history_limit: limit as usize,
            progress_deadline: class_parameters::duration(
                parameters,
                "progressDeadline",
                PROGRESS_DEADLINE,
            )?,
            deadline_source: CLASS_DEADLINE,
            rollback_on_failure: class_parameters::boolean(parameters, "rollbackOnFailure", false)?,
        })
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            history_limit: REVISION_HISTORY_LIMIT,
            progress_deadline: PROGRESS_DEADLINE,
            deadline_source: CLASS_DEADLINE,
            rollback_on_failure: false,
        }
    }
}

/// The content of one revision, as the reconcile knows it.
#[derive(Clone, Copy, Debug)]
pub struct Content<'a> {
    /// The Bundle.
    pub bundle: &'a str,
    /// Its spec, when the Instance embeds it.
    pub bundle_spec: Option<&'a BundleSpec>,
    /// The pinned content digest.
    pub digest: &'a str,
    /// The digest of the rendered objects.
    pub rendered: Option<&'a str>,
    /// Who approved it.
    pub approved_by: &'a str,
}

impl Content<'_> {
    fn is(&self, revision: &Revision) -> bool {
        revision.bundle == self.bundle
            && revision.digest == self.digest
            && revision.rendered.as_deref() == self.rendered
    }

    fn revision(&self, number: i64, outcome: RevisionOutcome, now: Timestamp) -> Revision {
        Revision {
            number,
            bundle: self.bundle.to_owned(),
            bundle_spec: self.bundle_spec.cloned(),
            digest: self.digest.to_owned(),
            rendered: self.rendered.map(str::to_owned),
            approved_by: self.approved_by.to_owned(),
            applied: Time(now),
            outcome,
            ended: None,
            message: String::new(),
        }
    }
}

/// Records that `content`'s objects are applied: the newest revision when
/// it is this content, else a new revision that ends the rollouts before
/// it. Returns its number.
pub fn applied(
    status: &mut InstanceStatus,
    content: Content<'_>,
    settings: Settings,
    now: Timestamp,
) -> i64 {
    if let Some(newest) = status.revisions.last_mut()
        && content.is(newest)
    {
        if newest.outcome == RevisionOutcome::Failed {
            // Its apply went through on a later try.
            newest.outcome = RevisionOutcome::RollingOut;
            newest.message.clear();
        }
        return newest.number;
    }
    for earlier in &mut status.revisions {
        if matches!(
            earlier.outcome,
            RevisionOutcome::RollingOut | RevisionOutcome::Blocked
        ) {
            earlier.outcome = RevisionOutcome::Superseded;
            earlier.ended = Some(Time(now));
        }
    }
    push(
        status,
        content.revision(next_number(status), RevisionOutcome::RollingOut, now),
        settings,
    )
}

/// Records that applying `content` failed (nothing of it runs, or what was
/// written was put back): the newest revision says so, or a new one if
/// this content is new. A revision that rolled out already stays
/// `Succeeded` (a repair that failed is not a failed rollout).
pub fn failed(
    status: &mut InstanceStatus,
    content: Content<'_>,
    settings: Settings,
    message: &str,
    now: Timestamp,
) -> i64 {
    let message = words(message);
    if let Some(newest) = status.revisions.last_mut()
        && content.is(newest)
    {
        if newest.outcome != RevisionOutcome::Succeeded {
            newest.outcome = RevisionOutcome::Failed;
            newest.message = message;
        }
        return newest.number;
    }
    let mut revision = content.revision(next_number(status), RevisionOutcome::Failed, now);
    revision.message = message;
    push(status, revision, settings)
}

/// How the objects of the newest revision are, as the health step found
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Every object healthy.
    Healthy,
    /// Still converging: what it waits for.
    Settling(String),
    /// A workload says its rollout passed its own deadline.
    PastDeadline(String),
    /// Something is broken.
    Failing(String),
}

/// What the `Progressing` condition says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// `RollingOut`, `Blocked` or `Succeeded`.
    pub reason: Reason,
    /// In words, naming the revision.
    pub message: String,
    /// Whether the rollout passed the class's progress deadline (or a
    /// workload's own): `Healthy` says `ProgressDeadlineExceeded`.
    pub past_deadline: bool,
}

/// Moves the newest revision's outcome by `health`, sets the serving
/// revision, and says what `Progressing` reads. `None` with no revision.
pub fn rollout(
    status: &mut InstanceStatus,
    health: &Health,
    settings: Settings,
    now: Timestamp,
) -> Option<Progress> {
    let newest = status.revisions.last_mut()?;
    let number = newest.number;
    let bundle = newest.bundle.clone();
    let rolled_out = newest.outcome == RevisionOutcome::Succeeded;
    let progress = |reason, message: String, past_deadline| Progress {
        reason,
        message,
        past_deadline,
    };
    let done = progress(
        Reason::Succeeded,
        format!("revision {number} (Bundle {bundle}) rolled out"),
        false,
    );
    let result = match health {
        Health::Healthy => {
            if !rolled_out {
                newest.outcome = RevisionOutcome::Succeeded;
                newest.ended = Some(Time(now));
                newest.message.clear();
            }
            done
        }
        // Rolled out once: what happens since is Healthy's to say.
        Health::Settling(_) | Health::Failing(_) if rolled_out => done,
        Health::Settling(waiting) => {
            let rolling_for = now
                .duration_since(newest.applied.0)
                .try_into()
                .unwrap_or(Duration::ZERO);
            if rolling_for > settings.progress_deadline {
                let message = format!(
                    "revision {number} (Bundle {bundle}) did not roll out within its progress deadline of {} ({}): waiting for {waiting}",
                    jiff::SignedDuration::try_from(settings.progress_deadline)
                        .map(|deadline| format!("{deadline:#}"))
                        .unwrap_or_default(),
                    settings.deadline_source
                );
                newest.outcome = RevisionOutcome::Blocked;
                newest.message = words(&message);
                progress(Reason::Blocked, message, true)
            } else {
                newest.outcome = RevisionOutcome::RollingOut;
                newest.message = words(&format!("waiting for {waiting}"));
                progress(
                    Reason::RollingOut,
                    format!(
                        "revision {number} (Bundle {bundle}) is rolling out: waiting for {waiting}"
                    ),
                    false,
                )
            }
        }
        Health::PastDeadline(problem) | Health::Failing(problem) => {
            let past_deadline = matches!(health, Health::PastDeadline(_));
            newest.outcome = RevisionOutcome::Blocked;
            newest.message = words(problem);
            progress(
                Reason::Blocked,
                format!("revision {number} (Bundle {bundle}) does not roll out: {problem}"),
                past_deadline,
            )
        }
    };
    status.serving_revision = serving(&status.revisions);
    Some(result)
}

/// The `Progressing` message for revision `number`, whose apply or prune
/// went wrong (`problem`) and is tried again: what serves meanwhile, and
/// whether `mixed` objects already run revision `number` beside it.
pub fn retrying(status: &InstanceStatus, number: i64, problem: &str, mixed: usize) -> String {
    let serving = match (status.serving_revision, mixed) {
        (Some(serving), 0) => format!("revision {serving} still serves"),
        (Some(serving), mixed) => {
            format!("revision {serving} serves in part: {mixed} objects are at revision {number}")
        }
        (None, _) => "no revision has rolled out yet".to_owned(),
    };
    format!("revision {number}: {problem}; trying again; {serving}")
}

/// Whether the newest revision, which does not roll out (`Blocked`), gives
/// way to the one that served before it: only under `rollbackOnFailure`,
/// only when one served before it, and once per generation of the
/// Instance (a rollback that itself does not roll out is not rolled back
/// again, and a rollback that could not be made is not tried again until
/// the spec changes). The rollback to make, with why, or `None`.
pub fn decide_rollback(
    status: &InstanceStatus,
    settings: Settings,
    generation: i64,
) -> Option<AutomaticRollback> {
    if !settings.rollback_on_failure
        || status
            .automatic_rollback
            .as_ref()
            .is_some_and(|rollback| rollback.generation == generation)
    {
        return None;
    }
    let newest = status.revisions.last()?;
    let serving = status.serving_revision?;
    if newest.outcome != RevisionOutcome::Blocked || serving >= newest.number {
        return None;
    }
    let earlier = status
        .revisions
        .iter()
        .find(|revision| revision.number == serving)?;
    Some(AutomaticRollback {
        from: newest.number,
        to: serving,
        generation,
        state: RollbackState::RolledBack,
        message: words(&format!(
            "revision {} (Bundle {}) did not roll out ({}), so revision {serving}'s content (Bundle {}) runs again under the approval it had (the class's rollbackOnFailure)",
            newest.number, newest.bundle, newest.message, earlier.bundle
        )),
    })
}

/// The revision whose content an automatic rollback in force for
/// `generation` runs again, if one is.
pub fn rollback_target(status: &InstanceStatus, generation: i64) -> Option<&Revision> {
    let rollback = status.automatic_rollback.as_ref()?;
    if rollback.generation != generation || rollback.state != RollbackState::RolledBack {
        return None;
    }
    status
        .revisions
        .iter()
        .find(|revision| revision.number == rollback.to)
}

/// Records that the rollback in force could not be made (`why`): the
/// Instance stays as it is, and nothing is rolled back again for this
/// generation.
pub fn rollback_not_possible(status: &mut InstanceStatus, why: &str) {
    if let Some(rollback) = status.automatic_rollback.as_mut() {
        rollback.state = RollbackState::NotPossible;
        rollback.message = words(&format!(
            "revision {} did not roll out, and rolling back to revision {} is not possible: {why}",
            rollback.from, rollback.to
        ));
    }
}

/// The newest revision that rolled out completely.
fn serving(revisions: &[Revision]) -> Option<i64> {
    revisions
        .iter()
        .rev()
        .find(|revision| revision.outcome == RevisionOutcome::Succeeded)
        .map(|revision| revision.number)
}

fn next_number(status: &InstanceStatus) -> i64 {
    status
        .revisions
        .iter()
        .map(|revision| revision.number)
        .max()
        .unwrap_or(0)
        + 1
}

/// Appends `revision`, dropping the oldest beyond the limit (never the
/// serving one), and returns its number.
fn push(status: &mut InstanceStatus, revision: Revision, settings: Settings) -> i64 {
    let number = revision.number;
    status.revisions.push(revision);
    let limit = settings.history_limit.max(1);
    // With room for two or more, the serving revision stays whatever its
    // age, and so does the one an automatic rollback runs again.
    let kept = status.serving_revision.filter(|_| limit > 1);
    let rolled_back_to = status
        .automatic_rollback
        .as_ref()
        .map(|rollback| rollback.to)
        .filter(|_| limit > 1);
    while status.revisions.len() > limit {
        // The newest (just pushed) stays too: a limit it cannot keep is
        // overrun by one rather than lose what was just applied.
        let older = &status.revisions[..status.revisions.len() - 1];
        let Some(oldest) = older.iter().position(|revision| {
            Some(revision.number) != kept && Some(revision.number) != rolled_back_to
        }) else {
            break;
        };
        status.revisions.remove(oldest);
    }
    number
}

/// A message as a revision keeps it: at most 1,024 characters.
fn words(message: &str) -> String {
    message.chars().take(1024).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn content(bundle: &str) -> Content<'_> {
        Content {
            bundle,
            bundle_spec: None,
            digest: "sha256:a",
            rendered: Some("sha256:r"),
            approved_by: "alice",
        }
    }

    fn outcomes(status: &InstanceStatus) -> Vec<(i64, &str)> {
        status
            .revisions
            .iter()
            .map(|revision| (revision.number, revision.outcome.as_str()))
            .collect()
    }

    #[test]
    fn an_install_then_a_pivot_are_two_revisions_and_serving_moves_once_the_pivot_rolls_out() {
        let settings = Settings::default();
        let mut status = InstanceStatus::default();
        assert_eq!(applied(&mut status, content("v1"), settings, at(0)), 1);
        let progress = rollout(
            &mut status,
            &Health::Settling("Deployment/n/web".into()),
            settings,
            at(1),
        )
        .unwrap();
        assert_eq!(progress.reason, Reason::RollingOut);
        assert_eq!(status.serving_revision, None);
        rollout(&mut status, &Health::Healthy, settings, at(2)).unwrap();
        assert_eq!(status.serving_revision, Some(1));
        // The same content applied again (a repair) is no new revision.
        assert_eq!(applied(&mut status, content("v1"), settings, at(3)), 1);
        assert_eq!(applied(&mut status, content("v2"), settings, at(4)), 2);
        let progress = rollout(
            &mut status,
            &Health::Settling("pods".into()),
            settings,
            at(5),
        )
        .unwrap();
        assert_eq!(progress.reason, Reason::RollingOut);
        assert_eq!(
            status.serving_revision,
            Some(1),
            "v1 serves while v2 rolls out"
        );
        let progress = rollout(&mut status, &Health::Healthy, settings, at(6)).unwrap();
        assert_eq!(progress.reason, Reason::Succeeded);
        assert_eq!(status.serving_revision, Some(2));
        assert_eq!(outcomes(&status), vec![(1, "Succeeded"), (2, "Succeeded")]);
        // The same Bundle rendered to other objects is a new revision.
        let rerendered = Content {
            rendered: Some("sha256:other"),
            ..content("v2")
        };
        assert_eq!(applied(&mut status, rerendered, settings, at(7)), 3);
    }

    #[test]
    fn a_rollout_past_the_deadline_is_blocked_and_may_still_succeed() {
        let settings = Settings {
            progress_deadline: Duration::from_secs(60),
            ..Settings::default()
        };
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), settings, at(0));
        let waiting = Health::Settling("Deployment/n/web to roll out".into());
        let within = rollout(&mut status, &waiting, settings, at(60)).unwrap();
        assert_eq!(within.reason, Reason::RollingOut);
        let past = rollout(&mut status, &waiting, settings, at(61)).unwrap();
        assert_eq!(past.reason, Reason::Blocked);
        assert!(past.past_deadline);
        assert!(
            past.message.contains("progress deadline of 1m"),
            "{}",
            past.message
        );
        assert_eq!(outcomes(&status), vec![(1, "Blocked")]);
        let late = rollout(&mut status, &Health::Healthy, settings, at(90)).unwrap();
        assert_eq!(late.reason, Reason::Succeeded);
        assert_eq!(status.serving_revision, Some(1));
    }

    #[test]
    fn a_rolled_out_revision_stays_succeeded_when_a_pod_restarts_later() {
        let settings = Settings::default();
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), settings, at(0));
        rollout(&mut status, &Health::Healthy, settings, at(1));
        let later = rollout(
            &mut status,
            &Health::Failing("Deployment/n/web lost availability".into()),
            settings,
            at(9000),
        )
        .unwrap();
        assert_eq!(
            later.reason,
            Reason::Succeeded,
            "Progressing is never left True after success"
        );
        assert_eq!(outcomes(&status), vec![(1, "Succeeded")]);
    }

    #[test]
    fn a_failed_pivot_is_a_failed_revision_and_the_one_before_still_serves() {
        let settings = Settings::default();
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), settings, at(0));
        rollout(&mut status, &Health::Healthy, settings, at(1));
        assert_eq!(
            failed(
                &mut status,
                content("v2"),
                settings,
                "an immutable field",
                at(2)
            ),
            2
        );
        assert_eq!(outcomes(&status), vec![(1, "Succeeded"), (2, "Failed")]);
        assert_eq!(status.serving_revision, Some(1));
        assert!(retrying(&status, 2, "x", 0).ends_with("revision 1 still serves"));
        assert!(
            retrying(&status, 2, "x", 3)
                .ends_with("revision 1 serves in part: 3 objects are at revision 2")
        );
        // A retry that goes through: the same revision rolls out.
        assert_eq!(applied(&mut status, content("v2"), settings, at(3)), 2);
        assert_eq!(outcomes(&status), vec![(1, "Succeeded"), (2, "RollingOut")]);
        // A repair of rolled-out content that fails is no failed rollout.
        rollout(&mut status, &Health::Healthy, settings, at(4));
        failed(&mut status, content("v2"), settings, "conflict", at(5));
        assert_eq!(outcomes(&status), vec![(1, "Succeeded"), (2, "Succeeded")]);
    }

    #[test]
    fn a_revision_replaced_mid_rollout_is_superseded_and_history_keeps_the_limit_and_the_serving_one()
     {
        let settings = Settings {
            history_limit: 3,
            ..Settings::default()
        };
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), settings, at(0));
        rollout(&mut status, &Health::Healthy, settings, at(1));
        for (second, bundle) in [(2, "v2"), (3, "v3"), (4, "v4"), (5, "v5")] {
            applied(&mut status, content(bundle), settings, at(second));
        }
        assert_eq!(
            outcomes(&status),
            vec![(1, "Succeeded"), (4, "Superseded"), (5, "RollingOut")],
            "the serving revision 1 is kept; the oldest others go"
        );
        assert_eq!(status.serving_revision, Some(1));
    }

    #[test]
    fn a_blocked_revision_gives_way_to_the_serving_one_once_per_generation_when_the_class_asks() {
        let asks = Settings {
            rollback_on_failure: true,
            ..Settings::default()
        };
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), asks, at(0));
        rollout(&mut status, &Health::Healthy, asks, at(1));
        applied(&mut status, content("v2"), asks, at(2));
        let stuck = Health::PastDeadline("Deployment/n/web: pods unschedulable".into());
        rollout(&mut status, &stuck, asks, at(3));
        assert_eq!(
            decide_rollback(&status, Settings::default(), 2),
            None,
            "only when the class asks"
        );
        let decided = decide_rollback(&status, asks, 2).expect("rolls back");
        assert_eq!((decided.from, decided.to, decided.generation), (2, 1, 2));
        assert_eq!(decided.state, RollbackState::RolledBack);
        assert!(
            decided
                .message
                .contains("revision 2 (Bundle v2) did not roll out")
                && decided.message.contains("pods unschedulable")
                && decided.message.contains("revision 1's content (Bundle v1)"),
            "{}",
            decided.message
        );
        status.automatic_rollback = Some(decided);
        assert_eq!(
            decide_rollback(&status, asks, 2),
            None,
            "once per generation"
        );
        assert_eq!(rollback_target(&status, 2).map(|r| r.number), Some(1));
        assert_eq!(
            rollback_target(&status, 3),
            None,
            "a new spec ends the rollback"
        );
        // The rollback's content, applied, is a revision of its own that
        // replaces the blocked one.
        let again = Content {
            approved_by: "rollback to revision 1, under its approval (alice)",
            ..content("v1")
        };
        assert_eq!(applied(&mut status, again, asks, at(4)), 3);
        assert_eq!(
            outcomes(&status),
            vec![(1, "Succeeded"), (2, "Superseded"), (3, "RollingOut")]
        );
        // A rollback that could not be made is said, and not tried again.
        rollback_not_possible(&mut status, "the content is gone");
        let recorded = status.automatic_rollback.clone().unwrap();
        assert_eq!(recorded.state, RollbackState::NotPossible);
        assert!(
            recorded
                .message
                .ends_with("is not possible: the content is gone")
        );
        assert_eq!(rollback_target(&status, 2), None);
        assert_eq!(decide_rollback(&status, asks, 2), None);
    }

    #[test]
    fn nothing_rolls_back_without_a_revision_that_served_before() {
        let asks = Settings {
            rollback_on_failure: true,
            ..Settings::default()
        };
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), asks, at(0));
        let stuck = Health::Failing("Deployment/n/web failed".into());
        rollout(&mut status, &stuck, asks, at(1));
        assert_eq!(outcomes(&status), vec![(1, "Blocked")]);
        assert_eq!(decide_rollback(&status, asks, 1), None, "a first install");
        // A rollout that is merely slow is no failure.
        applied(&mut status, content("v2"), asks, at(2));
        rollout(&mut status, &Health::Healthy, asks, at(3));
        applied(&mut status, content("v3"), asks, at(4));
        rollout(&mut status, &Health::Settling("pods".into()), asks, at(5));
        assert_eq!(decide_rollback(&status, asks, 3), None);
    }

    #[test]
    fn the_revision_a_rollback_runs_again_is_kept_past_the_history_limit() {
        let settings = Settings {
            history_limit: 2,
            ..Settings::default()
        };
        let mut status = InstanceStatus::default();
        applied(&mut status, content("v1"), settings, at(0));
        rollout(&mut status, &Health::Healthy, settings, at(1));
        applied(&mut status, content("v2"), settings, at(2));
        rollout(&mut status, &Health::Healthy, settings, at(3));
        status.automatic_rollback = Some(AutomaticRollback {
            from: 3,
            to: 1,
            generation: 1,
            state: RollbackState::RolledBack,
            message: String::new(),
        });
        applied(&mut status, content("v3"), settings, at(4));
        assert_eq!(
            outcomes(&status),
            vec![(1, "Succeeded"), (2, "Succeeded"), (3, "RollingOut")],
            "the rollback's revision 1, the serving 2 and the new 3 all stay: the limit is overrun by one"
        );
        status.automatic_rollback = None;
        applied(&mut status, content("v4"), settings, at(5));
        assert_eq!(
            outcomes(&status),
            vec![(2, "Succeeded"), (4, "RollingOut")],
            "without the rollback the limit holds again"
        );
    }

    #[test]
    fn class_parameters_are_read_strictly() {
        let read = |value: serde_json::Value| Settings::from_parameters(value.as_object());
        assert_eq!(read(serde_json::json!({})), Ok(Settings::default()));
        let chosen =
            read(serde_json::json!({"revisionHistoryLimit": 3, "progressDeadline": "2m"})).unwrap();
        assert_eq!(chosen.history_limit, 3);
        assert_eq!(chosen.progress_deadline, Duration::from_secs(120));
        assert!(read(serde_json::json!({"revisionHistoryLimit": 1000})).is_err());
        assert!(read(serde_json::json!({"progressDeadline": "tomorrow"})).is_err());
        assert!(
            read(serde_json::json!({"rollbackOnFailure": true}))
                .unwrap()
                .rollback_on_failure
        );
        assert!(read(serde_json::json!({"rollbackOnFailure": "yes"})).is_err());
    }
}
