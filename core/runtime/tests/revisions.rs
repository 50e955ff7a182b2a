//! Revisions and rollout progress, on the real control plane: each
//! install of other content is a numbered revision in the Instance's
//! status, the serving revision moves once a revision rolls out, and a
//! rollout that does not finish within the class's `progressDeadline` is
//! `Blocked`, with `Healthy=False/ProgressDeadlineExceeded`, until it
//! does; under the class's `rollbackOnFailure` the revision that served
//! before it runs again.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use pakket_api::{ConditionType, Instance, ProvisionerClass, RevisionOutcome, RollbackState};
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

/// Deployment `web` in `namespace`, its pod only for nodes matching
/// `node_selector` (a YAML flow map), and ConfigMap `only` beside it.
fn web(namespace: &str, node_selector: &str, only: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "deployment.yaml",
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {namespace}\n\
                 spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      nodeSelector: {node_selector}\n      containers:\n      - name: web\n        image: registry.invalid/web:1\n"
            ),
        ),
        (
            "only.yaml",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {only}\n  namespace: {namespace}\ndata:\n  value: {only}\n"
            ),
        ),
    ]
}

#[tokio::test]
async fn an_upgrade_that_does_not_roll_out_is_rolled_back_when_the_class_asks() {
    let fixture = Fixture::new("rollback", "AllowAll").await;
    let classes: Api<ProvisionerClass> = Api::all(fixture.scope.client.clone());
    classes
        .patch(
            &fixture.scope.name("class"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "parameters": {
                "approval": "AllowAll", "rollbackOnFailure": true,
            } } })),
        )
        .await
        .unwrap();
    let namespace = fixture.scope.namespace.clone();
    fixture.files("v1", &web(&namespace, "{}", "only-v1")).await;
    // v2's pod fits no node: its rollout never completes.
    let stuck = "{pakket.dev/no-such-node: \"true\"}";
    fixture
        .files("v2", &web(&namespace, stuck, "only-v2"))
        .await;
    let (instances, name) = fixture.install("v1", "v1").await;
    wait_for(&instances, &name, "revision 1 serves", |i| {
        i.status
            .as_ref()
            .is_some_and(|status| status.serving_revision == Some(1))
    })
    .await;

    // The upgrade, with a deadline short enough for a test.
    let upgrade = json!({ "spec": {
        "progressDeadline": "5s",
        "bundle": {
            "name": fixture.scope.name("v2"),
            "spec": fixture.bundle_spec("v2", "file://content"),
        },
    } });
    instances
        .patch(&name, &PatchParams::default(), &Patch::Merge(&upgrade))
        .await
        .unwrap();
    let rolled_back = wait_for(&instances, &name, "rolled back and rolled out", |i| {
        reason_is(i, ConditionType::Installed, "RolledBack")
            && i.status
                .as_ref()
                .is_some_and(|status| status.serving_revision == Some(3))
    })
    .await;
    let (v1, v2) = (fixture.scope.name("v1"), fixture.scope.name("v2"));
    assert_eq!(
        outcomes(&rolled_back),
        vec![
            (1, v1.clone(), RevisionOutcome::Succeeded),
            (2, v2.clone(), RevisionOutcome::Superseded),
            (3, v1.clone(), RevisionOutcome::Succeeded),
        ]
    );
    let status = rolled_back.status.clone().unwrap();
    let rollback = status.automatic_rollback.clone().unwrap();
    assert_eq!((rollback.from, rollback.to), (2, 1));
    assert_eq!(rollback.state, RollbackState::RolledBack);
    assert!(
        status.revisions[2]
            .approved_by
            .starts_with("rollback to revision 1, under its approval (policy"),
        "{}",
        status.revisions[2].approved_by
    );
    assert!(
        status.revisions[1].message.contains("did not roll out"),
        "{}",
        status.revisions[1].message
    );
    assert_eq!(status.active_bundle.as_deref(), Some(v1.as_str()));
    assert!(condition_is(
        &rolled_back,
        ConditionType::Installed,
        "False"
    ));
    let installed = &rolled_back
        .condition(ConditionType::Installed)
        .unwrap()
        .message;
    assert!(
        installed.contains(&format!("Bundle {v2} is not installed"))
            && installed.contains("progress deadline of 5s")
            && installed.contains("kubectl instance rollback"),
        "says what is not installed, why, and how to try again: {installed}"
    );
    assert!(condition_is(&rolled_back, ConditionType::Healthy, "True"));

    // v1's objects run again; v2's own object is gone.
    let deployment = Api::<Deployment>::namespaced(fixture.scope.client.clone(), &namespace)
        .get("web")
        .await
        .unwrap();
    let selector = deployment
        .spec
        .and_then(|spec| spec.template.spec)
        .and_then(|spec| spec.node_selector)
        .unwrap_or_default();
    assert!(selector.is_empty(), "v1's template again: {selector:?}");
    let config_maps: Api<ConfigMap> = fixture.config_maps();
    assert!(config_maps.get_opt("only-v1").await.unwrap().is_some());
    assert!(config_maps.get_opt("only-v2").await.unwrap().is_none());

    // Said as a Warning naming the rollback (Events are written a moment
    // after the status).
    pakket_testkit::eventually("a Warning Event says it rolled back", || async {
        pakket_testkit::instance_events(&fixture.scope.client, &name)
            .await
            .iter()
            .any(|event| {
                event.reason.as_deref() == Some("RolledBack")
                    && event.type_.as_deref() == Some("Warning")
            })
    })
    .await;

    // A new spec ends the rollback: its content installs as any change.
    fixture.content("v3", &[("current", "v3")]).await;
    fixture.pivot("v3", "v3").await;
    let changed = wait_for(&instances, &name, "the new spec installed", |i| {
        condition_is(i, ConditionType::Installed, "True")
            && i.status.as_ref().is_some_and(|status| {
                status.active_bundle.as_deref() == Some(fixture.scope.name("v3").as_str())
            })
    })
    .await;
    assert_eq!(changed.status.unwrap().automatic_rollback, None);
    fixture.scope.cleanup().await;
}
