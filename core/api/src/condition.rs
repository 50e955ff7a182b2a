//! The condition vocabulary: typed condition types and reasons, and the one
//! rule for updating a `metav1.Condition` list.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Every condition type Pakket writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionType {
    /// An Instance may be installed (set by policy or by an approver).
    Approved,
    /// The Bundle's content is unpacked (on Bundles and on Instances).
    Unpacked,
    /// The Instance's objects are applied.
    Installed,
    /// The Instance's objects work: Deployments available, CRDs established.
    Healthy,
    /// Whether someone else changed installed objects that the class's
    /// `drift: {mode: Warn}` leaves as they are; present only under Warn
    /// (or once it was).
    Drifted,
    /// Whether a revision is on its way: `True` while it rolls out or an
    /// apply is retried, `False` once it rolled out (`Succeeded`) or is
    /// stuck (`Blocked`); never left `True` after success. Present once
    /// something was applied.
    Progressing,
}

impl ConditionType {
    /// The four condition types every Instance always carries, in display order.
    pub const INSTANCE: [ConditionType; 4] = [
        Self::Approved,
        Self::Unpacked,
        Self::Installed,
        Self::Healthy,
    ];
    /// The condition types every Bundle always carries.
    pub const BUNDLE: [ConditionType; 1] = [Self::Unpacked];

    /// The `type` string as written in status.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "Approved",
            Self::Unpacked => "Unpacked",
            Self::Installed => "Installed",
            Self::Healthy => "Healthy",
            Self::Drifted => "Drifted",
            Self::Progressing => "Progressing",
        }
    }
}

/// The status of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet.
    Unknown,
}

impl ConditionStatus {
    /// `"True"`, `"False"` or `"Unknown"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// Every condition reason Pakket writes: one machine-readable word per state,
/// so alerts and `kubectl instance why` can match on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Approved by the class's `approval` policy.
    ApprovedByPolicy,
    /// Approved by a user with the `approve` verb.
    ApprovedByUser,
    /// Waiting for someone with the `approve` verb.
    ApprovalPending,
    /// Refused by policy or by an approver.
    ApprovalDenied,
    /// No provisioner has acted yet.
    UnpackPending,
    /// Content is being fetched or unpacked.
    Unpacking,
    /// Content unpacked.
    UnpackSucceeded,
    /// Content could not be fetched or was unsafe or malformed.
    UnpackFailed,
    /// Waiting for approval or unpacking before anything is applied.
    InstallPending,
    /// Objects are being applied now; the message counts them.
    Installing,
    /// The Instance's `spec.config` is not valid for its provisioner; the
    /// message names the field.
    InvalidConfig,
    /// The content requires packages or APIs that nothing installed
    /// provides; the message carries the explanation. Nothing is applied.
    DependenciesMissing,
    /// Every object applied.
    InstallSucceeded,
    /// Applying or pivoting failed; what was running is left in place.
    InstallFailed,
    /// The spec's content did not roll out and the class asks for an
    /// automatic rollback: the revision that served before runs again
    /// (status False: what the spec asks for is not installed).
    RolledBack,
    /// The content was fetched and unpacked, but the provisioner could not
    /// make objects of it (a file it cannot read as its format says): the
    /// content needs fixing, its source is fine. Nothing is applied.
    RenderFailed,
    /// Nothing installed yet, so health is not known.
    HealthUnknown,
    /// Every owned object is healthy.
    ObjectsHealthy,
    /// Objects are still converging (a Deployment rolling out, a CRD not
    /// Established yet): status Unknown, the message names what it waits for.
    ObjectsProgressing,
    /// At least one owned object is not healthy.
    ObjectsUnhealthy,
    /// A write failed part-way and not every object could be put back: some
    /// objects are at the new revision, some at the previous one (the
    /// message names those at the new one). Never healthy.
    MixedRevisions,
    /// Objects someone else changed are left as they are (drift Warn).
    ObjectsDrifted,
    /// No installed object is changed from what Pakket applied.
    NotDrifted,
    /// A revision's workloads are rolling out (Progressing).
    RollingOut,
    /// A revision's objects could not be applied; tried again (Progressing).
    Retrying,
    /// A revision's rollout passed its progress deadline or failed
    /// (Progressing).
    Blocked,
    /// The newest revision rolled out (Progressing).
    Succeeded,
    /// A rollout passed its progress deadline (Healthy).
    ProgressDeadlineExceeded,
}

