//! Whether a Deployment serves the revision that was applied, judged as
//! `kubectl rollout status` judges it, and said honestly:
//! - past its progress deadline, it is failing, and the words say so
//!   (`ProgressDeadlineExceeded`), not the Available condition's reason;
//! - while its current revision rolls out (the controller has not seen the
//!   new generation, or fewer replicas are updated or available than
//!   wanted, or old ones remain) it is settling, even if old pods keep it
//!   Available: an upgrade is healthy only once the new revision runs;
//! - once rolled out, a Deployment that loses availability is failing
//!   after [`GRACE`], not "still converging".
//!
//! StatefulSets and DaemonSets have no conditions to say so: their rollout
//! is judged from their counts and revisions as `kubectl rollout status`
//! does, settling until complete. How long settling may last is the
//! Instance's progress deadline, which the runtime keeps.

use jiff::Timestamp;
use kube::api::DynamicObject;
use pakket_api::ObjectRef;
use serde_json::Value;

use super::{HealthProblem, condition, condition_true};

/// How long a rolled-out Deployment may be unavailable (a pod restarting)
/// before it counts as failing.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The Deployment's problem at `now`, if it has one.
pub fn deployment_problem(
    reference: &ObjectRef,
    object: &DynamicObject,
    now: Timestamp,
) -> Option<HealthProblem> {
    let progressing = condition(object, "Progressing");
    if let Some((_, reason, message)) = &progressing
        && reason == "ProgressDeadlineExceeded"
    {
        return Some(HealthProblem::past_deadline(
            reference,
            format!(
                "{reference} passed its progress deadline (ProgressDeadlineExceeded: {message}); its current revision does not roll out"
            ),
        ));
    }
    let available = condition_true(object, "Available");
    let why = condition(object, "Available")
        .map(|(_, reason, message)| format!(" ({reason}: {message})"))
        .unwrap_or_default();
    if let Some(rolling) = rolling_out(object) {
        let stuck = progressing
            .as_ref()
            .is_some_and(|(status, _, _)| status != "True");
        return Some(if stuck && !available {
            HealthProblem::failing(reference, format!("{reference} is not Available{why}"))
        } else {
            HealthProblem::settling(
                reference,
                format!("{reference} to roll out its current revision ({rolling})"),
            )
        });
    }
    if available {
        return None;
    }
    let unavailable_for = transition_time(object, "Available")
        .and_then(|since| now.duration_since(since).try_into().ok())
        .unwrap_or(std::time::Duration::ZERO);
    Some(if unavailable_for >= GRACE {
        HealthProblem::failing(
            reference,
            format!(
                "{reference} lost availability {} s ago{why}",
                unavailable_for.as_secs()
            ),
        )
    } else {
        HealthProblem::settling(
            reference,
            format!("{reference} to become Available again{why}"),
        )
    })
}

/// How far the current revision's rollout is, in words, while it is not
/// complete; `None` once it is.
fn rolling_out(object: &DynamicObject) -> Option<String> {
    let number = |pointer: &str| object.data.pointer(pointer).and_then(Value::as_i64);
    let generation = object.metadata.generation.unwrap_or(0);
    let observed = number("/status/observedGeneration").unwrap_or(0);
    if observed < generation {
        return Some("the controller has not seen its new spec yet".to_owned());
    }
    let wanted = number("/spec/replicas").unwrap_or(1);
    let updated = number("/status/updatedReplicas").unwrap_or(0);
    let replicas = number("/status/replicas").unwrap_or(0);
    let ready = number("/status/availableReplicas").unwrap_or(0);
    if updated < wanted {
        return Some(format!("{updated} of {wanted} replicas updated"));
    }
    if replicas > updated {
        return Some(format!("{} old replicas still running", replicas - updated));
    }
    // Fewer available than updated is a rollout only until the controller
    // has once found the new ReplicaSet available: after that it is the
    // workload losing Pods, judged by availability and its grace.
    if ready < updated && !rolled_out_before(object) {
        return Some(format!("{ready} of {updated} updated replicas available"));
    }
    None
}

