//! `Ready`, `Reconciling` and `Stalled`: the three conditions every kind
//! Pakket serves carries beside its own, so GitOps tools can gate on it.
//!
//! kstatus (`sigs.k8s.io/cli-utils/pkg/kstatus`), which Flux's `wait` and
//! many pipelines use, reads no `Ready` condition at all: it says an object
//! is *Terminating* when it has a deletion timestamp, *InProgress* when
//! `status.observedGeneration` lags `metadata.generation` or `Reconciling`
//! is True, *Failed* when `Stalled` is True, and *Current* otherwise.
//! `kubectl wait --for=condition=Ready` reads `Ready` alone. So every state
//! that is not what was asked for must be either Reconciling (work is
//! under way, or a person has to decide) or Stalled (a refusal or failure
//! that waits for someone to change something), and `Ready` must say True
//! exactly when neither holds.
//!
//! Each kind decides its [`Standing`] from its own conditions with a pure
//! function (the Instance's is [`of_instance`] here; the other groups keep
//! theirs beside their types), and its status writer puts the three
//! conditions in with [`write()`].

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::condition::{self, ConditionType, Reason};
use crate::{CauseKind, Instance, InstanceStatus};

/// The condition type that is True only when the object is what was
/// asked for and works.
pub const READY: &str = "Ready";
/// The condition type that is True while work is under way or waits for
/// a person (kstatus: InProgress).
pub const RECONCILING: &str = "Reconciling";
/// The condition type that is True on a refusal or failure that waits for
/// someone to change something (kstatus: Failed).
pub const STALLED: &str = "Stalled";

/// The reason `Ready` gives while an object is being deleted.
pub const DELETING: &str = "Deleting";

/// Whether a condition type is one of the three this module writes.
pub fn is_readiness(condition_type: &str) -> bool {
    [READY, RECONCILING, STALLED].contains(&condition_type)
}

/// Where an object stands, as the three conditions say it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// What was asked for, and working.
    Ready {
        /// `Ready`'s reason.
        reason: String,
        /// One sentence.
        message: String,
    },
    /// On its way: work under way, or a person must decide.
    Reconciling {
        /// The reason of the condition that holds it.
        reason: String,
        /// That condition's message.
        message: String,
    },
    /// Refused or failed: nothing moves until someone changes something.
    Stalled {
        /// The reason of the condition that holds it.
        reason: String,
        /// That condition's message.
        message: String,
    },
}