impl Reason {
    /// Every reason, so tests can check that lists stay complete.
    pub const ALL: [Reason; 28] = [
        Self::ApprovedByPolicy,
        Self::ApprovedByUser,
        Self::ApprovalPending,
        Self::ApprovalDenied,
        Self::UnpackPending,
        Self::Unpacking,
        Self::UnpackSucceeded,
        Self::UnpackFailed,
        Self::InstallPending,
        Self::Installing,
        Self::InvalidConfig,
        Self::DependenciesMissing,
        Self::InstallSucceeded,
        Self::InstallFailed,
        Self::RolledBack,
        Self::RenderFailed,
        Self::HealthUnknown,
        Self::ObjectsHealthy,
        Self::ObjectsProgressing,
        Self::ObjectsUnhealthy,
        Self::MixedRevisions,
        Self::ObjectsDrifted,
        Self::NotDrifted,
        Self::RollingOut,
        Self::Retrying,
        Self::Blocked,
        Self::Succeeded,
        Self::ProgressDeadlineExceeded,
    ];

    /// The reason as written in status (CamelCase, as the API conventions ask).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ApprovedByPolicy => "ApprovedByPolicy",
            Self::ApprovedByUser => "ApprovedByUser",
            Self::ApprovalPending => "ApprovalPending",
            Self::ApprovalDenied => "ApprovalDenied",
            Self::UnpackPending => "UnpackPending",
            Self::Unpacking => "Unpacking",
            Self::UnpackSucceeded => "UnpackSucceeded",
            Self::UnpackFailed => "UnpackFailed",
            Self::InstallPending => "InstallPending",
            Self::Installing => "Installing",
            Self::InvalidConfig => "InvalidConfig",
            Self::DependenciesMissing => "DependenciesMissing",
            Self::InstallSucceeded => "InstallSucceeded",
            Self::InstallFailed => "InstallFailed",
            Self::RolledBack => "RolledBack",
            Self::RenderFailed => "RenderFailed",
            Self::HealthUnknown => "HealthUnknown",
            Self::ObjectsHealthy => "ObjectsHealthy",
            Self::ObjectsProgressing => "ObjectsProgressing",
            Self::ObjectsUnhealthy => "ObjectsUnhealthy",
            Self::MixedRevisions => "MixedRevisions",
            Self::ObjectsDrifted => "ObjectsDrifted",
            Self::NotDrifted => "NotDrifted",
            Self::RollingOut => "RollingOut",
            Self::Retrying => "Retrying",
            Self::Blocked => "Blocked",
            Self::Succeeded => "Succeeded",
            Self::ProgressDeadlineExceeded => "ProgressDeadlineExceeded",
        }
    }

    /// The condition type this reason belongs to.
    pub const fn condition_type(self) -> ConditionType {
        match self {
            Self::ApprovedByPolicy
            | Self::ApprovedByUser
            | Self::ApprovalPending
            | Self::ApprovalDenied => ConditionType::Approved,
            Self::UnpackPending | Self::Unpacking | Self::UnpackSucceeded | Self::UnpackFailed => {
                ConditionType::Unpacked
            }
            Self::InstallPending
            | Self::Installing
            | Self::InvalidConfig
            | Self::DependenciesMissing
            | Self::InstallSucceeded
            | Self::InstallFailed
            | Self::RolledBack
            | Self::RenderFailed => ConditionType::Installed,
            Self::HealthUnknown
            | Self::ObjectsHealthy
            | Self::ObjectsProgressing
            | Self::ObjectsUnhealthy
            | Self::MixedRevisions
            | Self::ProgressDeadlineExceeded => ConditionType::Healthy,
            Self::RollingOut | Self::Retrying | Self::Blocked | Self::Succeeded => {
                ConditionType::Progressing
            }
            Self::ObjectsDrifted | Self::NotDrifted => ConditionType::Drifted,
        }
    }
}

