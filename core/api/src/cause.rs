//! What a condition's reason alone does not say: which kind of refusal,
//! which objects, which policy rule. The runtime writes a [`Cause`] beside
//! the condition it explains (`status.causes`), and tools such as
//! `kubectl instance why` read it instead of the message, whose wording is
//! for people and may change in any release.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::condition::Reason;

/// Most objects one cause lists; the condition's message names them all.
pub const CAUSE_OBJECTS_MAX: usize = 20;

/// One condition's cause, in a closed vocabulary.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    /// The condition it explains (`Approved`, `Unpacked`, `Installed`,
    /// `Healthy`).
    #[serde(rename = "type")]
    #[schemars(length(max = 64))]
    pub type_: String,
    /// That condition's reason when the cause was written. A cause whose
    /// condition has another reason since says nothing about it.
    #[schemars(length(max = 64))]
    pub reason: String,
    /// What it is.
    pub kind: CauseKind,
    /// The objects it concerns, at most [`CAUSE_OBJECTS_MAX`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub objects: Vec<CauseObject>,
    /// The Instance that holds what this one wanted (an object, a Bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub owner: Option<String>,
    /// The ApprovalPolicy that decided, and by which rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyVerdict>,
}

/// The kinds of cause, each with its own advice.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum CauseKind {
    /// An object the content holds exists and Pakket does not manage it:
    /// someone who may write it has to hand it over.
    ObjectNotManaged,
    /// An object the content holds belongs to another Instance (`owner`).
    ObjectOfAnotherInstance,
    /// The Bundle named is another Instance's (made from its embedded
    /// spec), or a Bundle object has the name an embedded spec asks for.
    BundleOfAnotherInstance,
    /// The source serves other bytes than the Bundle pinned.
    ContentChangedAtSource,
    /// A ref points at an internal address the class does not allow.
    InternalAddress,
    /// The content itself is wrong (its archive, its size, how many
    /// objects), not the way to it.
    ContentInvalid,
    /// The last approval covered other content or another request.
    ApprovalOfOtherContent,
    /// No webhook sealed the requester record for this spec, so nothing is
    /// done on the requester's behalf without a person.
    RequesterUnsealed,
    /// An ApprovalPolicy rule refused the request (`policy`).
    PolicyRefused,
    /// An ApprovalPolicy handed the request to a person (`policy`).
    PolicyAsksPerson,
    /// Objects the Instance installed do not work (`objects`).
    ObjectsUnhealthy,
    /// A policy trial (`core.pakket.dev/policy-trial`), never approved:
    /// what a policy would see is kept for `kubectl instance policy test`.
    PolicyTrial,
    /// A policy trial whose inputs could not be computed (the message
    /// says why): nothing is kept.
    PolicyTrialFailed,
}

impl CauseKind {
    /// Every kind, for tests and for tools that list them.
    pub const ALL: [CauseKind; 13] = [
        Self::ObjectNotManaged,
        Self::ObjectOfAnotherInstance,
        Self::BundleOfAnotherInstance,
        Self::ContentChangedAtSource,
        Self::InternalAddress,
        Self::ContentInvalid,
        Self::ApprovalOfOtherContent,
        Self::RequesterUnsealed,
        Self::PolicyRefused,
        Self::PolicyAsksPerson,
        Self::ObjectsUnhealthy,
        Self::PolicyTrial,
        Self::PolicyTrialFailed,
    ];
}

/// One object a cause concerns.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CauseObject {
    /// `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object.
    #[schemars(length(max = 600))]
    pub object: String,
    /// What is wrong with it, in words (`is not Available`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub problem: Option<String>,
}

/// What an ApprovalPolicy decided.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyVerdict {
    /// The ApprovalPolicy's name.
    #[schemars(length(max = 253))]
    pub name: String,
    /// The rule that decided, counted from 1; absent when no rule matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<u32>,
    /// That rule's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub rule_name: Option<String>,
    /// The rule refused the request (`Deny`), rather than handing it to a
    /// person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
}

