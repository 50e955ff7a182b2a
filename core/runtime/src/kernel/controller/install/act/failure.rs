//! The one place an apply that did not go through becomes the Instance's
//! status: `InstallFailed` (with what was left in place), `Retrying` and
//! the failed revision, `MixedRevisions` while objects of two revisions
//! run side by side, and objects someone took over.

use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Cause, CauseKind, CauseObject, Reason};

use super::super::super::report::Report;
use super::super::super::revision;
use super::super::{AFTER_INSTALL_FAILURE, Flow, outcome};
use crate::apply;

/// Nothing was applied: `Installed` says why, and the apply is tried
/// again.
pub(super) fn not_applied<T>(report: &mut Report, message: String) -> Flow<T> {
    report.set(Reason::InstallFailed, ConditionStatus::False, message);
    Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE))
}

/// The write of the set failed: what was running stays (rolled back if a
/// write failed part-way) and status still lists the old set; the
/// revision is recorded as failed and retried (after
/// [`AFTER_INSTALL_FAILURE`]).
pub(super) fn write_failed(
    report: &mut Report,
    error: &apply::ApplyError,
    previous: &[pakket_api::ObjectRef],
    revision: (revision::Content<'_>, revision::Settings),
    bundle: &str,
) {
    // Objects this Instance had that someone took over are not its to
    // keep healthy any more: say so.
    if let Some((message, objects)) = taken_over(error, previous) {
        let because = Cause::new(CauseKind::ObjectsUnhealthy).with_objects(objects);
        report.set_because(
            Reason::ObjectsUnhealthy,
            ConditionStatus::False,
            message,
            because,
        );
    }
    // Never healthy while two revisions run side by side.
    let left = error.left_at_new_revision();
    if !left.is_empty() {
        let names: Vec<String> = left.iter().map(ToString::to_string).collect();
        report.set(
            Reason::MixedRevisions,
            ConditionStatus::False,
            format!(
                "{} objects are at Bundle {bundle} while the rest run the previous revision: {}",
                left.len(),
                names.join(", ")
            ),
        );
    }
    let message = match error {
        apply::ApplyError::PartlyApplied { .. } | apply::ApplyError::DryRunRefused { .. } => {
            error.to_string()
        }
        _ => format!("{error}; the previous objects were left in place"),
    };
    let (content, settings) = revision;
    let now = jiff::Timestamp::now();
    let number = outcome::failed(report, content, settings, &message, now);
    let retrying = revision::retrying(
        &report.status,
        number,
        &format!("could not be applied ({error})"),
        left.len(),
    );
    report.set(Reason::Retrying, ConditionStatus::True, retrying);
    match conflict_cause(error) {
        Some(because) => {
            report.set_because(
                Reason::InstallFailed,
                ConditionStatus::False,
                message,
                because,
            );
        }
        None => report.set(Reason::InstallFailed, ConditionStatus::False, message),
    }
}

/// What tools read of objects that are someone else's: that Pakket does
/// not manage one of them (a person has to hand it over), else the other
/// Instance the first belongs to; and which objects.
fn conflict_cause(error: &apply::ApplyError) -> Option<Cause> {
    let apply::ApplyError::Conflicts(conflicts) = error else {
        return None;
    };
    let objects = conflicts.iter().map(|(object, _)| CauseObject {
        object: object.to_string(),
        problem: None,
    });
    let because = match conflicts.iter().find_map(|(_, why)| why.owner.as_ref()) {
        _ if conflicts.iter().any(|(_, why)| why.owner.is_none()) => {
            Cause::new(CauseKind::ObjectNotManaged)
        }
        Some(owner) => Cause::new(CauseKind::ObjectOfAnotherInstance).with_owner(owner.clone()),
        None => return None,
    };
    Some(because.with_objects(objects))
}

/// The new objects are written; what the earlier revision alone had is
/// not all gone: `Progressing` says so, not the earlier revision's
/// success.
pub(super) fn prune_failed<T>(
    report: &mut Report,
    error: &apply::ApplyError,
    written: usize,
    revision: (revision::Content<'_>, revision::Settings),
) -> Flow<T> {
    let (content, settings) = revision;
    let now = jiff::Timestamp::now();
    let number = outcome::applied(report, content, settings, now);
    let retrying = revision::retrying(
        &report.status,
        number,
        &format!("applied, but deleting what the revision before it alone had failed ({error})"),
        written,
    );
    report.set(Reason::Retrying, ConditionStatus::True, retrying);
    report.set(
        Reason::InstallFailed,
        ConditionStatus::False,
        format!("pivot: {error}"),
    );
    Flow::Stop(Action::requeue(AFTER_INSTALL_FAILURE))
}

/// What an apply that found conflicts means for health: objects the
/// Instance installed before that are now someone else's (their records
/// changed: another Instance's UID, or no Pakket field manager).
fn taken_over(
    error: &apply::ApplyError,
    previous: &[pakket_api::ObjectRef],
) -> Option<(String, Vec<CauseObject>)> {
    let apply::ApplyError::Conflicts(conflicts) = error else {
        return None;
    };
    let had: std::collections::BTreeSet<_> = previous.iter().collect();
    let lost: Vec<_> = conflicts
        .iter()
        .filter(|(object, _)| had.contains(object))
        .collect();
    if lost.is_empty() {
        return None;
    }
    let texts: Vec<&str> = lost.iter().map(|(_, why)| why.text.as_str()).collect();
    let message = format!(
        "{} objects this Instance installed are no longer its own: {}",
        lost.len(),
        texts.join("; ")
    );
    let objects = lost
        .iter()
        .map(|(object, why)| {
            let name = object.to_string();
            let problem = why.text.strip_prefix(name.as_str()).unwrap_or(&why.text);
            CauseObject {
                object: name.clone(),
                problem: Some(problem.trim().to_owned()),
            }
        })
        .collect();
    Some((message, objects))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use pakket_api::{ObjectRef, Reason, RevisionOutcome};

    use super::super::super::super::report::Report;
    use super::super::super::super::revision;
    use super::*;

    fn object(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            namespace: Some("ns".into()),
        }
    }

    fn owned_by_x() -> crate::trust::ownership::Conflict {
        crate::trust::ownership::Conflict {
            owner: Some("x".into()),
            text: "owned by Instance x".into(),
        }
    }

    fn unmanaged() -> crate::trust::ownership::Conflict {
        crate::trust::ownership::Conflict {
            owner: None,
            text: "exists and is not managed by Pakket".into(),
        }
    }

    #[test]
    fn objects_of_others_name_the_owner_and_an_unmanaged_one_asks_for_a_hand_over() {
        let theirs = apply::ApplyError::Conflicts(vec![(object("one"), owned_by_x())]);
        let because = conflict_cause(&theirs).expect("a cause");
        assert_eq!(because.kind, CauseKind::ObjectOfAnotherInstance);
        assert_eq!(because.owner.as_deref(), Some("x"));
        assert_eq!(because.objects[0].object, object("one").to_string());
        // One object nobody in Pakket manages decides the advice: only a
        // person who may write it can hand it over.
        let mixed = apply::ApplyError::Conflicts(vec![
            (object("one"), owned_by_x()),
            (object("two"), unmanaged()),
        ]);
        let because = conflict_cause(&mixed).expect("a cause");
        assert_eq!(because.kind, CauseKind::ObjectNotManaged);
        assert_eq!(because.objects.len(), 2);
        let other = apply::ApplyError::DryRunRefused {
            object: "ConfigMap ns/one".into(),
            message: "no".into(),
        };
        assert_eq!(conflict_cause(&other), None);
    }

    fn content() -> revision::Content<'static> {
        revision::Content {
            bundle: "b",
            bundle_spec: None,
            digest: "sha256:a",
            rendered: Some("sha256:r"),
            approved_by: "alice",
        }
    }

    fn report() -> Report {
        Report::new(&crate::controller::tests::instance(1, None))
    }

    /// The condition that says `reason`, if one does.
    fn saying(report: &Report, reason: Reason) -> Option<&Condition> {
        report
            .status
            .conditions
            .iter()
            .find(|condition| condition.reason == reason.as_str())
    }

    #[test]
    fn a_write_undone_part_way_is_mixed_retried_and_a_failed_revision() {
        let mut report = report();
        let refused = apply::ApplyError::Refused {
            object: "ConfigMap ns/two".into(),
            message: "forbidden".into(),
        };
        let error = apply::ApplyError::PartlyApplied {
            cause: Box::new(refused),
            restored: 1,
            removed: 0,
            left: vec![object("one")],
            previous: Some("a".into()),
        };
        let revision = (content(), revision::Settings::default());
        write_failed(&mut report, &error, &[object("one")], revision, "b");
        let installed = saying(&report, Reason::InstallFailed).expect("InstallFailed");
        assert_eq!(installed.message, error.to_string(), "its own words");
        let mixed = saying(&report, Reason::MixedRevisions).expect("MixedRevisions");
        assert_eq!(
            mixed.message,
            format!(
                "1 objects are at Bundle b while the rest run the previous revision: {}",
                object("one")
            )
        );
        let retrying = saying(&report, Reason::Retrying).expect("Retrying");
        assert_eq!(retrying.status, "True");
        let newest = report.status.revisions.last().expect("a revision");
        assert_eq!(newest.outcome, RevisionOutcome::Failed);
        assert_eq!(newest.message, error.to_string());
    }

    #[test]
    fn a_conflict_on_what_it_had_is_taken_over_and_the_rest_left_in_place() {
        let mut report = report();
        let conflicts = vec![(object("one"), owned_by_x())];
        let error = apply::ApplyError::Conflicts(conflicts);
        let revision = (content(), revision::Settings::default());
        write_failed(&mut report, &error, &[object("one")], revision, "b");
        let lost = saying(&report, Reason::ObjectsUnhealthy).expect("ObjectsUnhealthy");
        assert_eq!(
            lost.message,
            "1 objects this Instance installed are no longer its own: owned by Instance x"
        );
        let installed = saying(&report, Reason::InstallFailed).expect("InstallFailed");
        assert_eq!(
            installed.message,
            format!("{error}; the previous objects were left in place")
        );
        assert!(saying(&report, Reason::MixedRevisions).is_none());
    }

    #[test]
    fn a_conflict_on_what_it_never_had_takes_nothing_over() {
        let conflicts = vec![(object("new"), owned_by_x())];
        let error = apply::ApplyError::Conflicts(conflicts);
        assert!(taken_over(&error, &[object("one")]).is_none());
    }

    #[test]
    fn a_prune_that_failed_is_applied_retried_and_a_pivot_failure() {
        let mut report = report();
        let error = apply::ApplyError::Refused {
            object: "ConfigMap ns/old".into(),
            message: "forbidden".into(),
        };
        let revision = (content(), revision::Settings::default());
        let _: Flow<()> = prune_failed(&mut report, &error, 2, revision);
        let installed = saying(&report, Reason::InstallFailed).expect("InstallFailed");
        assert_eq!(installed.message, format!("pivot: {error}"));
        assert!(saying(&report, Reason::Retrying).is_some());
        let newest = report.status.revisions.last().expect("a revision");
        assert_ne!(
            newest.outcome,
            RevisionOutcome::Failed,
            "its objects are applied"
        );
    }
}
