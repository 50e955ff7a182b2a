//! Glasskube's condition pair: `Ready` and `Failed`, always set together.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

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

/// Sets `Ready` and `Failed` for `readiness`, with `reason` and `message`
/// on both.
pub fn set_readiness(
    conditions: &mut Vec<Condition>,
    readiness: Readiness,
    reason: &str,
    message: String,
    generation: Option<i64>,
) {
    let (ready, failed) = match readiness {
        Readiness::Ready => ("True", "False"),
        Readiness::Failed => ("False", "True"),
        Readiness::Pending => ("False", "False"),
    };
    for (kind, status) in [("Ready", ready), ("Failed", failed)] {
        set(conditions, kind, status, reason, &message, generation);
    }
}

/// Sets one condition (the transition time kept while status and reason
/// stay: `pakket_api::condition::set`).
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
            last_transition_time: Time(jiff::Timestamp::now()),
        },
    );
}
