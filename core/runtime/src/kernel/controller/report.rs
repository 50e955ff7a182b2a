//! An Instance's status as one reconcile learns it, written whole at the end,
//! and the Event that says what changed.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use pakket_api::cause;
use pakket_api::condition::{self, ConditionStatus};
use pakket_api::{Cause, ConditionType, Instance, InstanceStatus, Reason};
use pakket_api::{Standing, readiness};

use crate::apply::FIELD_MANAGER;

/// Reasons an Event reports as a warning: something an admin should look at.
const WARNING_REASONS: [Reason; 10] = [
    Reason::ApprovalDenied,
    Reason::RolledBack,
    Reason::Blocked,
    Reason::ProgressDeadlineExceeded,
    Reason::ObjectsDrifted,
    Reason::UnpackFailed,
    Reason::InstallFailed,
    Reason::InvalidConfig,
    Reason::DependenciesMissing,
    Reason::ObjectsUnhealthy,
];

/// What became of a status write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusWrite {
    /// The new status is stored.
    Stored,
    /// The Instance already had this status; nothing was sent.
    Unchanged,
    /// The Instance changed since it was read; the write was dropped and
    /// the reconcile should run again soon.
    Conflict,
}

/// The conditions and facts a reconcile learns, written whole at the end.
pub struct Report {
    /// The status being built.
    pub status: InstanceStatus,
    generation: Option<i64>,
    /// The Instance as read (or as a progress write left it); the write is
    /// conditional on its resourceVersion.
    instance: Instance,
    /// The conditions as the reconcile found them: the final write's Event
    /// tells what changed since then, progress writes included.
    found: Vec<Condition>,
    /// Events published only once this status is stored (a person's
    /// decision, whose record `decisionTold` is in it; an automatic
    /// rollback decided): told once, never again by a retry after a lost
    /// write.
    pub after_write: Vec<Event>,
    /// The status of the Bundle object the content came from, when this
    /// reconcile has news for it: written by the one writer, just before
    /// the Instance's own status.
    pub bundle_status: Option<PendingBundleStatus>,
    /// The resourceVersion of the last status this reconcile wrote (a
    /// progress write's, until the final write).
    written: Option<String>,
}

/// A Bundle object's status to write (its name, and the whole status).
#[derive(Clone, Debug, PartialEq)]
pub struct PendingBundleStatus {
    /// The Bundle.
    pub name: String,
    /// Its new status.
    pub status: pakket_api::BundleStatus,
}

impl Report {
    /// Starts from the status the Instance has now.
    pub fn new(instance: &Instance) -> Self {
        let status = instance.status.clone().unwrap_or_default();
        Self {
            found: status.conditions.clone(),
            status,
            generation: instance.metadata.generation,
            instance: instance.clone(),
            after_write: Vec::new(),
            bundle_status: None,
            written: None,
        }
    }

    /// Sets the condition `reason` belongs to, with no cause beside it.
    pub fn set(&mut self, reason: Reason, status: ConditionStatus, message: impl Into<String>) {
        let condition = condition::new(reason, status, message, self.generation, Timestamp::now());
        condition::set(&mut self.status.conditions, condition);
        cause::clear_cause(&mut self.status.causes, reason);
    }

    /// Sets the condition `reason` belongs to, and beside it what tools
    /// read instead of the message: the kind of refusal, its objects, the
    /// policy rule.
    pub fn set_because(
        &mut self,
        reason: Reason,
        status: ConditionStatus,
        message: impl Into<String>,
        because: Cause,
    ) {
        self.set(reason, status, message);
        cause::set_cause(&mut self.status.causes, reason, because);
    }

    /// The `Approved` condition as it stands.
    pub fn approval(&self) -> Option<&Condition> {
        condition::find(&self.status.conditions, ConditionType::Approved)
    }

    /// Whether `bundle`'s objects are installed, as the status read says.
    pub fn installed(&self, bundle: &str) -> bool {
        self.status.active_bundle.as_deref() == Some(bundle)
            && condition::find(&self.status.conditions, ConditionType::Installed).is_some_and(
                // Rolled back: the earlier revision's objects are installed.
                |c| c.status == "True" || c.reason == Reason::RolledBack.as_str(),
            )
    }