impl PolicyVerdict {
    /// `policy P rule N (NAME)`, `policy P rule N` or `policy P`.
    pub fn in_words(&self) -> String {
        match (self.rule, &self.rule_name) {
            (Some(rule), Some(name)) => format!("policy {} rule {rule} ({name})", self.name),
            (Some(rule), None) => format!("policy {} rule {rule}", self.name),
            (None, _) => format!("policy {}", self.name),
        }
    }
}

impl Cause {
    /// A cause of `kind` with nothing more to say; [`set_cause`] fills in
    /// the condition and reason it is written beside (one kind can explain
    /// several: an unsealed record stops an approval and a read).
    pub fn new(kind: CauseKind) -> Self {
        Self {
            type_: String::new(),
            reason: String::new(),
            kind,
            objects: Vec::new(),
            owner: None,
            policy: None,
        }
    }

    /// With these objects (the first [`CAUSE_OBJECTS_MAX`]).
    pub fn with_objects(mut self, objects: impl IntoIterator<Item = CauseObject>) -> Self {
        self.objects = objects.into_iter().take(CAUSE_OBJECTS_MAX).collect();
        self
    }

    /// With the Instance that holds what this one wanted.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// With the ApprovalPolicy's verdict.
    pub fn with_policy(mut self, policy: PolicyVerdict) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Whether it explains `condition` as it stands (its type and reason).
    pub fn explains(&self, condition_type: &str, reason: &str) -> bool {
        self.type_ == condition_type && self.reason == reason
    }
}

/// The cause written with `reason`'s condition, if it still explains it.
pub fn cause_of<'a>(causes: &'a [Cause], condition_type: &str, reason: &str) -> Option<&'a Cause> {
    causes
        .iter()
        .find(|cause| cause.explains(condition_type, reason))
}

/// Sets `cause` for `reason`'s condition, replacing any cause it had.
pub fn set_cause(causes: &mut Vec<Cause>, reason: Reason, mut cause: Cause) {
    let condition_type = reason.condition_type().as_str();
    causes.retain(|old| old.type_ != condition_type);
    cause.type_ = condition_type.to_owned();
    cause.reason = reason.as_str().to_owned();
    causes.push(cause);
}

/// Drops the cause of `reason`'s condition: it was written anew without
/// one.
pub fn clear_cause(causes: &mut Vec<Cause>, reason: Reason) {
    let condition_type = reason.condition_type().as_str();
    causes.retain(|old| old.type_ != condition_type);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_and_written_by_its_name() {
        let names: std::collections::BTreeSet<String> = CauseKind::ALL
            .iter()
            .map(|kind| format!("{kind:?}"))
            .collect();
        assert_eq!(names.len(), CauseKind::ALL.len());
        for kind in CauseKind::ALL {
            let written = serde_json::to_value(kind).unwrap();
            assert_eq!(written, format!("{kind:?}"), "wire name of {kind:?}");
        }
    }

    #[test]
    fn a_cause_explains_its_condition_only_while_the_reason_stands() {
        let mut causes = Vec::new();
        set_cause(
            &mut causes,
            Reason::ApprovalPending,
            Cause::new(CauseKind::PolicyAsksPerson),
        );
        assert!(cause_of(&causes, "Approved", "ApprovalPending").is_some());
        assert!(cause_of(&causes, "Approved", "ApprovedByUser").is_none());
        assert!(cause_of(&causes, "Installed", "ApprovalPending").is_none());
        // A new cause for the same condition replaces the old one.
        set_cause(
            &mut causes,
            Reason::ApprovalDenied,
            Cause::new(CauseKind::PolicyRefused),
        );
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].kind, CauseKind::PolicyRefused);
        clear_cause(&mut causes, Reason::ApprovedByUser);
        assert!(causes.is_empty());
    }

    #[test]
    fn a_verdict_names_its_policy_and_rule() {
        let verdict = PolicyVerdict {
            name: "team-a".into(),
            rule: Some(2),
            rule_name: Some("no-cluster-admin".into()),
            refused: true,
        };
        assert_eq!(
            verdict.in_words(),
            "policy team-a rule 2 (no-cluster-admin)"
        );
        let none_matched = PolicyVerdict {
            rule: None,
            rule_name: None,
            ..verdict
        };
        assert_eq!(none_matched.in_words(), "policy team-a");
    }
}
