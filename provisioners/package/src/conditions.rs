//! Glasskube's condition pair: `Ready` and `Failed`, always set together,
//! with a reason of the group's typed vocabulary
//! (`pakket_packages_api::conditions`), and kstatus's `Reconciling` and
//! `Stalled` beside them (`pakket_api::readiness`).

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use pakket_api::Standing;
use pakket_packages_api::conditions::{
    PackageInfoReason, PackageReason, ReadinessType, RepositoryReason,
};

/// Where an object stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// `Ready` true, `Failed` false.
    Ready,
    /// `Ready` false, `Failed` true.
    Failed,
    /// Both false: on its way.
    Pending,
}

/// A reason `Ready` and `Failed` are written with: one of the group's
/// vocabularies, never free text.
pub trait Reason: Copy {
    /// The reason as written.
    fn as_str(self) -> &'static str;
}

impl Reason for PackageReason {
    fn as_str(self) -> &'static str {
        PackageReason::as_str(self)
    }
}

impl Reason for RepositoryReason {
    fn as_str(self) -> &'static str {
        RepositoryReason::as_str(self)
    }
}

impl Reason for PackageInfoReason {
    fn as_str(self) -> &'static str {
        PackageInfoReason::as_str(self)
    }
}

/// Sets `Ready` and `Failed` for `readiness`, with `reason` and `message`
/// on both.
pub fn set_readiness(
    conditions: &mut Vec<Condition>,
    readiness: Readiness,
    reason: impl Reason,
    message: String,
    generation: Option<i64>,
) {
    let failed = if readiness == Readiness::Failed {
        "True"
    } else {
        "False"
    };
    let reason = reason.as_str();
    // kstatus's pair beside Glasskube's: pending is Reconciling, failed
    // is Stalled (`Ready` is the same condition in both).
    let standing = match readiness {
        Readiness::Ready => Standing::ready(reason, message.clone()),
        Readiness::Failed => Standing::stalled(reason, message.clone()),
        Readiness::Pending => Standing::reconciling(reason, message.clone()),
    };
    pakket_api::readiness::write(conditions, generation, &standing, Timestamp::now());
    set(
        conditions,
        ReadinessType::Failed.as_str(),
        failed,
        reason,
        &message,
        generation,
    );
}

/// Sets one condition (the transition time kept while status and reason
/// stay: `pakket_api::condition::set`). `reason` is free text only where
/// a condition is copied from another object with its own vocabulary.
pub fn set(
    conditions: &mut Vec<Condition>,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) {
    pakket_api::condition::set(
        conditions,
        Condition {
            type_: kind.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: generation,
            last_transition_time: Time(Timestamp::now()),
        },
    );
}