    /// Writes `Progressing` as `progress` says (True only while rolling out)
    /// and, once the rollout passed its deadline,
    /// `Healthy=False/ProgressDeadlineExceeded`; returns whether it did.
    pub fn tell_progress(&mut self, progress: &super::revision::Progress) -> bool {
        let status = if progress.reason == Reason::RollingOut {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        self.set(progress.reason, status, progress.message.clone());
        if progress.past_deadline {
            self.set(
                Reason::ProgressDeadlineExceeded,
                ConditionStatus::False,
                progress.message.clone(),
            );
        }
        progress.past_deadline
    }

    /// Whether an earlier apply of this Instance failed (its `Installed`
    /// condition, as read, says `InstallFailed`).
    pub fn failed_before(&self) -> bool {
        condition::find(&self.found, ConditionType::Installed)
            .is_some_and(|c| c.reason == Reason::InstallFailed.as_str())
    }

    /// Whether the status read describes the Instance's current generation.
    pub fn observed_current(&self) -> bool {
        self.instance
            .status
            .as_ref()
            .is_some_and(|status| status.observed_generation == self.generation)
    }

    /// Every condition type is always present, each with a reason.
    fn fill_missing(&mut self) {
        let defaults = [
            (
                ConditionType::Approved,
                Reason::ApprovalPending,
                ConditionStatus::False,
                "not evaluated yet",
            ),
            (
                ConditionType::Unpacked,
                Reason::UnpackPending,
                ConditionStatus::False,
                "not unpacked yet",
            ),
            (
                ConditionType::Installed,
                Reason::InstallPending,
                ConditionStatus::False,
                "nothing applied yet",
            ),
            (
                ConditionType::Healthy,
                Reason::HealthUnknown,
                ConditionStatus::Unknown,
                "nothing installed yet",
            ),
        ];
        for (kind, reason, status, message) in defaults {
            if condition::find(&self.status.conditions, kind).is_none() {
                self.set(reason, status, message);
            }
        }
    }

    /// `Ready`, `Reconciling` and `Stalled` as the four conditions now
    /// say ([`readiness::of_instance`]), so GitOps tools read the same
    /// verdict `kubectl instance why` gives.
    fn settle_readiness(&mut self) {
        let deleting = self.instance.metadata.deletion_timestamp.is_some();
        if let Some(standing) = readiness::of_status(&self.status, deleting) {
            readiness::write(
                &mut self.status.conditions,
                self.generation,
                &standing,
                Timestamp::now(),
            );
        }
    }

    /// Readies the Event for a person's decision the provisioner has not
    /// told yet ([`super::decision::tell`]), recorded in the status this
    /// report writes and published once that status is stored.
    pub fn tell_decision(&mut self, instance: &Instance) {
        if let Some(event) = super::decision::tell(instance, &mut self.status) {
            self.after_write.push(event);
        }
    }

    /// Writes the whole status, if it changed, but only over the Instance
    /// this reconcile read: if anyone changed it meanwhile (an approver
    /// setting `Approved`, say), the write is refused with a conflict and
    /// dropped, and the watch event of that change brings a fresh reconcile.
    /// Without this a reconcile that started before an approval would write
    /// it away. A written change is also published as one Event.
    pub async fn write(
        mut self,
        instances: &Api<Instance>,
        events: &super::events::Events,
    ) -> Result<(StatusWrite, Option<String>), kube::Error> {
        let revision = self.status.revisions.last().map(|newest| newest.number);
        let event = change_event(&self.found, &self.status.conditions, revision);
        self.fill_missing();
        super::decision::settle(&mut self.status);
        self.status.observed_generation = self.generation;
        self.settle_readiness();
        if self.instance.status.as_ref() == Some(&self.status) {
            return Ok((StatusWrite::Unchanged, self.written));
        }
        let after_write = std::mem::take(&mut self.after_write);
        let name = self.instance.name_any();
        let mut updated = self.instance;
        updated.status = Some(self.status);
        updated.metadata.managed_fields = None;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        let written = match instances.replace_status(&name, &params, &updated).await {
            Ok(written) => written.resource_version(),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(
                    instance = name,
                    "status changed meanwhile; reconciling again"
                );
                return Ok((StatusWrite::Conflict, None));
            }
            Err(error) => return Err(error),
        };
        if let Some(event) = event {
            events.publish(&updated, event);
        }
        for event in after_write {
            events.publish(&updated, event);
        }
        Ok((StatusWrite::Stored, written))
    }