impl Standing {
    /// Ready, with `reason` and `message`.
    pub fn ready(reason: &str, message: impl Into<String>) -> Self {
        Self::Ready {
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// Reconciling, with `reason` and `message`.
    pub fn reconciling(reason: &str, message: impl Into<String>) -> Self {
        Self::Reconciling {
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// Stalled, with `reason` and `message`.
    pub fn stalled(reason: &str, message: impl Into<String>) -> Self {
        Self::Stalled {
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    /// An Instance being deleted: Reconciling, `Ready` reason [`DELETING`].
    pub fn deleting() -> Self {
        Self::reconciling(
            DELETING,
            "the provisioner is uninstalling what the Instance installed",
        )
    }

    /// Reconciling or stalled as `condition` says, with its reason and
    /// message.
    fn of(condition: &Condition, stalled: bool) -> Self {
        if stalled {
            Self::stalled(&condition.reason, condition.message.clone())
        } else {
            Self::reconciling(&condition.reason, condition.message.clone())
        }
    }

    /// The reason `Ready` carries.
    pub fn reason(&self) -> &str {
        match self {
            Self::Ready { reason, .. }
            | Self::Reconciling { reason, .. }
            | Self::Stalled { reason, .. } => reason,
        }
    }

    /// The message `Ready` carries.
    pub fn message(&self) -> &str {
        match self {
            Self::Ready { message, .. }
            | Self::Reconciling { message, .. }
            | Self::Stalled { message, .. } => message,
        }
    }
}

/// Writes `Ready`, `Reconciling` and `Stalled` as `standing` says, for
/// `generation`. A condition keeps its transition time while its status
/// and reason stay ([`condition::set`]). Reconciling and Stalled are
/// written False rather than left out, so a printer column and a watcher
/// always find them.
pub fn write(
    conditions: &mut Vec<Condition>,
    generation: Option<i64>,
    standing: &Standing,
    now: Timestamp,
) {
    let (ready, reconciling, stalled) = match standing {
        Standing::Ready { .. } => ("True", "False", "False"),
        Standing::Reconciling { .. } => ("False", "True", "False"),
        Standing::Stalled { .. } => ("False", "False", "True"),
    };
    for (type_, status) in [
        (READY, ready),
        (RECONCILING, reconciling),
        (STALLED, stalled),
    ] {
        let holds = status == "True" || type_ == READY;
        let (reason, message) = if holds {
            (standing.reason().to_owned(), standing.message().to_owned())
        } else {
            (format!("Not{type_}"), String::new())
        };
        condition::set(
            conditions,
            Condition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                reason,
                message,
                observed_generation: generation,
                last_transition_time: Time(now),
            },
        );
    }
}

/// The `Ready` condition in a list, if written.
pub fn ready(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|condition| condition.type_ == READY)
}

/// Whether a condition of an Instance is a failure (it blocks until
/// someone acts) rather than "not done yet". A reason Pakket does not know
/// (a resolver's) that is False is a failure.
pub fn is_failure(condition: &Condition) -> bool {
    match known_reason(&condition.reason) {
        Some(
            Reason::ApprovalDenied
            | Reason::UnpackFailed
            | Reason::InstallFailed
            | Reason::RolledBack
            | Reason::RenderFailed
            | Reason::InvalidConfig
            | Reason::DependenciesMissing
            | Reason::ObjectsUnhealthy
            | Reason::ProgressDeadlineExceeded
            | Reason::MixedRevisions,
        ) => true,
        Some(_) => false,
        None => condition.status == "False",
    }
}

/// One of Pakket's own reasons, if `reason` is one.
pub fn known_reason(reason: &str) -> Option<Reason> {
    Reason::ALL
        .into_iter()
        .find(|known| known.as_str() == reason)
}

/// The condition that holds an Instance where it is: the first failure in
/// the order Approved, Unpacked, Installed, Healthy (what comes after a
/// failure is its consequence); else the first of them not True yet. An
/// `ApprovalPending` before the content is unpacked is a placeholder (the
/// runtime decides approval after unpacking) and holds nothing. `None`
/// when nothing holds it. `kubectl instance why` leads with the same
/// condition.
pub fn instance_blocker(conditions: &[Condition]) -> Option<&Condition> {
    let unpacked = condition::find(conditions, ConditionType::Unpacked)
        .is_some_and(|condition| condition.status == "True");
    let not_true = || {
        ConditionType::INSTANCE
            .into_iter()
            .filter_map(|kind| condition::find(conditions, kind))
            .filter(|condition| condition.status != "True")
    };
    not_true()
        .find(|c| is_failure(c))
        .or_else(|| not_true().find(|c| unpacked || c.type_ != ConditionType::Approved.as_str()))
}

/// Where an Instance stands. Deleting is Reconciling; a blocker is
/// Stalled when only a person's change can move it (a denial, content or
/// config that cannot work, objects it may not take over, a rollout past
/// its deadline, a policy trial) and Reconciling otherwise (waiting for
/// approval, fetching, applying, retrying, rolling out). `None` while no
/// provisioner has written any condition.
pub fn of_instance(instance: &Instance) -> Option<Standing> {
    let deleting = instance.metadata.deletion_timestamp.is_some();
    of_status(instance.status.as_ref()?, deleting)
}

/// Where an Instance with `status` stands ([`of_instance`]), for a writer
/// that holds the status apart from the Instance.
pub fn of_status(status: &InstanceStatus, deleting: bool) -> Option<Standing> {
    if status.conditions.is_empty() {
        return None;
    }
    if deleting {
        return Some(Standing::deleting());
    }
    let Some(blocker) = instance_blocker(&status.conditions) else {
        let every_true = ConditionType::INSTANCE.into_iter().all(|kind| {
            condition::find(&status.conditions, kind).is_some_and(|c| c.status == "True")
        });
        return Some(if every_true {
            Standing::ready(
                Reason::InstallSucceeded.as_str(),
                "installed and healthy: every object applied and working",
            )
        } else {
            Standing::reconciling(
                Reason::Unpacking.as_str(),
                "the provisioner is working on it",
            )
        });
    };
    let stalled = instance_blocker_is_stalled(blocker, status);
    let mut standing = Standing::of(blocker, stalled);
    if blocker.reason == Reason::ApprovalPending.as_str()
        && let Standing::Reconciling { message, .. } = &mut standing
    {
        *message = format!("waiting for a person to approve: {message}");
    }
    Some(standing)
}

/// Where a Bundle stands: unpacked is Ready; failing to unpack is
/// Stalled (its `Unpacked` condition says why, and the Instance that
/// installs it says whether a retry can help); anything else Reconciling.
pub fn of_bundle(status: &crate::BundleStatus) -> Standing {
    let unpacked = condition::find(&status.conditions, ConditionType::Unpacked);
    let (reason, message) = unpacked
        .map_or((Reason::UnpackPending.as_str(), "not unpacked yet"), |c| {
            (c.reason.as_str(), c.message.as_str())
        });
    match status.unpacked {
        crate::UnpackPhase::Done => Standing::ready(reason, message),
        crate::UnpackPhase::Failed => Standing::stalled(reason, message),
        _ => Standing::reconciling(reason, message),
    }
}

/// Where a namespace owner's request stands (an OperatorRequest, a
/// HelmChart): `Accepted` False (nothing was written for her, and why)
/// is Stalled; accepted, it stands where the Instance's conditions it
/// mirrors (`Approved`, `Installed`, `Healthy`, in the Instance's or the
/// request's own reasons) say, as [`of_instance`] reads them. Nothing
/// said yet: Reconciling.
pub fn of_request(conditions: &[Condition]) -> Standing {
    let accepted = conditions.iter().find(|c| c.type_ == "Accepted");
    match accepted {
        Some(accepted) if accepted.status == "False" => {
            return Standing::stalled(&accepted.reason, accepted.message.clone());
        }
        Some(accepted) if accepted.status == "True" => {}
        _ => return Standing::reconciling("Pending", "not accepted yet"),
    }
    // A mirror carries no `Unpacked`: what it mirrors is past it, so an
    // `ApprovalPending` there is a real wait, not a placeholder.
    let mut mirrored = InstanceStatus {
        conditions: conditions.to_vec(),
        ..InstanceStatus::default()
    };
    if condition::find(conditions, ConditionType::Unpacked).is_none() {
        mirrored.conditions.push(Condition {
            type_: ConditionType::Unpacked.as_str().to_owned(),
            status: "True".to_owned(),
            reason: Reason::UnpackSucceeded.as_str().to_owned(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        });
    }
    let mirrors_any = ConditionType::INSTANCE
        .into_iter()
        .filter(|kind| *kind != ConditionType::Unpacked)
        .any(|kind| condition::find(conditions, kind).is_some());
    match of_status(&mirrored, false) {
        Some(standing) if mirrors_any => standing,
        _ => Standing::reconciling(
            "NotInstalled",
            "accepted; its Instance has not said anything yet",
        ),
    }
}

/// Where an object that stands on others stands (an Operator on its
/// Input and Instances): Stalled if one of them is, else Reconciling if
/// one is, else Ready; the first such part gives the reason, and its name
/// leads the message. No parts: Reconciling, nothing made yet.
pub fn of_parts(parts: &[(String, Standing)]) -> Standing {
    let first = |stalled: bool| {
        parts.iter().find(|(_, standing)| match standing {
            Standing::Stalled { .. } => stalled,
            Standing::Reconciling { .. } => !stalled,
            Standing::Ready { .. } => false,
        })
    };
    let named = |(part, standing): &(String, Standing)| format!("{part}: {}", standing.message());
    if let Some(found) = first(true) {
        return Standing::stalled(found.1.reason(), named(found));
    }
    if let Some(found) = first(false) {
        return Standing::reconciling(found.1.reason(), named(found));
    }
    match parts {
        [] => Standing::reconciling("Pending", "nothing made for it yet"),
        _ => Standing::ready(
            Reason::InstallSucceeded.as_str(),
            format!(
                "{} ready",
                parts
                    .iter()
                    .map(|(part, _)| part.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// Whether an Instance's blocker waits for a person's change rather than
/// for the provisioner.
fn instance_blocker_is_stalled(blocker: &Condition, status: &InstanceStatus) -> bool {
    let cause =
        crate::cause::cause_of(&status.causes, &blocker.type_, &blocker.reason).map(|c| c.kind);
    let blocked = condition::find(&status.conditions, ConditionType::Progressing)
        .is_some_and(|c| c.reason == Reason::Blocked.as_str());
    match known_reason(&blocker.reason) {
        Some(
            Reason::ApprovalDenied
            | Reason::RenderFailed
            | Reason::InvalidConfig
            | Reason::RolledBack
            | Reason::ProgressDeadlineExceeded,
        ) => true,
        // A trial is never approved.
        Some(Reason::ApprovalPending) => cause == Some(CauseKind::PolicyTrial),
        // Content that is wrong, or a ref the class refuses, is refused
        // the same way on every retry; a registry that does not answer
        // may answer later.
        Some(Reason::UnpackFailed) => matches!(
            cause,
            Some(
                CauseKind::ContentInvalid
                    | CauseKind::InternalAddress
                    | CauseKind::ContentChangedAtSource
            )
        ),
        // Someone else's object is never taken over by a retry.
        Some(Reason::InstallFailed) => {
            blocked
                || matches!(
                    cause,
                    Some(
                        CauseKind::ObjectNotManaged
                            | CauseKind::ObjectOfAnotherInstance
                            | CauseKind::BundleOfAnotherInstance
                    )
                )
        }
        Some(Reason::ObjectsUnhealthy | Reason::MixedRevisions) => blocked,
        Some(_) => false,
        // A resolver's refusal, say: it names what to change.
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cause;
    use crate::condition::ConditionStatus::{False, True, Unknown};

    /// An Instance whose four conditions are True but for what `case` says.
    fn installed() -> Instance {
        Instance::test("web")
            .saying(Reason::ApprovedByPolicy, True, "allowed")
            .saying(Reason::UnpackSucceeded, True, "unpacked")
            .saying(Reason::InstallSucceeded, True, "3 objects")
            .saying(Reason::ObjectsHealthy, True, "all healthy")
    }

    /// The standing's kind and reason a case expects (`None`: no status).
    type Expected = Option<(&'static str, &'static str)>;

    fn verdict(instance: &Instance) -> Option<(&'static str, String)> {
        of_instance(instance).map(|standing| {
            let kind = match standing {
                Standing::Ready { .. } => "Ready",
                Standing::Reconciling { .. } => "Reconciling",
                Standing::Stalled { .. } => "Stalled",
            };
            (kind, standing.reason().to_owned())
        })
    }

    #[test]
    fn each_instance_state_is_ready_reconciling_or_stalled_as_kstatus_reads_it() {
        let unpacked_waiting = Instance::test("web")
            .saying(Reason::ApprovalPending, False, "needs approve")
            .saying(Reason::UnpackSucceeded, True, "unpacked")
            .saying(Reason::InstallPending, False, "waits")
            .saying(Reason::HealthUnknown, Unknown, "nothing yet");
        let fetching = Instance::test("web")
            .saying(Reason::ApprovalPending, False, "not evaluated yet")
            .saying(Reason::Unpacking, False, "pulling")
            .saying(Reason::InstallPending, False, "waits");
        let install_failed = installed().saying(Reason::InstallFailed, False, "conflict");
        let mut deleting = installed();
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let cases: Vec<(&str, Instance, Expected)> = vec![
            ("never reconciled", Instance::test("web"), None),
            (
                "installed and healthy",
                installed(),
                Some(("Ready", "InstallSucceeded")),
            ),
            (
                "unpacked, waiting for a person",
                unpacked_waiting,
                Some(("Reconciling", "ApprovalPending")),
            ),
            (
                "approval pending before unpacking is a placeholder",
                fetching,
                Some(("Reconciling", "Unpacking")),
            ),
            (
                "denied",
                installed().saying(Reason::ApprovalDenied, False, "no"),
                Some(("Stalled", "ApprovalDenied")),
            ),
            (
                "a registry that did not answer is retried",
                installed().saying(Reason::UnpackFailed, False, "timed out"),
                Some(("Reconciling", "UnpackFailed")),
            ),
            (
                "content that is wrong is refused on every retry",
                installed()
                    .saying(Reason::UnpackFailed, False, "bad archive")
                    .because(Reason::UnpackFailed, Cause::new(CauseKind::ContentInvalid)),
                Some(("Stalled", "UnpackFailed")),
            ),
            (
                "an apply that failed is retried",
                install_failed.clone(),
                Some(("Reconciling", "InstallFailed")),
            ),
            (
                "another's object is never taken over",
                install_failed.clone().because(
                    Reason::InstallFailed,
                    Cause::new(CauseKind::ObjectNotManaged),
                ),
                Some(("Stalled", "InstallFailed")),
            ),
            (
                "a failed apply past its deadline",
                install_failed.saying(Reason::Blocked, False, "deadline"),
                Some(("Stalled", "InstallFailed")),
            ),
            (
                "applying",
                installed().saying(Reason::Installing, False, "2 of 3"),
                Some(("Reconciling", "Installing")),
            ),
            (
                "rolling out",
                installed().saying(Reason::ObjectsProgressing, Unknown, "Deployment web"),
                Some(("Reconciling", "ObjectsProgressing")),
            ),
            (
                "unhealthy within its deadline",
                installed().saying(Reason::ObjectsUnhealthy, False, "crashing"),
                Some(("Reconciling", "ObjectsUnhealthy")),
            ),
            (
                "unhealthy past its deadline",
                installed()
                    .saying(Reason::ObjectsUnhealthy, False, "crashing")
                    .saying(Reason::Blocked, False, "deadline"),
                Some(("Stalled", "ObjectsUnhealthy")),
            ),
            (
                "config its provisioner cannot use",
                installed().saying(Reason::InvalidConfig, False, "values.replicas"),
                Some(("Stalled", "InvalidConfig")),
            ),
            (
                "a policy trial is never installed",
                installed()
                    .saying(Reason::ApprovalPending, False, "trial")
                    .because(Reason::ApprovalPending, Cause::new(CauseKind::PolicyTrial)),
                Some(("Stalled", "ApprovalPending")),
            ),
            ("being deleted", deleting, Some(("Reconciling", DELETING))),
        ];
        for (case, instance, expected) in cases {
            let got = verdict(&instance);
            let got = got.as_ref().map(|(kind, reason)| (*kind, reason.as_str()));
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn the_three_are_told_from_the_others() {
        for (condition_type, expected) in [
            (READY, true),
            (RECONCILING, true),
            (STALLED, true),
            ("Unpacked", false),
            ("Installed", false),
            ("ready", false),
        ] {
            assert_eq!(is_readiness(condition_type), expected, "{condition_type}");
        }
    }

    #[test]
    fn a_wait_for_a_person_says_so_in_ready() {
        let waiting = installed().saying(Reason::ApprovalPending, False, "rule 2 asks");
        let standing = of_instance(&waiting).unwrap();
        assert_eq!(
            standing.message(),
            "waiting for a person to approve: rule 2 asks"
        );
    }

    #[test]
    fn a_resolvers_own_refusal_stalls() {
        let mut refused = installed();
        let conditions = &mut refused.status.as_mut().unwrap().conditions;
        conditions[2].status = "False".into();
        conditions[2].reason = "ConstraintsNotSatisfiable".into();
        assert_eq!(
            verdict(&refused),
            Some(("Stalled", "ConstraintsNotSatisfiable".to_owned()))
        );
    }

    #[test]
    fn a_request_is_stalled_when_refused_and_else_stands_where_its_instance_does() {
        let said = |type_: &str, status: &str, reason: &str| Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: reason.into(),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        };
        let accepted = said("Accepted", "True", "OperatorWritten");
        let cases = [
            (vec![], "Pending", false),
            (
                vec![said("Accepted", "False", "NotYourNamespace")],
                "NotYourNamespace",
                false,
            ),
            (vec![accepted.clone()], "NotInstalled", false),
            (
                vec![
                    accepted.clone(),
                    said("Approved", "False", "ApprovalPending"),
                    said("Installed", "False", "InstallPending"),
                ],
                "ApprovalPending",
                false,
            ),
            (
                vec![
                    accepted.clone(),
                    said("Approved", "Unknown", "NotInstalled"),
                    said("Installed", "False", "InstalledForAnother"),
                ],
                "InstalledForAnother",
                false,
            ),
            (
                vec![
                    accepted.clone(),
                    said("Approved", "True", "ApprovedByPolicy"),
                    said("Installed", "True", "InstallSucceeded"),
                    said("Healthy", "True", "ObjectsHealthy"),
                ],
                "InstallSucceeded",
                true,
            ),
        ];
        for (conditions, reason, ready) in cases {
            let standing = of_request(&conditions);
            assert_eq!(standing.reason(), reason, "{conditions:?}");
            assert_eq!(
                matches!(standing, Standing::Ready { .. }),
                ready,
                "{conditions:?}"
            );
        }
        let refused = of_request(&[said("Accepted", "False", "ValuesNotReadable")]);
        assert!(matches!(refused, Standing::Stalled { .. }));
        let for_another =
            of_request(&[accepted, said("Installed", "False", "InstalledForAnother")]);
        assert!(matches!(for_another, Standing::Stalled { .. }));
    }

    #[test]
    fn parts_stall_before_they_reconcile_and_name_the_part() {
        let parts = vec![
            (
                "Input web".to_owned(),
                Standing::ready("Resolved", "in the set"),
            ),
            (
                "Instance web".to_owned(),
                Standing::reconciling("Installing", "2 of 3"),
            ),
            (
                "Instance db".to_owned(),
                Standing::stalled("ApprovalDenied", "no"),
            ),
        ];
        let stalled = of_parts(&parts);
        assert_eq!(
            stalled,
            Standing::stalled("ApprovalDenied", "Instance db: no")
        );
        let reconciling = of_parts(&parts[..2]);
        assert_eq!(reconciling.reason(), "Installing");
        assert_eq!(reconciling.message(), "Instance web: 2 of 3");
        assert!(matches!(of_parts(&parts[..1]), Standing::Ready { .. }));
        assert!(matches!(of_parts(&[]), Standing::Reconciling { .. }));
    }

    #[test]
    fn write_puts_three_conditions_and_keeps_their_time_while_they_hold() {
        let at = |s| Timestamp::from_second(s).unwrap();
        let mut conditions = Vec::new();
        let waiting = Standing::reconciling("ApprovalPending", "waiting");
        write(&mut conditions, Some(3), &waiting, at(10));
        let of = |conditions: &[Condition], type_: &str| {
            let c = conditions
                .iter()
                .find(|c| c.type_ == type_)
                .unwrap()
                .clone();
            (c.status, c.reason, c.last_transition_time.0.as_second())
        };
        assert_eq!(
            of(&conditions, READY),
            ("False".into(), "ApprovalPending".into(), 10)
        );
        assert_eq!(
            of(&conditions, RECONCILING),
            ("True".into(), "ApprovalPending".into(), 10)
        );
        assert_eq!(
            of(&conditions, STALLED),
            ("False".into(), "NotStalled".into(), 10)
        );
        assert!(conditions.iter().all(|c| c.observed_generation == Some(3)));
        write(&mut conditions, Some(3), &waiting, at(20));
        assert_eq!(of(&conditions, READY).2, 10, "same standing, same time");
        write(
            &mut conditions,
            Some(4),
            &Standing::ready("InstallSucceeded", "ok"),
            at(30),
        );
        assert_eq!(
            of(&conditions, READY),
            ("True".into(), "InstallSucceeded".into(), 30)
        );
        assert_eq!(
            of(&conditions, RECONCILING),
            ("False".into(), "NotReconciling".into(), 30)
        );
        assert_eq!(of(&conditions, STALLED).2, 10, "still not stalled since 10");
        assert_eq!(conditions.len(), 3);
    }
}
