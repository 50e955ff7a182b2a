//! The one place an apply that did not go through becomes the Instance's
//! status: `InstallFailed` (with what was left in place), `Retrying` and
//! the failed revision, `MixedRevisions` while objects of two revisions
//! run side by side, and objects someone took over.

use kube::runtime::controller::Action;
use pakket_api::Reason;
use pakket_api::condition::ConditionStatus;

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
    if let Some(message) = taken_over(error, previous) {
        report.set(Reason::ObjectsUnhealthy, ConditionStatus::False, message);
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
    report.set(Reason::InstallFailed, ConditionStatus::False, message);
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
fn taken_over(error: &apply::ApplyError, previous: &[pakket_api::ObjectRef]) -> Option<String> {
    let apply::ApplyError::Conflicts(conflicts) = error else {
        return None;
    };
    let had: std::collections::BTreeSet<_> = previous.iter().collect();
    let lost: Vec<&str> = conflicts
        .iter()
        .filter(|(object, _)| had.contains(object))
        .map(|(_, why)| why.as_str())
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "{} objects this Instance installed are no longer its own: {}",
            lost.len(),
            lost.join("; ")
        )
    })
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
        let conflicts = vec![(object("one"), "owned by Instance x".to_owned())];
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
        let conflicts = vec![(object("new"), "owned by Instance x".to_owned())];
        let error = apply::ApplyError::Conflicts(conflicts);
        assert_eq!(taken_over(&error, &[object("one")]), None);
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
