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
use pakket_api::{ApprovalState, ConditionType, Instance};

use super::report::Report;

/// A decision older than this, first seen after a restart, is not told.
const RECENT: Duration = Duration::from_secs(120);

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

/// Readies an Event if `instance` carries a person's decision the
/// provisioner has not told yet, and records it in `report`'s status; the
/// Event goes out once that status is stored.
pub fn tell(instance: &Instance, report: &mut Report) {
    let Some(words) = words(instance) else {
        return;
    };
    let told = told_digest(instance, &words);
    let earlier = instance
        .status
        .as_ref()
        .and_then(|status| status.decision_told.clone());
    if earlier.as_deref() == Some(told.as_str()) {
        return;
    }
    report.status.decision_told = Some(told);
    if earlier.is_none() && !recent(instance) {
        return;
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
    // Published once the status recording it is stored.
    report.after_write = Some(event);
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
