//! The Approved guard: changing what decides an Instance's approval needs
//! the `approve` verb on `instances` (provisioners' service accounts hold
//! it, and whoever an admin binds `pakket-instance-approver` to).
//!
//! What decides approval is [`ApprovalState`], the one definition the
//! runtime installs by: the `Approved` condition's status and reason, and
//! `status.approval` (the Bundle and digest approved). Message, timestamps
//! and observedGeneration are not part of it: the runtime refreshes them on
//! every pass and they decide nothing, so a status write that leaves
//! approval alone costs no SubjectAccessReview, and moving them approves
//! nothing.

use pakket_api::{ApprovalState, Instance};

use super::Permission;
use crate::review::Requester;

/// A change to what decides approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalChange {
    /// Before (empty on CREATE).
    pub from: ApprovalState,
    /// After.
    pub to: ApprovalState,
}

/// The change this write makes to what decides approval, if any. `old` is
/// `None` on CREATE.
pub fn change(old: Option<&Instance>, new: &Instance) -> Option<ApprovalChange> {
    let from = old.map(ApprovalState::of).unwrap_or_default();
    let to = ApprovalState::of(new);
    (from != to).then_some(ApprovalChange { from, to })
}

/// Whether this write changes what an automatic rollback installs from
/// (the revisions, the serving one, the rollback in force): the runtime
/// applies a revision's content again under the approval it had, so that
/// record is as much authority as the approval itself.
pub fn rollback_record_changed(old: Option<&Instance>, new: &Instance) -> bool {
    pakket_api::rollback_record(old.and_then(|old| old.status.as_ref()))
        != pakket_api::rollback_record(new.status.as_ref())
}

/// Why a change of the revisions is refused.
pub fn rollback_denial(requester: &Requester, instance: &str) -> String {
    let permission = permission(instance);
    format!(
        "Instance {instance:?}: {requester} may not change status.revisions, \
         status.servingRevision or status.automaticRollback: the runtime applies a revision's \
         content again under the approval it had, so changing them needs {described}, as \
         changing an approval does; they are the runtime's to write",
        described = permission.describe(),
    )
}

/// The permission changing an Instance's approval needs.
pub fn permission(instance: &str) -> Permission {
    Permission::pakket("approve", "instances", instance)
}

/// Why an approval change is refused: names the user, the Instance, the
/// change, the verb and the rule that grants it.
pub fn denial(requester: &Requester, instance: &str, change: &ApprovalChange) -> String {
    let permission = permission(instance);
    format!(
        "Instance {instance:?}: {requester} may not change the Approved condition \
         (from {from} to {to}): that needs {described}; an admin can grant it with a ClusterRole \
         rule {{apiGroups: [{group}], resources: [instances], verbs: [approve]}} (see the example \
         ClusterRole pakket-instance-approver) bound to the user",
        from = change.from.describe(),
        to = change.to.describe(),
        described = permission.describe(),
        group = pakket_api::GROUP,
    )
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use pakket_api::condition::{self, ConditionStatus};
    use pakket_api::{ApprovedContent, InstanceStatus, Reason};

    use super::*;

    fn instance(conditions: &[(Reason, ConditionStatus, &str)], digest: Option<&str>) -> Instance {
        let mut instance: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": "hello"},
            "spec": {"class": "plain", "bundle": {"name": "hello-v1"}},
        }))
        .unwrap();
        let mut status = InstanceStatus::default();
        for (reason, state, message) in conditions {
            condition::set(
                &mut status.conditions,
                condition::new(*reason, *state, *message, Some(1), Timestamp::UNIX_EPOCH),
            );
        }
        status.approval = digest.map(|digest| ApprovedContent {
            bundle: "hello-v1".into(),
            digest: digest.into(),
            approved_by: "alice".into(),
            rendered: None,
            generation: None,
            judged: None,
        });
        instance.status = Some(status);
        instance
    }

    #[test]
    fn refreshing_message_generation_or_other_conditions_is_no_change() {
        let old = instance(
            &[
                (Reason::ApprovalPending, ConditionStatus::False, "waiting"),
                (Reason::Unpacking, ConditionStatus::False, "pulling"),
            ],
            None,
        );
        let mut new = instance(
            &[
                (
                    Reason::ApprovalPending,
                    ConditionStatus::False,
                    "still waiting",
                ),
                (Reason::UnpackSucceeded, ConditionStatus::True, "done"),
            ],
            None,
        );
        new.status.as_mut().unwrap().conditions[0].observed_generation = Some(9);
        assert_eq!(change(Some(&old), &new), None);
    }

    #[test]
    fn approving_denying_removing_and_moving_the_approved_content_are_changes() {
        let pending = instance(
            &[(Reason::ApprovalPending, ConditionStatus::False, "")],
            None,
        );
        let approved = instance(
            &[(Reason::ApprovedByUser, ConditionStatus::True, "")],
            Some("sha256:1"),
        );
        let denied = instance(
            &[(Reason::ApprovalDenied, ConditionStatus::False, "")],
            None,
        );
        let none = instance(&[], None);
        assert!(change(Some(&pending), &approved).is_some());
        assert!(change(Some(&pending), &denied).is_some());
        assert!(change(Some(&approved), &none).is_some());
        assert!(change(None, &approved).is_some());
        assert_eq!(change(None, &none), None);
        // Only the content moves: still a decision someone made.
        let other_digest = instance(
            &[(Reason::ApprovedByUser, ConditionStatus::True, "")],
            Some("sha256:2"),
        );
        assert!(change(Some(&approved), &other_digest).is_some());
        let pending_with_content = instance(
            &[(Reason::ApprovalPending, ConditionStatus::False, "")],
            Some("sha256:2"),
        );
        assert!(change(Some(&pending), &pending_with_content).is_some());
    }

    #[test]
    fn a_denial_names_user_instance_change_and_verb() {
        let pending = instance(
            &[(Reason::ApprovalPending, ConditionStatus::False, "")],
            None,
        );
        let approved = instance(
            &[(Reason::ApprovedByUser, ConditionStatus::True, "")],
            Some("sha256:1"),
        );
        let message = denial(
            &Requester::named("bob", &[]),
            "hello",
            &change(Some(&pending), &approved).unwrap(),
        );
        assert!(message.starts_with(r#"Instance "hello": user "bob" may not change the Approved condition (from False/ApprovalPending to True/ApprovedByUser for Bundle hello-v1 at sha256:1)"#), "{message}");
        assert!(
            message.contains(r#"verb "approve" on instances.core.pakket.dev/hello"#),
            "{message}"
        );
        assert!(message.contains("verbs: [approve]"), "{message}");
    }
}
