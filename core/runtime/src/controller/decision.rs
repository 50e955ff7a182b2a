//! An Event for each approval or denial a person writes on an Instance.
//!
//! An approver writes the `Approved` condition and `status.approval`
//! directly (`kubectl instance approve`), so the runtime's own status
//! writes never see that change and its change Event would not tell of it.
//! The runtime therefore remembers the last decision it saw on each
//! Instance and publishes one Event when it sees a new one: who decided,
//! and for which content. The Event comes from the provisioner, so an
//! approver cannot write a misleading one for somebody else.
//!
//! What the runtime saw is kept in memory: after a restart, a decision is
//! told again only if it is recent ([`RECENT`]), so a restart does not
//! replay every approval in the cluster.

use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use pakket_api::{ApprovalState, ConditionType, Instance};

use super::context::Context;

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

/// Publishes an Event if `instance` carries a person's decision the
/// runtime has not told yet.
pub fn tell<P>(instance: &Instance, context: &Context<P>) {
    let name = instance.name_any();
    let now = words(instance);
    let earlier = {
        let mut decisions = context.decisions.lock().expect("not poisoned");
        let earlier = decisions.get(&name).cloned();
        match &now {
            Some(words) => decisions.insert(name.clone(), words.clone()),
            None => decisions.remove(&name),
        };
        earlier
    };
    let Some(words) = now else { return };
    if earlier.as_ref() == Some(&words) {
        return;
    }
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
        note: Some(words.chars().take(1000).collect()),
        action: "Decide".into(),
        secondary: None,
    };
    context.events.publish(instance, event);
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
