//! Where an Input and a Catalog stand as kstatus reads them
//! (`pakket_api::readiness`): each a pure function of the conditions its
//! controller writes, so `Ready`, `Reconciling` and `Stalled` say what
//! `kubectl instance why input/NAME` and the Catalog's own conditions say.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use pakket_api::Standing;

use crate::condition::{ConditionType, Reason};
use crate::input_condition::{InputConditionType, InputReason};

/// Where an Input stands, from its `ResolutionFailed` condition: resolved
/// (its bundles are in the set, or still meet it while their catalog is
/// away) is Ready; a conflict with other new requests waits for a
/// person's choice (Reconciling); anything else it cannot get until
/// someone changes something is Stalled. Not resolved yet: Reconciling.
pub fn of_input(conditions: &[Condition]) -> Standing {
    let resolution = conditions
        .iter()
        .find(|c| c.type_ == InputConditionType::ResolutionFailed.as_str());
    let Some(resolution) = resolution else {
        return Standing::reconciling("Resolving", "not resolved yet");
    };
    let (reason, message) = (resolution.reason.as_str(), resolution.message.clone());
    match InputReason::parse(reason) {
        Some(InputReason::Resolved | InputReason::InstalledSatisfies) => {
            Standing::ready(reason, message)
        }
        Some(InputReason::ConflictWaitsForDecision) => {
            Standing::reconciling(reason, format!("waiting for a person to choose: {message}"))
        }
        _ => Standing::stalled(reason, message),
    }
}

/// Where a Catalog stands: serving its source's newest content is Ready;
/// content that failed to fetch or load is Stalled (the last good digest
/// may still serve, and the next poll tries again); before its first
/// sync, Reconciling.
pub fn of_catalog(conditions: &[Condition]) -> Standing {
    let find = |kind: ConditionType| conditions.iter().find(|c| c.type_ == kind.as_str());
    let (Some(serving), Some(unpacked)) =
        (find(ConditionType::Serving), find(ConditionType::Unpacked))
    else {
        return Standing::reconciling("Syncing", "not synced yet");
    };
    if unpacked.status != "True" {
        return Standing::stalled(&unpacked.reason, unpacked.message.clone());
    }
    if serving.reason == Reason::ServingLatest.as_str() {
        Standing::ready(&serving.reason, serving.message.clone())
    } else {
        Standing::reconciling(&serving.reason, serving.message.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn said(type_: &str, status: &str, reason: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: format!("{reason} in words"),
            observed_generation: Some(1),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
        }
    }

    fn kind(standing: &Standing) -> &'static str {
        match standing {
            Standing::Ready { .. } => "Ready",
            Standing::Reconciling { .. } => "Reconciling",
            Standing::Stalled { .. } => "Stalled",
        }
    }

    #[test]
    fn an_inputs_resolution_is_ready_waiting_for_a_person_or_stalled() {
        let failed = |reason: InputReason| {
            let status =
                if reason == InputReason::Resolved || reason == InputReason::InstalledSatisfies {
                    "False"
                } else {
                    "True"
                };
            vec![said("ResolutionFailed", status, reason.as_str())]
        };
        let cases = [
            (InputReason::Resolved, "Ready"),
            (InputReason::InstalledSatisfies, "Ready"),
            (InputReason::ConflictWaitsForDecision, "Reconciling"),
            (InputReason::AnotherRequestChosen, "Stalled"),
            (InputReason::ConflictsWithInstalled, "Stalled"),
            (InputReason::Unsatisfiable, "Stalled"),
            (InputReason::InvalidInput, "Stalled"),
            (InputReason::CatalogUnavailable, "Stalled"),
            (InputReason::PackageOwnedByAnother, "Stalled"),
        ];
        for (reason, expected) in cases {
            let standing = of_input(&failed(reason));
            assert_eq!(kind(&standing), expected, "{reason:?}");
            assert_eq!(standing.reason(), reason.as_str());
        }
        assert_eq!(kind(&of_input(&[])), "Reconciling");
        let waiting = of_input(&failed(InputReason::ConflictWaitsForDecision));
        assert!(waiting.message().starts_with("waiting for a person"));
    }

    #[test]
    fn a_catalog_is_ready_only_serving_its_newest_content() {
        let catalog = |serving: (&str, &str), unpacked: (&str, &str)| {
            vec![
                said("Serving", serving.0, serving.1),
                said("Unpacked", unpacked.0, unpacked.1),
            ]
        };
        let cases = [
            (
                catalog(("True", "ServingLatest"), ("True", "UnpackSucceeded")),
                "Ready",
                "ServingLatest",
            ),
            (
                catalog(("True", "ServingPrevious"), ("False", "CatalogInvalid")),
                "Stalled",
                "CatalogInvalid",
            ),
            (
                catalog(("False", "NothingServed"), ("False", "UnpackFailed")),
                "Stalled",
                "UnpackFailed",
            ),
            (Vec::new(), "Reconciling", "Syncing"),
        ];
        for (conditions, expected, reason) in cases {
            let standing = of_catalog(&conditions);
            assert_eq!((kind(&standing), standing.reason()), (expected, reason));
        }
    }
}