/// The condition of the given type in a list, if present.
pub fn find(conditions: &[Condition], kind: ConditionType) -> Option<&Condition> {
    conditions
        .iter()
        .find(|condition| condition.type_ == kind.as_str())
}

/// A new condition for `reason`'s type, stamped `now`.
pub fn new(
    reason: Reason,
    status: ConditionStatus,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: reason.condition_type().as_str().to_owned(),
        status: status.as_str().to_owned(),
        reason: reason.as_str().to_owned(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(now),
    }
}

/// Puts `condition` into the list, replacing the one of the same type. The
/// transition time moves only when the status or the reason changes, so it
/// keeps meaning "since when is it like this" (a fresh denial does not
/// inherit the age of the pending condition before it), not "last
/// reconciled".
pub fn set(conditions: &mut Vec<Condition>, mut condition: Condition) {
    match conditions
        .iter_mut()
        .find(|existing| existing.type_ == condition.type_)
    {
        Some(existing) => {
            if existing.status == condition.status && existing.reason == condition.reason {
                condition.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn every_reason_belongs_to_a_condition_type_and_has_a_unique_name() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|reason| reason.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
        for kind in ConditionType::INSTANCE {
            assert!(
                Reason::ALL
                    .iter()
                    .any(|reason| reason.condition_type() == kind),
                "{} has no reason",
                kind.as_str()
            );
        }
    }

    #[test]
    fn a_new_reason_with_the_same_status_is_a_new_transition() {
        let mut conditions = vec![new(
            Reason::ApprovalPending,
            ConditionStatus::False,
            "waiting",
            Some(1),
            at(10),
        )];
        set(
            &mut conditions,
            new(
                Reason::ApprovalDenied,
                ConditionStatus::False,
                "no",
                Some(1),
                at(50),
            ),
        );
        assert_eq!(conditions[0].last_transition_time, Time(at(50)));
    }

    #[test]
    fn set_keeps_transition_time_while_status_and_reason_are_unchanged() {
        let mut conditions = vec![new(
            Reason::Unpacking,
            ConditionStatus::False,
            "pulling",
            Some(1),
            at(10),
        )];
        set(
            &mut conditions,
            new(
                Reason::Unpacking,
                ConditionStatus::False,
                "still pulling",
                Some(2),
                at(20),
            ),
        );
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, Time(at(10)));
        assert_eq!(conditions[0].message, "still pulling");
        assert_eq!(conditions[0].observed_generation, Some(2));

        set(
            &mut conditions,
            new(
                Reason::UnpackSucceeded,
                ConditionStatus::True,
                "done",
                Some(2),
                at(30),
            ),
        );
        assert_eq!(conditions[0].last_transition_time, Time(at(30)));
        assert_eq!(conditions[0].reason, "UnpackSucceeded");
    }

    #[test]
    fn set_appends_a_new_type_and_find_finds_it() {
        let mut conditions = Vec::new();
        set(
            &mut conditions,
            new(
                Reason::ApprovalPending,
                ConditionStatus::False,
                "waiting",
                None,
                at(1),
            ),
        );
        set(
            &mut conditions,
            new(
                Reason::HealthUnknown,
                ConditionStatus::Unknown,
                "not installed",
                None,
                at(1),
            ),
        );
        assert_eq!(conditions.len(), 2);
        assert_eq!(
            find(&conditions, ConditionType::Healthy).unwrap().status,
            "Unknown"
        );
        assert!(find(&conditions, ConditionType::Installed).is_none());
    }
}
