//! Whether an Instance being deleted should first say so in its status
//! (`Ready=False/Deleting`), before its uninstall runs.
//!
//! The write costs the apiserver a whole write of the Instance (decoded,
//! validated and stored again, and sent to every watcher), which for a
//! small Instance is a third of what its deletion costs. It is worth that
//! only where someone could see the Instance while it is being deleted:
//! when its uninstall may wait (a CRD waits for its custom resources), may
//! take a while (many objects), or when the Instance outlives the
//! provisioner's part (another finalizer holds it). An uninstall that ends
//! in the same reconcile removes the Instance with it, and `kubectl wait`
//! sees the deletion itself. When an uninstall that was not expected to
//! wait does wait, or fails, the controller says so then.

use pakket_api::{Instance, readiness};

/// Objects past which an uninstall is long enough for a reader to see the
/// Instance in the middle of it: each is a DELETE, and a few dozen take a
/// noticeable part of a second on a busy apiserver.
const QUICK_UNINSTALL_OBJECTS: usize = 16;

/// Whether to say `Deleting` before uninstalling `instance`, whose
/// provisioner's finalizer is `own_finalizer`.
pub fn worth_telling_first(instance: &Instance, own_finalizer: &str) -> bool {
    let Some(status) = instance.status.as_ref() else {
        // Never reconciled: there is no Ready of before to correct.
        return false;
    };
    if status.conditions.is_empty() || told(instance) {
        return false;
    }
    let held_by_others = instance
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|finalizer| finalizer != own_finalizer);
    let has_crds = status
        .objects
        .iter()
        .any(|object| object.kind == "CustomResourceDefinition");
    held_by_others || has_crds || status.objects.len() > QUICK_UNINSTALL_OBJECTS
}

/// Whether to say `Deleting` once the uninstall of `instance` has run:
/// when it did not finish (it waits for CRDs, or failed), so the Instance
/// stays, and it was not said already.
pub fn worth_telling_after(instance: &Instance, finished: bool) -> bool {
    !finished && !told(instance)
}

/// Whether `instance` already says it is being deleted.
pub fn told(instance: &Instance) -> bool {
    instance.status.as_ref().is_some_and(|status| {
        readiness::ready(&status.conditions).is_some_and(|c| c.reason == readiness::DELETING)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OURS: &str = "plain.pakket.dev/finalizer";

    fn instance(finalizers: &[&str], objects: &[&str], ready_reason: Option<&str>) -> Instance {
        let objects: Vec<_> = objects
            .iter()
            .enumerate()
            .map(|(i, kind)| json!({"apiVersion": "v1", "kind": kind, "name": format!("o{i}")}))
            .collect();
        let conditions: Vec<_> = ready_reason
            .map(|reason| {
                json!({"type": "Ready", "status": "True", "reason": reason, "message": "",
                       "lastTransitionTime": "2026-11-30T00:00:00Z"})
            })
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "core.pakket.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": "i", "finalizers": finalizers},
            "spec": {"class": "c", "bundle": {"name": "b"}},
            "status": {"conditions": conditions, "objects": objects},
        }))
        .unwrap()
    }

    #[test]
    fn only_an_uninstall_someone_could_watch_is_told_first() {
        let many = vec!["ConfigMap"; QUICK_UNINSTALL_OBJECTS + 1];
        let enough = vec!["ConfigMap"; QUICK_UNINSTALL_OBJECTS];
        let cases: [(&str, Instance, bool); 8] = [
            (
                "a few objects, ours alone: gone in this reconcile",
                instance(&[OURS], &["ConfigMap"; 3], Some("InstallSucceeded")),
                false,
            ),
            (
                "as many objects as still count as quick",
                instance(&[OURS], &enough, Some("InstallSucceeded")),
                false,
            ),
            (
                "more objects than that",
                instance(&[OURS], &many, Some("InstallSucceeded")),
                true,
            ),
            (
                "a CRD, which waits for its custom resources",
                instance(
                    &[OURS],
                    &["ConfigMap", "CustomResourceDefinition"],
                    Some("InstallSucceeded"),
                ),
                true,
            ),
            (
                "another finalizer keeps the Instance after ours",
                instance(
                    &[OURS, "test.pakket.dev/hold"],
                    &["ConfigMap"],
                    Some("InstallSucceeded"),
                ),
                true,
            ),
            (
                "told already",
                instance(
                    &[OURS, "test.pakket.dev/hold"],
                    &["CustomResourceDefinition"],
                    Some(readiness::DELETING),
                ),
                false,
            ),
            (
                "never reconciled: no conditions to correct",
                instance(&[OURS, "test.pakket.dev/hold"], &[], None),
                false,
            ),
            (
                "no objects and ours alone",
                instance(&[OURS], &[], Some("InstallSucceeded")),
                false,
            ),
        ];
        for (case, instance, expected) in cases {
            assert_eq!(worth_telling_first(&instance, OURS), expected, "{case}");
        }
    }

    #[test]
    fn an_uninstall_that_did_not_finish_is_told_once() {
        let installed = instance(&[OURS], &["ConfigMap"], Some("InstallSucceeded"));
        let told_already = instance(&[OURS], &["ConfigMap"], Some(readiness::DELETING));
        for (case, instance, finished, expected) in [
            ("finished: the Instance goes", &installed, true, false),
            ("waiting or failed", &installed, false, true),
            ("waiting, told before", &told_already, false, false),
        ] {
            assert_eq!(worth_telling_after(instance, finished), expected, "{case}");
        }
    }

    #[test]
    fn told_reads_the_ready_reason() {
        assert!(told(&instance(&[OURS], &[], Some(readiness::DELETING))));
        assert!(!told(&instance(&[OURS], &[], Some("InstallSucceeded"))));
        assert!(!told(&instance(&[OURS], &[], None)));
    }
}
