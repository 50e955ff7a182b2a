//! The Instance a package became, said on the package: its `Approved`,
//! `Installed` and `Healthy` copied (with the Instance's own reasons), and
//! `Ready`/`Failed` from them. Pure: a function of the Instance.

use kube::ResourceExt as _;
use pakket_api::{ConditionType, Instance, Reason};
use pakket_packages_api::PackageStatus;
use pakket_packages_api::conditions::{PackageConditionType, PackageReason};

use crate::conditions::{self, Readiness};

/// The Instance's conditions a package carries, and its own name for each.
const COPIED: [(ConditionType, PackageConditionType); 3] = [
    (ConditionType::Approved, PackageConditionType::Approved),
    (ConditionType::Installed, PackageConditionType::Installed),
    (ConditionType::Healthy, PackageConditionType::Healthy),
];

/// The Instance reasons that fail the package.
const FAILING: [Reason; 6] = [
    Reason::UnpackFailed,
    Reason::ApprovalDenied,
    Reason::InstallFailed,
    Reason::RenderFailed,
    Reason::InvalidConfig,
    Reason::DependenciesMissing,
];

/// Whether the Instance's `kind` condition is true.
pub(super) fn condition_true(instance: &Instance, kind: ConditionType) -> bool {
    instance.condition(kind).is_some_and(|c| c.status == "True")
}

/// The Instance's conditions on the package, and `Ready`/`Failed` from them.
/// Conditions written for an older spec of the Instance (the version
/// before an update) say nothing yet: the package is pending until the
/// runtime has looked at the new one.
pub(super) fn mirror(status: &mut PackageStatus, instance: &Instance, generation: Option<i64>) {
    let current = instance
        .condition(ConditionType::Installed)
        .is_some_and(|c| c.observed_generation == instance.metadata.generation);
    if !current {
        conditions::set_readiness(
            &mut status.conditions,
            Readiness::Pending,
            PackageReason::Pending,
            format!("Instance {} is being installed", instance.name_any()),
            generation,
        );
        return;
    }
    for (kind, copied) in COPIED {
        if let Some(condition) = instance.condition(kind) {
            conditions::set(
                &mut status.conditions,
                copied.as_str(),
                &condition.status,
                &condition.reason,
                &condition.message,
                generation,
            );
        }
    }
    let (readiness, reason, message) = readiness(instance);
    conditions::set_readiness(
        &mut status.conditions,
        readiness,
        reason,
        message,
        generation,
    );
}

/// `Ready`/`Failed` from the Instance's current conditions.
fn readiness(instance: &Instance) -> (Readiness, PackageReason, String) {
    let failing = [
        ConditionType::Unpacked,
        ConditionType::Approved,
        ConditionType::Installed,
    ]
    .into_iter()
    .filter_map(|kind| instance.condition(kind))
    .find(|c| c.status == "False" && FAILING.iter().any(|reason| reason.as_str() == c.reason));
    if let Some(failing) = failing {
        (
            Readiness::Failed,
            PackageReason::InstallationFailed,
            format!("Instance {}: {}", instance.name_any(), failing.message),
        )
    } else if condition_true(instance, ConditionType::Installed) {
        (
            Readiness::Ready,
            PackageReason::InstallationSucceeded,
            format!("Instance {} is installed", instance.name_any()),
        )
    } else {
        let waiting = instance
            .condition(ConditionType::Approved)
            .filter(|c| c.status != "True")
            .map(|c| c.message.clone())
            .unwrap_or_else(|| format!("Instance {} is being installed", instance.name_any()));
        (Readiness::Pending, PackageReason::Pending, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Instance `i` at generation 2, with `conditions` as
    /// `(type, status, reason, observedGeneration)`.
    fn instance(conditions: &[(&str, &str, &str, i64)]) -> Instance {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(kind, status, reason, generation)| {
                json!({"type": kind, "status": status, "reason": reason, "message": format!("{kind} says {reason}"),
                       "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": "i", "generation": 2},
            "spec": {"class": "pakket-package", "bundle": {"name": "b", "spec": {"class": "pakket-package", "refs": []}}},
            "status": {"conditions": conditions},
        }))
        .expect("an Instance")
    }

    fn said(status: &PackageStatus, kind: &str) -> (String, String, String) {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == kind)
            .unwrap_or_else(|| panic!("no {kind}"));
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    fn mirrored(instance: &Instance) -> PackageStatus {
        let mut status = PackageStatus::default();
        mirror(&mut status, instance, Some(1));
        status
    }

    #[test]
    fn each_instance_state_is_said_on_the_package() {
        let rows: Vec<(&str, Instance, (&str, &str, &str))> = vec![
            (
                "conditions of an older spec: pending",
                instance(&[("Installed", "True", "InstallSucceeded", 1)]),
                ("False", "Pending", "Instance i is being installed"),
            ),
            (
                "installed",
                instance(&[
                    ("Approved", "True", "Approved", 2),
                    ("Installed", "True", "InstallSucceeded", 2),
                ]),
                ("True", "InstallationSucceeded", "Instance i is installed"),
            ),
            (
                "an install that failed",
                instance(&[("Installed", "False", "InstallFailed", 2)]),
                (
                    "False",
                    "InstallationFailed",
                    "Instance i: Installed says InstallFailed",
                ),
            ),
            (
                "waiting for approval: the approval's words",
                instance(&[
                    ("Approved", "False", "ApprovalPending", 2),
                    ("Installed", "False", "Installing", 2),
                ]),
                ("False", "Pending", "Approved says ApprovalPending"),
            ),
        ];
        for (row, instance, (ready, reason, message)) in rows {
            let status = mirrored(&instance);
            assert_eq!(
                said(&status, "Ready"),
                (ready.to_owned(), reason.to_owned(), message.to_owned()),
                "{row}"
            );
            assert!(
                PackageReason::parse(&said(&status, "Failed").1).is_some(),
                "{row}"
            );
        }
    }

    #[test]
    fn the_instance_conditions_are_copied_with_their_own_reasons() {
        let status = mirrored(&instance(&[
            ("Approved", "True", "Approved", 2),
            ("Installed", "True", "InstallSucceeded", 2),
            ("Healthy", "False", "ObjectsUnhealthy", 2),
        ]));
        assert_eq!(said(&status, "Healthy").1, "ObjectsUnhealthy");
        assert_eq!(said(&status, "Installed").1, "InstallSucceeded");
        assert_eq!(said(&status, "Failed").0, "False");
    }
}