/// Whether the Deployment controller has found the current ReplicaSet
/// available (`Progressing` reason `NewReplicaSetAvailable`, kept until a
/// new rollout begins).
fn rolled_out_before(object: &DynamicObject) -> bool {
    condition(object, "Progressing")
        .is_some_and(|(status, reason, _)| status == "True" && reason == "NewReplicaSetAvailable")
}

/// The StatefulSet's problem, if its current revision has not rolled out:
/// the controller has not seen its spec, replicas are not ready, or (rolling
/// updates) pods still run an older revision than the partition allows.
pub fn stateful_set_problem(
    reference: &ObjectRef,
    object: &DynamicObject,
) -> Option<HealthProblem> {
    let number = |pointer: &str| object.data.pointer(pointer).and_then(Value::as_i64);
    let text = |pointer: &str| object.data.pointer(pointer).and_then(Value::as_str);
    let settling = |words: String| {
        Some(HealthProblem::settling(
            reference,
            format!("{reference} to roll out its current revision ({words})"),
        ))
    };
    if number("/status/observedGeneration").unwrap_or(0) < object.metadata.generation.unwrap_or(0) {
        return settling("the controller has not seen its new spec yet".to_owned());
    }
    let wanted = number("/spec/replicas").unwrap_or(1);
    let ready = number("/status/readyReplicas").unwrap_or(0);
    if ready < wanted {
        return settling(format!("{ready} of {wanted} replicas ready"));
    }
    // OnDelete: pods change only when someone deletes them; nothing rolls.
    if text("/spec/updateStrategy/type") == Some("OnDelete") {
        return None;
    }
    let partition = number("/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
    let updated = number("/status/updatedReplicas").unwrap_or(0);
    if partition > 0 {
        let due = (wanted - partition).max(0);
        return (updated < due).then(|| {
            HealthProblem::settling(reference, format!(
                "{reference} to roll out its current revision ({updated} of {due} replicas above partition {partition} updated)"
            ))
        });
    }
    match (
        text("/status/currentRevision"),
        text("/status/updateRevision"),
    ) {
        (Some(current), Some(update)) if current != update => settling(format!(
            "{updated} of {wanted} replicas at revision {update}, the rest at {current}"
        )),
        _ => None,
    }
}

/// The DaemonSet's problem, if its current revision has not rolled out to
/// every node it should run on, or some of its pods are not available.
pub fn daemon_set_problem(reference: &ObjectRef, object: &DynamicObject) -> Option<HealthProblem> {
    let number = |pointer: &str| object.data.pointer(pointer).and_then(Value::as_i64);
    let settling = |words: String| {
        Some(HealthProblem::settling(
            reference,
            format!("{reference} to roll out its current revision ({words})"),
        ))
    };
    if number("/status/observedGeneration").unwrap_or(0) < object.metadata.generation.unwrap_or(0) {
        return settling("the controller has not seen its new spec yet".to_owned());
    }
    let desired = number("/status/desiredNumberScheduled").unwrap_or(0);
    let updated = number("/status/updatedNumberScheduled").unwrap_or(0);
    let available = number("/status/numberAvailable").unwrap_or(0);
    if updated < desired {
        return settling(format!("{updated} of {desired} nodes updated"));
    }
    if available < desired {
        return settling(format!("{available} of {desired} pods available"));
    }
    None
}

/// When condition `kind` last changed status.
fn transition_time(object: &DynamicObject, kind: &str) -> Option<Timestamp> {
    object
        .data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|condition| condition.get("type").and_then(Value::as_str) == Some(kind))?
        .get("lastTransitionTime")?
        .as_str()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(
        generation: i64,
        spec_replicas: i64,
        status: Value,
    ) -> (ObjectRef, DynamicObject) {
        let reference = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: Some("n".into()),
        };
        let object = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": spec_replicas},
            "status": status,
        }))
        .unwrap();
        (reference, object)
    }

    fn now() -> Timestamp {
        "2026-11-27T12:00:00Z".parse().unwrap()
    }

    fn workload(
        kind: &str,
        generation: i64,
        spec: Value,
        status: Value,
    ) -> (ObjectRef, DynamicObject) {
        let reference = ObjectRef {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: "db".into(),
            namespace: Some("n".into()),
        };
        let object = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "db", "generation": generation},
            "spec": spec, "status": status,
        }))
        .unwrap();
        (reference, object)
    }

    #[test]
    fn a_stateful_set_settles_until_every_replica_runs_its_update_revision() {
        let spec = serde_json::json!({"replicas": 3});
        let (reference, unseen) = workload(
            "StatefulSet",
            2,
            spec.clone(),
            serde_json::json!({"observedGeneration": 1}),
        );
        assert!(stateful_set_problem(&reference, &unseen).unwrap().settling);
        let (reference, rolling) = workload(
            "StatefulSet",
            2,
            spec.clone(),
            serde_json::json!({
                "observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 1,
                "currentRevision": "db-1", "updateRevision": "db-2",
            }),
        );
        let problem = stateful_set_problem(&reference, &rolling).unwrap();
        assert!(problem.settling);
        assert!(
            problem
                .text
                .contains("1 of 3 replicas at revision db-2, the rest at db-1"),
            "{}",
            problem.text
        );
        let (reference, unready) = workload(
            "StatefulSet",
            2,
            spec.clone(),
            serde_json::json!({
                "observedGeneration": 2, "readyReplicas": 2, "currentRevision": "db-2", "updateRevision": "db-2",
            }),
        );
        assert!(
            stateful_set_problem(&reference, &unready)
                .unwrap()
                .text
                .contains("2 of 3 replicas ready")
        );
        let (reference, done) = workload(
            "StatefulSet",
            2,
            spec,
            serde_json::json!({
                "observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 3,
                "currentRevision": "db-2", "updateRevision": "db-2",
            }),
        );
        assert!(stateful_set_problem(&reference, &done).is_none());
    }

    #[test]
    fn a_partitioned_stateful_set_is_rolled_out_once_the_pods_above_the_partition_are_updated() {
        let spec = serde_json::json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}});
        let status = |updated: i64| {
            serde_json::json!({
                "observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": updated,
                "currentRevision": "db-1", "updateRevision": "db-2",
            })
        };
        let (reference, waiting) = workload("StatefulSet", 1, spec.clone(), status(0));
        assert!(stateful_set_problem(&reference, &waiting).is_some());
        let (reference, done) = workload("StatefulSet", 1, spec, status(1));
        assert!(stateful_set_problem(&reference, &done).is_none());
    }

    #[test]
    fn a_daemon_set_settles_until_every_node_runs_an_available_updated_pod() {
        let (reference, rolling) = workload(
            "DaemonSet",
            3,
            Value::Null,
            serde_json::json!({
                "observedGeneration": 3, "desiredNumberScheduled": 4, "updatedNumberScheduled": 2, "numberAvailable": 4,
            }),
        );
        assert!(
            daemon_set_problem(&reference, &rolling)
                .unwrap()
                .text
                .contains("2 of 4 nodes updated")
        );
        let (reference, unavailable) = workload(
            "DaemonSet",
            3,
            Value::Null,
            serde_json::json!({
                "observedGeneration": 3, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4, "numberAvailable": 3,
            }),
        );
        assert!(
            daemon_set_problem(&reference, &unavailable)
                .unwrap()
                .text
                .contains("3 of 4 pods available")
        );
        let (reference, done) = workload(
            "DaemonSet",
            3,
            Value::Null,
            serde_json::json!({
                "observedGeneration": 3, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4, "numberAvailable": 4,
            }),
        );
        assert!(daemon_set_problem(&reference, &done).is_none());
    }

    #[test]
    fn an_upgrade_kept_available_by_old_pods_is_not_healthy_until_its_revision_rolls_out() {
        // Generation 2 applied; the old ReplicaSet keeps it Available while
        // the new pods never become ready.
        let (reference, object) = deployment(
            2,
            2,
            serde_json::json!({
                "observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
                ],
            }),
        );
        let problem = deployment_problem(&reference, &object, now()).unwrap();
        assert!(problem.settling);
        assert!(
            problem.text.contains("1 of 2 replicas updated"),
            "{}",
            problem.text
        );
    }

    #[test]
    fn past_its_deadline_the_words_say_the_deadline() {
        let (reference, object) = deployment(
            2,
            1,
            serde_json::json!({
                "observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet web-2 has timed out progressing."},
                ],
            }),
        );
        let problem = deployment_problem(&reference, &object, now()).unwrap();
        assert!(!problem.settling);
        assert!(
            problem
                .text
                .contains("passed its progress deadline (ProgressDeadlineExceeded"),
            "{}",
            problem.text
        );
    }

    #[test]
    fn a_rolled_out_deployment_that_loses_its_pods_fails_after_the_grace() {
        let lost = |since: &str| {
            deployment(
                1,
                1,
                serde_json::json!({
                    "observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
                    "conditions": [
                        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability.", "lastTransitionTime": since},
                        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                    ],
                }),
            )
        };
        let (reference, recent) = lost("2026-11-27T11:59:50Z");
        assert!(
            deployment_problem(&reference, &recent, now())
                .unwrap()
                .settling
        );
        let (reference, long) = lost("2026-11-27T11:58:00Z");
        let problem = deployment_problem(&reference, &long, now()).unwrap();
        assert!(!problem.settling);
        assert!(
            problem.text.contains("lost availability 120 s ago"),
            "{}",
            problem.text
        );
    }

    #[test]
    fn losing_pods_after_the_rollout_is_not_rolling_out_but_a_rollout_still_is() {
        // As the Deployment controller writes it when the one Pod of a
        // rolled-out Deployment stops being ready: no available replica,
        // Progressing still NewReplicaSetAvailable.
        let status = |progressing: &str, since: &str| {
            serde_json::json!({
                "observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0, "unavailableReplicas": 1,
                "conditions": [
                    {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability.", "lastTransitionTime": since},
                    {"type": "Progressing", "status": "True", "reason": progressing},
                ],
            })
        };
        let (reference, lost) = deployment(
            2,
            1,
            status("NewReplicaSetAvailable", "2026-11-27T11:59:00Z"),
        );
        let problem = deployment_problem(&reference, &lost, now()).unwrap();
        assert!(!problem.settling, "{}", problem.text);
        assert!(
            problem
                .text
                .contains("lost availability 60 s ago (MinimumReplicasUnavailable"),
            "{}",
            problem.text
        );

        let (reference, fresh) = deployment(
            2,
            1,
            status("NewReplicaSetAvailable", "2026-11-27T11:59:55Z"),
        );
        let problem = deployment_problem(&reference, &fresh, now()).unwrap();
        assert!(problem.settling);
        assert!(
            problem.text.contains("to become Available again"),
            "{}",
            problem.text
        );

        // A rollout under way (its new ReplicaSet not yet available) settles
        // however long Available has been False: its deadline judges it.
        let (reference, rolling) =
            deployment(2, 1, status("ReplicaSetUpdated", "2026-11-27T11:50:00Z"));
        let problem = deployment_problem(&reference, &rolling, now()).unwrap();
        assert!(problem.settling);
        assert!(
            problem.text.contains("0 of 1 updated replicas available"),
            "{}",
            problem.text
        );
    }

    #[test]
    fn a_rolled_out_available_deployment_is_healthy() {
        let (reference, object) = deployment(
            3,
            2,
            serde_json::json!({
                "observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                ],
            }),
        );
        assert_eq!(deployment_problem(&reference, &object, now()), None);
    }
}
