//! An Event for each approval or denial a person writes on an Instance.
//!
//! An approver writes the `Approved` condition and `status.approval`
//! directly (`kubectl instance approve`), so the runtime's own status
//! writes never see that change and its change Event would not tell of it.
//! The runtime therefore records, in the Instance's status
//! (`decisionTold`), which decision it last told, and publishes one Event
//! when it sees a new one: who decided, and for which content. The Event
//! comes from the provisioner, so an approver cannot write a misleading one
//! for somebody else. The record lives with the Instance, so a restarted
//! (or newly leading) provisioner tells nothing twice; a decision found
//! with no record at all (an Instance from before the record existed) is
//! told only if it is recent ([`RECENT`]).

use std::time::Duration;

use kube::runtime::events::{Event, EventType};
use pakket_api::{ApprovalState, ConditionType, Instance, InstanceStatus};

/// A decision older than this, first seen after a restart, is not told.
const RECENT: Duration = Duration::from_secs(120);

/// The record while no person's decision stands (approval pending, or a
/// policy's). Conditions keep their transition time to the second, so two
/// decisions a second apart could look alike; a decision that follows a
/// pending state is new whatever its time says.
const UNDECIDED: &str = "undecided";

/// A person's decision in words, or `None` for anything else (pending, a
/// policy's approval: the runtime writes those and its own Event tells).
pub fn words(instance: &Instance) -> Option<String> {
    let state = ApprovalState::of(instance);
    if state.by_person() {
        let content = state.content?;
        return Some(format!(
            "{} approved Bundle {} at {}",
            content.approved_by, content.bundle, content.digest
        ));
    }
    if state.is_denied() {
        let message = instance
            .condition(ConditionType::Approved)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        return Some(format!("approval denied: {message}"));
    }
    None
}

/// The Event for a person's decision on `instance` the provisioner has not
/// told yet, recorded in `status` (the status about to be written); the
/// caller publishes it once that status is stored.
pub fn tell(instance: &Instance, status: &mut InstanceStatus) -> Option<Event> {
    let words = words(instance)?;
    let told = told_digest(instance, &words);
    let earlier = instance
        .status
        .as_ref()
        .and_then(|status| status.decision_told.clone());
    if earlier.as_deref() == Some(told.as_str()) {
        return None;
    }
    status.decision_told = Some(told);
    if earlier.is_none() && !recent(instance) {
        return None;
    }
    let denied = words.starts_with("approval denied");
    let event = Event {
        type_: if denied {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: if denied {
            "ApprovalDenied"
        } else {
            "ApprovedByUser"
        }
        .into(),
        // When it was decided, too: the same person deciding the same thing
        // again is a new decision, told in an Event of its own rather than
        // folded into the first one's count.
        note: Some(
            format!("{words} (decided {})", decided_at(instance))
                .chars()
                .take(1000)
                .collect(),
        ),
        action: "Decide".into(),
        secondary: None,
    };
    Some(event)
}

/// One decision, as recorded: its words and when the `Approved` condition
/// took its status (a person deciding the same thing again, after a
/// change, is a new decision).
fn told_digest(instance: &Instance, words: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(format!("{words}\n{}", decided_at(instance)).as_bytes());
    hex::encode(&digest[..16])
}

/// When the `Approved` condition took its status (RFC 3339), or empty.
fn decided_at(instance: &Instance) -> String {
    instance
        .condition(ConditionType::Approved)
        .map(|c| c.last_transition_time.0.to_string())
        .unwrap_or_default()
}

/// Records, in the status about to be written, that no person's decision
/// stands when none does, so the next one is told even if it carries the
/// same words and second as one told before it.
pub fn settle(status: &mut InstanceStatus) {
    let state = ApprovalState::of_status(status);
    if !state.by_person() && !state.is_denied() && status.decision_told.is_some() {
        status.decision_told = Some(UNDECIDED.to_owned());
    }
}

/// Whether the `Approved` condition changed within [`RECENT`].
fn recent(instance: &Instance) -> bool {
    instance
        .condition(ConditionType::Approved)
        .and_then(|c| {
            jiff::Timestamp::now()
                .since(c.last_transition_time.0)
                .ok()
                .and_then(|span| span.total(jiff::Unit::Second).ok())
        })
        .is_some_and(|seconds| seconds <= RECENT.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use pakket_api::condition::{self, ConditionStatus};
    use pakket_api::{ApprovedContent, Reason};

    use super::*;

    thread_local! {
        /// One second for every condition a test writes.
        static AT: Timestamp = this_second();
    }

    /// This second, as a condition stores it (a recent decision is told).
    fn this_second() -> Timestamp {
        Timestamp::from_second(Timestamp::now().as_second()).unwrap()
    }

    /// An Instance whose `Approved` condition took `reason` at [`this_second`],
    /// with content approved by a person.
    fn decided(reason: Reason, status: ConditionStatus, told: Option<String>) -> Instance {
        let mut instance = super::super::tests::instance(1, None);
        instance.status = Some(InstanceStatus {
            conditions: vec![condition::new(
                reason,
                status,
                "m",
                Some(1),
                AT.with(|at| *at),
            )],
            approval: Some(ApprovedContent {
                bundle: "b".into(),
                digest: "sha256:1".into(),
                approved_by: "alice".into(),
                rendered: None,
                generation: Some(1),
                judged: None,
            }),
            decision_told: told,
            ..InstanceStatus::default()
        });
        instance
    }

    #[test]
    fn a_decision_is_told_once() {
        let approved = decided(Reason::ApprovedByUser, ConditionStatus::True, None);
        let mut status = approved.status.clone().unwrap();
        assert!(
            tell(&approved, &mut status).is_some(),
            "the first sight is told"
        );
        let told = status.decision_told.clone();
        let again = decided(Reason::ApprovedByUser, ConditionStatus::True, told);
        let mut status = again.status.clone().unwrap();
        assert!(
            tell(&again, &mut status).is_none(),
            "the same decision is not told twice"
        );
    }

    #[test]
    fn a_second_decision_after_a_pending_state_is_told_even_within_the_same_second() {
        let approved = decided(Reason::ApprovedByUser, ConditionStatus::True, None);
        let mut told = approved.status.clone().unwrap();
        tell(&approved, &mut told);
        // The runtime asks again (new rights): its status write records
        // that no decision stands.
        let mut pending = decided(
            Reason::ApprovalPending,
            ConditionStatus::False,
            told.decision_told.clone(),
        );
        let status = pending.status.as_mut().unwrap();
        settle(status);
        assert_eq!(status.decision_told.as_deref(), Some(UNDECIDED));
        // A person approves the same content again, the condition keeping
        // the same second: a new decision, told.
        let approved_again = decided(
            Reason::ApprovedByUser,
            ConditionStatus::True,
            status.decision_told.clone(),
        );
        let mut status = approved_again.status.clone().unwrap();
        assert!(
            tell(&approved_again, &mut status).is_some(),
            "the second decision is told"
        );
    }

    #[test]
    fn settling_keeps_a_standing_decision_and_an_absent_record() {
        let mut approved = decided(
            Reason::ApprovedByUser,
            ConditionStatus::True,
            Some("d".into()),
        )
        .status
        .unwrap();
        settle(&mut approved);
        assert_eq!(approved.decision_told.as_deref(), Some("d"));
        let mut unrecorded = decided(Reason::ApprovalPending, ConditionStatus::False, None)
            .status
            .unwrap();
        settle(&mut unrecorded);
        assert_eq!(unrecorded.decision_told, None);
    }
}
