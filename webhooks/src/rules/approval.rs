//! The Approved guard: changing an Instance's `Approved` condition needs the
//! `approve` verb on `instances` (provisioners' service accounts hold it, and
//! whoever an admin binds `pakket-instance-approver` to).
//!
//! A change is a different `status` or `reason`, or the condition appearing
//! or disappearing. Message, timestamps and observedGeneration are not: the
//! runtime refreshes them on every pass, and they decide nothing. So a status
//! write that leaves approval alone costs no SubjectAccessReview.

use pakket_api::{ConditionType, Instance};

use super::Permission;
use crate::review::Requester;

/// What decides approval: the condition's status and reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approval {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The machine-readable reason, e.g. `ApprovedByUser`.
    pub reason: String,
}

impl std::fmt::Display for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.status, self.reason)
    }
}

/// A change to the Approved condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalChange {
    /// Before; `None` when the condition was absent.
    pub from: Option<Approval>,
    /// After; `None` when the condition is removed.
    pub to: Option<Approval>,
}

/// The Approved condition's status and reason, if the Instance has one.
pub fn approval_of(instance: &Instance) -> Option<Approval> {
    instance
        .condition(ConditionType::Approved)
        .map(|condition| Approval {
            status: condition.status.clone(),
            reason: condition.reason.clone(),
        })
}

/// The change this write makes to the Approved condition, if any. `old` is
/// `None` on CREATE.
pub fn change(old: Option<&Instance>, new: &Instance) -> Option<ApprovalChange> {
    let from = old.and_then(approval_of);
    let to = approval_of(new);
    (from != to).then_some(ApprovalChange { from, to })
}

/// The permission changing an Instance's approval needs.
pub fn permission(instance: &str) -> Permission {
    Permission {
        verb: "approve",
        resource: "instances",
        name: instance.to_owned(),
    }
}

/// Why an approval change is refused: names the user, the Instance, the
/// change, the verb and the rule that grants it.
pub fn denial(requester: &Requester, instance: &str, change: &ApprovalChange) -> String {
    let show = |approval: &Option<Approval>| match approval {
        Some(approval) => approval.to_string(),
        None => "absent".to_owned(),
    };
    let permission = permission(instance);
    format!(
        "Instance {instance:?}: {requester} may not change the Approved condition \
         (from {from} to {to}): that needs {described}; an admin can grant it with a ClusterRole \
         rule {{apiGroups: [{group}], resources: [instances], verbs: [approve]}} (see the example \
         ClusterRole pakket-instance-approver) bound to the user",
        from = show(&change.from),
        to = show(&change.to),
        described = permission.describe(),
        group = pakket_api::GROUP,
    )
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use pakket_api::condition::{self, ConditionStatus};
    use pakket_api::{InstanceStatus, Reason};

    use super::*;

    fn instance(conditions: &[(Reason, ConditionStatus, &str)]) -> Instance {
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
        instance.status = Some(status);
        instance
    }

    #[test]
    fn refreshing_message_or_other_conditions_is_no_change() {
        let old = instance(&[
            (Reason::ApprovalPending, ConditionStatus::False, "waiting"),
            (Reason::Unpacking, ConditionStatus::False, "pulling"),
        ]);
        let new = instance(&[
            (
                Reason::ApprovalPending,
                ConditionStatus::False,
                "still waiting",
            ),
            (Reason::UnpackSucceeded, ConditionStatus::True, "done"),
        ]);
        assert_eq!(change(Some(&old), &new), None);
    }

    #[test]
    fn approving_denying_adding_and_removing_are_changes() {
        let pending = instance(&[(Reason::ApprovalPending, ConditionStatus::False, "")]);
        let approved = instance(&[(Reason::ApprovedByUser, ConditionStatus::True, "")]);
        let denied = instance(&[(Reason::ApprovalDenied, ConditionStatus::False, "")]);
        let none = instance(&[]);
        let approval = |reason: &str, status: &str| Approval {
            status: status.into(),
            reason: reason.into(),
        };
        assert_eq!(
            change(Some(&pending), &approved),
            Some(ApprovalChange {
                from: Some(approval("ApprovalPending", "False")),
                to: Some(approval("ApprovedByUser", "True")),
            })
        );
        // Same status, new reason: still a decision someone made.
        assert!(change(Some(&pending), &denied).is_some());
        assert!(change(Some(&approved), &none).unwrap().to.is_none());
        assert!(change(None, &approved).unwrap().from.is_none());
        assert_eq!(change(None, &none), None);
    }

    #[test]
    fn a_denial_names_user_instance_change_and_verb() {
        let message = denial(
            &Requester::named("bob", &[]),
            "hello",
            &ApprovalChange {
                from: None,
                to: Some(Approval {
                    status: "True".into(),
                    reason: "ApprovedByUser".into(),
                }),
            },
        );
        assert!(message.starts_with(r#"Instance "hello": user "bob" may not change the Approved condition (from absent to True/ApprovedByUser)"#), "{message}");
        assert!(
            message.contains(r#"verb "approve" on instances.core.pakket.dev/hello"#),
            "{message}"
        );
        assert!(message.contains("verbs: [approve]"), "{message}");
    }
}