    /// The Instance's key for what the context keeps about it (its UID).
    pub fn key(&self) -> String {
        self.instance
            .uid()
            .unwrap_or_else(|| self.instance.name_any())
    }
}

impl Report {
    /// Writes the status so far with `Installed` saying how far the apply
    /// under way has come, so a long apply is visible while it runs. The
    /// final [`Report::write`] then goes over this write, not the Instance
    /// as first read. No Event: the final write's Event tells the whole
    /// change. `false` when the Instance changed meanwhile (the final write
    /// will conflict and the reconcile run again) or the write failed:
    /// progress is then not written again by this reconcile.
    pub async fn write_progress(&mut self, instances: &Api<Instance>, message: String) -> bool {
        self.set(Reason::Installing, ConditionStatus::False, message);
        self.fill_missing();
        self.status.observed_generation = self.generation;
        self.settle_readiness();
        let mut updated = self.instance.clone();
        updated.status = Some(self.status.clone());
        updated.metadata.managed_fields = None;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match instances
            .replace_status(&self.instance.name_any(), &params, &updated)
            .await
        {
            Ok(written) => {
                self.written = written.resource_version();
                self.instance = written;
                true
            }
            Err(error) => {
                tracing::debug!(instance = %self.instance.name_any(), %error, "progress not written");
                false
            }
        }
    }
}

