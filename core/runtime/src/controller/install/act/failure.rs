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
