//! Revisions and rollout progress, on the real control plane: each
//! install of other content is a numbered revision in the Instance's
//! status, the serving revision moves once a revision rolls out, and a
//! rollout that does not finish within the class's `progressDeadline` is
//! `Blocked`, with `Healthy=False/ProgressDeadlineExceeded`, until it
//! does.

use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass, RevisionOutcome};
use pakket_testkit::{condition_is, reason_is, wait_for_instance as wait_for};
use serde_json::json;

mod plain_fixture;

use plain_fixture::Fixture;

fn outcomes(instance: &Instance) -> Vec<(i64, String, RevisionOutcome)> {
    instance
        .status
        .iter()
        .flat_map(|status| &status.revisions)
        .map(|revision| (revision.number, revision.bundle.clone(), revision.outcome))
        .collect()
}

#[tokio::test]
async fn each_install_and_pivot_is_a_revision_and_serving_moves_once_it_rolls_out() {
    let fixture = Fixture::new("revisions", "AllowAll").await;
    fixture.content("v1", &[("current", "v1")]).await;
    fixture.content("v2", &[("current", "v2")]).await;
    let (instances, name) = fixture.install("v1", "v1").await;
    let first = wait_for(&instances, &name, "revision 1 rolled out", |i| {
        reason_is(i, ConditionType::Progressing, "Succeeded")
    })
    .await;
    let v1 = fixture.scope.name("v1");
    assert_eq!(
        outcomes(&first),
        vec![(1, v1.clone(), RevisionOutcome::Succeeded)]
    );
    let status = first.status.clone().unwrap();
    assert_eq!(status.serving_revision, Some(1));
    let recorded = &status.revisions[0];
    assert!(recorded.digest.starts_with("sha256:"));
    assert!(recorded.rendered.is_some(), "the render is part of it");
    assert!(
        recorded.approved_by.starts_with("policy"),
        "{}",
        recorded.approved_by
    );
    assert!(
        recorded.bundle_spec.is_some(),
        "embedded content is kept to ask for again"
    );

    fixture.pivot("v2", "v2").await;
    let v2 = fixture.scope.name("v2");
    let second = wait_for(&instances, &name, "revision 2 rolled out", |i| {
        i.status
            .as_ref()
            .is_some_and(|status| status.serving_revision == Some(2))
    })
    .await;
    assert_eq!(
        outcomes(&second),
        vec![
            (1, v1, RevisionOutcome::Succeeded),
            (2, v2, RevisionOutcome::Succeeded)
        ]
    );
    assert!(condition_is(&second, ConditionType::Progressing, "False"));
    fixture.scope.cleanup().await;
}

#[tokio::test]
async fn a_rollout_past_the_progress_deadline_is_blocked_and_says_so_in_health() {
    let fixture = Fixture::new("deadline", "AllowAll").await;
    let classes: Api<ProvisionerClass> = Api::all(fixture.scope.client.clone());
    classes
        .patch(
            &fixture.scope.name("class"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "parameters": {
                "approval": "AllowAll", "progressDeadline": "1h",
            } } })),
        )
        .await
        .unwrap();
    // A Deployment whose pod no node can take: it never rolls out.
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: stuck\n  namespace: {namespace}\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: stuck}}\n  template:\n    metadata:\n      labels: {{app: stuck}}\n    spec:\n      nodeSelector: {{pakket.dev/no-such-node: \"true\"}}\n      containers:\n      - name: c\n        image: registry.invalid/never:1\n",
        namespace = fixture.scope.namespace
    );
    fixture
        .files("stuck", &[("deployment.yaml", deployment)])
        .await;
    // The Instance's own deadline wins over its class's hour.
    let instances = fixture.instances();
    let mut instance = fixture.instance("v1", fixture.bundle_spec("stuck", "file://content"));
    instance.spec.progress_deadline = Some("8s".into());
    instances
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    let name = fixture.scope.name("instance");
    let rolling = wait_for(&instances, &name, "rolling out", |i| {
        reason_is(i, ConditionType::Progressing, "RollingOut")
    })
    .await;
    assert!(condition_is(&rolling, ConditionType::Progressing, "True"));
    assert!(reason_is(
        &rolling,
        ConditionType::Healthy,
        "ObjectsProgressing"
    ));

    let blocked = wait_for(&instances, &name, "blocked past the deadline", |i| {
        reason_is(i, ConditionType::Progressing, "Blocked")
    })
    .await;
    assert!(condition_is(&blocked, ConditionType::Progressing, "False"));
    assert!(
        reason_is(&blocked, ConditionType::Healthy, "ProgressDeadlineExceeded")
            && condition_is(&blocked, ConditionType::Healthy, "False"),
        "{:?}",
        blocked.condition(ConditionType::Healthy)
    );
    let message = &blocked.condition(ConditionType::Healthy).unwrap().message;
    assert!(
        message.contains("progress deadline of 8s (spec.progressDeadline)")
            && message.contains("Deployment"),
        "names the deadline and what it waits for: {message}"
    );
    let status = blocked.status.clone().unwrap();
    assert_eq!(status.revisions[0].outcome, RevisionOutcome::Blocked);
    assert_eq!(status.serving_revision, None, "nothing rolled out");

    // A deadline that is no duration is refused, naming the field; nothing
    // is applied.
    let mut wrong = fixture.instance("v1", fixture.bundle_spec("stuck", "file://content"));
    wrong.metadata.name = Some(fixture.scope.name("wrong"));
    wrong.spec.progress_deadline = Some("soon".into());
    instances
        .create(&PostParams::default(), &wrong)
        .await
        .unwrap();
    let refused = wait_for(&instances, &fixture.scope.name("wrong"), "refused", |i| {
        reason_is(i, ConditionType::Installed, "InvalidConfig")
    })
    .await;
    let message = &refused.condition(ConditionType::Installed).unwrap().message;
    assert!(
        message.starts_with("spec.progressDeadline: \"soon\" is not a duration"),
        "{message}"
    );
    fixture.scope.cleanup().await;
}