/// Says `Ready=False/Deleting` on an Instance being deleted, once: its
/// uninstall can take a while (CRDs wait for their custom resources), and
/// `kubectl wait --for=condition=Ready` must not find the `True` of
/// before. A merge patch of the conditions alone, not conditional on the
/// resourceVersion: the deletion itself changed the Instance after the
/// cache read it, and nothing else writes its status once it is deleted.
///
/// Returns the Instance as written, so the finalizer's removal after the
/// uninstall (conditional on the resourceVersion) is not refused for this
/// very write; `None` when nothing was written.
pub async fn tell_deleting(
    instances: &Api<Instance>,
    instance: &Instance,
) -> Result<Option<Instance>, kube::Error> {
    let mut conditions = instance
        .status
        .as_ref()
        .map(|status| status.conditions.clone())
        .unwrap_or_default();
    // Never reconciled (no conditions) or told already: nothing to say.
    if conditions.is_empty() || super::deleting::told(instance) {
        return Ok(None);
    }
    let standing = Standing::deleting();
    let generation = instance.metadata.generation;
    readiness::write(&mut conditions, generation, &standing, Timestamp::now());
    // Setting the deletion timestamp moved the generation on.
    let patch = serde_json::json!({
        "status": { "conditions": conditions, "observedGeneration": generation },
    });
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    match instances
        .patch_status(&instance.name_any(), &params, &Patch::Merge(&patch))
        .await
    {
        Ok(written) => Ok(Some(written)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

/// One Event for the conditions whose status or reason changed: the reason
/// of the furthest step that moved (so `kubectl get events` reads like the
/// Instance's progress), a warning if any step failed, and every changed
/// condition's message. One Event per change, not per condition, keeps the
/// apiserver's load per Instance low. The action names the newest
/// `revision`: Events of one kind about one Instance are counted as one
/// series (kube's recorder keys them without their note), so without it
/// revision 2's "rolled out" would read as a repeat of revision 1's.
fn change_event(before: &[Condition], after: &[Condition], revision: Option<i64>) -> Option<Event> {
    let changed: Vec<&Condition> = after
        .iter()
        .filter(|condition| {
            !before.iter().any(|old| {
                old.type_ == condition.type_
                    && old.status == condition.status
                    && old.reason == condition.reason
            })
        })
        .collect();
    // The four steps name the Event when one of them moved; Progressing
    // and Drifted (which follow them in the list) only when alone.
    let step = |condition: &&&Condition| {
        ConditionType::INSTANCE
            .iter()
            .any(|kind| kind.as_str() == condition.type_)
    };
    let last = changed.iter().rev().find(step).or_else(|| changed.last())?;
    let warning = changed.iter().any(|condition| {
        WARNING_REASONS
            .iter()
            .any(|reason| reason.as_str() == condition.reason)
    });
    let note = changed
        .iter()
        .map(|condition| format!("{}: {}", condition.type_, condition.message))
        .collect::<Vec<_>>()
        .join("; ");
    Some(Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: last.reason.clone(),
        note: Some(truncate(note, 1024)),
        action: match revision {
            Some(number) => format!("Reconcile revision {number}"),
            None => "Reconcile".into(),
        },
        secondary: None,
    })
}

/// Events refuse notes over 1 KiB.
fn truncate(mut text: String, limit: usize) -> String {
    if text.len() > limit {
        let mut end = limit - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(reason: Reason, status: ConditionStatus, message: &str) -> Condition {
        condition::new(reason, status, message, Some(1), Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn an_event_names_the_furthest_change_and_lists_every_changed_message() {
        let before = vec![condition(
            Reason::ApprovalPending,
            ConditionStatus::False,
            "waiting",
        )];
        let after = vec![
            condition(Reason::ApprovedByUser, ConditionStatus::True, "by alice"),
            condition(Reason::InstallSucceeded, ConditionStatus::True, "applied 3"),
        ];
        let event = change_event(&before, &after, None).expect("changes make an event");
        assert_eq!(event.reason, "InstallSucceeded");
        assert_eq!(event.type_, EventType::Normal);
        assert_eq!(
            event.note.as_deref(),
            Some("Approved: by alice; Installed: applied 3")
        );
    }

    #[test]
    fn a_step_names_the_event_over_progressing_which_names_it_only_alone() {
        let before = vec![condition(
            Reason::ObjectsProgressing,
            ConditionStatus::Unknown,
            "waiting",
        )];
        let after = vec![
            condition(Reason::ObjectsHealthy, ConditionStatus::True, "all 2"),
            condition(
                Reason::Succeeded,
                ConditionStatus::False,
                "revision 1 rolled out",
            ),
        ];
        let event = change_event(&before, &after, None).unwrap();
        assert_eq!(event.reason, "ObjectsHealthy");
        assert!(
            event
                .note
                .unwrap()
                .ends_with("Progressing: revision 1 rolled out")
        );
        let blocked = vec![
            after[0].clone(),
            condition(Reason::Blocked, ConditionStatus::False, "past its deadline"),
        ];
        let event = change_event(&after, &blocked, None).unwrap();
        assert_eq!(event.reason, "Blocked");
        assert_eq!(event.type_, EventType::Warning);
    }

    #[test]
    fn each_revision_s_events_are_a_series_of_their_own() {
        let before = vec![condition(
            Reason::RollingOut,
            ConditionStatus::Unknown,
            "rolling",
        )];
        let after = vec![condition(
            Reason::Succeeded,
            ConditionStatus::False,
            "rolled out",
        )];
        let first = change_event(&before, &after, Some(1)).unwrap();
        let second = change_event(&before, &after, Some(2)).unwrap();
        assert_eq!(first.reason, second.reason);
        assert_ne!(first.action, second.action);
        assert_eq!(second.action, "Reconcile revision 2");
    }

    #[test]
    fn a_failure_among_the_changes_makes_a_warning() {
        let after = vec![
            condition(Reason::UnpackFailed, ConditionStatus::False, "no registry"),
            condition(Reason::InstallPending, ConditionStatus::False, "waiting"),
        ];
        let event = change_event(&[], &after, None).expect("changes make an event");
        assert_eq!(event.type_, EventType::Warning);
    }

    #[test]
    fn unchanged_conditions_make_no_event_even_with_new_messages() {
        let before = vec![condition(
            Reason::ObjectsHealthy,
            ConditionStatus::True,
            "all 2",
        )];
        let after = vec![condition(
            Reason::ObjectsHealthy,
            ConditionStatus::True,
            "all 3",
        )];
        assert!(change_event(&before, &after, None).is_none());
    }

    #[test]
    fn long_notes_are_cut_at_a_character_boundary() {
        let text = "é".repeat(600);
        let cut = truncate(text, 1024);
        assert!(cut.len() <= 1024 && cut.ends_with("..."));
    }
}
